"""Opening storage: the in-memory store, Postgres, clear errors, and the durable dev config."""

from __future__ import annotations

import inspect
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.server.persistence import storage
from assistant.server.persistence.storage import StorageError, open_store, write_dev_config

ROOT = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_no_uri_gives_the_in_memory_store_with_the_project_index() -> None:
    deployed = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))["store"]["index"]
    async with open_store() as store:
        assert isinstance(store, InMemoryStore)
        assert store.index_config is not None
        assert store.index_config["dims"] == deployed["dims"]
        assert store.index_config["fields"] == deployed["fields"]


@pytest.mark.postgres
async def test_a_postgres_uri_gives_a_postgres_store_with_the_project_index(
    postgres_uri: str,
) -> None:
    from langgraph.store.postgres import AsyncPostgresStore

    from helpers import create_database

    uri = create_database(postgres_uri, "open_store_default_index")
    async with open_store(uri) as store:
        assert isinstance(store, AsyncPostgresStore)
        assert store.index_config is not None
        assert store.index_config["dims"] == 384
        await memory.save_memory(store, "alice", "Lives in Hangzhou")
        found = await memory.recall(store, "alice", "Where do I live?", limit=1)
    assert [item.value["content"] for item in found] == ["Lives in Hangzhou"]


@pytest.mark.postgres
async def test_the_pool_lends_a_quiet_connection_without_a_round_trip_and_replaces_a_dead_one(
    postgres_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

    from assistant.server.persistence.stores import pool

    checks: list[object] = []
    full_check = AsyncConnectionPool.check_connection

    async def counted(conn: Any) -> None:
        checks.append(conn)
        await full_check(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
    async with pool(postgres_uri) as connections:
        for _ in range(5):
            async with connections.connection() as conn:
                backend = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
        assert checks == []  # quiet connections: no round trip before each use
        async with await AsyncConnection.connect(postgres_uri, autocommit=True) as admin:
            # waits (up to 5 s) until the backend is gone, as a restart has when it returns
            await admin.execute(
                "SELECT pg_terminate_backend(%s, 5000)", [backend["pg_backend_pid"]]
            )
        async with connections.connection() as conn:  # what a Postgres restart does to all
            row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
        assert row["pg_backend_pid"] != backend["pg_backend_pid"]
        assert len(checks) == 1  # the dead one was checked, failed and was replaced


async def test_an_unreachable_postgres_is_an_error_naming_it_without_the_password() -> None:
    uri = f"postgresql://app:s3cret@127.0.0.1:{_closed_port()}/memory?connect_timeout=2"
    with pytest.raises(StorageError) as raised:
        async with open_store(uri):
            pytest.fail("opened a store on a closed port")
    message = str(raised.value)
    assert "s3cret" not in message
    assert "postgresql://app:***@127.0.0.1" in message
    assert "POSTGRES_URI" in message


async def test_a_uri_that_is_not_postgres_is_refused() -> None:
    with pytest.raises(StorageError, match="sqlite:///memory.db"):
        async with open_store("sqlite:///memory.db"):
            pytest.fail("opened a store on a sqlite URI")


def test_postgres_uri_env_that_is_not_postgres_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTGRES_URI", "mysql://root:pw@db/app")
    with pytest.raises(StorageError, match=r"mysql://root:\*\*\*@db/app"):
        storage.postgres_uri()


@pytest.mark.postgres
async def test_a_database_without_pgvector_rights_says_what_to_do(postgres_uri: str) -> None:
    import psycopg

    from helpers import create_database

    admin = create_database(postgres_uri, "no_vector")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP EXTENSION IF EXISTS vector CASCADE")
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'plain'").fetchone():
            conn.execute("CREATE ROLE plain LOGIN")
    uri = storage.database_uri(admin.replace("postgres:@", "plain:@", 1), "no_vector")
    with pytest.raises(StorageError, match="pgvector") as raised:
        async with open_store(uri):
            pytest.fail("opened a store without pgvector")
    assert "CREATE EXTENSION vector" in str(raised.value)


def test_the_dev_config_is_langgraph_json_plus_the_durable_wiring(tmp_path: Path) -> None:
    target = tmp_path / "dev.json"
    written = write_dev_config(ROOT / "langgraph.json", target)

    deployed = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert "path" not in deployed.get("checkpointer", {})  # the platform brings its own
    assert "path" not in deployed.get("store", {})
    assert json.loads(target.read_text(encoding="utf-8")) == written
    assert written["checkpointer"] == {
        **deployed.get("checkpointer", {}),
        "path": "assistant.server.persistence.storage.checkpointer",
    }
    assert written["store"] == {
        **deployed["store"],
        "path": "assistant.server.persistence.storage.store",
    }
    rest = {key: value for key, value in written.items() if key not in ("checkpointer", "store")}
    assert rest == {k: v for k, v in deployed.items() if k not in ("checkpointer", "store")}
    for entry in (written["checkpointer"]["path"], written["store"]["path"]):
        module, _, name = entry.rpartition(".")
        assert module == storage.__name__
        assert callable(getattr(storage, name))


def test_the_embedded_folder_is_gitignored() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"{storage.DEFAULT_DATA_DIR.parts[0]}/" in ignored
    assert storage.DEV_CONFIG in ignored


def test_make_dev_watches_only_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """`make dev`'s reloader watches src/, so the server's own data writes never reach it."""
    import langgraph_api.cli

    import watch_code

    served: list[dict[str, Any]] = []
    monkeypatch.setenv("LANGGRAPH_CLI_NO_ANALYTICS", "1")
    monkeypatch.setattr(langgraph_api.cli, "run_server", lambda *a, **kw: served.append(kw))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI appends the working directory
    with pytest.raises(SystemExit) as exited:
        watch_code.main(["--port", "2999", "--config", str(ROOT / "langgraph.json")])
    assert exited.value.code == 0
    assert [kw["reload_dirs"] for kw in served] == [[str(ROOT / "src")]]
    assert "reload_dirs" in inspect.signature(uvicorn.run).parameters  # handed on to uvicorn
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("dev", "dev-memory"):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert "examples/watch_code.py" in recipe and "langgraph dev" not in recipe
