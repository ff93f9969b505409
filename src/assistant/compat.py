"""Every use of a library's internals, in one place, each checked against a named version.

The rest of the package uses the libraries' public APIs only. What is here relies on
something private (an attribute, a module, a method's source) and says which release it
was read from; ``tests/test_compat.py`` checks each against the installed libraries, so
an upgrade that changes one fails ``make test`` instead of a running server.

===============================  ==================================================
Function                         Relies on (checked against)
===============================  ==================================================
:func:`base_store`               ``BatchedStore._store``, the store behind the
                                 server's batching wrapper (langgraph-runtime-inmem
                                 0.36.7)
:func:`inmemory_namespace_size`  ``InMemoryStore._data`` (langgraph-checkpoint 4.3.2)
:func:`platform_store`           ``langgraph_api.store.get_store`` (langgraph-api
                                 0.16.7)
:func:`dev_thread_records`       ``langgraph_runtime.database.connect`` and
                                 ``langgraph_runtime.ops.Threads``, and the run
                                 and thread records' lists ``conn.store["runs"]``
                                 and ``conn.store["threads"]``
                                 (langgraph-runtime-inmem 0.36.7)
:func:`mcp_open_sessions`        ``StreamableHTTPSessionManager._server_instances``
                                 (mcp 2.3.0)
:func:`pgserver_instance`        ``PostgresServer._instances`` (pgserver 0.1.4)
:func:`index_newest_rows`,       ``AsyncPostgresStore``'s table (``store``: prefix,
:func:`newest_items`,            key, value, created_at, updated_at, expires_at),
:func:`stored_item`,
:func:`current_keys`,
:func:`count_removals`,
:func:`removals`
                                 its pool (``conn``), ``_omit_expired``,
                                 ``_deserializer``, and
                                 ``langgraph.store.postgres.base``'s
                                 ``_namespace_to_text`` and ``_row_to_item``
                                 (langgraph-checkpoint-postgres 3.2.0)
:func:`patch_inmemory_store`     ``InMemoryStore._insertinmem_store`` and
                                 ``_vectors`` (langgraph-checkpoint 4.3.2)
:func:`patch_postgres_store`     ``AsyncPostgresStore._batch_search_ops`` and
                                 ``langgraph.store.postgres.base``'s helpers
                                 (langgraph-checkpoint-postgres 3.2.0)
===============================  ==================================================

The two patches work around bugs, each applied only while the installed release has it:

``InMemoryStore`` (which ``langgraph dev`` uses for the store) embeds each distinct text
once per batch but then expects one embedding per item, so a batch in which two items
share a text fails as a whole with "Number of embeddings (N) does not match number of
indices (M)" (langchain-ai/langgraph#8822). The dev server batches concurrent store
calls, so two users saying "I like hiking" at the same moment lost both facts and any
other operation in that batch. :func:`patch_inmemory_store` gives each text's embedding
to every item that has it, and does nothing once the installed langgraph is fixed.

``AsyncPostgresStore`` (langgraph-checkpoint-postgres 3.2.0) embeds search queries with
``aembed_documents``, the method for stored texts. With e5 models that gives a query the
``passage:`` prefix instead of ``query:``, which costs an extra model call per search (the
query's own embedding is cached under the other prefix) and weakens matching across
languages (``bench/recall_stores.py``: pgvector search found the right English fact for a
Chinese question 0.143 of the time, against 0.329 in memory). :func:`patch_postgres_store`
embeds them with ``aembed_query``, and does nothing once the library does.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from collections.abc import Collection, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

logger = logging.getLogger(__name__)

__all__ = [
    "DevThreadRecords",
    "Removals",
    "base_store",
    "count_removals",
    "counts_removals",
    "current_keys",
    "dev_thread_records",
    "index_newest_rows",
    "inmemory_namespace_size",
    "mcp_open_sessions",
    "newest_items",
    "patch_inmemory_store",
    "patch_postgres_store",
    "pgserver_instance",
    "platform_store",
    "removals",
    "stored_item",
]


# --------------------------------------------------------------------------- stores


def base_store(store: BaseStore) -> BaseStore:
    """The store that holds the data: LangGraph Server hands nodes a batching wrapper.

    >>> store = InMemoryStore()
    >>> base_store(store) is store
    True
    """
    inner = getattr(store, "_store", None)
    return inner if isinstance(inner, BaseStore) else store


NEWEST_ROWS_INDEX = "assistant_store_prefix_updated_at_idx"
"""The index :func:`index_newest_rows` adds to a Postgres store's table."""

