"""The audit trail: every write to a user's facts, by whom and from where.

Every fact added (``add``), reworded (``update``), replaced (``supersede``, ``correct``),
undone (``rollback``) or forgotten (``forget``) leaves an entry, with the path it came by
and the client, as mem0's ``history()`` keeps every add, update and delete. Entries live
in ``("user_audit", user_id)``, one item each::

    {"action": "correct", "fact_key": "...", "content": "Lives in Hangzhou",
     "new_content": "Lives in Chengdu", "new_fact_key": "...",
     "actor": "alice", "via": "api", "client": "console", "thread_id": null, "at": "2026-..."}

An entry is only ever changed to take a forgotten fact's words out of it
(:func:`redact_audit`): ``content`` and ``new_content`` become `FORGOTTEN` and
``"forgotten": true`` is added. The entry of a forget itself holds no words at all::

    {"action": "forget", "fact_key": "...", "content": "[forgotten]", "forgotten": true,
     "actor": "alice", "via": "chat", "thread_id": "...", "at": "2026-..."}

``via`` is the path the server saw the change come in by, never what a client says:
``chat`` (the assistant's memory tools, or consolidation superseding a fact the user
contradicted, in a run), ``mcp`` (an agent over MCP, ``/memory/mcp``) or ``api`` (the HTTP
memory routes and the store API, whatever program sent the request). ``client`` is the name
the client gave, when it gave one, and is not verified: an MCP client's ``clientInfo.name``
(e.g. ``"claude-code"``), or the ``x-assistant-client`` header that the console
(``"console"``) and the command line (``"cli"``) send.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.namespaces import every_item, user_audit_namespace
from assistant.memory.records import FORGOTTEN, Owner, now_iso
from assistant.memory.wording import quotes_fact

__all__ = [
    "API_VIA",
    "CHAT_VIA",
    "MCP_VIA",
    "client_detail",
    "list_audit",
    "record_audit",
    "redact_audit",
]

CHAT_VIA = "chat"
"""``via`` of a change made in a conversation: extraction, or the chat's memory tools."""
MCP_VIA = "mcp"
"""``via`` of a change made over MCP (`assistant.server.mcp_server`)."""
API_VIA = "api"
"""``via`` of a change made through the HTTP API (memory routes or store API)."""

TEXT_FIELDS = {"content": "fact_key", "new_content": "new_fact_key"}
"""The fields of an entry that hold a fact's words, and the field naming that fact (a
correction in place names one key for both wordings)."""

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
    entry_key: str | None = None,
    **details: Any,
) -> dict[str, Any]:
    """Append one entry to the user's audit trail and return it.

    ``entry_key`` names the entry (default: a new one), so that a step done again, such as
    a forget resumed after a crash, writes its entry once.
    """
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
    key = entry_key or uuid.uuid4().hex
    await store.aput(user_audit_namespace(user_id), key, entry, index=False)
    return entry


async def list_audit(store: BaseStore, user_id: str) -> list[dict[str, Any]]:
    """The user's audit trail, newest first."""
    items = await store.asearch(user_audit_namespace(user_id), limit=LIST_LIMIT)
    return sorted((item.value for item in items), key=lambda entry: entry["at"], reverse=True)


async def redact_audit(writer: Owner, keys: Collection[str], texts: Collection[str]) -> int:
    """Take the forgotten facts' words out of the user's audit trail; return how many entries.

    A wording of one of ``keys`` (``content`` of ``fact_key``, ``new_content`` of
    ``new_fact_key``), or one that says one of ``texts`` word for word, becomes `FORGOTTEN`;
    the entry keeps what happened, when, by whom and via what.
    """
    store, namespace = writer.store, user_audit_namespace(writer.user_id)
    redacted = 0
    for item in await every_item(store, namespace):
        entry = dict(item.value)
        said = [
            field
            for field, key_field in TEXT_FIELDS.items()
            if isinstance(entry.get(field), str)
            and entry[field] != FORGOTTEN
            and (
                entry.get(key_field, entry.get("fact_key")) in keys
                or any(quotes_fact(entry[field], text) for text in texts)
            )
        ]
        if not said:
            continue
        for field in said:
            entry[field] = FORGOTTEN
        entry["forgotten"] = True
        await store.aput(namespace, item.key, entry, index=False)
        redacted += 1
    return redacted
