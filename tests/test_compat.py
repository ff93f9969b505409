import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from assistant.compat import (
    base_store,
    count_removals,
    current_keys,
    inmemory_namespace_size,
    mcp_open_sessions,
    newest_items,
    patch_inmemory_store,
    patch_postgres_store,
    pgserver_instance,
    removals,
    stored_item,
)


async def test_a_batch_in_which_two_users_say_the_same_thing_stores_both(
    store: InMemoryStore,
) -> None:
    # langgraph dev batches concurrent store calls; a repeated text failed the whole batch.
    patch_inmemory_store()
    await store.abatch(
        [
            PutOp(("user_facts", "alice"), "k1", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k2", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k3", {"content": "Works as a nurse"}),
        ]
    )
    for user, keys in (("alice", {"k1"}), ("bob", {"k2", "k3"})):
        found = await store.asearch(("user_facts", user), query="hiking")
        assert {item.key for item in found} == keys
        assert all(item.score is not None for item in found)


def test_the_patch_is_applied_once() -> None:
    patch_inmemory_store()
    assert patch_inmemory_store() is False


class PrefixedEmbeddings(Embeddings):
    """Records which method embedded each text, as e5's two prefixes would differ."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return [[1.0] * 64 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [1.0] * 64


@pytest.mark.postgres
async def test_postgres_store_searches_embed_the_query_as_a_query(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    embeddings = PrefixedEmbeddings()
    async with open_unit_postgres_store(embeddings) as store:
        await store.aput(("user_facts", "alice"), "k1", {"content": "Likes hiking"})
        found = await store.asearch(("user_facts", "alice"), query="what do I enjoy?")

    assert [item.key for item in found] == ["k1"]
    assert embeddings.documents == ["Likes hiking"]
    assert embeddings.queries == ["what do I enjoy?"]
    assert patch_postgres_store() is False  # applied by open_store, once


@pytest.mark.postgres
async def test_the_newest_rows_of_a_postgres_namespace_are_read_as_its_search_lists_them(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    facts = ("user_facts", "alice")
    async with open_unit_postgres_store(PrefixedEmbeddings()) as store:
        for number in range(5):
            await store.aput(facts, f"k{number}", {"content": f"Fact {number}"}, index=False)
        await store.aput(facts, "k1", {"content": "Fact 1, edited"}, index=False)
        await store.aput(("user_facts", "alice_2"), "other", {"content": "Not hers"}, index=False)
        await store.aput(("user_facts", "bob"), "k9", {"content": "Bob's"}, index=False)

        newest = await newest_items(store, facts, 3)
        listed = await store.asearch(facts, limit=3)
        # The server hands nodes a wrapper: the store behind it is found.
        from langgraph_runtime_inmem.store import BatchedStore

        wrapped = await newest_items(BatchedStore(store), facts, 3)

    assert newest is not None and wrapped is not None
    assert [item.key for item in newest] == ["k1", "k4", "k3"] == [item.key for item in listed]
    assert [item.value for item in newest] == [item.value for item in listed]
    assert [item.updated_at for item in newest] == [item.updated_at for item in listed]
    assert [item.namespace for item in newest] == [facts] * 3
    assert [item.key for item in wrapped] == ["k1", "k4", "k3"]
    assert await newest_items(InMemoryStore(), facts, 3) is None  # it lists them itself


@pytest.mark.postgres
async def test_the_current_keys_of_a_postgres_namespace_are_read_without_their_values(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    facts = ("user_facts", "alice")
    async with open_unit_postgres_store(PrefixedEmbeddings()) as store:
        await store.aput(facts, "now", {"content": "Lives in Porto"}, index=False)
        await store.aput(facts, "said", {"content": "Likes tea", "status": "current"}, index=False)
        await store.aput(facts, "old", {"content": "Lives in Lyon", "status": "superseded"})
        await store.aput(facts, "gone", {"content": "Has a cat"}, index=False)
        await store.adelete(facts, "gone")
        await store.aput(("user_facts", "alice_2"), "hers", {"content": "Not hers"}, index=False)
        from langgraph_runtime_inmem.store import BatchedStore

        asked = ["now", "said", "old", "gone", "hers", "never"]
        current = await current_keys(store, facts, asked)
        wrapped = await current_keys(BatchedStore(store), facts, asked)
        every = await current_keys(store, facts)

    assert current == wrapped == every == {"now", "said"}
    assert await current_keys(InMemoryStore(), facts, asked) is None  # it reads the items


@pytest.mark.postgres
async def test_an_item_is_read_plainly_as_the_store_reads_it(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    token = ("memory_index", "alice")
    async with open_unit_postgres_store(PrefixedEmbeddings()) as store:
        await store.aput(token, "user_facts", {"revision": "r1"}, index=False)
        read = await stored_item(store, token, "user_facts")
        expected = await store.aget(token, "user_facts")
        missing = await stored_item(store, token, "episodes")

    assert read is not None and read[0] is not None and expected is not None
    assert read[0].dict() == expected.dict()
    assert missing == (None,)
    assert await stored_item(InMemoryStore(), token, "user_facts") is None  # it uses aget


@pytest.mark.postgres
async def test_a_postgres_store_counts_each_namespaces_removals_whoever_makes_them(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    facts, others = ("user_facts", "alice"), ("user_facts", "alice_2")
    async with open_unit_postgres_store(PrefixedEmbeddings()) as store:
        before = await removals(store, facts)
        assert before is not None and await count_removals(store)  # set up again: no change
        await store.aput(facts, "a", {"content": "Lives in Porto"}, index=False)
        await store.aput(facts, "a", {"content": "Lives in Porto, Ribeira"}, index=False)
        await store.aput(facts, "b", {"content": "Likes tea", "status": "current"}, index=False)
        assert await removals(store, facts) == before  # writes and edits remove nothing
        await store.aput(facts, "b", {"content": "Likes tea", "status": "superseded"}, index=False)
        await store.aput(facts, "b", {"content": "Likes tea.", "status": "superseded"}, index=False)
        superseded = await removals(store, facts)
        await store.adelete(facts, "a")
        await store.adelete(facts, "a")  # nothing left to delete
        deleted = await removals(store, facts)
        await store.aput(others, "c", {"content": "Not hers"}, index=False)
        await store.adelete(others, "c")
        async with store.conn.connection() as conn:  # type: ignore[attr-defined]
            await conn.execute("TRUNCATE store, store_vectors")
        truncated = await removals(store, facts)
        from langgraph_runtime_inmem.store import BatchedStore

        wrapped = await removals(BatchedStore(store), facts)

    count, _, truncations = before
    assert superseded == (count + 1, "b", truncations)
    assert deleted == (count + 2, "a", truncations)
    assert truncated == wrapped == (count + 2, "a", truncations + 1)
    assert await removals(InMemoryStore(), facts) is None  # it reads the items


@pytest.mark.postgres
async def test_a_database_that_refuses_the_counting_leaves_the_store_as_it_was(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import assistant.compat as compat

    facts = ("user_facts", "alice")
    async with open_unit_postgres_store(PrefixedEmbeddings()) as store:
        compat._REMOVALS_COUNTED.discard(store)
        refused = (*compat._COUNTING_FUNCTIONS, "CREATE FUNCTION no_such_language() LANGUAGE nope")
        monkeypatch.setattr(compat, "_COUNTING_FUNCTIONS", refused)

        assert await count_removals(store) is False
        await store.aput(facts, "a", {"content": "Lives in Porto"}, index=False)
        assert await removals(store, facts) is None  # so readers re-read their hits
        assert await current_keys(store, facts) == {"a"}  # and the store works as before

    assert "Removals from the store are not counted" in caplog.text


# --------------------------------------------------------------------------- internals relied on
# Each test below fails when an upgrade changes something private that assistant.compat
# relies on (its module docstring names the version each was checked against).


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


async def test_the_store_behind_the_servers_batching_wrapper_is_found() -> None:
    from langgraph_runtime_inmem.store import BatchedStore

    inner = InMemoryStore()
    assert base_store(BatchedStore(inner)) is inner
    assert base_store(inner) is inner


async def test_an_inmemory_namespace_is_counted_from_its_data(store: InMemoryStore) -> None:
    facts = ("user_facts", "alice")
    for key in ("k1", "k2"):
        await store.aput(facts, key, {"content": f"Fact {key}"})
    await store.aput(("user_facts", "bob"), "k3", {"content": "Fact k3"})
    assert inmemory_namespace_size(store, facts) == 2 == len(await store.asearch(facts))
    await store.adelete(facts, "k1")
    assert inmemory_namespace_size(store, facts) == 1
    assert inmemory_namespace_size(store, ("user_facts", "nobody")) == 0


def test_the_inmemory_store_keeps_the_methods_the_patch_replaces() -> None:
    assert parameters(InMemoryStore._insertinmem_store) == ["self", "to_embed", "embeddings"]
    assert isinstance(InMemoryStore()._vectors, dict)


def test_the_postgres_store_keeps_the_methods_the_patch_uses() -> None:
    from langgraph.store.postgres import AsyncPostgresStore, base

    assert parameters(AsyncPostgresStore._batch_search_ops) == [
        "self",
        "search_ops",
        "results",
        "cur",
    ]
    assert parameters(AsyncPostgresStore._prepare_batch_search_queries) == ["self", "search_ops"]
    assert callable(base._decode_ns_bytes) and callable(base._row_to_search_item)
    assert base.PLACEHOLDER is not None
    assert base._namespace_to_text(("user_facts", "alice")) == "user_facts.alice"
    assert parameters(base._row_to_item) == ["namespace", "row", "loader"]
    assert isinstance(AsyncPostgresStore._omit_expired, property)


async def test_the_mcp_session_manager_keeps_its_open_sessions_by_id() -> None:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from assistant.server.mcp_server import build_server

    server = build_server()
    server.streamable_http_app(json_response=True)
    manager = server.session_manager
    assert isinstance(manager, StreamableHTTPSessionManager)
    assert list(mcp_open_sessions(manager)) == []
    manager._server_instances["s-1"] = object()  # type: ignore[assignment]
    assert list(mcp_open_sessions(manager)) == ["s-1"]


@pytest.mark.postgres
def test_pgserver_keeps_its_servers_by_resolved_data_folder(postgres_uri: str) -> None:
    from pgserver.postgres_server import PostgresServer

    assert PostgresServer._instances  # the session's embedded Postgres
    for folder, server in PostgresServer._instances.items():
        assert isinstance(folder, Path) and folder == folder.resolve()
        assert pgserver_instance(folder) is server
        assert callable(server.cleanup)
    assert pgserver_instance("/nonexistent/data") is None


DEV_RUNTIME = """
import asyncio, inspect, json
from langgraph.store.memory import InMemoryStore
from assistant.compat import base_store, dev_thread_records, platform_store

