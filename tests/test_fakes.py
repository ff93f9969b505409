"""The test doubles themselves: if these lie, every graph test lies with them."""

from __future__ import annotations

import asyncio
import math
import threading
from typing import TYPE_CHECKING

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel, ValidationError

from assistant.inference import models
from assistant.memory import MemoryOperations
from assistant.nodes.tools import MEMORY_TOOLS
from function_model import CallInfo, FunctionChatModel
from helpers import operations_json

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel, UseModel


class Verdict(BaseModel):
    ok: bool


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_provider_keys_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    assert "OPENAI_API_KEY" not in os.environ
    assert "OPENAI_BASE_URL" not in os.environ


def test_test_embedder_is_deterministic_normalised_and_word_sensitive(
    store: InMemoryStore,
) -> None:
    embed = store.embeddings
    assert embed is not None
    a = embed.embed_query("Lives in Hangzhou")
    assert len(a) == 64
    assert math.isclose(cosine(a, a), 1.0)
    assert embed.embed_documents(["Lives in Hangzhou"]) == [a]
    near = cosine(a, embed.embed_query("moved to Hangzhou last year"))
    far = cosine(a, embed.embed_query("Likes green tea"))
    assert near > far
    assert cosine(a, embed.embed_query("Lives in Chengdu")) < 0.98  # not a near-copy


async def test_every_call_path_is_recorded_once(patch_model: PatchModel) -> None:
    model = patch_model(["one", "two words", "three", "four more"])
    prompt = [HumanMessage("hi")]
    assert model.invoke(prompt).text == "one"
    assert "".join(str(c.content) for c in model.stream(prompt)) == "two words"
    assert (await model.ainvoke(prompt)).text == "three"
    assert "".join([str(c.content) async for c in model.astream(prompt)]) == "four more"
    assert model.sent() == [prompt] * 4
    assert [call.info.streamed for call in model.calls] == [False, True, False, True]


async def test_streaming_shows_the_reply_word_by_word(use_model: UseModel) -> None:
    model = use_model(lambda messages, info: "Hello there, Alice.")
    pieces = [str(chunk.content) async for chunk in model.astream("hi")]
    assert [piece for piece in pieces if piece] == ["Hello ", "there, ", "Alice."]


async def test_streamed_tool_calls_arrive_whole(use_model: UseModel) -> None:
    call = {"name": "search_memory", "args": {"query": "tea"}, "id": "call-1"}
    model = use_model(lambda messages, info: AIMessage(content="", tool_calls=[call]))
    chunks = [chunk async for chunk in model.astream("hi")]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.tool_calls == [{**call, "type": "tool_call"}]


async def test_scripted_replies_get_their_own_ids(patch_model: PatchModel) -> None:
    model = patch_model(["a", "b", AIMessage("c"), AIMessage("d", id="kept")])
    ids = [(await model.ainvoke("x")).id for _ in range(4)]
    assert len(set(ids)) == 4
    assert ids[3] == "kept"


async def test_a_repeated_message_object_gets_a_new_id_each_time(use_model: UseModel) -> None:
    same = AIMessage("again")
    model = use_model(lambda messages, info: same)
    first, second = [await model.ainvoke("x") for _ in range(2)]
    assert first.id != second.id
    assert same.id is None  # the function's own message is left as it was


async def test_scripted_exceptions_are_raised_and_exhaustion_fails_loudly(
    patch_model: PatchModel,
) -> None:
    model = patch_model([RuntimeError("provider down"), "fine"])
    with pytest.raises(RuntimeError, match="provider down"):
        await model.ainvoke("x")
    assert (await model.ainvoke("x")).text == "fine"
    with pytest.raises(AssertionError, match="more times than the test scripted"):
        await model.ainvoke("x")


async def test_reply_functions_see_the_prompt(patch_model: PatchModel) -> None:
    model = patch_model([lambda messages: f"echo: {messages[-1].text}"])
    assert (await model.ainvoke("ping")).text == "echo: ping"


async def test_structured_output_parses_the_next_reply(patch_model: PatchModel) -> None:
    model = patch_model(['{"ok": true}', "plain"])
    structured = model.with_structured_output(Verdict, method="function_calling")
    assert await structured.ainvoke([HumanMessage("judge this")]) == Verdict(ok=True)
    assert (await model.ainvoke("x")).text == "plain"  # same script, in order
    assert model.sent()[0] == [HumanMessage("judge this")]
    info = model.calls[0].info
    assert (info.schema, info.method) == (Verdict, "function_calling")
    assert model.calls[1].info.schema is None


