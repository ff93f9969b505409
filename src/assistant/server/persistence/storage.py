"""Where threads, checkpoints and memories live: in memory, an embedded Postgres, or yours.

``langgraph.json`` is what LangGraph Platform deploys, and the platform brings its own
Postgres with pgvector, so it names no checkpointer and no store. ``make dev`` runs
``python -m assistant.server.persistence.storage dev-config`` to write a copy of it
(``.langgraph_dev.json``)
whose ``checkpointer.path`` and ``store.path`` point at :func:`checkpointer` and
:func:`store` below. Those open Postgres at ``POSTGRES_URI``, or, when it is unset, an
embedded Postgres whose data is kept in ``.assistant_data/postgres`` of the server's
working directory (`assistant.server.persistence.postgres`).

Both keep a pool of connections; one that heard from the server while idle (a restart or a
crash of Postgres closes it) is checked before use and replaced, so a Postgres restarted
under a running server is reconnected on the next turn. A Postgres that cannot be
reached, or that lacks pgvector, stops the server at start with :class:`StorageError`;
nothing ever falls back to memory silently.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from assistant.config.settings import DEFAULT_DATA_DIR, get_storage_settings
from assistant.server.persistence.postgres import (
    DATA_DIR_ENV,
    POSTGRES_URI_ENV,
    StorageError,
    database_uri,
    embedded_postgres,
    hide_password,
    postgres_uri,
    stop_embedded_postgres,
)
from assistant.server.persistence.stores import make_store, open_store, pool

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

DEV_CONFIG = ".langgraph_dev.json"
"""The config ``make dev`` writes from langgraph.json and serves (gitignored)."""

CHECKPOINTER_PATH = "assistant.server.persistence.storage.checkpointer"
STORE_PATH = "assistant.server.persistence.storage.store"
"""Import paths of the two factories for langgraph.json's ``checkpointer.path`` and
``store.path``: dotted, so both load this module once (a file path would load a copy each)."""


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


@asynccontextmanager
async def open_checkpointer(uri: str) -> AsyncIterator[Any]:
    """A Postgres checkpointer on ``uri``, its tables created or migrated.

    It is ``AsyncPostgresSaver`` with the run deletion that ``multitask_strategy="rollback"``
    needs (:class:`assistant.server.persistence.checkpoints.RunDeletingPostgresSaver`).
    """
    from assistant.server.persistence.checkpoints import RunDeletingPostgresSaver

    async with pool(uri) as connections:
        saver = RunDeletingPostgresSaver(connections)
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

    On open it also opens the journal of thread metadata and run records (`open_journal` in
    :mod:`assistant.server.persistence.threads`), restores the dev runtime's record of every
    thread that has checkpoints or a journal entry but no record, i.e. threads created less
    than ~10 s before a crash, with their metadata and their runs (`restore_thread_records`),
    and makes the runtime's retry of a run cut off after it saved its input resume rather
    than run it again (`resume_interrupted_runs`).
    """
    from assistant.server.persistence.threads import (
        close_journal,
        open_journal,
        restore_run_records,
        restore_thread_records,
        resume_interrupted_runs,
    )

    async with _server_postgres() as uri, open_checkpointer(uri) as saver:
        logger.info("Checkpointer: Postgres at %s", hide_password(uri))
        await open_journal(saver)
        try:
            await restore_thread_records(saver)
            await restore_run_records(saver)
            await resume_interrupted_runs(saver)
            yield saver
        finally:
            close_journal()


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
    """``python -m assistant.server.persistence.storage dev-config [langgraph.json] [target]``."""
    parser = argparse.ArgumentParser(prog="python -m assistant.server.persistence.storage")
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
