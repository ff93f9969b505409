"""A fact's life in the store: saved, updated, confirmed, superseded, deleted.

A stored fact's value::

    {"content": "Lives in Hangzhou",   # the indexed field, in the user's language
     "category": "location", "lang": "en", "confidence": 0.9,
     "status": "current",              # or "superseded"
     "pinned": False,                  # part of the always-on profile
     "created_at": "...", "updated_at": "...",
     "thread_id": "...", "message_id": "...",   # where it was learned
     "mentions": 1,                    # times the user has said it
     "history": [...],                 # earlier wordings: {"event", "content", "at", "thread_id"}
     "supersedes": None, "superseded_by": None, "valid_until": None}

Nothing is silently lost: an update keeps the old wording in ``history``; a
contradiction marks the old fact ``superseded`` (with ``superseded_by`` and
``valid_until``) and keeps it in the store for audit, out of recall.

Facts that consolidation adds are keyed by their normalised text (:func:`fact_key`,
:func:`save_memory_once`), so two processes that add the same fact for the same user at
the same moment (two threads of one user, served by two replicas) write one item, not two.
:func:`save_memory` itself stores every call as its own item, with its own metadata.
"""

from __future__ import annotations

import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, Item

from assistant.memory.index import record_write
from assistant.memory.namespaces import user_facts_namespace
from assistant.memory.records import is_current
from assistant.tokens import is_cjk_text

__all__ = [
    "MAX_FACT_CHARS",
    "confirm_memory",
    "delete_memory",
    "fact_key",
    "get_memory",
    "list_memories",
    "normalize_fact",
    "restore_memory",
    "save_memory",
    "save_memory_once",
    "supersede_memory",
    "update_memory",
]

MAX_FACT_CHARS = 500
"""Longest fact accepted; facts are single short sentences."""

LIST_LIMIT = 10_000
"""Most facts :func:`list_memories` returns."""


def now_iso() -> str:
    """The current UTC time as an ISO 8601 string, as stored on facts."""
    return datetime.now(UTC).isoformat()