@pytest.mark.parametrize(
    "answer",
    [
        Verdict(ok=True),
        {"ok": True},
        '{"ok": true}',
        AIMessage('{"ok": true}'),
        AIMessage("", tool_calls=[{"name": "Verdict", "args": {"ok": True}, "id": "c1"}]),
    ],
    ids=["instance", "dict", "json", "message", "tool-call"],
)
def test_a_structured_answer_may_take_any_shape(use_model: UseModel, answer: object) -> None:
    model = use_model(lambda messages, info: answer)  # type: ignore[arg-type,return-value]
    assert model.with_structured_output(Verdict).invoke("judge") == Verdict(ok=True)


async def test_a_structured_answer_that_does_not_match_raises(use_model: UseModel) -> None:
    model = use_model(lambda messages, info: '{"ok": "perhaps"}')
    with pytest.raises(ValidationError):
        await model.with_structured_output(Verdict).ainvoke("judge")


async def test_structured_script_is_separate_when_given(patch_model: PatchModel) -> None:
    model = patch_model(["plain"], structured=['{"ok": false}'])
    assert (await model.with_structured_output(Verdict).ainvoke("x")) == Verdict(ok=False)
    assert (await model.ainvoke("x")).text == "plain"


async def test_a_structured_gate_holds_structured_calls_only(patch_model: PatchModel) -> None:
    gate = asyncio.Event()
    model = patch_model(["plain"], structured=['{"ok": true}'], structured_gate=gate)
    waiting = asyncio.ensure_future(model.with_structured_output(Verdict).ainvoke("x"))
    assert (await model.ainvoke("x")).text == "plain"
    assert not waiting.done()
    gate.set()
    assert await waiting == Verdict(ok=True)


async def test_the_function_sees_tools_settings_and_the_node(use_model: UseModel) -> None:
    seen: list[CallInfo] = []

    def answer(messages: list[BaseMessage], info: CallInfo) -> str:
        seen.append(info)
        return "ok"

    model = use_model(answer)
    bound = model.bind_tools(MEMORY_TOOLS, tool_choice="auto").bind(max_tokens=50)
    await bound.ainvoke("x", {"metadata": {"langgraph_node": "respond"}})
    await model.ainvoke("y", stop=["\n"])
    tooled, plain = seen
    assert tooled.tool_names == [tool.name for tool in MEMORY_TOOLS]
    assert (tooled.tool_choice, tooled.settings, tooled.node) == (
        "auto",
        {"max_tokens": 50},
        "respond",
    )
    assert (plain.tools, plain.settings, plain.node) == ([], {"stop": ["\n"]}, None)
    assert [call.info for call in model.calls] == seen
    assert model.sent("respond") == [[HumanMessage("x")]]
    assert model.prompts() == ["x", "y"]


async def test_the_graph_nodes_calls_are_told_apart(patch_model: PatchModel, chat: Chat) -> None:
    model = patch_model(["Noted."], structured=[operations_json()])
    await chat("I live in Hangzhou")
    by_node = {call.info.node: call for call in model.calls}
    assert set(by_node) == {"remember", "respond"}
    assert isinstance(by_node["respond"].messages[0], SystemMessage)
    assert by_node["respond"].info.tool_names == [tool.name for tool in MEMORY_TOOLS]
    assert by_node["remember"].info.schema is MemoryOperations


async def test_sync_and_async_functions_answer_sync_and_async_calls(use_model: UseModel) -> None:
    async def slow_echo(messages: list[BaseMessage], info: CallInfo) -> str:
        await asyncio.sleep(0)
        return messages[-1].text.upper()

    model = use_model(slow_echo)
    assert model.invoke("sync").text == "SYNC"  # from async code: run in its own loop
    assert (await model.ainvoke("async")).text == "ASYNC"
    threaded = use_model(lambda messages, info: threading.current_thread().name)
    assert (await threaded.ainvoke("x")).text != threading.current_thread().name


def test_patch_model_replaces_the_seam(patch_model: PatchModel) -> None:
    model = patch_model([])
    assert models.get_chat_model() is model
    assert models.get_chat_model("any-name") is model


async def test_the_rule_based_model_notes_every_reply(rule_based_model: FunctionChatModel) -> None:
    # Its extraction is the scripted rules' (test_scripted.py reads a real prompt with it).
    assert [(await rule_based_model.ainvoke(text)).text for text in ("hi", "我住在杭州")] == [
        "Noted.",
        "Noted.",
    ]
