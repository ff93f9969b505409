"""The in-process search index of each user's current facts: rows, vectors, BM25, pins.

One :class:`UserIndex` per user and store, kept by a :class:`Registry` that forgets the
least recently used users once all of them together hold more than
:data:`MAX_CACHED_FACTS` facts. How an index is kept in step with the store is
:mod:`assistant.memory.sync`'s job; how it is searched, :mod:`assistant.memory.ranking`'s.
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
from assistant.memory.freshness import Freshness
from assistant.memory.lexical import BM25Index
from assistant.memory.query import item_tags
from assistant.tokens import is_cjk_text

__all__ = ["EVICT_CHECK_S", "MAX_CACHED_FACTS", "Registry", "UserIndex", "registry"]

MAX_CACHED_FACTS = 250_000
"""Facts kept in the index across all users before the least recently used go."""

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
        self.keys: list[str] = []
        self.rows: dict[str, int] = {}
        self.items: dict[str, Item] = {}
        self.vectors = np.zeros((16, dims), dtype=np.float32)
        """Unit vectors by row (the first ``len(self)`` rows are in use)."""
        self.cjk = np.zeros(16, dtype=bool)
        """Whether each row's text is CJK, for the cross-language offset."""
        self.lexical = BM25Index()
        self.pinned: set[str] = set()

    def __len__(self) -> int:
        """Number of facts held."""
        return len(self.keys)

    def vector_of(self, key: str) -> np.ndarray[Any, Any]:
        """A copy of the held vector of ``key``."""
        vector: np.ndarray[Any, Any] = self.vectors[self.rows[key]].copy()
        return vector

    def upsert(self, item: Item, vector: Sequence[float] | np.ndarray[Any, Any]) -> None:
        """Hold ``item`` (a current fact) with its ``vector``, replacing what its key had."""
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
            self.cjk[row] = self.cjk[last]
        self.keys.pop()
        self.items.pop(key, None)
        self.lexical.remove(key)
        self.pinned.discard(key)


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
