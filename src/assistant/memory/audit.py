"""The audit trail: every deletion and correction of a user's memory, by whom and from where.

Entries live in ``("user_audit", user_id)``, one item each, and are never edited::

    {"action": "forget", "fact_key": "...", "content": "Lives in Hangzhou",
     "actor": "alice", "via": "chat", "thread_id": "...", "at": "2026-..."}

``via`` says which path made the change: ``chat`` (the assistant's memory tools, or
consolidation superseding a fact the user contradicted), ``console`` (the web page),
``cli`` (the ``assistant`` command), ``mcp`` (an agent over MCP, ``/memory/mcp``) or
``api`` (any other client of the HTTP API). An entry made over MCP also names the
``client`` (the ``clientInfo.name`` of its MCP handshake, e.g. ``"claude-code"``).
"""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.facts import now_iso
from assistant.memory.namespaces import user_audit_namespace

__all__ = ["client_detail", "list_audit", "record_audit"]

LIST_LIMIT = 1000

MAX_CLIENT_CHARS = 100
"""Longest client name kept in an entry (the name is whatever the client says it is)."""


def client_detail(client: str | None) -> dict[str, str]:
    """The ``client`` field of an entry: the client's name on one line, cut; none if unknown.

    >>> client_detail("claude-code")
    {'client': 'claude-code'}
    >>> client_detail(None), client_detail("  ")
    ({}, {})
    """
    name = " ".join((client or "").split())[:MAX_CLIENT_CHARS]
    return {"client": name} if name else {}


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