async def main():
    records = dev_thread_records()
    async with records.connect() as conn:
        before = await records.thread_ids(conn)
        await records.put(conn, "00000000-0000-0000-0000-000000000001", {"owner": "alice"})
        await records.put(conn, "00000000-0000-0000-0000-000000000001", {"owner": "bob"})
        after = await records.thread_ids(conn)
        runs_kept = records.runs(conn) is conn.store["runs"]
        owner = records.thread_metadata(conn, "00000000-0000-0000-0000-000000000001")
        missing = records.thread_metadata(conn, "00000000-0000-0000-0000-000000000002")
    store = await platform_store()
    print(json.dumps({
        "before": sorted(before),
        "after": sorted(after),
        "store_in_memory": isinstance(base_store(store), InMemoryStore),
        "runs_kept": runs_kept,
        "thread_metadata": [owner["owner"], missing],
    }))

asyncio.run(main())
"""
"""What the dev runtime's internals are used for, run as `langgraph dev` configures them."""


def test_the_dev_runtimes_thread_records_and_store_work_as_used(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "LANGGRAPH_RUNTIME_EDITION": "inmem",  # what `langgraph dev` sets
        "MIGRATIONS_PATH": "__inmem",
        "DATABASE_URI": ":memory:",
        "REDIS_URI": "fake",
    }
    done = subprocess.run(
        [sys.executable, "-c", DEV_RUNTIME],
        cwd=tmp_path,  # the runtime persists its records under .langgraph_api/ here
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "before": [],
        "after": ["00000000-0000-0000-0000-000000000001"],
        "store_in_memory": True,
        "runs_kept": True,
        "thread_metadata": ["alice", None],
    }


def test_the_dev_runtimes_thread_operations_take_the_arguments_passed() -> None:
    from langgraph_runtime_inmem.database import connect
    from langgraph_runtime_inmem.ops import Runs, Threads

    search = inspect.signature(Threads.search).parameters
    assert {"conn", "ids", "metadata", "values", "status", "limit", "offset"} <= set(search)
    assert {"sort_by", "sort_order", "select", "ctx"} <= set(search)
    assert {"conn", "thread_id", "metadata", "if_exists"} <= set(
        inspect.signature(Threads.put).parameters
    )
    assert inspect.isfunction(connect)
    # A run record keeps the run's input under kwargs (threads.resume_interrupted_runs).
    assert 'new_run["kwargs"]' in inspect.getsource(Runs.put)
