"""An in-process search index over each user's current facts: vectors plus BM25.

The store stays the source of truth; this index only makes hybrid recall fast (a
dot product and an inverted-index lookup instead of a store scan) and lets it fuse
vector and keyword rankings. It is kept in step four ways:

* writes through :mod:`assistant.memory` update it in place and record a new
  revision token in the store (namespace ``("memory_index", user_id)``);
* every search first reads that token; when another process or store wrapper wrote
  since, the user's facts are listed again;
* every search also reads the user's few most recently written facts (a probe), so a
  fact written by any other path (the store HTTP API, a script) is recalled on the
  next turn;
* the final hits are re-read from the store, so a fact deleted or superseded behind
  the index's back is never returned.

Each fact's vector is kept in the store next to it (namespace
``("memory_vectors", *namespace)``, same key, with the hash of the text it embeds),
so a process that lists a user's facts embeds only what no process has embedded
before: a fresh server process, or another replica, recalling over 1,000 facts
embeds the query and nothing else. Only when more than :data:`COLD_EMBED_LIMIT`
facts have no stored vector are they embedded in the background, while searches use
the store's own vector search.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import math
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore

from assistant.memory.lexical import BM25Index
from assistant.memory.namespaces import index_revision_location, vector_namespace
from assistant.memory.query import (
    QueryPlan,
    analyze_query,
    item_tags,
    mentioned_speakers,
    without_names,
)
from assistant.memory.records import is_current
from assistant.tokens import is_cjk_text

logger = logging.getLogger(__name__)

__all__ = [
    "WEIGHTS",
    "FusionWeights",
    "hybrid_search",
    "pinned_facts",
    "record_write",
    "warm_index",
]

PROBE_SIZE = 16
"""Most recently written facts each search reads, to catch writes made around the index."""

PROBE_INTERVAL_S = 0.5
"""A user's index probes at most this often, so the several searches of one turn (the
profile, recall, the extraction's recall) share one probe; the next turn probes again."""

COLD_EMBED_LIMIT = 64
"""More unembedded facts than this are embedded in the background, not inline."""

EMBED_BATCH = 32
"""Texts embedded per call while building an index, so searches can run in between."""

MAX_CACHED_FACTS = 250_000
"""Facts kept in the index across all users before the least recently used go."""

MAX_AGE_S = 60.0
"""An index older than this is refreshed in the background, to pick up raw store writes."""

EVICT_CHECK_S = 1.0
"""The cached facts are counted (for eviction) when a user's index is added, and at most
this often otherwise: counting visits every user's index."""

LIST_PAGE = 50_000
"""Page size when listing a user's facts from the store (InMemoryStore re-scans the whole
namespace for every page, so pages are large)."""


@dataclass(frozen=True, kw_only=True)
class FusionWeights:
    """The fixed weights of hybrid recall.

    score = Σ over rankings of weight / (rrf_k + rank), then
    × (1 + speaker_boost) for memories said by the speaker asked about

    Each default is what LoCoMo's dev conversations and the bilingual fact set measured
    (``python bench/locomo.py --ablation``); features that helped on neither (a recency
    and an importance boost, a small-talk penalty, neighbouring turns) were removed.
    """

    rrf_k: int = 10
    """Reciprocal-rank-fusion constant; larger flattens the difference between ranks.
    10 rather than the customary 60: the best few of each ranking decide (LoCoMo dev
    recall@10, text only 0.454 at 60 -> 0.627 at 10, with turn metadata 0.814 -> 0.837;
    no change on the fact set)."""
    vector_weight: float = 0.7
    """Weight of the embedding ranking. Below BM25's: on conversations the embedding ranks
    small talk that names the person asked about high (LoCoMo dev recall@10, text only
    0.430 at 1.5 -> 0.627 at 0.7; the fact set, which needs it across languages, is the
    same at both)."""
    lexical_weight: float = 1.0
    """Weight of the BM25 ranking."""
    latin_query_offset: float = 0.006
    """Added to the cosine of a CJK fact when the query is not CJK (English, say)."""
    cjk_query_offset: float = 0.086
    """Added to the cosine of a non-CJK fact when the query is CJK (Chinese, say).

    multilingual-e5 scores same-language pairs higher whatever they mean, and much more
    so for Chinese queries. Both offsets are the gap between same- and cross-script
    pairs of *unrelated* texts (facts and queries of different users), measured per
    query script by ``bench/recall.py --calibrate``; no relevance label is used."""

    def cross_language_offset(self, query_cjk: bool) -> float:
        """The offset for facts in the other script than a query in this one."""
        return self.cjk_query_offset if query_cjk else self.latin_query_offset

    candidates: int = 50
    """How many candidates each ranking contributes."""
    date_weight: float = 3.0
    """Weight of the date ranking, for a question that names days ("last Saturday",
    "上周六"): memories that mention one of them first, then those said on one."""
    expand_dates: bool = True
    """Resolve the question's relative dates against the day it is asked."""
    speaker_boost: float = 1.0
    """Gain for memories said by a speaker the question names (or by the user, when
    the question says "I"/"my"/"我")."""