_NEWEST_ROWS_INDEXED: weakref.WeakSet[BaseStore] = weakref.WeakSet()


async def index_newest_rows(store: BaseStore) -> None:
    """Index an ``AsyncPostgresStore``'s rows by namespace and time of writing, newest first.

    The store lists a namespace newest first by reading every row of it and sorting them
    (7 ms of Postgres for 10,000 facts, on each turn's probe for writes made around the
    recall index: `assistant.memory.search.sync`). With this index :func:`newest_items`
    reads just the newest rows. Only for a store whose database the project set up
    (`assistant.server.persistence.stores.open_store`): never the platform's own.
    """
    async with store.conn.connection() as conn:  # type: ignore[attr-defined]
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS {NEWEST_ROWS_INDEX} ON store (prefix, updated_at DESC)"
        )
    _NEWEST_ROWS_INDEXED.add(store)


async def newest_items(
    store: BaseStore, namespace: tuple[str, ...], limit: int
) -> list[Item] | None:
    """The ``limit`` items of ``namespace`` itself written last, newest first.

    Read through :func:`index_newest_rows`'s index; None for any other store, which lists
    them with ``asearch`` (child namespaces included).
    """
    base = base_store(store)
    if base not in _NEWEST_ROWS_INDEXED:
        return None
    return await _items(base, "{expiry} ORDER BY updated_at DESC LIMIT %s", namespace, limit)


async def stored_item(
    store: BaseStore, namespace: tuple[str, ...], key: str
) -> tuple[Item | None] | None:
    """The item at ``key`` (None when there is none), read in one plain ``SELECT``.

    The store's own ``aget`` reads through a query that also refreshes the item's time to
    live (an ``UPDATE``, with its write); a reader of a small bookkeeping item (the recall
    index's revision token, read at the start of a turn's first search) needs neither.
    None for a store without :func:`index_newest_rows`, which is read with ``aget``.
    """
    base = base_store(store)
    if base not in _NEWEST_ROWS_INDEXED:
        return None
    found = await _items(base, "AND key = %s {expiry}", namespace, key)
    return (found[0] if found else None,)


async def current_keys(
    store: BaseStore, namespace: tuple[str, ...], keys: Sequence[str] | None = None
) -> set[str] | None:
    """Which of ``keys`` (default: all) are stored in ``namespace`` and not superseded.

    One plain query that returns keys alone, for a reader that already holds the values
    (the recall index re-reading its hits, or finding what was removed behind its back);
    None for a store without :func:`index_newest_rows`, which reads the items themselves.
    """
    base = base_store(store)
    if base not in _NEWEST_ROWS_INDEXED:
        return None
    chosen = "" if keys is None else "AND key = ANY(%s) "
    rows = await _rows(
        base,
        f"SELECT key FROM store WHERE prefix = %s {chosen}"
        "AND COALESCE(value->>'status', 'current') <> 'superseded' {expiry}",
        namespace,
        *([] if keys is None else [list(keys)]),
    )
    return {str(row["key"]) for row in rows}


REMOVALS_TABLE = "assistant_store_removals"
"""The table :func:`count_removals` keeps: per namespace, its rows removed and the last one."""

_COUNTING_FUNCTIONS = (
    f"CREATE TABLE IF NOT EXISTS {REMOVALS_TABLE} "
    "(prefix text PRIMARY KEY, removals bigint NOT NULL, last_key text NOT NULL)",
    "CREATE OR REPLACE FUNCTION assistant_count_removal() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    f"INSERT INTO {REMOVALS_TABLE} AS counted (prefix, removals, last_key) "
    "VALUES (OLD.prefix, 1, OLD.key) ON CONFLICT (prefix) "
    "DO UPDATE SET removals = counted.removals + 1, last_key = OLD.key; "
    "RETURN NULL; END $$",
    "CREATE OR REPLACE FUNCTION assistant_count_truncation() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN "
    f"INSERT INTO {REMOVALS_TABLE} AS counted (prefix, removals, last_key) VALUES ('', 1, '') "
    "ON CONFLICT (prefix) DO UPDATE SET removals = counted.removals + 1; "
    "RETURN NULL; END $$",
)
"""Replaced at every start: replacing a function does not lock the store's table."""

