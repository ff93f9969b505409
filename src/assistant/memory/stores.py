"""The store a user's memory lives in, for code that runs it outside the server.

Tests, benchmarks and scripts make one here; the server brings its own. Both functions are
doors onto `assistant.storage` (the server wiring, which also opens the Postgres store of
``make dev``): it is imported when one is called, not when the memory layer is imported,
so that the memory layer imports nothing above itself.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

__all__ = ["make_store", "open_store"]


def make_store(index: dict[str, Any] | None = None) -> InMemoryStore:
    """An in-memory store with ``index``, by default the one langgraph.json declares.

    The index is ``dims``, ``embed`` and ``fields``; tests pass a small embedder here.
    """
    from assistant import storage  # on use: the server wiring is above the memory layer

    return storage.make_store(index)


def open_store(
    uri: str | None = None, *, index: dict[str, Any] | None = None
) -> AbstractAsyncContextManager[BaseStore]:
    """A store with the project's index, for ``async with``: in memory, or Postgres for a URI.

    ``None`` gives an ``InMemoryStore`` (lost when the process ends); a ``postgresql://``
    URI an ``AsyncPostgresStore`` with pgvector, its tables created or migrated on open.
    Raises ``assistant.storage.StorageError`` when the URI is not a Postgres URI, Postgres
    cannot be reached or it has no pgvector; never falls back to memory.
    """
    from assistant import storage  # on use: the server wiring is above the memory layer

    return storage.open_store(uri, index=index)
