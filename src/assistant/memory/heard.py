"""What memory made of the user's last messages: kept, nothing to keep, skipped or failed.

A user who said "I'm allergic to shellfish" must be able to see whether it was kept. Each
turn's outcome is recorded in ``("memory_heard", user_id)``, one item per thread keyed by the
thread id, holding that thread's last `PER_THREAD` outcomes (runs on one thread never
overlap, so the read-modify-write cannot lose an entry)::

    {"turns": [{"at": "2026-...", "thread_id": "...", "message_id": "...",
                "excerpt": "I'm allergic to shellfish", "outcome": "kept",
                "reason": "added 1", "facts": ["<key>"]}, ...]}

A message extracted in a batch gets the batch's outcome. When the user forgets a fact, the
excerpts of the messages that changed it, or that say it word for word, are blanked
(`forget_heard`).

``outcome`` is one of `OUTCOMES`. The console (``GET /memory/heard``) and ``assistant
memories`` show the newest across threads.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.namespaces import every_item, user_heard_namespace
from assistant.memory.records import Owner, now_iso
from assistant.memory.wording import quotes_fact

__all__ = [
    "OUTCOMES",
    "PER_THREAD",
    "forget_heard",
    "heard_message_ids",
    "list_heard",
    "record_heard",
]

OUTCOMES = ("kept", "nothing", "held", "skipped", "failed")
"""``kept``: the message changed memory; ``nothing``: the model found nothing new to keep;
``held``: the gate was unsure, so the message waits to be extracted with the next ones
(`assistant.memory.held`; its entry is replaced by the outcome then); ``skipped``: the gate
judged it held no fact, so no model read it; ``failed``: the extraction failed (the reason
says why, and whether it will be tried again with the user's next turn) and nothing was
saved from it yet."""

PER_THREAD = 10
"""How many of a thread's latest outcomes are kept."""

EXCERPT_CHARS = 120
"""How much of the message the record shows, so the user can recognise it."""

THREADS_LISTED = 200
"""At most this many threads' records are read for a listing."""


def excerpt(text: str) -> str:
    r"""The start of ``text`` on one line, cut at `EXCERPT_CHARS` with an ellipsis.

    >>> excerpt("I'm allergic\nto shellfish")
    "I'm allergic to shellfish"
    >>> len(excerpt("x" * 500))
    121
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"


async def record_heard(
    store: BaseStore,
    user_id: str,
    *,
    thread_id: str,
    message_id: str,
    text: str,
    outcome: str,
    reason: str,
    facts: list[str] | None = None,
) -> dict[str, Any]:
    """Add one turn's outcome to the thread's record and return the entry."""
    if outcome not in OUTCOMES:
        raise ValueError(f"Unknown {outcome=}. Expected one of {OUTCOMES}.")
    entry: dict[str, Any] = {
        "at": now_iso(),
        "thread_id": thread_id,
        "message_id": message_id,
        "excerpt": excerpt(text),
        "outcome": outcome,
        "reason": reason,
        "facts": list(facts or []),
    }
    namespace = user_heard_namespace(user_id)
    current = await store.aget(namespace, thread_id)
    turns = list(current.value.get("turns", [])) if current is not None else []
    turns = [turn for turn in turns if turn.get("message_id") != message_id or not message_id]
    await store.aput(namespace, thread_id, {"turns": [*turns, entry][-PER_THREAD:]}, index=False)
    return entry


async def list_heard(store: BaseStore, user_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
    """The user's latest turn outcomes across threads, newest first."""
    items = await store.asearch(user_heard_namespace(user_id), limit=THREADS_LISTED)
    turns = [turn for item in items for turn in item.value.get("turns", [])]
    return sorted(turns, key=lambda turn: str(turn.get("at", "")), reverse=True)[:limit]


async def heard_message_ids(store: BaseStore, user_id: str, thread_id: str) -> set[str]:
    """The ids of the thread's messages whose outcome is recorded (its latest `PER_THREAD`)."""
    item = await store.aget(user_heard_namespace(user_id), thread_id)
    turns = item.value.get("turns", []) if item is not None else []
    return {str(turn.get("message_id")) for turn in turns if turn.get("message_id")}


async def forget_heard(writer: Owner, keys: Collection[str], texts: Collection[str]) -> int:
    """Blank the excerpt of every message that changed a forgotten fact or quotes one.

    ``keys`` are the forgotten fact and its earlier versions, ``texts`` their words.
    The entry stays (what became of the message), without the words. Returns how many
    entries were blanked.
    """
    store, namespace = writer.store, user_heard_namespace(writer.user_id)
    blanked = 0
    for item in await every_item(store, namespace):  # every thread's, not the latest few
        turns = list(item.value.get("turns", []))
        changed = False
        for turn in turns:
            excerpt = str(turn.get("excerpt") or "")
            if excerpt and (
                any(key in keys for key in turn.get("facts", []))
                or any(quotes_fact(excerpt, text) for text in texts)
            ):
                turn["excerpt"], turn["forgotten"] = "", True
                changed, blanked = True, blanked + 1
        if changed:
            await store.aput(namespace, item.key, {"turns": turns}, index=False)
    return blanked
