"""Messages held for a batch: the gate was unsure, so one extraction call covers several.

A message the gate judges might state a fact (`assistant.extraction.gate`, decision ``hold``) is not
always extracted in its own turn. It waits in ``("memory_held", user_id)``, one item per
message keyed ``"<thread id>:<message id>"``, until `assistant.extraction.extract` extracts it
together with others (when, is said there). One item per message means that two runs
releasing messages at once can only extract one twice (consolidation then finds it already
known), never drop one::

    {"thread_id": "...", "id": "<message id>", "text": "...", "at": "2026-...",
     "context": "<what the assistant said just before>", "turn": 3, "attempts": 0}

``attempts`` counts the extractions of it that failed: a message whose extraction failed
(the model was down) is held again, to be tried with the user's next turn, until
`assistant.extraction.MAX_EXTRACTION_ATTEMPTS`.

A held message that says a fact the user then forgets word for word is dropped unread, and
one whose context quotes it loses the quote (`forget_held`), so a later batch cannot learn
the fact again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.namespaces import every_item, user_held_namespace
from assistant.memory.records import Owner, now_iso
from assistant.memory.wording import quotes_fact, redact_text

__all__ = ["MAX_HELD", "forget_held", "hold_message", "held_messages", "release_held"]

MAX_HELD = 100
"""At most this many of a user's held messages are read at once (a handful is normal)."""


def _key(thread_id: str, message_id: str) -> str:
    return f"{thread_id}:{message_id}"


async def hold_message(
    store: BaseStore,
    user_id: str,
    *,
    thread_id: str,
    message_id: str,
    text: str,
    context: str = "",
    turn: int | None = None,
    attempts: int = 0,
    at: str = "",
) -> dict[str, Any]:
    """Hold a message of ``thread_id`` for a batch; return its record.

    ``context`` and ``turn`` are kept for the facts it yields (`assistant.extraction.extract`);
    ``attempts`` is how many extractions of it failed, ``at`` when it was first held
    (empty: now).
    """
    record: dict[str, Any] = {
        "thread_id": thread_id,
        "id": message_id,
        "text": text,
        "at": at or now_iso(),
        "context": context,
        "turn": turn,
        "attempts": attempts,
    }
    key = _key(thread_id, message_id)
    await store.aput(user_held_namespace(user_id), key, record, index=False)
    return record


async def held_messages(
    store: BaseStore, user_id: str, *, thread_id: str | None = None, other_than: str | None = None
) -> list[dict[str, Any]]:
    """The user's held messages, oldest first: of one thread, of all others, or all."""
    items = await store.asearch(user_held_namespace(user_id), limit=MAX_HELD)
    found = [
        item.value
        for item in items
        if (thread_id is None or item.value.get("thread_id") == thread_id)
        and (other_than is None or item.value.get("thread_id") != other_than)
    ]
    return sorted(found, key=lambda record: str(record.get("at", "")))


async def release_held(store: BaseStore, user_id: str, records: Iterable[dict[str, Any]]) -> None:
    """Drop the given held messages (they were extracted)."""
    namespace = user_held_namespace(user_id)
    for record in records:
        key = _key(str(record.get("thread_id", "")), str(record.get("id", "")))
        await store.adelete(namespace, key)


async def forget_held(writer: Owner, keys: Collection[str], texts: Collection[str]) -> int:
    """Drop the held messages that say one of ``texts`` word for word; return how many changed.

    A message kept because only its ``context`` quoted one keeps the rest of its context.
    ``keys`` are not read: a held message has changed no fact yet.
    """
    store, user_id = writer.store, writer.user_id
    changed = 0
    records = [item.value for item in await every_item(store, user_held_namespace(user_id))]
    for record in records:
        if any(quotes_fact(str(record.get("text", "")), text) for text in texts):
            await release_held(store, user_id, [record])
        elif (context := str(record.get("context") or "")) != redact_text(context, texts):
            key = _key(str(record.get("thread_id", "")), str(record.get("id", "")))
            redacted = {**record, "context": redact_text(context, texts)}
            await store.aput(user_held_namespace(user_id), key, redacted, index=False)
        else:
            continue
        changed += 1
    return changed
