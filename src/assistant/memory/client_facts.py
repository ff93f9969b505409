"""A fact a client puts through the store HTTP API: what it may set, and how it is written.

A client of the store API (`assistant.server.store_api`) writes a user's facts with the same limits,
``history`` and bookkeeping as the memory layer's own writers; the fields that record a
fact's versions and counts are the memory layer's alone (:data:`MEMORY_FIELDS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assistant.memory.facts import (
    clean_content,
    get_memory,
    language,
    new_fact_defaults,
    updated_history,
)
from assistant.memory.records import is_current, now_iso
from assistant.memory.writer import Writer

__all__ = [
    "MAX_CONTEXT_CHARS",
    "MAX_FACT_VALUE_CHARS",
    "MAX_FIELD_CHARS",
    "MEMORY_FIELDS",
    "plan_put",
    "put_memory",
]

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

MAX_CONTEXT_CHARS = 500
"""Longest ``context`` (what the fact answered) a client may set; the chat keeps 300."""

MAX_FIELD_CHARS = 200
"""Longest text in any other field a client sets (a category, a thread id, its own
metadata), and longest field name."""

MAX_FACT_VALUE_CHARS = 4000
"""Longest a fact's client fields may be in all, as JSON. Every field is indexed, copied
and sent with the fact: none may carry a megabyte that each search or write then reads."""


def plan_put(
    key: str, sent: Mapping[str, Any], stored: Mapping[str, Any] | None, *, now: str
) -> dict[str, Any]:
    """The value a fact put by a client is stored as, as the memory layer would write it.

    ``sent`` is the client's value, ``stored`` the fact's value in the store (None for a
    new key). The client sets ``content`` (required, at most
    `assistant.memory.facts.MAX_FACT_CHARS`), ``pinned`` (true or false), ``confidence``
    (0 to 1), ``category``, ``context`` (at most `MAX_CONTEXT_CHARS`) and any metadata of its
    own (texts and names at most `MAX_FIELD_CHARS`, `MAX_FACT_VALUE_CHARS` in all); the rest
    is kept from ``stored``
    (or a new fact's defaults). A changed ``content`` keeps the old wording in
    ``history``, as `assistant.memory.facts.update_memory` does. Raises
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
    content = _sent_content(sent)
    base: dict[str, Any] = dict(stored) if stored is not None else _new_fact(content, now=now)
    _check_memory_fields(key, sent, base)
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
            value["history"] = updated_history(stored, at=now, thread_id=None)
    value["lang"] = language(content)
    value["updated_at"] = now
    return value


def _sent_content(sent: Mapping[str, Any]) -> str:
    content = sent.get("content")
    if not isinstance(content, str):
        raise ValueError(
            f"A fact put through the store API needs its text in 'content', got {content!r:.80}."
        )
    return clean_content(content)


def _new_fact(content: str, *, now: str) -> dict[str, Any]:
    return {**new_fact_defaults(), "content": content, "status": "current", "created_at": now}


def _check_memory_fields(key: str, sent: Mapping[str, Any], base: Mapping[str, Any]) -> None:
    forged = sorted(name for name in MEMORY_FIELDS if name in sent and sent[name] != base.get(name))
    if forged:
        raise ValueError(
            f"The store API cannot set {', '.join(forged)} of fact {key!r}: the memory layer "
            "keeps a fact's versions and counts. Send them back unchanged or leave them out; "
            "to correct a fact, put its new content (its old wording is kept in history), "
            "or use PATCH /memory/facts/{key}."
        )


def _check_client_fields(key: str, sent: Mapping[str, Any]) -> None:
    _check_sizes(key, sent)
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


def _check_sizes(key: str, sent: Mapping[str, Any]) -> None:
    """Refuse a field longer than it may be, so every stored field of a fact is bounded.

    >>> _check_sizes("k", {"content": "Likes tea", "context": "x" * 600})
    Traceback (most recent call last):
    ...
    ValueError: context of fact 'k' may be at most 500 characters, got 600.
    """
    own = {name: value for name, value in sent.items() if name not in MEMORY_FIELDS}
    for name, value in own.items():
        if name == "content":
            continue  # bounded by clean_content (MAX_FACT_CHARS)
        if len(name) > MAX_FIELD_CHARS:
            raise ValueError(
                f"A field name of fact {key!r} may be at most {MAX_FIELD_CHARS} characters, "
                f"got {len(name)}."
            )
        most = MAX_CONTEXT_CHARS if name == "context" else MAX_FIELD_CHARS
        for text in _texts(value):
            if len(text) > most:
                raise ValueError(
                    f"{name} of fact {key!r} may be at most {most} characters, got {len(text)}."
                )
    size = len(json.dumps(own, ensure_ascii=False, default=str))
    if size > MAX_FACT_VALUE_CHARS:
        raise ValueError(
            f"Fact {key!r} may hold at most {MAX_FACT_VALUE_CHARS} characters of fields in "
            f"all (as JSON), got {size}."
        )


def _texts(value: object) -> list[str]:
    """Every string in ``value``, keys of nested objects included."""
    found: list[str] = []
    pending = [value]
    while pending:
        part = pending.pop()
        if isinstance(part, str):
            found.append(part)
        elif isinstance(part, Mapping):
            pending.extend(part.keys())
            pending.extend(part.values())
        elif isinstance(part, list | tuple):
            pending.extend(part)
    return found


async def put_memory(
    writer: Writer, key: str, sent: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Write the fact a client put as ``key`` (see :func:`plan_put`); return (before, after).

    ``before`` is the stored value it replaced, None for a new fact.
    """
    stored = await get_memory(writer.store, writer.user_id, key)
    before = dict(stored.value) if stored is not None else None
    value = plan_put(key, sent, before, now=now_iso())
    if value != before:
        await writer.put_fact(key, value, before=before)
    return before, value
