"""Keeping each user's search index in step with the store, the source of truth.

Four ways, each cheap:

* writes through :mod:`assistant.memory` update the index in place and record a new
  revision token in the store (namespace ``("memory_index", user_id)``,
  :func:`record_write`);
* a search reads that token (at most every
  :data:`~assistant.memory.search.freshness.PROBE_INTERVAL_S`);
  when another process or store wrapper wrote since, the user's facts are listed again;
* a search also reads the user's few most recently written facts (a probe), so a fact
  written by any other path (the store HTTP API, a script) is recalled on the next turn;
* an index older than :data:`~assistant.memory.search.freshness.MAX_AGE_S` is listed again in
  the background;
* on a Postgres store the project set up, the database counts each namespace's removed facts
  (`assistant.compat.count_removals`): a search reads the count while its query is embedded,
  and re-reads its hits only when the index does not know of every removal counted
  (:func:`accounted`), whoever made it; it then finds them in the background
  (:func:`reconcile_soon`), and the next searches need no re-read.

Which of these a search needs is :class:`~assistant.memory.search.freshness.Freshness`'s
decision. A listing takes the vectors kept in the store (:mod:`assistant.memory.search.vectors`)
and embeds only the rest; when more than :data:`COLD_EMBED_LIMIT` facts have none, they
are embedded in the background while searches use the store's own vector search.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, Item

from assistant.compat import (
    Removals,
    counts_removals,
    current_keys,
    inmemory_namespace_size,
    newest_items,
    removals,
    stored_item,
)
from assistant.memory.namespaces import index_revision_location
from assistant.memory.records import is_current
from assistant.memory.search.freshness import State, Step
from assistant.memory.search.user_index import UserIndex, registry
from assistant.memory.search.vectors import (
    LIST_PAGE,
    Vector,
    drop_vectors,
    embedded_texts,
    embedding_dims,
    save_vectors,
    store_embeddings,
    stored_vectors,
)

logger = logging.getLogger(__name__)

__all__ = [
    "COLD_EMBED_LIMIT",
    "PROBE_SIZE",
    "accounted",
    "held_index",
    "read_removals",
    "ready_index",
    "reconcile_soon",
    "record_write",
    "settle_windows",
    "sync",
    "warm_index",
]

PROBE_SIZE = 16
"""Most recently written facts each probe reads, to catch writes made around the index."""

COLD_EMBED_LIMIT = 64
"""More unembedded facts than this are embedded in the background, not inline."""

EMBED_BATCH = 32
"""Texts embedded per call while building an index, so searches can run in between."""


async def _user_index(store: BaseStore, namespace: tuple[str, ...]) -> UserIndex:
    return registry(store).get(namespace, await embedding_dims(store_embeddings(store)))


async def _current_revision(store: BaseStore, namespace: tuple[str, ...]) -> str | None:
    revision_namespace, revision_key = index_revision_location(namespace)
    read = await stored_item(store, revision_namespace, revision_key)
    stored = await store.aget(revision_namespace, revision_key) if read is None else read[0]
    return str(stored.value.get("revision")) if stored else None


async def record_write(
    store: BaseStore, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None
) -> None:
    """Tell the index that ``key`` was written (``value``) or deleted (None) in the store.

    A current fact's vector is stored next to it, so no other process embeds it again.
    """
    revision_namespace, revision_key = index_revision_location(namespace)
    index = await _user_index(store, namespace)
    await index.settle(key)  # a write of this key waits for its previous value's window
    before = await _current_revision(store, namespace)
    after = uuid.uuid4().hex
    await store.aput(revision_namespace, revision_key, {"revision": after}, index=False)
    vector = None
    if value is None or not is_current(value):  # out of recall: its vector goes too
        await drop_vectors(store, namespace, [key])
    else:
        vector = await _vector_for(store, namespace, index, key, value)
    if value is None or vector is None:  # gone now, whoever else wrote: never searchable again
        index.remove(key)
    if value is None or not is_current(value):
        await _account_removal(store, namespace, index, key)
    in_place = index.freshness.written(before=before, after=after)
    if in_place and value is not None and vector is not None:
        now = datetime.now(UTC)
        item = Item(value=value, key=key, namespace=namespace, created_at=now, updated_at=now)
        index.upsert(item, vector)


async def _account_removal(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, key: str
) -> None:
    """After this process removed ``key`` (dropped from the index): is every removal known?

    Yes when the store counted no removal since the index's count, or exactly this one;
    otherwise another writer removed something too, and searches re-read their hits until
    :func:`reconcile_soon` has found what.
    """
    freshness = index.freshness
    known = freshness.removals
    if known is None:
        return
    counted = await removals(store, namespace)
    ours = (known[0] + 1, key, known[2])
    unchanged = freshness.removals is known and counted in (known, ours)
    freshness.removals = counted if unchanged else None


def read_removals(
    store: BaseStore, namespace: tuple[str, ...]
) -> asyncio.Future[Removals | None] | None:
    """The store's count of removals from ``namespace``, read from now on in a task.

    None for a store that does not count them (`assistant.compat.count_removals`).
    """
    if not counts_removals(store):
        return None
    return asyncio.ensure_future(removals(store, namespace))


def accounted(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, counted: Removals | None
) -> bool:
    """Whether ``index`` lacks every fact the store ``counted`` as removed: hits need no re-read.

    When it may not, the removals are looked for in the background (:func:`reconcile_soon`).
    """
    if counted is None:
        return False
    if index.freshness.removals == counted:
        return True
    reconcile_soon(store, namespace, index)
    return False


def reconcile_soon(store: BaseStore, namespace: tuple[str, ...], index: UserIndex) -> None:
    """Drop from ``index`` the facts removed behind its back, in a task (one at a time).

    Not while a listing runs: that brings the index in step itself.
    """
    for task in (index.reconciling, index.building):
        if task is not None and not task.done():
            return
    index.reconciling = asyncio.create_task(_reconcile(store, namespace, index))
    index.reconciling.add_done_callback(_log_failure)


async def _reconcile(store: BaseStore, namespace: tuple[str, ...], index: UserIndex) -> None:
    """Drop the held facts that are no longer current, and know the removals counted before.

    The count is read before the keys, so every removal it counts is missing from them. A
    fact written again meanwhile (its item replaced in the index) is kept; a listing or probe
    that ran meanwhile may hold older values, so the count is then not taken.
    """
    freshness = index.freshness
    values_from, held = freshness.values_from, dict(index.items)
    counted = await removals(store, namespace)
    current = await current_keys(store, namespace)
    if counted is None or current is None:
        return
    gone = [
        key for key, item in held.items() if key not in current and index.items.get(key) is item
    ]
    for key in gone:
        index.remove(key)
    if gone:
        await drop_vectors(store, namespace, gone)
    if freshness.values_from == values_from:
        freshness.removals = counted


async def _vector_for(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, key: str, value: dict[str, Any]
) -> Sequence[Sequence[float]] | Vector:
    """The vectors of ``key``'s new ``value``: the held ones if its texts are unchanged.

    A fact with a context gets its text's vector now and its window's in a task of its own
    (:func:`_embed_window`): the turn that wrote it does not wait for the longer text, and
    the next search of the user's facts does (`UserIndex.settle`), so rankings are the same.
    """
    texts = embedded_texts(value)
    known = index.items.get(key)
    if known is not None and embedded_texts(known.value) == texts:
        return index.vector_of(key)
    embeddings = store_embeddings(store)
    if len(texts) > 1:
        vector = await embeddings.aembed_documents(texts[:1])
        task = asyncio.create_task(_embed_window(store, namespace, index, key, texts))
        index.pending[key] = task
        task.add_done_callback(lambda done: _window_done(index, key, done))
        return vector
    vectors = await embeddings.aembed_documents(texts)
    await save_vectors(store, namespace, {key: (texts, vectors)}, embeddings)
    return vectors


async def _embed_window(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, key: str, texts: list[str]
) -> None:
    """Embed a fact's text and window together (the text is cached), keep and hold them.

    The next write of ``key`` waits for this task before it records anything (a delete
    drops the vectors kept here), so they are always kept; they are held when the index
    holds the fact with these texts (it may be listed again meanwhile).
    """
    embeddings = store_embeddings(store)
    vectors = await embeddings.aembed_documents(texts)
    await save_vectors(store, namespace, {key: (texts, vectors)}, embeddings)
    held = index.items.get(key)
    if held is not None and embedded_texts(held.value) == texts:
        index.upsert(held, vectors)


def _window_done(index: UserIndex, key: str, task: asyncio.Task[None]) -> None:
    if index.pending.get(key) is task:
        del index.pending[key]
    if not task.cancelled() and task.exception() is not None:
        logger.error("Embedding a fact's window failed", exc_info=task.exception())


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


async def sync(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: UserIndex,
    revision: str | None,
    items: list[Item],
    stored: dict[str, Vector] | None = None,
) -> None:
    """Bring ``index`` in step with ``items``: drop what is gone, add or re-embed what changed.

    Unchanged facts keep their rows and vectors, so a refresh that finds nothing new
    costs one pass over the listing. New texts take the vectors kept in the store when
    there are any (``stored``, when the caller has read them already), and only the
    rest are embedded (and their vectors kept).
    """
    listed = {item.key for item in items}
    gone = [key for key in index.rows if key not in listed]
    for key in gone:
        index.remove(key)
    if gone:  # deleted or superseded behind the index's back: drop their kept vectors too
        await drop_vectors(store, namespace, gone)
    await _upsert_changed(store, namespace, index, items, stored)
    index.freshness.listed_now(revision=revision, now=time.monotonic())


async def _upsert_changed(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: UserIndex,
    items: list[Item],
    stored: dict[str, Vector] | None = None,
) -> None:
    """Add or update ``items`` (current facts) whose value differs from the index's."""
    changed = [item for item in items if _differs(index, item)]
    same_text = [item for item in changed if _same_text(index, item)]
    for count, item in enumerate(same_text, 1):  # only metadata changed: keep the vector
        index.upsert(item, index.vector_of(item.key))
        await _let_others_run(count)
    kept_keys = {item.key for item in same_text}
    new_texts = [item for item in changed if item.key not in kept_keys]
    embeddings = store_embeddings(store)
    if stored is None:
        stored = await stored_vectors(store, namespace, new_texts, embeddings)
    unembedded = []
    for count, item in enumerate(new_texts, 1):
        kept = stored.get(item.key)
        if kept is not None and kept.shape[-1] == index.dims:
            index.upsert(item, kept)
            await _let_others_run(count)
        else:
            unembedded.append(item)
    await _embed(store, namespace, index, unembedded)
    if changed:  # values read before a removal may have come back
        index.freshness.values_read()