WEIGHTS = FusionWeights()
"""The weights recall uses."""


@dataclass
class _UserIndex:
    """One user's current facts: their rows, vectors and keyword index."""

    dims: int
    revision: str | None = None
    ready: bool = False
    synced_at: float = 0.0
    building: asyncio.Task[None] | None = None
    listed: int = 0
    """Items (current and superseded) the namespace held at the last listing or probe."""
    probed_at: float = 0.0
    """When writes made around the index were last looked for (a listing or a probe)."""
    checked_at: float = 0.0
    """When the store's revision token last matched the index's (no other writer since)."""

    def __post_init__(self) -> None:
        self.keys: list[str] = []
        self.rows: dict[str, int] = {}
        self.items: dict[str, Item] = {}
        self.vectors = np.zeros((16, self.dims), dtype=np.float32)
        self.cjk = np.zeros(16, dtype=bool)
        self.lexical = BM25Index()
        self.pinned: set[str] = set()

    def __len__(self) -> int:
        return len(self.keys)

    def upsert(self, item: Item, vector: Sequence[float] | np.ndarray[Any, Any]) -> None:
        row = self.rows.get(item.key)
        if row is None:
            row = len(self.keys)
            if row == len(self.vectors):
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
                self.cjk = np.concatenate([self.cjk, np.zeros_like(self.cjk)])
            self.keys.append(item.key)
            self.rows[item.key] = row
        array = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(array))
        self.vectors[row] = array / norm if norm else array
        content = str(item.value.get("content", ""))
        self.cjk[row] = is_cjk_text(content)
        self.items[item.key] = item
        context = item.value.get("context")
        self.lexical.add(
            item.key,
            content,
            context=context if isinstance(context, str) else "",
            tags=item_tags(item.value),
        )
        if item.value.get("pinned"):
            self.pinned.add(item.key)
        else:
            self.pinned.discard(item.key)

    def remove(self, key: str) -> None:
        row = self.rows.pop(key, None)
        if row is None:
            return
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            self.keys[row] = moved
            self.rows[moved] = row
            self.vectors[row] = self.vectors[last]
            self.cjk[row] = self.cjk[last]
        self.keys.pop()
        self.items.pop(key, None)
        self.lexical.remove(key)
        self.pinned.discard(key)

    def clear(self) -> None:
        self.__post_init__()


class _Registry:
    """All users' indexes for one store, least recently used first."""

    def __init__(self) -> None:
        self.users: OrderedDict[tuple[str, ...], _UserIndex] = OrderedDict()
        self.counted_at = 0.0

    def get(self, namespace: tuple[str, ...], dims: int) -> _UserIndex:
        index = self.users.get(namespace)
        added = index is None or index.dims != dims
        if index is None or index.dims != dims:
            index = self.users[namespace] = _UserIndex(dims=dims)
        self.users.move_to_end(namespace)
        now = time.monotonic()
        if added or now - self.counted_at > EVICT_CHECK_S:  # counting visits every user
            self.counted_at = now
            total = sum(len(user) for user in self.users.values())
            while total > MAX_CACHED_FACTS and len(self.users) > 1:
                _, evicted = self.users.popitem(last=False)
                total -= len(evicted)
        return index


_REGISTRIES: weakref.WeakKeyDictionary[BaseStore, _Registry] = weakref.WeakKeyDictionary()


def _base_store(store: BaseStore) -> BaseStore:
    """The store that holds the data: LangGraph Server hands nodes a batching wrapper."""
    inner = getattr(store, "_store", None)
    return inner if isinstance(inner, BaseStore) else store


def store_embeddings(store: BaseStore) -> Embeddings:
    """The embeddings the store indexes with, so recall and the store agree."""
    embeddings = getattr(_base_store(store), "embeddings", None)
    if isinstance(embeddings, Embeddings):
        return embeddings
    from assistant.models import get_embeddings

    return get_embeddings()


