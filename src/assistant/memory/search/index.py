"""Hybrid recall over a user's memories: the index kept in step, ranked, re-read.

The store stays the source of truth; an in-process index of each user's current facts
(:mod:`assistant.memory.search.user_index`) makes recall fast (a dot product and an
inverted-index lookup instead of a store scan) and lets it fuse vector, keyword and date
rankings (:mod:`assistant.memory.search.ranking`). The index is kept in step with the store by
:mod:`assistant.memory.search.sync` (writes through :func:`record_write`, a revision token, a
probe, an age refresh), with each fact's vector kept in the store next to it
(:mod:`assistant.memory.search.vectors`). The final hits are checked against the store, so a
fact deleted or superseded behind the index's back is never returned: re-read, or, on a
Postgres store that counts its removals, checked by that count, read while the query is
embedded.

This module is the way in: :func:`hybrid_search`, :func:`pinned_facts`, :func:`pinned_count`,
:func:`record_write`, :func:`warm_index`, and the weights.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, GetOp, Item, SearchItem

from assistant.compat import Removals, current_keys
from assistant.inference.tokens import is_cjk_text
from assistant.memory.records import is_current
from assistant.memory.search.query import (
    QueryPlan,
    analyze_query,
    frequent_names,
    mentioned_speakers,
    without_names,
)
from assistant.memory.search.ranking import (
    WEIGHTS,
    FusionWeights,
    keyword_side,
    rank,
    store_ranking,
)
from assistant.memory.search.sync import (
    accounted,
    held_index,
    read_removals,
    ready_index,
    record_write,
    settle_windows,
    warm_index,
)
from assistant.memory.search.user_index import UserIndex
from assistant.memory.search.vectors import LIST_PAGE, store_embeddings

__all__ = [
    "WEIGHTS",
    "FusionWeights",
    "hybrid_search",
    "pinned_count",
    "pinned_facts",
    "record_write",
    "scored",
    "settle_windows",
    "store_embeddings",
    "text_vectors",
    "warm_index",
]


async def hybrid_search(
    store: BaseStore,
    namespace: tuple[str, ...],
    query: str,
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    now: datetime | None = None,
) -> list[SearchItem]:
    """The current memories in ``namespace`` most relevant to ``query``, best first.

    ``now`` is when the question is asked (default: now); relative dates in it
    ("last Saturday") are resolved against it.
    """
    if limit <= 0:
        return []
    counting = read_removals(store, namespace)  # while the query is embedded
    try:
        return await _searched(store, namespace, query, limit, weights, now, counting)
    finally:
        _cancel(counting)


async def _searched(
    store: BaseStore,
    namespace: tuple[str, ...],
    query: str,
    limit: int,
    weights: FusionWeights,
    now: datetime | None,
    counting: asyncio.Future[Removals | None] | None,
) -> list[SearchItem]:
    """:func:`hybrid_search`'s search, with the store's removal count being read."""
    now = now or datetime.now(UTC)
    # The query is planned on the index as held and embedded while the index is checked
    # against the store (a revision read, a probe of the newest facts): both take a few ms.
    held = await held_index(store, namespace)
    early = _planned(query, now, held, weights) if held is not None else None
    early_vector = _embedding(store, early[0].text) if early is not None else None
    try:
        index = await ready_index(store, namespace)
    except BaseException:
        _cancel(early_vector)
        raise
    if index is None:  # a first, large build runs: the store's own vector search meanwhile
        _cancel(early_vector)
        return await _fresh(
            store, namespace, await _store_search(store, namespace, query, limit, weights)
        )
    if not len(index):
        _cancel(early_vector)
        return []  # nothing to rank: the query is not even embedded
    embedding = early_vector
    try:
        plan, speakers = _planned(query, now, index, weights)
        if embedding is None or early is None or early[0].text != plan.text:
            _cancel(embedding)  # planned anew on the checked index, which named other people
            embedding = _embedding(store, plan.text)
        await asyncio.sleep(0)
        keywords = keyword_side(index, plan, weights)
    except BaseException:
        _cancel(embedding)
        raise
    query_vector = await embedding
    await index.settle()  # the windows of the facts just written, embedded meanwhile
    ranked = rank(
        index,
        plan,
        query_vector,
        keywords,
        query_cjk=is_cjk_text(query),
        speakers=speakers,
        limit=limit,
        weights=weights,
    )
    return await _fresh(store, namespace, ranked, index, counting)


def _planned(
    query: str, now: datetime, index: UserIndex, weights: FusionWeights
) -> tuple[QueryPlan, list[str]]:
    """The query's plan on ``index``, and the speakers it names."""
    plan = analyze_query(query, now.date(), expand_dates=weights.expand_dates)
    speakers = mentioned_speakers(plan, index.lexical.tags_of_kind("speaker"))
    if speakers and weights.speaker_boost:
        # The speaker asked about is matched by who said a memory, not by its words:
        # "What did Caroline do?" should not find every "Hi Caroline!".
        return without_names(plan, speakers), speakers
    if weights.frequent_name_share:
        # Without speakers, a name most memories hold is one of the people talking.
        share = weights.frequent_name_share
        plan = without_names(plan, frequent_names(plan, index.lexical, share=share))
    return plan, speakers