UPSERTS_PER_SLICE = 32
"""Facts (re)indexed between two yields to the event loop while an index is built: each
costs its words' keyword indexing, so a user with many facts cannot hold the loop, and
every other user's requests, for the whole build."""


async def _let_others_run(count: int) -> None:
    """Yield to the event loop after every `UPSERTS_PER_SLICE` facts."""
    if count % UPSERTS_PER_SLICE == 0:
        await asyncio.sleep(0)


def _differs(index: UserIndex, item: Item) -> bool:
    known = index.items.get(item.key)
    return known is None or known.value != item.value


def _same_text(index: UserIndex, item: Item) -> bool:
    known = index.items.get(item.key)
    return known is not None and embedded_texts(known.value) == embedded_texts(item.value)


async def _embed(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, items: list[Item]
) -> None:
    """Embed ``items`` a batch at a time, add them, and keep their vectors."""
    embeddings = store_embeddings(store)
    for start in range(0, len(items), EMBED_BATCH):
        batch = items[start : start + EMBED_BATCH]
        texts = [embedded_texts(item.value) for item in batch]
        flat = await embeddings.aembed_documents([text for each in texts for text in each])
        kept: dict[str, tuple[list[str], Sequence[Sequence[float]]]] = {}
        for item, each in zip(batch, texts, strict=True):
            kept[item.key] = (each, flat[: len(each)])
            flat = flat[len(each) :]
            index.upsert(item, kept[item.key][1])
        await save_vectors(store, namespace, kept, embeddings)


