"""The store a user's memory lives in, for code that runs it outside the server.

Tests, benchmarks and scripts open one here (:func:`make_store`, :func:`open_store`); the
server brings its own, which ``make dev`` opens through `assistant.server.persistence.storage` with
the same :func:`pool`. Postgres is checked before use: a server that cannot be reached, or that has
no pgvector, raises `assistant.server.persistence.postgres.StorageError` at once; nothing falls
back to memory.
"""

from __future__ import annotations

import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.inference.models import EMBEDDING_DIMS, get_embeddings
from assistant.server.persistence.postgres import (
    POSTGRES_URI_ENV,
    StorageError,
    hide_password,
    is_postgres_uri,
)

__all__ = ["POOL_MAX_SIZE", "check_if_disturbed", "make_store", "open_store", "pool"]

POOL_MAX_SIZE = 10
"""Connections each pool (checkpointer, store) may open."""


@asynccontextmanager
async def pool(uri: str) -> AsyncIterator[Any]:
    """A connection pool on ``uri`` whose connections are checked before use when disturbed.

    One connection is made first, so that an unreachable server or a missing pgvector
    fails at once with a clear error instead of the pool retrying in the background.
    """
    from psycopg import AsyncConnection, OperationalError
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    try:
        async with await AsyncConnection.connect(uri, autocommit=True) as conn:
            await _require_pgvector(conn, uri)
    except OperationalError as error:
        raise StorageError(
            f"Cannot connect to Postgres at {hide_password(uri)}: {error}. Start it, fix "
            f"{POSTGRES_URI_ENV}, or unset it to use the embedded Postgres."
        ) from error
    connections: AsyncConnectionPool[Any] = AsyncConnectionPool(
        uri,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=check_if_disturbed,
        open=False,
    )
    await connections.open(wait=True, timeout=30)
    try:
        yield connections
    finally:
        await connections.close()


async def check_if_disturbed(conn: Any) -> None:
    """The pool's check before lending ``conn``: a round trip only when something arrived.

    An idle connection has nothing to read; one that has was closed or spoken to by the
    server while it waited (a restart or a crash of Postgres ends every connection with a
    message and a close), and gets psycopg_pool's check, which fails, so the pool replaces
    it. A round trip before every lend was 15,937 of the 38,338 statements of a round of
    `bench/load.py --storage postgres`, although most connections are lent again within
    milliseconds (without them the server used 1 to 5 ms less CPU a run). A connection cut
    without a word (a network gone quiet) is found by the query that uses it, as it would be
    by a check.
    """
    from psycopg_pool import AsyncConnectionPool

    if conn.closed or conn.broken:
        raise ConnectionError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        await AsyncConnectionPool.check_connection(conn)


async def _require_pgvector(conn: Any, uri: str) -> None:
    """Enable pgvector, or say how to: recall needs the store's vector search."""
    from psycopg import Error

    cursor = await conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if await cursor.fetchone():
        return
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Error as error:
        raise StorageError(
            f"Postgres at {hide_password(uri)} has no pgvector extension ({error}). Install "
            "pgvector there and run `CREATE EXTENSION vector;` as a superuser, or unset "
            f"{POSTGRES_URI_ENV} to use the embedded Postgres, which has it."
        ) from error


def make_store(index: dict[str, Any] | None = None) -> InMemoryStore:
    """An in-memory store with ``index``, by default the one langgraph.json declares."""
    from assistant.compat import patch_inmemory_store

    patch_inmemory_store()
    return InMemoryStore(index=index or _index())  # type: ignore[arg-type]


def _index() -> dict[str, Any]:
    """The store index langgraph.json declares: 384 dims, the project's embeddings, content."""
    return {"dims": EMBEDDING_DIMS, "embed": get_embeddings(), "fields": ["content"]}


@asynccontextmanager
async def open_store(
    uri: str | None = None, *, index: dict[str, Any] | None = None
) -> AsyncIterator[BaseStore]:
    """A store with the project's index: in memory for None, Postgres with pgvector for a URI.

    Args:
        uri: ``None`` for an ``InMemoryStore`` (lost when the process ends), or a
            ``postgresql://`` URI for an ``AsyncPostgresStore``; its tables are
            created or migrated on open.
        index: The store's vector index (``dims``, ``embed``, ``fields``); by default
            the one langgraph.json declares. Tests pass a small embedder here. A
            Postgres database keeps the dims it was first set up with.

    Raises:
        StorageError: the URI is not a Postgres URI, Postgres cannot be reached, or
            it has no pgvector. Never falls back to memory.
    """
    if uri is None:
        yield make_store(index)
        return
    if not is_postgres_uri(uri):
        raise StorageError(
            f"Unsupported store URI {hide_password(uri)!r}: use postgresql://user:password@"
            "host:5432/database, or None for an in-memory store."
        )
    from langgraph.store.postgres import AsyncPostgresStore

    from assistant.compat import count_removals, index_newest_rows, patch_postgres_store

    patch_postgres_store()
    async with pool(uri) as connections:
        postgres_store = AsyncPostgresStore(connections, index=index or _index())  # type: ignore[arg-type]
        await postgres_store.setup()
        await index_newest_rows(postgres_store)
        await count_removals(postgres_store)
        yield postgres_store
