"""Deleting a run's checkpoints from Postgres, as ``multitask_strategy="rollback"`` does."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from assistant.server.persistence.checkpoints import RUN_ID_INDEX, RunDeletingPostgresSaver
from assistant.server.persistence.storage import open_checkpointer
from assistant.server.persistence.threads import (
    resume_instead_of_repeating,
    resume_interrupted_runs,
    started_runs,
)
from helpers import create_database

pytestmark = pytest.mark.postgres


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


async def reply(state: State) -> dict[str, Any]:
    return {"messages": [("ai", f"heard: {state['messages'][-1].content}")]}


async def count(state: State) -> dict[str, Any]:
    return {"turns": state.get("turns", 0) + 1}


def _graph(saver: AsyncPostgresSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node(reply)
    builder.add_node(count)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", "count")
    return builder.compile(checkpointer=saver)


async def _turn(graph: Any, thread_id: str, run_id: str, text: str) -> None:
    """One turn, stamped with ``run_id`` as the server stamps its runs' checkpoints."""
    config = {"configurable": {"thread_id": thread_id}, "metadata": {"run_id": run_id}}
    await graph.ainvoke({"messages": [HumanMessage(text, id=f"m-{run_id}")]}, config)


def _texts(values: dict[str, Any]) -> list[str]:
    return [str(message.content) for message in values["messages"]]


async def _rows(saver: AsyncPostgresSaver, thread_id: str) -> dict[str, set[tuple[str, ...]]]:
    """The thread's rows in each checkpoint table, by primary key."""
    queries = {
        "checkpoints": "SELECT checkpoint_ns, checkpoint_id FROM checkpoints",
        "writes": "SELECT checkpoint_ns, checkpoint_id, task_id, idx::text FROM checkpoint_writes",
        "blobs": "SELECT checkpoint_ns, channel, version FROM checkpoint_blobs",
    }
    rows: dict[str, set[tuple[str, ...]]] = {}
    pool: Any = saver.conn
    async with pool.connection() as conn:
        for table, query in queries.items():
            cursor = await conn.execute(f"{query} WHERE thread_id = %s", (thread_id,))
            rows[table] = {tuple(row.values()) for row in await cursor.fetchall()}
    return rows


@pytest.fixture
def database(postgres_uri: str) -> str:
    return create_database(postgres_uri, f"checkpoints_{uuid.uuid4().hex[:12]}")


async def test_deleting_a_run_leaves_the_thread_exactly_as_before_it(database: str) -> None:
    async with open_checkpointer(database) as saver:
        assert isinstance(saver, RunDeletingPostgresSaver)
        graph = _graph(saver)
        thread, other = str(uuid.uuid4()), str(uuid.uuid4())
        await _turn(graph, thread, "run-1", "I live in Lyon")
        before = await _rows(saver, thread)
        await _turn(graph, thread, "run-2", "I work as a nurse")
        await _turn(graph, other, "run-3", "Hello")
        other_before = await _rows(saver, other)
        assert (await _rows(saver, thread))["blobs"] > before["blobs"]

        await saver.adelete_for_runs(["run-2"])

        assert await _rows(saver, thread) == before
        assert await _rows(saver, other) == other_before
        state = await graph.aget_state({"configurable": {"thread_id": thread}})
        assert [m.content for m in state.values["messages"]] == [
            "I live in Lyon",
            "heard: I live in Lyon",
        ]
        assert state.values["turns"] == 1

        await saver.adelete_for_runs(["run-2", "no-such-run"])  # the server calls it again
        await saver.adelete_for_runs([])
        assert await _rows(saver, thread) == before

        await _turn(graph, thread, "run-4", "Still there?")  # the thread goes on from run 1
        state = await graph.aget_state({"configurable": {"thread_id": thread}})
        assert [m.content for m in state.values["messages"]][2:] == [
            "Still there?",
            "heard: Still there?",
        ]
        assert state.values["turns"] == 2


async def test_the_runs_checkpoints_are_found_through_an_index(database: str) -> None:
    async with open_checkpointer(database) as saver, saver.conn.connection() as conn:
        cursor = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (RUN_ID_INDEX,)
        )
        row = await cursor.fetchone()
    assert row is not None and "run_id" in row["indexdef"]


async def test_a_single_run_id_string_is_refused(database: str) -> None:
    async with open_checkpointer(database) as saver:
        with pytest.raises(TypeError, match="not a str"):
            await saver.adelete_for_runs("run-1")


def test_the_library_still_lacks_run_deletion() -> None:
    """When langgraph-checkpoint-postgres deletes runs itself, use its method instead."""
    assert "adelete_for_runs" not in vars(AsyncPostgresSaver), (
        "AsyncPostgresSaver now has adelete_for_runs: drop RunDeletingPostgresSaver's"
    )


