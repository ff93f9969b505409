"""Episodic memory: what was said and decided in a past conversation, one episode per thread.

When `compress` folds a thread's old messages into its running summary, the summary is
saved (or refreshed) as the thread's episode in ``("user_episodes", user_id)``, with the
thread id and the time span it covers. Recall searches episodes next to facts, so "what
did we decide about the trip last week?" works from a new thread.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore, SearchItem

from assistant.memory.facts import now_iso
from assistant.memory.namespaces import user_episodes_namespace

__all__ = ["recall_episodes", "save_episode"]


async def save_episode(
    store: BaseStore,
    user_id: str,
    *,
    thread_id: str,
    summary: str,
    started_at: str | None = None,
) -> dict[str, Any]:
    """Save or refresh the episode of ``thread_id`` with its latest ``summary``.

    ``started_at`` is kept from the first save unless given; ``ended_at`` is now.
    """
    namespace = user_episodes_namespace(user_id)
    existing = await store.aget(namespace, thread_id)
    now = now_iso()
    value: dict[str, Any] = {
        "content": summary.strip(),
        "thread_id": thread_id,
        "started_at": started_at or (existing.value.get("started_at") if existing else None) or now,
        "ended_at": now,
        "updated_at": now,
    }
    await store.aput(namespace, thread_id, value)
    return value


async def recall_episodes(
    store: BaseStore,
    user_id: str,
    query: str,
    *,
    limit: int,
    exclude_thread_id: str | None = None,
) -> list[SearchItem]:
    """The user's past episodes most relevant to ``query``, best first, skipping one thread."""
    if limit <= 0:
        return []
    found = await store.asearch(
        user_episodes_namespace(user_id), query=query.strip() or None, limit=limit + 1
    )
    return [item for item in found if item.key != exclude_thread_id][:limit]