_COUNTING_TRIGGERS = {
    "assistant_count_deleted": "AFTER DELETE ON store "
    "FOR EACH ROW EXECUTE FUNCTION assistant_count_removal()",
    "assistant_count_superseded": "AFTER UPDATE ON store FOR EACH ROW "
    "WHEN (NEW.value->>'status' = 'superseded' "
    "AND OLD.value->>'status' IS DISTINCT FROM 'superseded') "
    "EXECUTE FUNCTION assistant_count_removal()",
    "assistant_count_truncated": "AFTER TRUNCATE ON store "
    "FOR EACH STATEMENT EXECUTE FUNCTION assistant_count_truncation()",
}
"""Created where missing (creating one locks the store's table against writes for a moment);
one whose definition changes needs a new name."""

_REMOVALS_COUNTED: weakref.WeakSet[BaseStore] = weakref.WeakSet()

Removals = tuple[int, str, int]
"""A namespace's rows removed so far, the key removed last, and the store's truncations."""


async def count_removals(store: BaseStore) -> bool:
    """Count, in the database, the rows of each namespace deleted or superseded.

    Triggers on the store's table keep :data:`REMOVALS_TABLE` (a row per namespace: how
    many rows went, deleted or marked superseded, and the key that went last; a row ``''``
    counts truncations), whoever removes them: the memory layer, the store's HTTP API, a
    script. A reader that holds the namespace's facts reads :func:`removals` to know that
    nothing it holds was removed since it last looked, without re-reading its hits
    (`assistant.memory.search.sync`). Only for a store whose database the project set up
    (`assistant.server.persistence.stores.open_store`). Returns False, and the readers read
    the items, where the database refuses (no right to create a function or a trigger).
    """
    import psycopg

    try:
        async with store.conn.connection() as conn, conn.transaction():  # type: ignore[attr-defined]
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [REMOVALS_TABLE])
            for statement in _COUNTING_FUNCTIONS:
                await conn.execute(statement)
            found = await conn.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'store'::regclass "
                "AND tgname = ANY(%s)",
                [list(_COUNTING_TRIGGERS)],
            )
            present = {str(row["tgname"]) for row in await found.fetchall()}
            for name, definition in _COUNTING_TRIGGERS.items():
                if name not in present:
                    await conn.execute(f"CREATE TRIGGER {name} {definition}")
    except psycopg.Error as error:
        logger.warning("Removals from the store are not counted (%s): hits are re-read", error)
        return False
    _REMOVALS_COUNTED.add(store)
    return True


def counts_removals(store: BaseStore) -> bool:
    """Whether :func:`removals` can be read for ``store`` (or the store it wraps)."""
    return base_store(store) in _REMOVALS_COUNTED


async def removals(store: BaseStore, namespace: tuple[str, ...]) -> Removals | None:
    """What :func:`count_removals` has counted for ``namespace``; None if it does not count."""
    base = base_store(store)
    if base not in _REMOVALS_COUNTED:
        return None
    rows = await _rows(
        base,
        f"SELECT prefix, removals, last_key FROM {REMOVALS_TABLE} WHERE prefix IN (%s, '')",
        namespace,
    )
    counted = {str(row["prefix"]): row for row in rows}
    own, truncations = counted.get(_namespace_text(namespace)), counted.get("")
    return (
        int(own["removals"]) if own else 0,
        str(own["last_key"]) if own else "",
        int(truncations["removals"]) if truncations else 0,
    )


def _namespace_text(namespace: tuple[str, ...]) -> str:
    from langgraph.store.postgres.base import _namespace_to_text

    return str(_namespace_to_text(namespace))


async def _items(
    base: BaseStore, rest: str, namespace: tuple[str, ...], *params: Any
) -> list[Item]:
    """The items of ``namespace`` that ``rest`` (what follows its prefix's condition) selects."""
    from langgraph.store.postgres.base import _row_to_item

    rows = await _rows(
        base,
        f"SELECT key, value, created_at, updated_at FROM store WHERE prefix = %s {rest}",
        namespace,
        *params,
    )
    loader = base._deserializer  # type: ignore[attr-defined]
    return [_row_to_item(namespace, row, loader=loader) for row in rows]