def _registry(store: BaseStore) -> _Registry:
    base = _base_store(store)
    registry = _REGISTRIES.get(base)
    if registry is None:
        registry = _REGISTRIES[base] = _Registry()
    return registry


async def record_write(
    store: BaseStore, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None
) -> None:
    """Tell the index that ``key`` was written (``value``) or deleted (None) in the store.

    A current fact's vector is stored next to it, so no other process embeds it again.
    """
    revision_namespace, revision_key = index_revision_location(namespace)
    stored = await store.aget(revision_namespace, revision_key)
    new_revision = uuid.uuid4().hex
    await store.aput(revision_namespace, revision_key, {"revision": new_revision}, index=False)
    embeddings = store_embeddings(store)
    dims = await _dims(embeddings)
    index = _registry(store).get(namespace, dims)
    vector: list[float] | None = None
    if value is None or not is_current(value):  # out of recall: its vector goes too
        await store.adelete(vector_namespace(namespace), key)
    else:
        content = str(value.get("content", ""))
        known = index.items.get(key)
        if known is not None and known.value.get("content") == content:
            vector = index.vectors[index.rows[key]].tolist()
        else:
            [vector] = await embeddings.aembed_documents([content])
            await _save_vectors(store, namespace, {key: (content, vector)}, embeddings)
    if value is None or vector is None:  # gone now, whoever else wrote: never searchable again
        index.remove(key)
    if not index.ready or index.revision != (stored.value.get("revision") if stored else None):
        index.revision = None  # someone else wrote too: the next search lists again
        return
    if value is not None and vector is not None:
        now = datetime.now(UTC)
        item = Item(value=value, key=key, namespace=namespace, created_at=now, updated_at=now)
        index.upsert(item, vector)
    index.revision = new_revision


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _embedder_id(embeddings: Embeddings) -> str:
    """Which embedder made a stored vector: vectors of another one are never reused."""
    kind = type(embeddings)
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None) or ""
    return f"{kind.__module__}.{kind.__qualname__}/{model}"


async def _save_vectors(
    store: BaseStore,
    namespace: tuple[str, ...],
    vectors: dict[str, tuple[str, Sequence[float]]],
    embeddings: Embeddings,
) -> None:
    """Store ``{key: (text, vector)}`` next to the facts (not indexed themselves)."""
    embedder = _embedder_id(embeddings)
    await store.abatch(
        [
            PutOp(
                vector_namespace(namespace),
                key,
                {
                    "text_sha256": _text_hash(text),
                    "embedder": embedder,
                    "vector": base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode(
                        "ascii"
                    ),
                },
                index=False,
            )
            for key, (text, vector) in vectors.items()
        ]
    )


async def _stored_vectors(
    store: BaseStore, namespace: tuple[str, ...], items: list[Item], embeddings: Embeddings
) -> dict[str, np.ndarray[Any, np.dtype[np.float32]]]:
    """The kept vectors of ``items`` whose text and embedder still match, by key."""
    if not items:
        return {}
    vectors = vector_namespace(namespace)
    stored: list[Item | None]
    if len(items) <= PROBE_SIZE:
        results = await store.abatch([GetOp(vectors, item.key) for item in items])
        stored = [result if isinstance(result, Item) else None for result in results]
    else:
        listed: dict[str, Item] = {}
        offset = 0
        while True:
            page = await store.asearch(vectors, limit=LIST_PAGE, offset=offset)
            listed.update((found.key, found) for found in page)
            if len(page) < LIST_PAGE:
                break
            offset += LIST_PAGE
        stored = [listed.get(item.key) for item in items]
    embedder = _embedder_id(embeddings)
    found: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = {}
    for item, kept in zip(items, stored, strict=True):
        if kept is None or kept.value.get("embedder") != embedder:
            continue
        if kept.value.get("text_sha256") != _text_hash(str(item.value.get("content", ""))):
            continue
        try:
            found[item.key] = np.frombuffer(base64.b64decode(kept.value["vector"]), dtype="<f4")
        except (KeyError, TypeError, ValueError):
            continue
    return found


_DIMS: weakref.WeakKeyDictionary[Embeddings, int] = weakref.WeakKeyDictionary()


async def _dims(embeddings: Embeddings) -> int:
    dims = _DIMS.get(embeddings)
    if dims is None:
        dims = _DIMS[embeddings] = len(await embeddings.aembed_query("dimension probe"))
    return dims


