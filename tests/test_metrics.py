"""`state["metrics"]`: the record of what memory did in the latest turn (shown in Studio)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from assistant.inference.tokens import count_messages_tokens, count_text_tokens
from assistant.memory import UserMemory, get_memory, list_heard, save_memory
from assistant.run.context import Context
from assistant.run.state import TurnMetrics, merge_metrics
from function_model import FunctionChatModel
from helpers import lines, operations_json, system_prompt

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

USER = "default-user"


async def contents(store: InMemoryStore, keys: list[str]) -> list[str]:
    found = [await get_memory(store, USER, key) for key in keys]
    return [str(item.value["content"]) for item in found if item is not None]


async def test_metrics_describe_what_the_prompt_held(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    name = await save_memory(store, USER, "Name is Alice", category="identity", pinned=True)
    await save_memory(store, USER, "Likes green tea", category="preference")
    await save_memory(store, USER, "Has a cat named Mochi", category="relationship")
    model = patch_model(["Try Longjing."], structured=[operations_json()])

    state = await chat("Which green tea is the most famous?")

    metrics = state["metrics"]
    human = [m for m in state["messages"] if isinstance(m, HumanMessage)][-1]
    assert metrics["message_id"] == human.id
    system = system_prompt(model)
    assert metrics["profile_fact_ids"] == [name]
    assert await contents(store, metrics["profile_fact_ids"]) == lines(system, "user_profile")
    assert await contents(store, metrics["recalled_fact_ids"]) == lines(system, "user_facts")
    assert metrics["episode_thread_ids"] == []
    shown = [*lines(system, "user_profile"), *lines(system, "user_facts")]
    assert metrics["memory_tokens"] == sum(count_text_tokens(fact) for fact in shown) > 0
    assert metrics["prompt_tokens"] == count_messages_tokens(model.sent("respond")[-1])
    # a question: the gate skips it, or the model finds nothing in it
    assert metrics["extraction"] in ("skipped", "nothing")
    assert metrics["compressed"] is False


async def test_a_turn_without_memories_has_zero_memory_tokens(
    patch_model: PatchModel, chat: Chat
) -> None:
    patch_model(["You're welcome."], structured=[])
    state = await chat("thanks!")
    metrics = state["metrics"]
    assert metrics["extraction"] == "skipped"
    assert metrics["memory_tokens"] == 0
    assert metrics["profile_fact_ids"] == metrics["recalled_fact_ids"] == []


async def test_metrics_name_the_facts_added_and_superseded(
    rule_based_model: FunctionChatModel, chat: Chat, store: InMemoryStore
) -> None:

    first = (await chat("I live in Hangzhou"))["metrics"]
    assert (first["extraction"], first["extraction_reason"]) == ("kept", "added 1")
    [hangzhou] = first["added"]
    assert await contents(store, [hangzhou]) == ["Lives in Hangzhou"]
    assert first["superseded"] == first["updated"] == first["confirmed"] == []

    second = (await chat("I moved from Hangzhou to Chengdu"))["metrics"]
    assert second["extraction"] == "kept"
    assert second["extraction_reason"] == "added 1, superseded 1"
    assert second["superseded"] == [hangzhou]
    [chengdu] = second["added"]
    assert await contents(store, [chengdu]) == ["Lives in Chengdu"]
    assert second["profile_fact_ids"] == [hangzhou]  # what this turn's prompt still showed

    third = (await chat("thanks!"))["metrics"]
    assert (third["extraction"], third["extraction_reason"]) == ("skipped", "an acknowledgement")
    assert "added" not in third and "superseded" not in third  # a new turn, a new record
    assert third["profile_fact_ids"] == [chengdu]

    heard = await list_heard(store, USER)  # what the console and `assistant memories` show
    assert [(h["excerpt"], h["outcome"], h["facts"]) for h in heard] == [
        ("thanks!", "skipped", []),
        ("I moved from Hangzhou to Chengdu", "kept", [chengdu, hangzhou]),
        ("I live in Hangzhou", "kept", [hangzhou]),
    ]

    await UserMemory(store, USER).forget(chengdu, actor=USER, via="console")
    heard = await list_heard(store, USER)  # forgotten: the words of the messages that said it go,
    assert [h["excerpt"] for h in heard] == ["thanks!", "", ""]  # its earlier version's too
    assert heard[1]["outcome"] == "kept" and heard[1]["forgotten"] is True
    assert await get_memory(store, USER, hangzhou) is None


async def test_a_message_the_model_found_nothing_in_says_so(
    patch_model: PatchModel, chat: Chat
) -> None:
    patch_model(["Sounds fun."], structured=[operations_json()])
    metrics = (await chat("I think I'll just watch a film tonight"))["metrics"]
    assert (metrics["extraction"], metrics["extraction_reason"]) == (
        "nothing",
        "no durable fact found",
    )
    assert metrics["added"] == []


SMALL = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=60)


def question(n: int) -> str:
    return f"Topic {n}: what is the history of the old tea roads through the mountains?".ljust(80)


async def test_compressed_is_set_only_on_the_compressing_turn(
    patch_model: PatchModel, chat: Chat
) -> None:
    def reply(messages: list[BaseMessage]) -> str:
        if "<existing_summary>" in messages[0].text:
            return "The user asked about tea roads."
        return "The tea roads ran from Yunnan to Tibet, carrying pu'er for horses.".ljust(80)

    patch_model(itertools.repeat(reply))
    flags = []
    for n in range(1, 7):
        state = await chat(question(n), context=SMALL)
        flags.append(state["metrics"]["compressed"])
        assert state["metrics"]["message_id"] == state["messages"][-2].id

    assert flags == [False, False, False, False, True, False]


def test_merge_metrics_keeps_one_record_per_turn() -> None:
    turn: TurnMetrics = {"message_id": "m1", "profile_fact_ids": ["p"], "compressed": False}
    merged = merge_metrics(turn, {"message_id": "m1", "extraction": "done", "added": ["k"]})
    assert merged == {
        "message_id": "m1",
        "profile_fact_ids": ["p"],
        "compressed": False,
        "extraction": "done",
        "added": ["k"],
    }
    assert merge_metrics(merged, {"message_id": "m1", "compressed": True})["compressed"] is True
    assert merge_metrics(merged, {"message_id": "m2"}) == {"message_id": "m2"}
    assert merge_metrics(None, {"message_id": "m1"}) == {"message_id": "m1"}
    assert turn == {"message_id": "m1", "profile_fact_ids": ["p"], "compressed": False}
