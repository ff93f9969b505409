"""Where threads, checkpoints and memories live: in memory, an embedded Postgres, or yours.

``langgraph.json`` is what LangGraph Platform deploys, and the platform brings its own
Postgres with pgvector, so it names no checkpointer and no store. ``make dev`` runs
``python -m assistant.storage dev-config`` to write a copy of it (``.langgraph_dev.json``)
whose ``checkpointer.path`` and ``store.path`` point at :func:`checkpointer` and
:func:`store` below. Those open Postgres at ``POSTGRES_URI``, or, when it is unset, an
embedded Postgres (``pgserver``: PostgreSQL 16 with pgvector, from PyPI) whose data is
kept in ``.assistant_data/postgres`` of the server's working directory.

Both keep a pool of connections that are checked before use, so a Postgres restarted
under a running server is reconnected on the next turn. A Postgres that cannot be
reached, or that lacks pgvector, stops the server at start with :class:`StorageError`;
nothing ever falls back to memory silently.

>>> hide_password("postgresql://app:s3cret@db:5432/memory")
'postgresql://app:***@db:5432/memory'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.models import EMBEDDING_DIMS, get_embeddings
from assistant.settings import DEFAULT_DATA_DIR, get_storage_settings

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINTER_PATH",
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "DEV_CONFIG",
    "POSTGRES_URI_ENV",
    "STORE_PATH",
    "StorageError",
    "checkpointer",
    "database_uri",
    "embedded_postgres",
    "hide_password",
    "make_store",
    "open_checkpointer",
    "open_store",
    "postgres_uri",
    "stop_embedded_postgres",
    "store",
    "write_dev_config",
]

POSTGRES_URI_ENV = "POSTGRES_URI"
"""Names the Postgres (with pgvector) that ``make dev`` uses instead of the embedded one.