async def _list_current(store: BaseStore, namespace: tuple[str, ...]) -> tuple[list[Item], int]:
    """The namespace's current facts, and how many items (current or not) it holds."""
    items: list[Item] = []
    offset = 0
    while True:
        page = await store.asearch(namespace, limit=LIST_PAGE, offset=offset)
        items.extend(item for item in page if is_current(item.value))
        if len(page) < LIST_PAGE:
            return items, offset + len(page)
        offset += LIST_PAGE


async def _sync(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: _UserIndex,
    revision: str | None,
    items: list[Item],
    stored: dict[str, np.ndarray[Any, np.dtype[np.float32]]] | None = None,
) -> None:
    """Bring ``index`` in step with ``items``: drop what is gone, add or re-embed what changed.

    Unchanged facts keep their rows and vectors, so a refresh that finds nothing new
    costs one pass over the listing. New texts take the vectors kept in the store when
    there are any (``stored``, when the caller has read them already), and only the
    rest are embedded (and their vectors kept).
    """
    listed = {item.key: item for item in items}
    gone = [key for key in index.rows if key not in listed]
    for key in gone:
        index.remove(key)
    if gone:  # deleted or superseded behind the index's back: drop their kept vectors too
        vectors = vector_namespace(namespace)
        await store.abatch([PutOp(vectors, key, None) for key in gone])
    await _upsert_changed(store, namespace, index, items, stored)
    index.revision = revision
    index.ready = True
    index.synced_at = index.probed_at = time.monotonic()


async def _upsert_changed(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: _UserIndex,
    items: list[Item],
    stored: dict[str, np.ndarray[Any, np.dtype[np.float32]]] | None = None,
) -> None:
    """Add or update ``items`` (current facts) whose value differs from the index's."""
    embeddings = store_embeddings(store)
    changed = [
        item
        for item in items
        if item.key not in index.items or index.items[item.key].value != item.value
    ]
    same_text = [
        item
        for item in changed
        if item.key in index.items
        and index.items[item.key].value.get("content") == item.value.get("content")
    ]
    for item in same_text:  # only metadata changed: keep the vector
        index.upsert(item, index.vectors[index.rows[item.key]].copy())
    kept = {item.key for item in same_text}
    fresh = [item for item in changed if item.key not in kept]
    if stored is None:
        stored = await _stored_vectors(store, namespace, fresh, embeddings)
    reused: set[str] = set()
    for item in fresh:
        kept_vector = stored.get(item.key)
        if kept_vector is not None and len(kept_vector) == index.dims:
            index.upsert(item, kept_vector)
            reused.add(item.key)
    unembedded = [item for item in fresh if item.key not in reused]
    for start in range(0, len(unembedded), EMBED_BATCH):
        batch = unembedded[start : start + EMBED_BATCH]
        texts = [str(item.value.get("content", "")) for item in batch]
        vectors = await embeddings.aembed_documents(texts)
        for item, vector in zip(batch, vectors, strict=True):
            index.upsert(item, vector)
        await _save_vectors(
            store,
            namespace,
            {
                item.key: (text, vector)
                for item, text, vector in zip(batch, texts, vectors, strict=True)
            },
            embeddings,
        )


async def _probe(store: BaseStore, namespace: tuple[str, ...], index: _UserIndex) -> bool:
    """Bring in facts written around the index since it was built; False when too many.

    Postgres lists a namespace newest first, so the probe reads the first
    :data:`PROBE_SIZE` items; ``InMemoryStore`` lists in insertion order, so it reads
    the tail, where new keys land (an in-place raw edit of an old fact waits for the
    age refresh there).
    """
    index.probed_at = time.monotonic()
    base = _base_store(store)
    in_memory = isinstance(base, InMemoryStore)
    if isinstance(base, InMemoryStore) and len(base._data.get(namespace, ())) == index.listed:
        return True  # no key was added (in process: the count is free to read)
    offset = max(index.listed - PROBE_SIZE, 0) if in_memory else 0
    limit = 2 * PROBE_SIZE if in_memory else PROBE_SIZE
    page = await store.asearch(namespace, limit=limit, offset=offset)
    if in_memory:
        if len(page) == limit:
            return False  # more new items than the probe holds: list them all
        index.listed = offset + len(page)
    changed = [
        item
        for item in page
        if (known := index.items.get(item.key)) is None or known.value != item.value
    ]
    if not changed:
        return True
    if not in_memory and len(changed) == len(page) == PROBE_SIZE:
        return False
    superseded = [item.key for item in changed if not is_current(item.value)]
    for key in superseded:
        index.remove(key)
    if superseded:
        vectors = vector_namespace(namespace)
        await store.abatch([PutOp(vectors, key, None) for key in superseded])
    await _upsert_changed(store, namespace, index, [i for i in changed if is_current(i.value)])
    return True


