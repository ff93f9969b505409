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

from assistant.checkpoints import RUN_ID_INDEX, RunDeletingPostgresSaver
from assistant.storage import open_checkpointer
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