def normalize_fact(content: str) -> str:
    """Fold case, width, punctuation and spacing so trivially different wordings compare equal.

    >>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
    True
    >>> normalize_fact("住在杭州。") == normalize_fact("住在杭州")
    True
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


_FACT_KEYS = uuid.UUID("6f1d2c1e-5b7a-4c43-9d1e-2a8f0b6c7d3e")
"""Namespace of the uuid5 keys of facts."""


def fact_key(content: str) -> str:
    """The key a new fact is stored under: the same for the same normalised text.

    >>> fact_key("Lives in  Hangzhou.") == fact_key("lives in hangzhou")
    True
    >>> fact_key("Lives in Hangzhou") == fact_key("Lives in Chengdu")
    False
    """
    return uuid.uuid5(_FACT_KEYS, normalize_fact(content) or content).hex


def _clean(content: str) -> str:
    content = content.strip()
    if not content:
        raise ValueError("A fact's content cannot be empty.")
    if len(content) > MAX_FACT_CHARS:
        raise ValueError(
            f"A fact's content must be at most {MAX_FACT_CHARS} characters, got {len(content)}."
        )
    return content


async def _put(store: BaseStore, user_id: str, key: str, value: dict[str, Any]) -> None:
    namespace = user_facts_namespace(user_id)
    await store.aput(namespace, key, value)
    await record_write(store, namespace, key, value)


async def save_memory(store: BaseStore, user_id: str, content: str, **metadata: Any) -> str:
    """Store one new, current fact for ``user_id`` and return its key.

    Every call stores its own item with its own metadata, even when the same text is
    stored already (a conversation says "good night" many times). Consolidation, which
    must not store a fact twice, uses :func:`save_memory_once`.

    Args:
        store: The store to write to.
        user_id: Whose fact it is.
        content: The fact, one short sentence in the user's language.
        **metadata: Kept on the stored value, e.g. ``category``, ``confidence``,
            ``pinned``, ``thread_id``, ``message_id``.
    """
    value = _new_fact(user_id, content, metadata)
    key = uuid.uuid4().hex
    await _put(store, user_id, key, value)
    return key


async def save_memory_once(store: BaseStore, user_id: str, content: str, **metadata: Any) -> str:
    """Like :func:`save_memory`, but the key is :func:`fact_key` of the content.

    When a current fact with that key is already stored (the same fact, added meanwhile
    by another process), nothing is written and its key is returned. When that key holds
    a superseded fact (the user went back to something they had changed), the new fact
    gets a fresh random key, so the old one keeps its history.
    """
    value = _new_fact(user_id, content, metadata)
    key = fact_key(value["content"])
    existing = await store.aget(user_facts_namespace(user_id), key)
    if existing is not None:
        if is_current(existing.value):
            return key
        key = uuid.uuid4().hex
    await _put(store, user_id, key, value)
    return key


def _new_fact(user_id: str, content: str, metadata: dict[str, Any]) -> dict[str, Any]:
    content = _clean(content)
    user_facts_namespace(user_id)
    now = now_iso()
    return {
        "category": "other",
        "pinned": False,
        "mentions": 1,
        "history": [],
        "supersedes": None,
        "superseded_by": None,
        "valid_until": None,
        **metadata,
        "content": content,
        "lang": "zh" if is_cjk_text(content) else "en",
        "status": "current",
        "created_at": now,
        "updated_at": now,
    }


async def get_memory(store: BaseStore, user_id: str, key: str) -> Item | None:
    """One stored fact (current or superseded), or None."""
    return await store.aget(user_facts_namespace(user_id), key)


async def _require(store: BaseStore, user_id: str, key: str) -> Item:
    item = await get_memory(store, user_id, key)
    if item is None:
        raise KeyError(f"No fact with key={key!r} for user_id={user_id!r}.")
    return item


async def update_memory(
    store: BaseStore,
    user_id: str,
    key: str,
    content: str,
    *,
    thread_id: str | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """Reword a current fact (a refinement, not a contradiction), keeping the old wording.

    Returns the new value. ``changes`` may also set ``category``, ``pinned``,
    ``confidence``.
    """
    item = await _require(store, user_id, key)
    value = dict(item.value)
    if not is_current(value):
        raise ValueError(f"Fact {key!r} is superseded; supersede the current fact instead.")
    content = _clean(content)
    now = now_iso()
    if content != value.get("content"):
        value["history"] = [
            *value.get("history", []),
            {
                "event": "updated",
                "content": value.get("content"),
                "at": now,
                "thread_id": thread_id,
            },
        ]
    value.update(changes, content=content, updated_at=now)
    value["lang"] = "zh" if is_cjk_text(content) else "en"
    await _put(store, user_id, key, value)
    return value


async def supersede_memory(
    store: BaseStore,
    user_id: str,
    old_key: str,
    content: str,
    *,
    thread_id: str | None = None,
    **metadata: Any,
) -> str:
    """Replace a fact the user contradicted: a new current fact, the old one kept as history.

    The old fact gets ``status="superseded"``, ``superseded_by``, ``valid_until`` and a
    history entry saying when and in which thread it changed; it leaves recall and the
    profile but stays in the store. Returns the new fact's key.
    """
    old = await _require(store, user_id, old_key)
    new_key = await save_memory_once(
        store,
        user_id,
        content,
        **{"category": old.value.get("category", "other"), **metadata},
        supersedes=old_key,
        thread_id=thread_id,
    )
    now = now_iso()
    value = dict(old.value)
    value.update(
        status="superseded",
        superseded_by=new_key,
        valid_until=now,
        pinned=False,
        updated_at=now,
        history=[
            *value.get("history", []),
            {
                "event": "superseded",
                "content": value.get("content"),
                "at": now,
                "thread_id": thread_id,
                "by": new_key,
            },
        ],
    )
    await _put(store, user_id, old_key, value)
    return new_key


async def confirm_memory(
    store: BaseStore, user_id: str, key: str, *, pinned: bool | None = None
) -> None:
    """Note that the user said a stored fact again (it counts toward its importance)."""
    item = await _require(store, user_id, key)
    value = dict(item.value)
    value["mentions"] = int(value.get("mentions", 1)) + 1
    value["confirmed_at"] = now_iso()
    if pinned is not None:
        value["pinned"] = pinned
    await _put(store, user_id, key, value)


async def restore_memory(store: BaseStore, user_id: str, key: str, value: dict[str, Any]) -> None:
    """Put a fact back exactly as it was (used to undo a rolled-back turn)."""
    await _put(store, user_id, key, dict(value))


async def delete_memory(store: BaseStore, user_id: str, key: str) -> bool:
    """Delete a fact outright; returns whether it existed."""
    namespace = user_facts_namespace(user_id)
    if await store.aget(namespace, key) is None:
        return False
    await store.adelete(namespace, key)
    await record_write(store, namespace, key, None)
    return True


async def list_memories(
    store: BaseStore, user_id: str, *, include_superseded: bool = False
) -> list[Item]:
    """All of a user's facts, oldest first; superseded ones only when asked."""
    items = await store.asearch(user_facts_namespace(user_id), limit=LIST_LIMIT)
    kept = [item for item in items if include_superseded or is_current(item.value)]
    return sorted(kept, key=lambda item: (str(item.value.get("created_at", "")), item.key))