async def _current_revision(store: BaseStore, namespace: tuple[str, ...]) -> str | None:
    revision_namespace, revision_key = index_revision_location(namespace)
    stored = await store.aget(revision_namespace, revision_key)
    return str(stored.value.get("revision")) if stored else None


def _in_background(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: _UserIndex,
    revision: str | None,
    items: list[Item] | None,
) -> None:
    async def build() -> None:
        if items is None:
            listed, index.listed = await _list_current(store, namespace)
        await _sync(store, namespace, index, revision, listed if items is None else items)

    index.building = asyncio.create_task(build())
    index.building.add_done_callback(_log_failure)


async def _ready_index(store: BaseStore, namespace: tuple[str, ...]) -> _UserIndex | None:
    """The user's index, in step with the store; None while a first, large build runs.

    Like the probe, the check for other processes' writes (the revision token) is made
    at most every :data:`PROBE_INTERVAL_S`, so the searches of one turn share it; this
    process's own writes keep the index in step as they happen.
    """
    index = _registry(store).get(namespace, await _dims(store_embeddings(store)))
    if (
        index.ready
        and index.revision is not None
        and time.monotonic() - index.checked_at < PROBE_INTERVAL_S
        and (index.building is None or index.building.done())
    ):
        return index
    revision = await _current_revision(store, namespace)
    building = index.building is not None and not index.building.done()
    if (
        index.ready
        and index.revision == revision
        and (
            building
            or time.monotonic() - index.probed_at < PROBE_INTERVAL_S
            or await _probe(store, namespace, index)
        )
    ):
        if not building and time.monotonic() - index.synced_at > MAX_AGE_S:
            _in_background(store, namespace, index, revision, None)
        index.checked_at = time.monotonic()
        return index
    if building:
        return index if index.ready else None
    items, index.listed = await _list_current(store, namespace)
    new = [item for item in items if item.key not in index.rows]
    stored = None
    if len(new) > COLD_EMBED_LIMIT:
        stored = await _stored_vectors(store, namespace, new, store_embeddings(store))
        if len(new) - len(stored) > COLD_EMBED_LIMIT:
            _in_background(store, namespace, index, revision, items)
            return index if index.ready else None
    await _sync(store, namespace, index, revision, items, stored)
    index.checked_at = time.monotonic()
    return index


async def warm_index(store: BaseStore, namespace: tuple[str, ...]) -> int:
    """Build the index for ``namespace`` now, however large, and return its size.

    Searches build it on demand; call this at start-up or before timing searches.
    """
    index = _registry(store).get(namespace, await _dims(store_embeddings(store)))
    if index.building is not None and not index.building.done():
        await index.building
    revision = await _current_revision(store, namespace)
    if not index.ready or index.revision != revision:
        items, index.listed = await _list_current(store, namespace)
        await _sync(store, namespace, index, revision, items)
    return len(index)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("Building the memory index failed", exc_info=task.exception())