async def _rows(base: BaseStore, query: str, namespace: tuple[str, ...], *params: Any) -> list[Any]:
    """The rows of ``query`` (its ``{expiry}`` filled in as the store reads) on ``base``'s pool."""
    from psycopg.rows import dict_row

    omit_expired = base._omit_expired  # type: ignore[attr-defined]
    expiry = "AND (expires_at IS NULL OR expires_at > NOW())" if omit_expired else ""
    async with base.conn.connection() as conn:  # type: ignore[attr-defined]
        async with conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(query.format(expiry=expiry), (_namespace_text(namespace), *params))
            return list(await cursor.fetchall())


def inmemory_namespace_size(store: BaseStore, namespace: tuple[str, ...]) -> int | None:
    """How many items ``namespace`` holds in an ``InMemoryStore`` (free to read); else None.

    >>> store = InMemoryStore()
    >>> store.put(("notes",), "a", {"text": "hi"})
    >>> inmemory_namespace_size(store, ("notes",)), inmemory_namespace_size(store, ("none",))
    (1, 0)
    """
    base = base_store(store)
    if not isinstance(base, InMemoryStore):
        return None
    return len(base._data.get(namespace, ()))


async def platform_store() -> BaseStore:
    """The running server's store, read fresh from the server.

    ``langgraph.config.get_store()`` would be the public way to the store, but in
    langgraph-api 0.16.7 custom routes get a store captured before the server applied
    langgraph.json's store config, which holds none of the data runs write. The server's
    own accessor is fresh.
    """
    from langgraph_api.store import get_store

    store: BaseStore = await get_store()
    return store


# --------------------------------------------------------------------------- dev runtime


class DevThreadRecords:
    """The thread records of the `langgraph dev` runtime, through its own operations.

    ``Threads.search`` and ``Threads.put`` are what the runtime's ``/threads`` routes
    call; they take a connection from ``connect()``.
    """

    def __init__(self, connect: Any, threads: Any) -> None:
        """Wrap the runtime's ``database.connect`` and ``ops.Threads``."""
        self._connect = connect
        self._threads = threads

    def connect(self) -> AbstractAsyncContextManager[Any]:
        """A connection to the runtime's records."""
        connection: AbstractAsyncContextManager[Any] = self._connect()
        return connection

    async def thread_ids(self, conn: Any, *, page: int = 1000) -> set[str]:
        """The id of every thread the runtime holds (no auth context: all owners)."""
        found: set[str] = set()
        offset = 0
        while True:
            result, _ = await self._threads.search(
                conn,
                ids=None,
                metadata=None,
                values=None,
                status=None,
                limit=page,
                offset=offset,
                sort_by=None,
                sort_order=None,
                select=None,
                ctx=None,
            )
            batch = [str(thread["thread_id"]) async for thread in result]
            found.update(batch)
            if len(batch) < page:
                return found
            offset += page

    async def put(self, conn: Any, thread_id: str, metadata: dict[str, Any]) -> None:
        """Create the record of ``thread_id`` with ``metadata``, unless it exists."""
        result = await self._threads.put(conn, thread_id, metadata=metadata, if_exists="do_nothing")
        async for _ in result:
            pass

    @staticmethod
    def thread_metadata(conn: Any, thread_id: str) -> dict[str, Any] | None:
        """The metadata of the runtime's record of ``thread_id``; None when there is none.

        Read from ``conn.store["threads"]`` without an await, unlike ``Threads.get``.
        """
        for thread in getattr(conn, "store", {}).get("threads", []):
            if str(thread.get("thread_id")) == thread_id:
                metadata = thread.get("metadata")
                return dict(metadata) if isinstance(metadata, dict) else {}
        return None

    def add_run(self, conn: Any, run: dict[str, Any]) -> None:
        """Add a run record (a ``langgraph_api.schema.Run``) to the runtime's list as it is."""
        runs = conn.store.setdefault("runs", [])
        runs.append(run)

    @staticmethod
    def runs(conn: Any) -> list[dict[str, Any]]:
        """The runtime's run records themselves (``conn.store["runs"]``, changed in place).

        Each is a dict with ``run_id``, ``status`` and ``kwargs`` (``input``, ``command``,
        ...). The runtime offers no operation to change a waiting run's input, so this
        reads its in-memory list.
        """
        runs = getattr(conn, "store", {}).get("runs")
        return runs if isinstance(runs, list) else []