async def _probe(store: BaseStore, namespace: tuple[str, ...], index: UserIndex) -> bool:
    """Bring in facts written around the index since it was listed; False when too many."""
    index.freshness.probed_at = time.monotonic()
    changed = await _probed_changes(store, namespace, index)
    if changed is None:
        return False
    superseded = [item.key for item in changed if not is_current(item.value)]
    for key in superseded:
        index.remove(key)
    if superseded:
        await drop_vectors(store, namespace, superseded)
    await _upsert_changed(store, namespace, index, [i for i in changed if is_current(i.value)])
    return True


async def _probed_changes(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex
) -> list[Item] | None:
    """The newest items that differ from the index's; None when there may be more.

    Postgres lists a namespace newest first, so the probe reads the first
    :data:`PROBE_SIZE` items; ``InMemoryStore`` lists in insertion order, so it reads
    the tail, where new keys land (an in-place raw edit of an old fact waits for the
    age refresh there).
    """
    size = inmemory_namespace_size(store, namespace)
    if size is not None:
        return await _probed_tail(store, namespace, index, size)
    newest = await newest_items(store, namespace, PROBE_SIZE)
    # A store without the index of its newest rows lists them with its search.
    page: list[Item] = (
        list(await store.asearch(namespace, limit=PROBE_SIZE)) if newest is None else newest
    )
    changed: list[Item] = [item for item in page if _differs(index, item)]
    return None if len(changed) == len(page) == PROBE_SIZE else changed


async def _probed_tail(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, size: int
) -> list[Item] | None:
    """:func:`_probed_changes` for an ``InMemoryStore`` holding ``size`` items."""
    freshness = index.freshness
    if size == freshness.listed:
        return []  # no key was added (in process: the count is free to read)
    offset = max(freshness.listed - PROBE_SIZE, 0)
    page = await store.asearch(namespace, limit=2 * PROBE_SIZE, offset=offset)
    if len(page) == 2 * PROBE_SIZE:
        return None  # more new items than the probe holds: list them all
    freshness.listed = offset + len(page)
    changed: list[Item] = [item for item in page if _differs(index, item)]
    return changed


async def held_index(store: BaseStore, namespace: tuple[str, ...]) -> UserIndex | None:
    """The user's index as this process holds it, not checked against the store (no read).

    None before its first listing. A search plans its query on it, so the query is embedded
    while :func:`ready_index` checks the store.
    """
    index = await _user_index(store, namespace)
    return index if index.freshness.searchable else None


async def ready_index(store: BaseStore, namespace: tuple[str, ...]) -> UserIndex | None:
    """The user's index, in step with the store; None while a first, large build runs."""
    index = await _user_index(store, namespace)
    freshness = index.freshness
    if freshness.trusted(time.monotonic()):
        return index
    token = await _current_revision(store, namespace)
    step = freshness.step(token=token, now=time.monotonic())
    if step is Step.PROBE and not await _probe(store, namespace, index):
        step = Step.LIST
    if step is Step.LIST:
        return await _list(store, namespace, index, token)
    if step is Step.WAIT:
        return index if freshness.searchable else None
    if freshness.refresh_due(time.monotonic()):
        _in_background(store, namespace, index, token, None)
    freshness.checked(time.monotonic())
    return index


async def _list(
    store: BaseStore, namespace: tuple[str, ...], index: UserIndex, token: str | None
) -> UserIndex | None:
    """List the user's facts and sync the index, in the background if many need embedding."""
    items, index.freshness.listed = await _list_current(store, namespace)
    new = [item for item in items if item.key not in index.rows]
    stored = None
    if len(new) > COLD_EMBED_LIMIT:
        stored = await stored_vectors(store, namespace, new, store_embeddings(store))
        if len(new) - len(stored) > COLD_EMBED_LIMIT:
            _in_background(store, namespace, index, token, items)
            return index if index.freshness.searchable else None
    await sync(store, namespace, index, token, items, stored)
    index.freshness.checked(time.monotonic())
    return index


def _in_background(
    store: BaseStore,
    namespace: tuple[str, ...],
    index: UserIndex,
    revision: str | None,
    items: list[Item] | None,
) -> None:
    """List (unless ``items`` are given) and sync the index in a task of its own."""

    async def build() -> None:
        try:
            listed = items
            if listed is None:
                listed, index.freshness.listed = await _list_current(store, namespace)
            await sync(store, namespace, index, revision, listed)
        except BaseException:
            index.freshness.build_failed()
            raise

    index.freshness.build_started()
    index.building = asyncio.create_task(build())
    index.building.add_done_callback(_log_failure)


async def settle_windows(
    store: BaseStore, namespace: tuple[str, ...], key: str | None = None
) -> None:
    """Wait until the window vectors written in ``namespace`` (or for its ``key``) are kept."""
    await (await _user_index(store, namespace)).settle(key)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("Building the memory index failed", exc_info=task.exception())


async def warm_index(store: BaseStore, namespace: tuple[str, ...]) -> int:
    """Build the index for ``namespace`` now, however large, and return its size.

    Searches build it on demand; call this at start-up or before timing searches.
    """
    index = await _user_index(store, namespace)
    if index.building is not None and not index.building.done():
        await index.building
    await index.settle()
    revision = await _current_revision(store, namespace)
    if index.freshness.state is not State.READY or index.freshness.revision != revision:
        items, index.freshness.listed = await _list_current(store, namespace)
        await sync(store, namespace, index, revision, items)
    return len(index)