def fuse(
    rankings: Iterable[tuple[float, Sequence[str]]],
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    favoured: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of ``(weight, keys best first)`` rankings.

    Keys in ``favoured`` (said by the speaker the question is about) gain
    ``weights.speaker_boost``. Deterministic: ties are broken by key.

    >>> [key for key, _ in fuse([(1.0, ["a", "b"]), (1.0, ["c", "b"])], limit=3)]
    ['b', 'a', 'c']
    """
    scores: dict[str, float] = {}
    for weight, keys in rankings:
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (weights.rrf_k + rank)
    boosted = {
        key: score * (1.0 + weights.speaker_boost * (key in favoured))
        for key, score in scores.items()
    }
    return sorted(boosted.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]


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
    now = now or datetime.now(UTC)
    plan = analyze_query(query, now.date(), expand_dates=weights.expand_dates)
    embeddings = store_embeddings(store)
    index = await _ready_index(store, namespace)
    speakers = mentioned_speakers(plan, index.lexical.tags_of_kind("speaker")) if index else []
    if speakers and weights.speaker_boost:
        # The speaker asked about is matched by who said a memory, not by its words:
        # "What did Caroline do?" should not find every "Hi Caroline!".
        plan = without_names(plan, speakers)
    query_cjk = is_cjk_text(query)
    vector_weight, lexical_weight = weights.vector_weight, weights.lexical_weight
    date_weight = weights.date_weight if plan.dates else 0.0
    if index is None:  # cold build in progress: fall back to the store's vector search
        found = await store.asearch(
            namespace,
            query=query,
            limit=weights.candidates,
            filter={"status": {"$ne": "superseded"}},
        )
        offset = weights.cross_language_offset(query_cjk)
        adjusted = {
            item.key: (item.score or 0.0)
            + offset * (is_cjk_text(str(item.value.get("content", ""))) != query_cjk)
            for item in found
        }
        vector_ranking = sorted(adjusted, key=lambda key: (-adjusted[key], key))
        fused = fuse([(vector_weight, vector_ranking)], limit=limit, weights=weights)
        return await _fresh(store, namespace, fused)
    if not len(index):
        return []  # nothing to rank: the query is not even embedded
    query_vector = await embeddings.aembed_query(plan.text)
    count = len(index)
    scores = index.vectors[:count] @ np.asarray(query_vector, dtype=np.float32)
    norm = math.sqrt(float(np.dot(query_vector, query_vector))) or 1.0
    offset = weights.cross_language_offset(query_cjk)
    scores = scores / norm + offset * (index.cjk[:count] != query_cjk)
    take = min(weights.candidates, count)
    top = np.argpartition(-scores, take - 1)[:take]
    vector_ranking = [
        index.keys[row] for row in sorted(top.tolist(), key=lambda r: (-scores[r], r))
    ]
    lexical_ranking = [
        key for key, _ in index.lexical.search_terms(plan.terms, limit=weights.candidates)
    ]
    date_ranking = _date_ranking(index, plan, scores, weights) if date_weight else []
    favoured = _favoured(index, plan, speakers) if weights.speaker_boost else set()
    fused = fuse(
        [
            (vector_weight, vector_ranking),
            (lexical_weight, lexical_ranking),
            (date_weight, date_ranking),
        ],
        limit=limit,
        weights=weights,
        favoured=favoured,
    )
    return await _fresh(store, namespace, fused)


def _date_ranking(
    index: _UserIndex, plan: QueryPlan, scores: np.ndarray[Any, Any], weights: FusionWeights
) -> list[str]:
    """Memories on the question's days, each group by embedding similarity.

    Those that mention one of the days come first, then those said on one.
    """
    mentioned: set[str] = set()
    spoken: set[str] = set()
    for day in plan.dates:
        mentioned |= index.lexical.tagged(f"date:{day.isoformat()}")
        spoken |= index.lexical.tagged(f"said:{day.isoformat()}")
    spoken -= mentioned

    def by_similarity(keys: set[str]) -> list[str]:
        return sorted(keys, key=lambda key: (-float(scores[index.rows[key]]), key))

    return [*by_similarity(mentioned), *by_similarity(spoken)][: weights.candidates]


def _favoured(index: _UserIndex, plan: QueryPlan, speakers: list[str]) -> set[str]:
    """Memories said by the speakers the question names, or by the user when it says "I"."""
    keys: set[str] = set()
    for tag in speakers:
        keys |= index.lexical.tagged(tag)
    if plan.first_person:
        keys |= index.lexical.tagged("role:user")
    return keys


async def pinned_facts(store: BaseStore, namespace: tuple[str, ...]) -> list[SearchItem]:
    """The user's current pinned (profile) facts, oldest first."""
    index = await _ready_index(store, namespace)
    if index is None:
        found = await store.asearch(
            namespace, filter={"pinned": True, "status": "current"}, limit=LIST_PAGE
        )
        keys = [item.key for item in found]
    else:
        keys = list(index.pinned)
    fresh = await _fresh(store, namespace, [(key, 0.0) for key in keys])
    return sorted(fresh, key=lambda item: (str(item.value.get("created_at", "")), item.key))


async def _fresh(
    store: BaseStore, namespace: tuple[str, ...], ranked: list[tuple[str, float]]
) -> list[SearchItem]:
    """Re-read the hits from the store, dropping any deleted or superseded meanwhile."""
    if not ranked:
        return []
    items = await store.abatch([GetOp(namespace, key) for key, _ in ranked])
    results: list[SearchItem] = []
    for (key, score), item in zip(ranked, items, strict=True):
        if isinstance(item, Item) and is_current(item.value):
            results.append(
                SearchItem(
                    namespace=item.namespace,
                    key=key,
                    value=item.value,
                    created_at=item.created_at,
                    updated_at=item.updated_at,
                    score=score,
                )
            )
    return results