def dev_thread_records() -> DevThreadRecords | None:
    """The `langgraph dev` runtime's thread records; None outside it (the platform's own)."""
    try:
        from langgraph_runtime.database import connect
        from langgraph_runtime.ops import Threads
    except (ImportError, ValueError):  # ValueError: no runtime edition (not in a server)
        return None
    return DevThreadRecords(connect, Threads)


# --------------------------------------------------------------------------- mcp


def mcp_open_sessions(manager: Any) -> Collection[str]:
    """The ids of the sessions an MCP ``StreamableHTTPSessionManager`` holds open.

    The manager forgets a session that ended (DELETE, idle timeout, crash) but offers no
    public way to ask which are open.
    """
    sessions: dict[str, Any] = manager._server_instances
    return sessions.keys()


# --------------------------------------------------------------------------- pgserver


def pgserver_instance(data_dir: Path | str) -> Any | None:
    """The embedded Postgres this process started or joined on ``data_dir``, if any.

    pgserver keeps one ``PostgresServer`` per data folder and offers no lookup.
    """
    from pgserver.postgres_server import PostgresServer

    return PostgresServer._instances.get(Path(data_dir).resolve())


# --------------------------------------------------------------------------- patches

_BUGGY_SIGNATURE = "for indices in to_embed.values() for index in indices"


def _insert_vectors(
    self: InMemoryStore,
    to_embed: dict[str, list[tuple[tuple[str, ...], str, str]]],
    embeddings: list[list[float]],
) -> None:
    if len(to_embed) != len(embeddings):
        raise ValueError(
            f"Number of embeddings ({len(embeddings)}) does not match number of texts "
            f"({len(to_embed)})"
        )
    vectors: Any = self._vectors
    for embedding, indices in zip(embeddings, to_embed.values(), strict=True):
        for namespace, key, path in indices:
            vectors[namespace][key][path] = embedding


def patch_inmemory_store() -> bool:
    """Fix ``InMemoryStore`` batches with repeated texts; returns whether a patch was needed."""
    return _replace_if(InMemoryStore, "_insertinmem_store", _insert_vectors, _BUGGY_SIGNATURE)


def _replace_if(owner: type, name: str, replacement: Any, signature: str) -> bool:
    """Replace ``owner.name`` by ``replacement`` if its source still contains ``signature``.

    Returns whether it was replaced: not when it already is, when a release fixed it (the
    signature is gone), or when the source cannot be read.
    """
    current = getattr(owner, name)
    if current is replacement:
        return False
    try:
        source = inspect.getsource(current)
    except (OSError, TypeError):
        return False
    if signature not in source:
        return False
    setattr(owner, name, replacement)
    return True


_POSTGRES_BUGGY_SIGNATURE = "vectors = await self.embeddings.aembed_documents("


async def _batch_search_ops(self: Any, search_ops: Any, results: Any, cur: Any) -> None:
    """``AsyncPostgresStore._batch_search_ops`` with queries embedded by ``aembed_query``."""
    from langgraph.store.postgres.base import (
        PLACEHOLDER,
        _decode_ns_bytes,
        _row_to_search_item,
    )

    queries, embedding_requests = self._prepare_batch_search_queries(search_ops)
    if embedding_requests and self.embeddings:
        vectors = await asyncio.gather(
            *(self.embeddings.aembed_query(query) for _, query in embedding_requests)
        )
        for (index, _), vector in zip(embedding_requests, vectors, strict=True):
            params = queries[index][1]
            for i in range(len(params)):
                if params[i] is PLACEHOLDER:
                    params[i] = vector
    for (index, _), (query, params) in zip(search_ops, queries, strict=False):
        await cur.execute(query, params)
        rows = await cur.fetchall()
        results[index] = [
            _row_to_search_item(_decode_ns_bytes(row["prefix"]), row, loader=self._deserializer)
            for row in rows
        ]


def patch_postgres_store() -> bool:
    """Embed ``AsyncPostgresStore`` search queries as queries; returns whether it was needed."""
    from langgraph.store.postgres import AsyncPostgresStore

    return _replace_if(
        AsyncPostgresStore, "_batch_search_ops", _batch_search_ops, _POSTGRES_BUGGY_SIGNATURE
    )
