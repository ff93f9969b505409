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

A client of the store HTTP API writes facts through :func:`put_memory` (see
`assistant.store_api`): the same limits, ``history`` and bookkeeping, and the fields above
that record a fact's versions are the memory layer's alone (:data:`MEMORY_FIELDS`).

Facts that consolidation adds are keyed by their normalised text (:func:`fact_key`,
:func:`save_memory_once`), so two processes that add the same fact for the same user at
the same moment (two threads of one user, served by two replicas) write one item, not two.
:func:`save_memory` itself stores every call as its own item, with its own metadata.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, Item

from assistant.memory.index import record_write
from assistant.memory.namespaces import user_facts_namespace
from assistant.memory.records import FORGOTTEN, is_current
from assistant.tokens import is_cjk_text

__all__ = [
    "MAX_FACT_CHARS",
    "MEMORY_FIELDS",
    "confirm_memory",
    "delete_memory",
    "fact_key",
    "fact_versions",
    "get_memory",
    "list_memories",
    "normalize_fact",
    "plan_put",
    "put_memory",
    "quotes_fact",
    "redact_contexts",
    "redact_text",
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


MIN_QUOTED_CHARS = 8
"""Shortest normalised fact (4 for Chinese, Japanese or Korean) that :func:`quotes_fact`
looks for inside a longer text; a shorter one only matches a text that says exactly it,
so that forgetting "Is 30" does not touch every text holding "this 30"."""


def quotes_fact(text: str, fact: str) -> bool:
    """Whether ``text`` says ``fact`` word for word (case, width, punctuation and spacing aside).

    >>> quotes_fact("I said: lives in  Hangzhou!", "Lives in Hangzhou")
    True
    >>> quotes_fact("我现在住在杭州了", "住在杭州"), quotes_fact("this 30", "Is 30")
    (True, False)
    """
    wanted, found = normalize_fact(fact), normalize_fact(text)
    if not wanted:
        return False
    shortest = MIN_QUOTED_CHARS // 2 if is_cjk_text(fact) else MIN_QUOTED_CHARS
    return wanted in found if len(wanted) >= shortest else wanted == found


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
        **_defaults(),
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


async def fact_versions(store: BaseStore, user_id: str, key: str) -> list[Item]:
    """The fact ``key`` and every earlier version of it, the fact itself first.

    An earlier version is a fact it superseded (``supersedes``, or a fact whose
    ``superseded_by`` names it), and so on back; the versions that came after it are not
    included. Empty when the fact does not exist.
    """
    items = {
        item.key: item for item in await list_memories(store, user_id, include_superseded=True)
    }
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


MEMORY_FIELDS = (
    "status",
    "history",
    "supersedes",
    "superseded_by",
    "valid_until",
    "mentions",
    "confirmed_at",
)
"""Fields of a stored fact that only the memory layer writes: its versions and how often
the user said it. A fact put through the store API may send them back unchanged, never
different (:func:`plan_put`)."""

STAMPED_FIELDS = ("created_at", "updated_at", "lang")
"""Fields the memory layer sets on every write; a client's values for them are ignored."""


def plan_put(
    key: str, sent: Mapping[str, Any], stored: Mapping[str, Any] | None, *, now: str
) -> dict[str, Any]:
    """The value a fact put by a client is stored as, as the memory layer would write it.

    ``sent`` is the client's value, ``stored`` the fact's value in the store (None for a
    new key). The client sets ``content`` (required, at most :data:`MAX_FACT_CHARS`),
    ``pinned`` (true or false), ``confidence`` (0 to 1), ``category`` and any metadata of its
    own; the rest is kept from ``stored`` (or a new fact's defaults). A changed ``content``
    keeps the old wording in ``history``, as :func:`update_memory` does. Raises
    :class:`ValueError`, naming the field, for anything else: :data:`MEMORY_FIELDS`
    different from what is stored, or any change to a superseded fact.

    >>> new = plan_put("k", {"content": "Likes tea", "pinned": True}, None, now="T1")
    >>> new["status"], new["pinned"], new["history"], new["created_at"]
    ('current', True, [], 'T1')
    >>> plan_put("k", {"content": "Likes green tea"}, new, now="T2")["history"]
    [{'event': 'updated', 'content': 'Likes tea', 'at': 'T2', 'thread_id': None}]
    >>> plan_put("k", {"content": "Likes tea", "history": [{"content": "x"}]}, new, now="T2")
    Traceback (most recent call last):
    ...
    ValueError: The store API cannot set history of fact 'k': ...
    """
    content = sent.get("content")
    if not isinstance(content, str):
        raise ValueError(
            f"A fact put through the store API needs its text in 'content', got {content!r:.80}."
        )
    content = _clean(content)
    base: dict[str, Any] = (
        dict(stored) if stored is not None else _new_fact_fields(content, now=now)
    )
    forged = sorted(name for name in MEMORY_FIELDS if name in sent and sent[name] != base.get(name))
    if forged:
        raise ValueError(
            f"The store API cannot set {', '.join(forged)} of fact {key!r}: the memory layer "
            "keeps a fact's versions and counts. Send them back unchanged or leave them out; "
            "to correct a fact, put its new content (its old wording is kept in history), "
            "or use PATCH /memory/facts/{key}."
        )
    _check_client_fields(key, sent)
    value = dict(base)
    value.update(
        {name: v for name, v in sent.items() if name not in (*MEMORY_FIELDS, *STAMPED_FIELDS)}
    )
    value["content"] = content
    if stored is not None:
        if value == dict(stored):
            return value
        if not is_current(dict(stored)):
            raise ValueError(
                f"Fact {key!r} is superseded: it is kept as history and cannot be changed; "
                "change the current fact instead, or delete this one."
            )
        if content != stored.get("content"):
            value["history"] = [
                *stored.get("history", []),
                {
                    "event": "updated",
                    "content": stored.get("content"),
                    "at": now,
                    "thread_id": None,
                },
            ]
    value["lang"] = "zh" if is_cjk_text(content) else "en"
    value["updated_at"] = now
    return value


def _check_client_fields(key: str, sent: Mapping[str, Any]) -> None:
    pinned = sent.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValueError(f"pinned of fact {key!r} must be true or false, got {pinned!r:.80}.")
    confidence = sent.get("confidence", 1.0)
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise ValueError(
            f"confidence of fact {key!r} must be a number from 0 to 1, got {confidence!r:.80}."
        )


def _defaults() -> dict[str, Any]:
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


def _new_fact_fields(content: str, *, now: str) -> dict[str, Any]:
    return {**_defaults(), "content": content, "status": "current", "created_at": now}


async def put_memory(
    store: BaseStore, user_id: str, key: str, sent: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Write the fact a client put as ``key`` (see :func:`plan_put`); return (before, after).

    ``before`` is the stored value it replaced, None for a new fact.
    """
    stored = await get_memory(store, user_id, key)
    before = dict(stored.value) if stored is not None else None
    value = plan_put(key, sent, before, now=now_iso())
    if value != before:
        await _put(store, user_id, key, value)
    return before, value


def redact_text(text: str, facts: Iterable[str]) -> str:
    """``text`` with every word-for-word occurrence of each of ``facts`` replaced.

    Case and spacing are ignored, and so is a fact's final full stop; a fact shorter than
    :data:`MIN_QUOTED_CHARS` (after normalising) is left alone, as in :func:`quotes_fact`.

    >>> redact_text("The user lives in  Hangzhou and likes tea.", ["Lives in Hangzhou."])
    'The user [forgotten] and likes tea.'
    """
    for fact in sorted(facts, key=len, reverse=True):  # "X, near Y" before "X"
        words = fact.strip().rstrip(".。!！").split()
        shortest = MIN_QUOTED_CHARS // 2 if is_cjk_text(fact) else MIN_QUOTED_CHARS
        if not words or len(normalize_fact(fact)) < shortest:
            continue
        pattern = r"\s+".join(re.escape(word) for word in words)
        text = re.sub(pattern, FORGOTTEN, text, flags=re.IGNORECASE)
    return text


async def redact_contexts(store: BaseStore, user_id: str, texts: Iterable[str]) -> int:
    """Take word-for-word quotes of ``texts`` out of the ``context`` of the user's facts.

    A fact's context is what the assistant said before the message it came from, which may
    quote a fact the user has since forgotten. Returns how many facts changed.
    """
    texts = list(texts)
    changed = 0
    for item in await list_memories(store, user_id, include_superseded=True):
        context = item.value.get("context")
        if not isinstance(context, str) or (redacted := redact_text(context, texts)) == context:
            continue
        await _put(store, user_id, item.key, {**item.value, "context": redacted})
        changed += 1
    return changed
