"""Episodic memory: what was said and decided in a past conversation, one episode per thread.

When `compress` folds a thread's old messages into its running summary, the summary is
saved (or refreshed) as the thread's episode in ``("user_episodes", user_id)``, with the
thread id and the time span it covers. Recall searches episodes next to facts, so "what
did we decide about the trip last week?" works from a new thread.

Episodes are searched with the same hybrid machinery as facts
(:func:`assistant.memory.search.index.hybrid_search`): embeddings, BM25, and the days the
question names against the days each episode spans (``started_at`` to ``ended_at``), so
"what did we talk about last Tuesday?" finds Tuesday's conversation.

A summary is the model's own words, so forgetting a fact only takes out the places where a
summary quotes it word for word (`redact_episodes`); a paraphrase stays until the user
deletes the episode (the store API's ``DELETE`` on ``("user_episodes", user)``).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, SearchItem

from assistant.memory.namespaces import every_item, user_episodes_namespace
from assistant.memory.records import episode_record, now_iso
from assistant.memory.search.index import hybrid_search
from assistant.memory.wording import redact_text
from assistant.memory.writer import Writer

__all__ = ["list_episodes", "recall_episodes", "redact_episodes", "save_episode"]


async def save_episode(
    writer: Writer, *, thread_id: str, summary: str, started_at: str | None = None
) -> dict[str, Any]:
    """Save or refresh the episode of ``thread_id`` with its latest ``summary``.

    ``started_at`` is kept from the first save unless given; ``ended_at`` is now.
    """
    existing = await writer.store.aget(user_episodes_namespace(writer.user_id), thread_id)
    now = now_iso()
    value = episode_record(
        summary=summary,
        thread_id=thread_id,
        started_at=started_at or (existing.value.get("started_at") if existing else None) or now,
        ended_at=now,
        updated_at=now,
    )
    await writer.put_episode(thread_id, value)
    return value


async def recall_episodes(
    store: BaseStore,
    user_id: str,
    query: str,
    *,
    limit: int,
    exclude_thread_id: str | None = None,
    now: datetime | None = None,
) -> list[SearchItem]:
    """The user's past episodes most relevant to ``query``, best first, skipping one thread.

    ``now`` is when the question is asked (default: now), for "last Tuesday" and the like.
    """
    if limit <= 0 or not query.strip():
        return []
    found = await hybrid_search(
        store,
        user_episodes_namespace(user_id),
        query,
        limit=limit + (exclude_thread_id is not None),
        now=now,
    )
    return [item for item in found if item.key != exclude_thread_id][:limit]


LIST_LIMIT = 200
"""Most episodes `list_episodes` reads."""


async def list_episodes(
    store: BaseStore, user_id: str, *, limit: int = LIST_LIMIT
) -> list[SearchItem]:
    """The user's episodes (one per past conversation), the most recently ended first."""
    found = await store.asearch(user_episodes_namespace(user_id), limit=LIST_LIMIT)
    found.sort(key=lambda item: str(item.value.get("ended_at", "")), reverse=True)
    return found[:limit]


async def redact_episodes(writer: Writer, keys: Collection[str], texts: Collection[str]) -> int:
    """Replace word-for-word quotes of ``texts`` in the user's episodes; return how many changed.

    Each changed episode is written back with the rest of its record as it was, so recall
    re-embeds it. An episode names no fact by key, so ``keys`` are not read.
    """
    changed = 0
    for item in await every_item(writer.store, user_episodes_namespace(writer.user_id)):
        summary = str(item.value.get("content", ""))
        redacted = redact_text(summary, texts)
        if redacted == summary:
            continue
        await writer.put_episode(item.key, {**item.value, "content": redacted})
        changed += 1
    return changed
