"""What a user asks of their memory, by chat, console or command line: forget, correct.

Each request is kept in the user's audit trail with who made it and through what.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.audit import client_detail, record_audit
from assistant.memory.facts import delete_memory, get_memory, normalize_fact, supersede_memory
from assistant.memory.heard import forget_heard

__all__ = ["correct_memory", "forget_memory"]


async def forget_memory(
    store: BaseStore,
    user_id: str,
    key: str,
    *,
    actor: str,
    via: str,
    thread_id: str | None = None,
    client: str | None = None,
) -> dict[str, Any] | None:
    """Delete one fact because the user asked, and record it in the audit trail.

    The record of what was heard keeps that the messages behind it were kept, not their
    words. ``client`` names the program that asked (an MCP client's name), when known.
    Returns the audit entry, or None when the fact does not exist.
    """
    item = await get_memory(store, user_id, key)
    if item is None:
        return None
    await delete_memory(store, user_id, key)
    await forget_heard(store, user_id, key)
    return await record_audit(
        store,
        user_id,
        action="forget",
        fact_key=key,
        content=str(item.value.get("content", "")),
        actor=actor,
        via=via,
        thread_id=thread_id,
        **client_detail(client),
    )


async def correct_memory(
    store: BaseStore,
    user_id: str,
    key: str,
    content: str,
    *,
    actor: str,
    via: str,
    thread_id: str | None = None,
    client: str | None = None,
) -> str:
    """Replace a fact the user corrected; the old one is kept as superseded history.

    Returns the key of the corrected fact. Correcting a fact that was already
    superseded corrects its current successor instead, so two concurrent corrections
    never leave two current versions.
    """
    item = await get_memory(store, user_id, key)
    while item is not None and item.value.get("status") == "superseded":
        successor = item.value.get("superseded_by")
        item = await get_memory(store, user_id, successor) if successor else None
    if item is None:
        raise KeyError(f"No fact with key={key!r} for user_id={user_id!r}.")
    if normalize_fact(content) == normalize_fact(str(item.value.get("content", ""))):
        return item.key
    new_key = await supersede_memory(
        store,
        user_id,
        item.key,
        content,
        thread_id=thread_id,
        pinned=bool(item.value.get("pinned")),
        confidence=1.0,
    )
    await record_audit(
        store,
        user_id,
        action="correct",
        fact_key=item.key,
        content=str(item.value.get("content", "")),
        actor=actor,
        via=via,
        thread_id=thread_id,
        new_content=content,
        new_fact_key=new_key,
        **client_detail(client),
    )
    return new_key
