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

Each writer takes the `assistant.memory.writer.Writer` of the change it is part of, which
writes the fact, keeps the recall index in step and writes the audit entries; callers
outside the package go through `assistant.memory.UserMemory`. A fact a client puts through
the store API is checked and written by `assistant.memory.client_facts`.

Facts that consolidation adds are keyed by their normalised text (:func:`fact_key`,
:func:`save_memory_once`), so two processes that add the same fact for the same user at
the same moment (two threads of one user, served by two replicas) write one item, not two.
:func:`save_memory` itself stores every call as its own item, with its own metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from langgraph.store.base import BaseStore, Item

from assistant.inference.tokens import is_cjk_text
from assistant.memory.namespaces import every_item, user_facts_namespace
from assistant.memory.records import is_current, now_iso
from assistant.memory.wording import normalize_fact, redact_text
from assistant.memory.writer import Writer

__all__ = [
    "MAX_FACT_CHARS",
    "clean_content",
    "confirm_memory",
    "delete_memory",
    "fact_key",
    "fact_versions",
    "get_memory",
    "language",
    "list_memories",
    "new_fact_defaults",
    "normalize_fact",
    "redact_contexts",
    "save_memory",
    "save_memory_once",
    "supersede_memory",
    "update_memory",
    "updated_history",
]


MAX_FACT_CHARS = 500
"""Longest fact accepted; facts are single short sentences."""

LIST_LIMIT = 10_000
"""Most facts :func:`list_memories` returns."""


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


def clean_content(content: str) -> str:
    """A fact's text, stripped; :class:`ValueError` when it is empty or too long."""
    content = content.strip()
    if not content:
        raise ValueError("A fact's content cannot be empty.")
    if len(content) > MAX_FACT_CHARS:
        raise ValueError(
            f"A fact's content must be at most {MAX_FACT_CHARS} characters, got {len(content)}."
        )
    return content


def language(content: str) -> str:
    """The ``lang`` stored with a fact: ``zh`` for Chinese, Japanese or Korean, else ``en``."""
    return "zh" if is_cjk_text(content) else "en"


def new_fact_defaults() -> dict[str, Any]:
    """What a new fact holds unless its writer says otherwise (a fresh dict each time)."""
    return {
        "category": "other",
        "pinned": False,
        "mentions": 1,
        "history": [],
        "supersedes": None,
        "superseded_by": None,
        "valid_until": None,
    }


def updated_history(
    value: Mapping[str, Any], *, at: str, thread_id: str | None, **event: Any
) -> list[dict[str, Any]]:
    """``value``'s history with one more entry: its current wording, and when it changed.

    >>> updated_history({"content": "Likes tea"}, at="T1", thread_id=None)
    [{'event': 'updated', 'content': 'Likes tea', 'at': 'T1', 'thread_id': None}]
    """
    entry = {"event": "updated", "content": value.get("content"), "at": at}
    return [*value.get("history", []), {**entry, "thread_id": thread_id, **event}]


async def save_memory(writer: Writer, content: str, **metadata: Any) -> str:
    """Store one new, current fact and return its key.

    Every call stores its own item with its own metadata, even when the same text is
    stored already (a conversation says "good night" many times). Consolidation, which
    must not store a fact twice, uses :func:`save_memory_once`.

    Args:
        writer: The change it is part of (whose fact it is, and who asked).
        content: The fact, one short sentence in the user's language.
        **metadata: Kept on the stored value, e.g. ``category``, ``confidence``,
            ``pinned``, ``thread_id``, ``message_id``.
    """
    key = uuid.uuid4().hex
    await writer.put_fact(key, _new_fact(content, metadata), before=None)
    return key


async def save_memory_once(writer: Writer, content: str, **metadata: Any) -> str:
    """Like :func:`save_memory`, but the key is :func:`fact_key` of the content.

    When a current fact with that key is already stored (the same fact, added meanwhile
    by another process), nothing is written and its key is returned. When that key holds
    a superseded fact (the user went back to something they had changed), the new fact
    gets a fresh random key, so the old one keeps its history.
    """
    value = _new_fact(content, metadata)
    key = fact_key(value["content"])
    existing = await get_memory(writer.store, writer.user_id, key)
    if existing is not None:
        if is_current(existing.value):
            return key
        key = uuid.uuid4().hex
    await writer.put_fact(key, value, before=None)
    return key


def _new_fact(content: str, metadata: dict[str, Any]) -> dict[str, Any]:
    content = clean_content(content)
    now = now_iso()
    return {
        **new_fact_defaults(),
        **metadata,
        "content": content,
        "lang": language(content),
        "status": "current",
        "created_at": now,
        "updated_at": now,
    }


async def get_memory(store: BaseStore, user_id: str, key: str) -> Item | None:
    """One stored fact (current or superseded), or None."""
    return await store.aget(user_facts_namespace(user_id), key)


async def _require(writer: Writer, key: str) -> Item:
    item = await get_memory(writer.store, writer.user_id, key)
    if item is None:
        raise KeyError(f"No fact with key={key!r} for user_id={writer.user_id!r}.")
    return item


