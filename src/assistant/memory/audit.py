"""The audit trail: every deletion and correction of a user's memory, by whom and from where.

Entries live in ``("user_audit", user_id)``, one item each, and are never edited::

    {"action": "forget", "fact_key": "...", "content": "Lives in Hangzhou",
     "actor": "alice", "via": "chat", "thread_id": "...", "at": "2026-..."}

``via`` says which path made the change: ``chat`` (the assistant's memory tools, or
consolidation superseding a fact the user contradicted), ``console`` (the web page),
``cli`` (the ``assistant`` command) or ``api`` (any other client of the HTTP API).
"""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.facts import now_iso
from assistant.memory.namespaces import user_audit_namespace

__all__ = ["list_audit", "record_audit"]

LIST_LIMIT = 1000


async def record_audit(
    store: BaseStore,
    user_id: str,
    *,
    action: str,
    fact_key: str,
    content: str,
    actor: str,
    via: str,
    thread_id: str | None = None,
    **details: Any,
) -> dict[str, Any]:
    """Append one entry to the user's audit trail and return it."""
    entry: dict[str, Any] = {
        "action": action,
        "fact_key": fact_key,
        "content": content,
        "actor": actor,
        "via": via,
        "thread_id": thread_id,
        "at": now_iso(),
        **details,
    }
    await store.aput(user_audit_namespace(user_id), uuid.uuid4().hex, entry, index=False)
    return entry


async def list_audit(store: BaseStore, user_id: str) -> list[dict[str, Any]]:
    """The user's audit trail, newest first."""
    items = await store.asearch(user_audit_namespace(user_id), limit=LIST_LIMIT)
    return sorted((item.value for item in items), key=lambda entry: entry["at"], reverse=True)