def _embedding(store: BaseStore, text: str) -> asyncio.Future[list[float]]:
    """The query's embedding, started now on the embedder's own thread (outside the GIL)."""
    return asyncio.ensure_future(store_embeddings(store).aembed_query(text))


def _cancel(future: asyncio.Future[Any] | None) -> None:
    """Drop an embedding or read no longer wanted, and any error it ended with."""
    if future is None:
        return
    future.cancel()
    if future.done() and not future.cancelled():
        future.exception()  # retrieved, so asyncio does not log it as never seen


async def text_vectors(
    store: BaseStore, namespace: tuple[str, ...], items: Sequence[Item]
) -> np.ndarray[Any, Any]:
    """The unit vectors of the ``items``' texts, by row: the index's, else embedded now."""
    index = await ready_index(store, namespace)
    held = {
        item.key: index.rows[item.key]
        for item in items
        if index is not None
        and item.key in index.rows
        and index.items[item.key].value.get("content") == item.value.get("content")
    }
    missing = [item for item in items if item.key not in held]
    embedded = await store_embeddings(store).aembed_documents(
        [str(item.value.get("content", "")) for item in missing]
    )
    fresh = dict(zip((item.key for item in missing), embedded, strict=True))
    rows = []
    for item in items:
        if item.key in fresh:
            vector = np.asarray(fresh[item.key], dtype=np.float32)
            rows.append(vector / (float(np.linalg.norm(vector)) or 1.0))
        else:
            assert index is not None
            rows.append(index.vectors[held[item.key]])
    return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


async def _store_search(
    store: BaseStore,
    namespace: tuple[str, ...],
    query: str,
    limit: int,
    weights: FusionWeights,
) -> list[tuple[str, float]]:
    """The store's own vector search over the current memories, ranked as recall ranks it."""
    found = await store.asearch(
        namespace, query=query, limit=weights.candidates, filter={"status": {"$ne": "superseded"}}
    )
    return store_ranking(found, query_cjk=is_cjk_text(query), limit=limit, weights=weights)


async def pinned_count(store: BaseStore, namespace: tuple[str, ...]) -> int | None:
    """How many current pinned facts the index holds (no store read); None while it is built."""
    index = await ready_index(store, namespace)
    return None if index is None else len(index.pinned)


async def pinned_facts(store: BaseStore, namespace: tuple[str, ...]) -> list[SearchItem]:
    """The user's current pinned (profile) facts, oldest first."""
    counting = read_removals(store, namespace)
    try:
        index = await ready_index(store, namespace)
        if index is None:
            found = await store.asearch(
                namespace, filter={"pinned": True, "status": "current"}, limit=LIST_PAGE
            )
            keys = [item.key for item in found]
        else:
            keys = list(index.pinned)
        fresh = await _fresh(store, namespace, [(key, 0.0) for key in keys], index, counting)
    finally:
        _cancel(counting)
    return sorted(fresh, key=lambda item: (str(item.value.get("created_at", "")), item.key))


async def _fresh(
    store: BaseStore,
    namespace: tuple[str, ...],
    ranked: list[tuple[str, float]],
    index: UserIndex | None = None,
    counting: asyncio.Future[Removals | None] | None = None,
) -> list[SearchItem]:
    """The hits, without any deleted or superseded meanwhile: re-read unless known current.

    With the ``index`` that ranked them, on a Postgres store the project set up, nothing is
    read when the index knows of every removal the store has ``counting`` (`sync.accounted`);
    otherwise the store is asked only which keys are still current
    (`assistant.compat.current_keys`). Either way the values come from the index, which holds
    them as of its last check against the store. Any other store is read.
    """
    if not ranked:
        return []
    if index is not None:
        known = counting is not None and accounted(store, namespace, index, await counting)
        current = None if known else await current_keys(store, namespace, [k for k, _ in ranked])
        if known or current is not None:
            kept = [(key, score) for key, score in ranked if current is None or key in current]
            held = [(index.items.get(key), score) for key, score in kept]
            return [scored(item, score) for item, score in held if item is not None]
    items = await store.abatch([GetOp(namespace, key) for key, _ in ranked])
    return [
        scored(item, score)
        for (_, score), item in zip(ranked, items, strict=True)
        if isinstance(item, Item) and is_current(item.value)
    ]


def scored(item: Item, score: float) -> SearchItem:
    """``item`` as a search hit with ``score``."""
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )
