"""The in-process search index of each user's current facts: rows, vectors, BM25, pins.

Facts that say where they were said (a ``thread_id`` and an integer ``turn``, as the
product's facts and turns saved with turn metadata do) are linked to the facts of the
next turn of their thread: each is indexed with the words of that turn too, and
:mod:`assistant.memory.search.ranking` gives it a share of that turn's similarity.

One :class:`UserIndex` per user and store, kept by a :class:`Registry` that forgets the
least recently used users once all of them together hold more than
:data:`MAX_CACHED_FACTS` facts. How an index is kept in step with the store is
:mod:`assistant.memory.search.sync`'s job; how it is searched,
:mod:`assistant.memory.search.ranking`'s.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, Item

from assistant.compat import base_store
from assistant.inference.tokens import is_cjk_text
from assistant.memory.search.freshness import Freshness
from assistant.memory.search.lexical import BM25Index
from assistant.memory.search.query import item_tags

__all__ = [
    "EVICT_CHECK_S",
    "MAX_CACHED_FACTS",
    "TURN_FACTS_LINKED",
    "Registry",
    "UserIndex",
    "registry",
]

MAX_CACHED_FACTS = 250_000
"""Facts kept in the index across all users before the least recently used go."""

TURN_FACTS_LINKED = 16
"""A turn with more facts than this is not linked to its neighbours (a bulk import that
gives every fact the same turn would otherwise make each write re-index all of them)."""

EVICT_CHECK_S = 1.0
"""The cached facts are counted (for eviction) when a user's index is added, and at most
this often otherwise: counting visits every user's index."""


class UserIndex:
    """One user's current facts: their rows, vectors and keyword index, and its freshness."""

    def __init__(self, *, dims: int) -> None:
        """An empty index for vectors of ``dims`` dimensions."""
        self.dims = dims
        self.freshness = Freshness()
        self.building: asyncio.Task[None] | None = None
        """The background listing, while one runs (awaited by ``warm_index``)."""
        self.reconciling: asyncio.Task[None] | None = None
        """The background search for facts removed behind the index's back, while one runs."""
        self.keys: list[str] = []
        self.rows: dict[str, int] = {}
        self.items: dict[str, Item] = {}
        self.vectors = np.zeros((16, dims), dtype=np.float32)
        """Unit vectors of the facts' texts by row (the first ``len(self)`` rows are in use)."""
        self.sums = np.zeros((16, dims), dtype=np.float32)
        """Each row's text vector plus its window's: the unit vector of the fact's context and
        text together (its text's again without a context). With the window weighed as the
        text, as by default, one product with this matrix scores every fact, reading half the
        memory that a product with each would (`assistant.memory.search.ranking.vector_scores`)."""
        self.cjk = np.zeros(16, dtype=bool)
        """Whether each row's text is CJK, for the cross-language offset."""
        self.windowed = np.zeros(16, dtype=bool)
        """Whether each row has a window of its own (a context)."""
        self.lexical = BM25Index()
        self.pinned: set[str] = set()
        self.turns: dict[tuple[str, int], set[str]] = {}
        """The keys of the facts said at each ``(thread_id, turn)``."""
        self.turn_of: dict[str, tuple[str, int]] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        """Window vectors being embedded after their fact's write, by key
        (`assistant.memory.search.sync.record_write`); a search waits for them."""

    async def settle(self, key: str | None = None) -> None:
        """Wait for the pending window vectors (of ``key`` only, if given).

        A caller that gives up does not cancel them: they belong to the writes.
        """
        tasks = [self.pending[key]] if key in self.pending else []
        if key is None:
            tasks = list(self.pending.values())
        if tasks:
            await asyncio.wait([asyncio.shield(task) for task in tasks])

    def __len__(self) -> int:
        """Number of facts held."""
        return len(self.keys)

    def vector_of(self, key: str) -> np.ndarray[Any, Any]:
        """A copy of the held vectors of ``key``: its text's, then its window's if it has one."""
        row = self.rows[key]
        if self.windowed[row]:
            return np.stack([self.vectors[row], self.sums[row] - self.vectors[row]])
        return self.vectors[row : row + 1].copy()

    def upsert(
        self, item: Item, vector: Sequence[float] | Sequence[Sequence[float]] | np.ndarray[Any, Any]
    ) -> None:
        """Hold ``item`` (a current fact) with its vectors, replacing what its key had.

        ``vector``: one row per text of :func:`~assistant.memory.search.vectors.embedded_texts`
        (a single row, or a flat vector, stands for both).
        """
        row = self.rows.get(item.key)
        if row is None:
            row = len(self.keys)
            if row == len(self.vectors):
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
                self.sums = np.concatenate([self.sums, np.zeros_like(self.sums)])
                self.cjk = np.concatenate([self.cjk, np.zeros_like(self.cjk)])
                self.windowed = np.concatenate([self.windowed, np.zeros_like(self.windowed)])
            self.keys.append(item.key)
            self.rows[item.key] = row
        rows = np.atleast_2d(np.asarray(vector, dtype=np.float32))
        self.vectors[row] = _unit(rows[0])
        self.sums[row] = self.vectors[row] + _unit(rows[-1])
        self.windowed[row] = len(rows) > 1
        self.cjk[row] = is_cjk_text(str(item.value.get("content", "")))
        self.items[item.key] = item
        self._place(item)
        if item.value.get("pinned"):
            self.pinned.add(item.key)
        else:
            self.pinned.discard(item.key)

    def next_turn_keys(self, key: str) -> set[str]:
        """The facts of the turn after ``key``'s in its thread (none without a turn)."""
        return self._turn_keys(key, +1)

    def previous_turn_keys(self, key: str) -> set[str]:
        """The facts of the turn before ``key``'s in its thread."""
        return self._turn_keys(key, -1)

    def _turn_keys(self, key: str, step: int) -> set[str]:
        place = self.turn_of.get(key)
        if place is None or len(self.turns[place]) > TURN_FACTS_LINKED:
            return set()
        keys = self.turns.get((place[0], place[1] + step), set())
        return keys if len(keys) <= TURN_FACTS_LINKED else set()

    def _place(self, item: Item) -> None:
        """Index ``item``'s words and link it to its turn's neighbours."""
        thread, turn = item.value.get("thread_id"), item.value.get("turn")
        place = None
        if isinstance(thread, str) and isinstance(turn, int) and not isinstance(turn, bool):
            place = (thread, turn)
        if self.turn_of.get(item.key) != place:
            self._unplace(item.key)
            if place is not None:
                self.turn_of[item.key] = place
                self.turns.setdefault(place, set()).add(item.key)
        self._index_words(item.key)
        for before in self.previous_turn_keys(item.key):
            self._index_words(before)

    def _unplace(self, key: str) -> None:
        """Unlink ``key`` from its turn (the turn before loses its words)."""
        before = self.previous_turn_keys(key)
        place = self.turn_of.pop(key, None)
        if place is not None:
            keys = self.turns[place]
            keys.discard(key)
            if not keys:
                del self.turns[place]
        for other in before:
            self._index_words(other)

    def _index_words(self, key: str) -> None:
        """(Re)index ``key``'s words: its text, the turn before and the turn after."""
        value = self.items[key].value
        context = value.get("context")
        after = sorted(self.next_turn_keys(key))
        self.lexical.add(
            key,
            str(value.get("content", "")),
            context=context if isinstance(context, str) else "",
            next_turn="\n".join(str(self.items[k].value.get("content", "")) for k in after),
            tags=item_tags(value),
        )

    def remove(self, key: str) -> None:
        """Forget ``key``, if held (the last row moves into its place)."""
        row = self.rows.pop(key, None)
        if row is None:
            return
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            self.keys[row] = moved
            self.rows[moved] = row
            self.vectors[row] = self.vectors[last]
            self.sums[row] = self.sums[last]
            self.cjk[row] = self.cjk[last]
            self.windowed[row] = self.windowed[last]
        self.keys.pop()
        self.lexical.remove(key)
        self._unplace(key)
        self.items.pop(key, None)
        self.pinned.discard(key)


def _unit(vector: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class Registry:
    """All users' indexes for one store, least recently used first."""

    def __init__(self) -> None:
        """An empty registry."""
        self.users: OrderedDict[tuple[str, ...], UserIndex] = OrderedDict()
        self.counted_at = 0.0

    def get(self, namespace: tuple[str, ...], dims: int) -> UserIndex:
        """The index of ``namespace`` (a new one for new dims), evicting others if too many."""
        index = self.users.get(namespace)
        added = index is None or index.dims != dims
        if index is None or index.dims != dims:
            index = self.users[namespace] = UserIndex(dims=dims)
        self.users.move_to_end(namespace)
        now = time.monotonic()
        if added or now - self.counted_at > EVICT_CHECK_S:  # counting visits every user
            self.counted_at = now
            total = sum(len(user) for user in self.users.values())
            while total > MAX_CACHED_FACTS and len(self.users) > 1:
                _, evicted = self.users.popitem(last=False)
                total -= len(evicted)
        return index


_REGISTRIES: weakref.WeakKeyDictionary[BaseStore, Registry] = weakref.WeakKeyDictionary()


def registry(store: BaseStore) -> Registry:
    """The indexes of ``store`` (the same for the server's wrapper and the store behind it)."""
    base = base_store(store)
    found = _REGISTRIES.get(base)
    if found is None:
        found = _REGISTRIES[base] = Registry()
    return found