The same variable a self-hosted LangGraph deployment reads for its own database."""

DATA_DIR_ENV = "ASSISTANT_POSTGRES_DIR"
"""Where the embedded Postgres keeps its data (default :data:`DEFAULT_DATA_DIR`)."""

DEV_CONFIG = ".langgraph_dev.json"
"""The config ``make dev`` writes from langgraph.json and serves (gitignored)."""

CHECKPOINTER_PATH = "assistant.storage.checkpointer"
STORE_PATH = "assistant.storage.store"
"""Import paths of the two factories for langgraph.json's ``checkpointer.path`` and
``store.path``: dotted, so both load this module once (a file path would load a copy each)."""

POOL_MAX_SIZE = 10
"""Connections each pool (checkpointer, store) may open."""


class StorageError(RuntimeError):
    """Postgres could not be opened: unreachable, without pgvector, or a bad data folder."""


def hide_password(uri: str) -> str:
    """The URI with its password replaced by ``***``, fit for logs and error messages.

    >>> hide_password("postgresql://postgres:@/postgres?host=/tmp/pg")
    'postgresql://postgres:@/postgres?host=/tmp/pg'
    >>> hide_password("postgres://bob@localhost/db")
    'postgres://bob@localhost/db'
    """
    parts = urlsplit(uri)
    if not parts.password:
        return uri
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def _is_postgres_uri(uri: str) -> bool:
    return urlsplit(uri).scheme in ("postgresql", "postgres")


# --------------------------------------------------------------------------- embedded


def _forget_dead_handles(data_dir: Path) -> None:
    """Drop processes that died without saying so (a SIGKILL) from pgserver's handle list.

    pgserver stops the embedded Postgres when the last process using it exits; a
    process killed outright stays on its list, and the server would never be stopped.
    """
    handles = data_dir / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(pids, list):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _pid_alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive), encoding="utf-8")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clear_stale_postmaster(data_dir: Path) -> None:
    """Remove the ``postmaster.pid`` (and socket lock) of a Postgres that is gone.

    Postgres itself ignores a stale pid file, but pgserver trusts any process with
    that pid, so a pid reused by another program, or a killed postmaster left as a
    zombie, would be taken for the database.
    """
    pid_file = data_dir / "postmaster.pid"
    try:
        first_line = pid_file.read_text(encoding="utf-8").splitlines()[0]
        pid = int(first_line.strip())
    except (OSError, ValueError, IndexError):
        if pid_file.exists() and pid_file.stat().st_size == 0:
            pid_file.unlink()
        return
    if not _is_live_postgres(pid):
        pid_file.unlink()
        # Postgres takes a dead postmaster that nobody reaped (a zombie, in a container
        # without an init) for a live one, and would refuse its socket's lock file.
        for lock in data_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)


def _is_live_postgres(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) postgres process (Linux ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return not Path("/proc/self/stat").exists() and _pid_alive(pid)  # no /proc: trust kill
    name, _, rest = stat.partition("(")[2].rpartition(")")
    state = rest.split()[0] if rest.split() else "?"
    return name.startswith("postgres") and state not in ("Z", "X")


def embedded_postgres(data_dir: Path | str | None = None) -> str:
    """Start (or join) the embedded Postgres on ``data_dir`` and return its URI.

    The first call creates the folder and the database; later calls, from this or
    another process, reuse the server already running there. It is stopped when the
    last process that asked for it exits. A folder left by a crash is recovered by
    Postgres itself (write-ahead log replay).

    Raises:
        StorageError: pgserver is not installed, or Postgres would not start on the
            folder (the message names it and the log to read).
    """
    path = Path(data_dir or get_storage_settings().data_dir).resolve()
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # it logs every command at INFO
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver.postgres_server
    except ImportError as error:
        raise StorageError(
            "The embedded Postgres needs the pgserver package: run `make install`, "
            f"or set {POSTGRES_URI_ENV} to a Postgres with pgvector."
        ) from error
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        _forget_dead_handles(path)
        _clear_stale_postmaster(path)
    try:
        server = pgserver.postgres_server.get_server(path, cleanup_mode="stop")
        uri: str = server.get_uri()
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    except Exception as error:
        log = path / "log"
        raise StorageError(
            f"The embedded Postgres would not start on {path}: {error}. Read {log}; if "
            "another program owns that folder, stop it or point "
            f"{DATA_DIR_ENV} at another folder (or set {POSTGRES_URI_ENV})."
        ) from error
    return uri


def stop_embedded_postgres(data_dir: Path | str) -> None:
    """Stop the embedded Postgres on ``data_dir`` now, if this process started or joined it.

    It stops by itself when the last process using it exits; this is for callers that
    remove the folder afterwards (tests, benchmarks).
    """
    from assistant.compat import pgserver_instance

    server = pgserver_instance(data_dir)
    if server is not None:
        server.cleanup()


def database_uri(uri: str, database: str) -> str:
    """The same server's URI for another database.

    >>> database_uri("postgresql://postgres:@/postgres?host=/tmp/pg", "tests")
    'postgresql://postgres:@/tests?host=/tmp/pg'
    """
    return urlunsplit(urlsplit(uri)._replace(path=f"/{database}"))


def postgres_uri() -> str:
    """``POSTGRES_URI`` when set, otherwise the embedded Postgres's URI (started if needed)."""
    uri = get_storage_settings().postgres_uri
    if not uri:
        return embedded_postgres()
    if not _is_postgres_uri(uri):
        raise StorageError(
            f"{POSTGRES_URI_ENV}={hide_password(uri)!r} is not a Postgres URI: use "
            "postgresql://user:password@host:5432/database, or unset it for the embedded one."
        )
    return uri


_EMBEDDED_USERS: dict[Path, int] = {}
"""Open checkpointers and stores per embedded data folder, in this process."""


@asynccontextmanager
async def _server_postgres() -> AsyncIterator[str]:
    """The server's Postgres URI; the embedded one is released when the last user closes.

    pgserver also stops it at process exit, but a server process that is ended without
    running exit handlers (uvicorn's reload worker) would leave it running.
    """
    settings = get_storage_settings()
    if settings.postgres_uri:
        yield postgres_uri()
        return
    data_dir = settings.data_dir.resolve()
    uri = await asyncio.to_thread(embedded_postgres, data_dir)
    _EMBEDDED_USERS[data_dir] = _EMBEDDED_USERS.get(data_dir, 0) + 1
    try:
        yield uri
    finally:
        _EMBEDDED_USERS[data_dir] -= 1
        if not _EMBEDDED_USERS[data_dir]:
            await asyncio.to_thread(stop_embedded_postgres, data_dir)