def _waiting(run_id: str, text: str) -> dict[str, Any]:
    """A run record as the dev runtime keeps it, saved as running and reset to pending."""
    return {
        "run_id": run_id,
        "status": "pending",
        "kwargs": {"input": {"messages": [{"role": "user", "content": text}]}, "command": None},
    }


async def test_a_retried_run_that_had_finished_resumes_and_adds_nothing(database: str) -> None:
    async with open_checkpointer(database) as saver:
        graph = _graph(saver)
        thread = str(uuid.uuid4())
        await _turn(graph, thread, "run-1", "I live in Lyon")
        runs = [_waiting("run-1", "I live in Lyon"), _waiting("run-2", "Never started")]

        started = await started_runs(saver, ["run-1", "run-2"])
        assert started == {"run-1"}
        assert resume_instead_of_repeating(runs, started) == ["run-1"]
        assert runs[0]["kwargs"] == {"input": None, "command": None}
        assert runs[1]["kwargs"]["input"] is not None  # it wrote nothing: retried as it was

        # What the runtime then does with the resumed run: the thread is unchanged.
        config = {"configurable": {"thread_id": thread}, "metadata": {"run_id": "run-1"}}
        await graph.ainvoke(runs[0]["kwargs"]["input"], config)
        state = await graph.aget_state({"configurable": {"thread_id": thread}})
        assert _texts(state.values) == ["I live in Lyon", "heard: I live in Lyon"]
        assert state.values["turns"] == 1


async def test_a_retried_run_cut_off_midway_finishes_its_remaining_steps(database: str) -> None:
    async with open_checkpointer(database) as saver:
        builder = StateGraph(State)
        builder.add_node(reply)
        builder.add_node(count)
        builder.add_edge(START, "reply")
        builder.add_edge("reply", "count")
        graph: Any = builder.compile(checkpointer=saver, interrupt_before=["count"])
        thread = str(uuid.uuid4())
        await _turn(graph, thread, "run-1", "I work as a nurse")  # stops before `count`
        runs = [_waiting("run-1", "I work as a nurse")]
        assert resume_instead_of_repeating(runs, await started_runs(saver, ["run-1"]))

        config = {"configurable": {"thread_id": thread}, "metadata": {"run_id": "run-1"}}
        await graph.ainvoke(runs[0]["kwargs"]["input"], config)
        state = await graph.aget_state({"configurable": {"thread_id": thread}})
        assert _texts(state.values) == ["I work as a nurse", "heard: I work as a nurse"]
        assert state.values["turns"] == 1


def test_only_pending_runs_with_an_input_are_changed() -> None:
    done = {**_waiting("run-1", "hi"), "status": "success"}
    resumed_already = {"run_id": "run-2", "status": "pending", "kwargs": {"input": None}}
    odd = {"run_id": "run-3", "status": "pending", "kwargs": "encrypted"}
    runs = [done, resumed_already, odd]
    assert resume_instead_of_repeating(runs, {"run-1", "run-2", "run-3"}) == []
    assert done["kwargs"]["input"] is not None


async def test_the_dev_runtimes_records_are_changed_in_place(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the dev runtime's own connection, as at the server's start."""
    monkeypatch.setenv("LANGGRAPH_RUNTIME_EDITION", "inmem")
    from langgraph_runtime_inmem.database import GLOBAL_STORE

    async with open_checkpointer(database) as saver:
        graph = _graph(saver)
        run_id = f"run-{uuid.uuid4().hex}"
        await _turn(graph, str(uuid.uuid4()), run_id, "I live in Lyon")
        runs = [_waiting(run_id, "I live in Lyon"), _waiting("run-never", "Hi")]
        monkeypatch.setitem(GLOBAL_STORE, "runs", runs)

        assert await resume_interrupted_runs(saver) == [run_id]
        assert GLOBAL_STORE["runs"][0]["kwargs"]["input"] is None
        assert GLOBAL_STORE["runs"][1]["kwargs"]["input"] is not None
        assert await started_runs(saver, []) == set()


async def test_a_journal_write_that_postgres_ends_as_a_deadlock_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from psycopg.errors import DeadlockDetected

    from assistant.server.persistence import threads

    calls: list[str] = []

    async def collides_once(saver: Any, statement: str, parameters: tuple[Any, ...] = ()) -> None:
        calls.append(statement)
        if len(calls) == 1:
            raise DeadlockDetected("deadlock detected")

    monkeypatch.setattr(threads, "_journal", [object()])
    monkeypatch.setattr(threads, "_execute", collides_once)
    assert await threads._journal_write("UPDATE assistant_run_journal SET kwargs = NULL", ())
    assert len(calls) == 2

    async def fails(saver: Any, statement: str, parameters: tuple[Any, ...] = ()) -> None:
        calls.append(statement)
        raise RuntimeError("the journal's Postgres went away")

    calls.clear()
    monkeypatch.setattr(threads, "_execute", fails)
    assert not await threads._journal_write("UPDATE assistant_run_journal SET kwargs = NULL", ())
    assert len(calls) == 1  # only a collision is tried again
