"""The rule-based model behind `make demo` and the end-to-end tests (`ScriptedRules`).

If its memory decisions are wrong, the demo shows the wrong thing and the e2e tests
test the wrong thing, so its consolidation rules are pinned here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.store.memory import InMemoryStore

from assistant.memory import MemoryOperations
from assistant.nodes.tools import MEMORY_TOOLS
from assistant.run import prompts
from function_model import CallInfo, FunctionChatModel
from helpers import fact_items, noted_and_extracted_by_rules
from scripted import ScriptedChatModel, ScriptedRules, decide_operations

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, UseModel


def decisions(text: str, known: list[str]) -> list[tuple[str, str, int | None]]:
    return [(o["action"], o["content"], o["target"]) for o in decide_operations(text, known)]


@pytest.mark.parametrize(
    ("text", "known", "expected"),
    [
        ("I live in Hangzhou", [], [("add", "Lives in Hangzhou", None)]),
        (
            "I live in Hangzhou",
            ["Likes tea", "Lives in Hangzhou"],
            [("skip", "Lives in Hangzhou", 2)],
        ),
        (
            "I moved from Hangzhou to Chengdu",
            ["Likes tea", "Lives in Hangzhou"],
            [("supersede", "Lives in Chengdu", 2)],
        ),
        ("My dog is called Rex", ["Dog is Max"], [("supersede", "Dog is Rex", 1)]),
        ("I like green tea", ["Likes coffee"], [("add", "Likes green tea", None)]),  # not single
        ("我住在成都", ["住在杭州"], [("supersede", "住在成都", 1)]),
        ("我叫小红", ["名字是小明"], [("supersede", "名字是小红", 1)]),
        ("我住在杭州", ["Lives in Hangzhou"], [("add", "住在杭州", None)]),  # rules are monolingual
        ("thanks!", ["Lives in Hangzhou"], []),
    ],
)
def test_rule_based_decisions(
    text: str, known: list[str], expected: list[tuple[str, str, int | None]]
) -> None:
    assert decisions(text, known) == expected


def test_a_chinese_pet_rename_supersedes_the_old_name() -> None:
    assert decisions("我的狗叫小黑", ["狗叫旺财"]) == [("supersede", "狗叫小黑", 1)]


def test_a_chinese_move_with_a_final_particle() -> None:
    assert decisions("我搬到成都了", ["住在杭州"]) == [("supersede", "住在成都", 1)]


@pytest.mark.parametrize(
    "model",
    [ScriptedChatModel(), FunctionChatModel(function=noted_and_extracted_by_rules)],
    ids=["scripted-model", "rule-based-test-model"],
)
async def test_the_scripted_extractor_reads_the_real_prompt(model: FunctionChatModel) -> None:
    prompt = prompts.EXTRACTION_PROMPT.format(
        categories="location",
        known_facts="1. Likes tea\n2. Lives in Hangzhou",
        message="I moved from Hangzhou to Chengdu",
    )
    extractor = model.with_structured_output(MemoryOperations)
    answer = await extractor.ainvoke([HumanMessage(prompt)])
    assert isinstance(answer, MemoryOperations)
    [operation] = answer.operations
    assert (operation.action, operation.content, operation.target) == (
        "supersede",
        "Lives in Chengdu",
        2,
    )


async def test_the_scripted_model_drives_the_graph(
    use_model: UseModel, chat: Chat, store: InMemoryStore
) -> None:
    use_model(ScriptedRules())

    await chat("I live in Hangzhou", thread_id="thread-a")
    await chat("I moved from Hangzhou to Chengdu", thread_id="thread-a")
    state = await chat("Where should dinner be tonight?", thread_id="thread-b")

    reply = state["messages"][-1].text
    assert reply.startswith("[scripted]")
    assert "Lives in Chengdu" in reply and "Hangzhou" not in reply
    old, new = await fact_items(store, "default-user")
    assert (old.value["status"], new.value["status"]) == ("superseded", "current")


async def test_the_scripted_model_logs_every_call_and_fails_on_request(
    tmp_path: Path, use_model: UseModel, chat: Chat
) -> None:
    log = tmp_path / "calls.jsonl"
    model = ScriptedChatModel(log_path=str(log), fail_on="BOOM")
    assert isinstance(model, FunctionChatModel)
    use_model(model.function)
    await chat("I live in Hangzhou")
    kinds = sorted(json.loads(line)["kind"] for line in log.read_text().splitlines())
    assert kinds == ["extract", "respond"]
    with pytest.raises(RuntimeError, match="scripted failure: request contains 'BOOM'"):
        await model.ainvoke("say BOOM")


def test_the_scripted_model_calls_the_memory_tools_only_when_bound() -> None:
    rules = ScriptedRules()
    ask: list[BaseMessage] = [HumanMessage("what do you remember about me?")]
    with_tools = rules(ask, CallInfo(tools=[convert_to_openai_tool(t) for t in MEMORY_TOOLS]))
    without = rules(ask, CallInfo())
    assert isinstance(with_tools, AIMessage) and isinstance(without, AIMessage)
    [call] = with_tools.tool_calls
    assert (call["name"], call["args"]) == ("search_memory", {"query": ""})
    assert without.text.startswith("[scripted] Got it.")