# --------------------------------------------------------------------------- pools


@asynccontextmanager
async def _pool(uri: str) -> AsyncIterator[Any]:
    """A connection pool on ``uri`` whose connections are checked before each use.

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
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        uri,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=AsyncConnectionPool.check_connection,
        open=False,
    )
    await pool.open(wait=True, timeout=30)
    try:
        yield pool
    finally:
        await pool.close()


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
    if not _is_postgres_uri(uri):
        raise StorageError(
            f"Unsupported store URI {hide_password(uri)!r}: use postgresql://user:password@"
            "host:5432/database, or None for an in-memory store."
        )
    from langgraph.store.postgres import AsyncPostgresStore

    from assistant.compat import patch_postgres_store

    patch_postgres_store()
    async with _pool(uri) as pool:
        postgres_store = AsyncPostgresStore(pool, index=index or _index())  # type: ignore[arg-type]
        await postgres_store.setup()
        yield postgres_store


@asynccontextmanager
async def open_checkpointer(uri: str) -> AsyncIterator[Any]:
    """A Postgres checkpointer on ``uri``, its tables created or migrated.

    It is ``AsyncPostgresSaver`` with the run deletion that ``multitask_strategy="rollback"``
    needs (:class:`assistant.checkpoints.RunDeletingPostgresSaver`).
    """
    from assistant.checkpoints import RunDeletingPostgresSaver

    async with _pool(uri) as pool:
        saver = RunDeletingPostgresSaver(pool)
        await saver.setup()
        yield saver


# --------------------------------------------------------------------------- server wiring


@asynccontextmanager
async def store() -> AsyncIterator[BaseStore]:
    """The store `langgraph dev` uses under ``make dev`` (``store.path`` in the dev config)."""
    async with _server_postgres() as uri, open_store(uri) as opened:
        logger.info("Store: Postgres at %s", hide_password(uri))
        yield opened


@asynccontextmanager
async def checkpointer() -> AsyncIterator[Any]:
    """The checkpointer `langgraph dev` uses under ``make dev`` (``checkpointer.path``).

    On open it also restores the dev runtime's record of every thread that has
    checkpoints but no record, i.e. threads created less than ~10 s before a crash
    (see :func:`assistant.threads.restore_thread_records`), and makes the runtime's retry of
    a run cut off after it saved its input resume rather than run it again
    (:func:`assistant.threads.resume_interrupted_runs`).
    """
    from assistant.threads import restore_thread_records, resume_interrupted_runs

    async with _server_postgres() as uri, open_checkpointer(uri) as saver:
        logger.info("Checkpointer: Postgres at %s", hide_password(uri))
        await restore_thread_records(saver)
        await resume_interrupted_runs(saver)
        yield saver


def write_dev_config(source: Path, target: Path) -> dict[str, Any]:
    """Write ``source`` (langgraph.json) to ``target`` with the durable checkpointer and store.

    Everything else (graphs, auth, http, index, TTLs) is copied as it is, so the dev
    config never drifts from what is deployed.
    """
    config: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    config["checkpointer"] = {**config.get("checkpointer", {}), "path": CHECKPOINTER_PATH}
    config["store"] = {**config.get("store", {}), "path": STORE_PATH}
    target.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return config


def main(argv: list[str] | None = None) -> int:
    """``python -m assistant.storage dev-config [langgraph.json] [target]``."""
    parser = argparse.ArgumentParser(prog="python -m assistant.storage")
    commands = parser.add_subparsers(dest="command", required=True)
    dev = commands.add_parser("dev-config", help="write the durable dev config")
    dev.add_argument("source", nargs="?", default="langgraph.json", type=Path)
    dev.add_argument("target", nargs="?", default=DEV_CONFIG, type=Path)
    args = parser.parse_args(argv)
    write_dev_config(args.source, args.target)
    print(f"wrote {args.target} (threads, checkpoints and the store in Postgres)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
