"""Sixty turns on one thread, in process: the long-thread invariants, turn by turn.

The graph runs with the scripted (rule-based) model, an in-memory checkpointer and store;
`long_thread.check_long_thread` checks what a user would notice after every turn. A short
version runs against a real server in ``tests/e2e/test_memory_e2e.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.run.context import Context
from long_thread import check_long_thread
from prompt_log import ScriptedLog
from scripted import ScriptedRules

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import UseModel

LONG_THREAD_TURNS = 60
USER = "alice"


@dataclass
class InProcessThread:
    """A thread of the compiled graph, driven directly."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    store: InMemoryStore
    log: ScriptedLog
    thread_id: str = "long-thread"

    async def send(self, text: str, **context: Any) -> None:
        await self.graph.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": self.thread_id}},
            context=Context(user_id=USER, **context),
        )

    async def values(self) -> dict[str, Any]:
        state = await self.graph.aget_state({"configurable": {"thread_id": self.thread_id}})
        values = dict(state.values)
        messages: list[BaseMessage] = values.get("messages", [])
        values["messages"] = [{"type": m.type, "content": m.content} for m in messages]
        return values

    async def episodes(self) -> dict[str, dict[str, Any]]:
        found = await self.store.asearch(memory.user_episodes_namespace(USER), limit=100)
        return {item.key: item.value for item in found}

    def respond_call(self, marker: str) -> dict[str, Any]:
        return self.log.respond_call(marker)

    def entries(self) -> list[dict[str, Any]]:
        return self.log.entries()


async def test_sixty_turns_stay_within_budget_and_keep_who_the_user_is(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    store: InMemoryStore,
    tmp_path: Path,
    use_model: UseModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_model(ScriptedRules(log_path=str(tmp_path / "calls.jsonl")))
    thread = InProcessThread(graph, store, ScriptedLog(tmp_path / "calls.jsonl"))

    figures = await check_long_thread(thread, "long", LONG_THREAD_TURNS)

    tokens = figures.prompt_tokens
    with capsys.disabled():
        print(
            f"\nLONG_THREAD turn10={tokens[10]} turn30={tokens[30]} turn60={tokens[60]} "
            f"messages={figures.message_counts[-1]} "
            f"max_messages={max(figures.message_counts)}/{figures.max_messages} "
            f"first_summary_turn={figures.first_summary_turn}"
        )