async def update_memory(writer: Writer, key: str, content: str, **changes: Any) -> dict[str, Any]:
    """Reword a current fact (a refinement, not a contradiction), keeping the old wording.

    Returns the new value. ``changes`` may also set ``category``, ``pinned``,
    ``confidence``.
    """
    item = await _require(writer, key)
    value = dict(item.value)
    if not is_current(value):
        raise ValueError(f"Fact {key!r} is superseded; supersede the current fact instead.")
    content = clean_content(content)
    now = now_iso()
    reworded = content != value.get("content")
    if reworded:
        value["history"] = updated_history(value, at=now, thread_id=writer.thread_id)
    value.update(changes, content=content, updated_at=now, lang=language(content))
    await writer.put_fact(key, value, before=item.value)
    if reworded:
        old = str(item.value.get("content", ""))
        await writer.audit("update", fact_key=key, content=old, new_content=content)
    return value


async def supersede_memory(
    writer: Writer, old_key: str, content: str, *, action: str, **metadata: Any
) -> str:
    """Replace a fact the user contradicted: a new current fact, the old one kept as history.

    The old fact gets ``status="superseded"``, ``superseded_by``, ``valid_until`` and a
    history entry saying when and in which thread it changed; it leaves recall and the
    profile but stays in the store. The audit trail records the change as ``action``
    (``supersede`` or ``correct``) with both wordings. Returns the new fact's key.
    """
    old = await _require(writer, old_key)
    new_key = await save_memory_once(
        writer,
        content,
        **{"category": old.value.get("category", "other"), **metadata},
        supersedes=old_key,
        thread_id=writer.thread_id,
    )
    now = now_iso()
    value = dict(old.value)
    value.update(
        status="superseded",
        superseded_by=new_key,
        valid_until=now,
        pinned=False,
        updated_at=now,
        history=updated_history(
            value, at=now, thread_id=writer.thread_id, event="superseded", by=new_key
        ),
    )
    await writer.put_fact(old_key, value, before=old.value)
    await writer.audit(
        action,
        fact_key=old_key,
        content=str(old.value.get("content", "")),
        new_content=content,
        new_fact_key=new_key,
    )
    return new_key


async def confirm_memory(writer: Writer, key: str, *, pinned: bool | None = None) -> None:
    """Note that the user said a stored fact again (it counts toward its importance)."""
    item = await _require(writer, key)
    value = dict(item.value)
    value["mentions"] = int(value.get("mentions", 1)) + 1
    value["confirmed_at"] = now_iso()
    if pinned is not None:
        value["pinned"] = pinned
    await writer.put_fact(key, value, before=item.value)


async def delete_memory(writer: Writer, key: str) -> bool:
    """Delete a fact outright; returns whether it existed."""
    item = await get_memory(writer.store, writer.user_id, key)
    if item is None:
        return False
    await writer.put_fact(key, None, before=item.value)
    return True


async def list_memories(
    store: BaseStore, user_id: str, *, include_superseded: bool = False
) -> list[Item]:
    """All of a user's facts, oldest first; superseded ones only when asked."""
    items = await store.asearch(user_facts_namespace(user_id), limit=LIST_LIMIT)
    kept = [item for item in items if include_superseded or is_current(item.value)]
    return sorted(kept, key=lambda item: (str(item.value.get("created_at", "")), item.key))


async def fact_versions(store: BaseStore, user_id: str, key: str) -> list[Item]:
    """The fact ``key`` and every earlier version of it, the fact itself first.

    An earlier version is a fact it superseded (``supersedes``, or a fact whose
    ``superseded_by`` names it), and so on back; the versions that came after it are not
    included. Empty when the fact does not exist.
    """
    items = {item.key: item for item in await every_item(store, user_facts_namespace(user_id))}
    return [
        items[found] for found in _earlier_versions(key, {k: i.value for k, i in items.items()})
    ]


def _earlier_versions(key: str, values: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``key`` and the keys of its earlier versions among ``values``, nearest first.

    >>> _earlier_versions("c", {"a": {"superseded_by": "b"}, "b": {"superseded_by": "c"},
    ...                         "c": {"supersedes": "b"}, "d": {}})
    ['c', 'b', 'a']
    """
    before: dict[str, list[str]] = {}
    for found, value in values.items():
        if successor := value.get("superseded_by"):
            before.setdefault(str(successor), []).append(found)
    chain: list[str] = []
    pending = [key] if key in values else []
    while pending:
        current = pending.pop(0)
        if current in chain:
            continue
        chain.append(current)
        predecessor = values[current].get("supersedes")
        pending += [p for p in (str(predecessor or ""), *before.get(current, ())) if p in values]
    return chain


async def redact_contexts(writer: Writer, keys: Collection[str], texts: Collection[str]) -> int:
    """Take word-for-word quotes of ``texts`` out of the ``context`` of the user's facts.

    A fact's context is what the assistant said before the message it came from, which may
    quote a fact the user has since forgotten (``keys``, already deleted, are not read).
    Returns how many facts changed.
    """
    changed = 0
    for item in await every_item(writer.store, user_facts_namespace(writer.user_id)):
        context = item.value.get("context")
        if not isinstance(context, str) or (redacted := redact_text(context, texts)) == context:
            continue
        await writer.put_fact(item.key, {**item.value, "context": redacted}, before=item.value)
        changed += 1
    return changed
