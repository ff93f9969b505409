"""Structured-output fallback, tool fallback and readable errors, in process.

Every test talks to the stub OpenAI-compatible server (tests/stub_openai.py) through the
real langchain-openai client that `models.get_chat_model` builds.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

from assistant.inference import models, providers
from assistant.inference.providers import ModelProviderError, Structured, StructuredOutputError
from assistant.memory import MemoryOperations
from assistant.nodes.tools import MEMORY_TOOLS
from stub_openai import StubOpenAI

OPERATIONS = {
    "operations": [
        {"action": "add", "content": "Lives in Chengdu", "category": "location", "confidence": 0.9}
    ]
}
SECRET_KEY = "sk-test-secret-123456789"
PROMPT = [HumanMessage(content="Remember: I live in Chengdu.")]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubOpenAI]:
    server = StubOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def model_for(
    stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[str, models.BaseChatModel]]:
    """``model_for(mode, **answers)``: a fresh model name on the stub, and its chat model."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "0")

    def make(mode: str, **answers: object) -> tuple[str, models.BaseChatModel]:
        name = stub.add(f"{mode}-{uuid.uuid4().hex[:8]}", mode, **answers)
        return name, models.get_chat_model(name)

    return make


def mechanisms(stub: StubOpenAI, name: str) -> list[tuple[str, int]]:
    """What each request for ``name`` asked for, and the status it got."""
    found = []
    for request in stub.calls(name):
        if isinstance(request.get("tool_choice"), dict):
            kind = "tool"
        elif request.get("response_format"):
            kind = request["response_format"]["type"]
        elif request.get("tools"):
            kind = "chat+tools"
        else:
            kind = "chat"
        found.append((kind, request["_status"]))
    return found


@pytest.mark.parametrize(
    ("mode", "first", "later"),
    [
        ("full", [("tool", 200)], [("tool", 200)]),
        ("no_json_schema", [("tool", 200)], [("tool", 200)]),
        ("no_named_tool_choice", [("tool", 400), ("json_schema", 200)], [("json_schema", 200)]),
        ("ignore_tool_choice", [("tool", 200), ("json_schema", 200)], [("json_schema", 200)]),
        (
            "no_tools",
            [("tool", 400), ("json_schema", 400), ("json_object", 400), ("chat", 200)],
            [("chat", 200)],
        ),
    ],
)
async def test_structured_calls_fall_back_and_remember_what_works(
    stub: StubOpenAI,
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
    caplog: pytest.LogCaptureFixture,
    mode: str,
    first: list[tuple[str, int]],
    later: list[tuple[str, int]],
) -> None:
    name, model = model_for(mode, structured=OPERATIONS)
    with caplog.at_level(logging.WARNING, logger="assistant.inference.providers"):
        for _ in range(3):
            result = await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
            assert [op.content for op in result.operations] == ["Lives in Chengdu"]
    assert mechanisms(stub, name) == first + later + later
    fallbacks = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(fallbacks) == len(first) - 1  # each fallback logged once, with its reason
    if mode == "no_named_tool_choice":
        assert "tool_choice must be 'auto' or 'none'" in fallbacks[0]


async def test_json_mode_and_text_carry_the_schema_in_the_prompt(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    name, model = model_for("no_tools", structured=OPERATIONS)
    await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
    json_mode, text = stub.calls(name)[2:]
    for request in (json_mode, text):
        last = request["messages"][-1]["content"]
        assert last.startswith("Remember: I live in Chengdu.")
        assert '"operations"' in last and "JSON" in last


async def test_an_answer_that_fails_the_schema_everywhere_is_an_error_and_not_learned(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    name, model = model_for("full", structured={"operations": "not a list"})
    with pytest.raises(StructuredOutputError, match=f"{name}.*expected JSON format"):
        await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
    assert [kind for kind, _ in mechanisms(stub, name)] == [
        "tool",
        "json_schema",
        "json_object",
        "chat",
    ]
    assert providers.profile_for(model).structured is Structured.TOOL


async def test_json_of_another_shape_is_not_read_as_an_empty_answer(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    # Every field of MemoryOperations has a default: this would validate as "nothing".
    name, model = model_for("full", structured={"name": "MemoryOperations", "args": ["x"]})
    with pytest.raises(StructuredOutputError, match="none of the schema's fields"):
        await providers.ainvoke_structured(model, MemoryOperations, PROMPT)


async def test_an_answer_cut_at_its_token_limit_moves_on_for_this_call_only(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    name, model = model_for("runaway", structured=OPERATIONS)
    providers.profile_for(model).structured = Structured.JSON_SCHEMA
    for _ in range(2):
        result = await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
        assert [op.content for op in result.operations] == ["Lives in Chengdu"]
    assert mechanisms(stub, name) == [("json_schema", 200), ("json_object", 200)] * 2


async def test_a_reply_model_without_tools_still_answers(
    stub: StubOpenAI,
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    name, model = model_for("no_tools", reply="Hi without tools.")
    with caplog.at_level(logging.WARNING, logger="assistant.inference.providers"):
        first = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
        second = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert first.text == second.text == "Hi without tools."
    assert mechanisms(stub, name) == [("chat+tools", 400), ("chat", 200), ("chat", 200)]
    assert [r.getMessage() for r in caplog.records if name in r.getMessage()] == [
        f"The model {name!r} at 127.0.0.1:{stub.port} rejected a request with tools "
        "(tools is not supported by this model); replying without the memory tools from now on."
    ]


async def test_a_forced_tool_written_as_text_is_asked_again_with_json_schema(
    stub: StubOpenAI,
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    name, model = model_for("tools_as_text", structured=OPERATIONS)
    with caplog.at_level(logging.WARNING, logger="assistant.inference.providers"):
        for _ in range(3):
            result = await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
            assert [op.content for op in result.operations] == ["Lives in Chengdu"]
    # The written call is not read: the grammar-bound format answers, from then on too.
    assert mechanisms(stub, name) == [
        ("tool", 200),
        ("json_schema", 200),
        ("json_schema", 200),
        ("json_schema", 200),
    ]
    (logged,) = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert "wrote the tool call as text" in logged and "using json_schema from now on" in logged


async def test_a_call_written_as_text_with_a_list_of_arguments_is_read(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    # Qwen2.5-Coder's shape: the call's arguments are the bare list of operations.
    written = {"name": "MemoryOperations", "arguments": OPERATIONS["operations"]}
    name, model = model_for("no_tools", structured=written)
    result = await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
    assert [op.content for op in result.operations] == ["Lives in Chengdu"]
    assert mechanisms(stub, name)[-1] == ("chat", 200)


@pytest.mark.parametrize(
    "written",
    [
        '<tools>{"name": "search_memory", "arguments": {"query": "cat"}}</tools>',
        '<tool_call>\n{"name": "search_memory", '
        '"arguments": "{\\"query\\": \\"cat\\"}"}\n</tool_call>',
        '```json\n{"name": "search_memory", "arguments": {"query": "cat"}}\n```',
        '{"type": "function", '
        '"function": {"name": "search_memory", "parameters": {"query": "cat"}}}',
    ],
)
async def test_tool_calls_written_as_text_become_real_calls_and_leave_no_markup(
    model_for: Callable[..., tuple[str, models.BaseChatModel]], written: str
) -> None:
    _, model = model_for("tools_as_text", reply=f"Let me look that up.\n{written}")
    reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert [(call["name"], call["args"]) for call in reply.tool_calls] == [  # type: ignore[attr-defined]
        ("search_memory", {"query": "cat"})
    ]
    assert reply.text == "Let me look that up."
    assert providers.profile_for(model).tools_as_text
    # Such a model also calls them unasked: from now on its replies get none.
    assert not providers.offers_tools(model)


async def test_json_that_calls_no_offered_tool_stays_in_the_reply(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    text = 'Your config could be {"name": "web", "arguments": {"port": 80}}.'
    _, model = model_for("tools_as_text", reply=text)
    reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert reply.text == text and not reply.tool_calls  # type: ignore[attr-defined]
    assert not providers.profile_for(model).tools_as_text


@pytest.mark.parametrize(
    "said",
    [
        "",
        "To forget it, use the `forget_memory` function.",
        "What do you remember about me?",  # search_memory's description, echoed
    ],
)
async def test_a_reply_that_talks_about_its_tools_is_asked_for_again_without_them(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]], said: str
) -> None:
    name, model = model_for("tools_as_text", reply=said)
    assert providers.offers_tools(model)
    await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert mechanisms(stub, name) == [("chat+tools", 200), ("chat", 200)]
    assert not providers.offers_tools(model)


async def test_a_model_that_misuses_its_tools_answers_without_them_or_the_turns_tool_round(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    written = '{"name": "search_memory", "arguments": {"query": "cat"}}'
    name, model = model_for("tools_as_text", reply=f"Your cat is Mochi. {written}")
    providers.profile_for(model).misuses_tools = True
    call = ToolCall(name="search_memory", args={"query": "cat"}, id="call_1")
    turn = [
        *PROMPT,
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="k1: Has a cat, Mochi", tool_call_id="call_1"),
    ]
    reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, turn)
    assert reply.text == "Your cat is Mochi." and not reply.tool_calls  # type: ignore[attr-defined]
    (sent,) = stub.calls(name)
    assert "tools" not in sent and [m["role"] for m in sent["messages"]] == ["user"]


async def test_calls_whose_arguments_do_not_fit_are_never_run_and_asked_again_without_tools(
    stub: StubOpenAI, model_for: Callable[..., tuple[str, models.BaseChatModel]]
) -> None:
    # The local model's answer to a Chinese fact: every memory tool, called with nothing.
    written = "".join(
        f'<tools>{{"name": "{tool.name}", "arguments": {{}}}}</tools>' for tool in MEMORY_TOOLS
    )
    name, model = model_for("tools_as_text", reply=written)
    reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert not reply.tool_calls  # type: ignore[attr-defined]
    assert mechanisms(stub, name) == [("chat+tools", 200), ("chat", 200)]
    assert not providers.offers_tools(model)


async def test_tool_results_a_model_writes_itself_never_reach_the_reply(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    written = "<tool_response>\nNo stored fact matches 'where do I live'.\n</tool_response>\n"
    for misuses in (False, True):
        _, model = model_for("tools_as_text", reply=f"{written}You live in Porto.")
        providers.profile_for(model).misuses_tools = misuses
        reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
        assert reply.text == "You live in Porto.", misuses  # type: ignore[attr-defined]
    # Nothing but written results: asked for again without the tools, like an empty reply.
    _, model = model_for("tools_as_text", reply=written)
    reply = await providers.ainvoke_with_tools(model, MEMORY_TOOLS, PROMPT)
    assert "tool_response" not in reply.text  # type: ignore[attr-defined]
    assert not providers.offers_tools(model)


async def test_a_refused_key_is_named_without_the_key(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    _, model = model_for("bad_key")
    with pytest.raises(ModelProviderError) as caught:
        await model.ainvoke(PROMPT)
    message = str(caught.value)
    assert caught.value.kind == "auth"
    assert "refused the API key (401: Incorrect API key provided: ***." in message
    assert "Check OPENAI_API_KEY" in message
    assert SECRET_KEY not in message and "secret-123" not in message
    assert isinstance(caught.value, RuntimeError)  # the server shows built-in types' messages


async def test_an_unknown_model_is_named_with_the_fix(
    stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "0")
    model = models.get_chat_model("gpt-nonexistent")
    with pytest.raises(ModelProviderError) as caught:
        await providers.ainvoke_structured(model, MemoryOperations, PROMPT)
    assert caught.value.kind == "not_found"
    assert str(caught.value).startswith(
        f"The model provider at 127.0.0.1:{stub.port} does not know the model "
        "'gpt-nonexistent' (404: The model `gpt-nonexistent` does not exist"
    )
    assert "Set ASSISTANT_MODEL" in str(caught.value)
    assert len([r for r in stub.calls("gpt-nonexistent")]) == 1  # no fallback on a 404


async def test_an_unreachable_url_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = StubOpenAI().start()
    closed.stop()  # nothing listens on its port now
    monkeypatch.setenv("OPENAI_BASE_URL", closed.base_url)
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "0")
    with pytest.raises(ModelProviderError) as caught:
        await models.get_chat_model("any").ainvoke(PROMPT)
    assert caught.value.kind == "unreachable"
    assert str(caught.value).startswith(
        f"Cannot reach the model provider at 127.0.0.1:{closed.port}"
    )
    assert "Check OPENAI_BASE_URL" in str(caught.value)


async def test_a_slow_provider_times_out_with_the_setting_to_raise(
    stub: StubOpenAI,
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "0.5")
    stub.release.clear()
    try:
        name, model = model_for("slow")
        with pytest.raises(ModelProviderError) as caught:
            await model.ainvoke(PROMPT)
    finally:
        stub.release.set()
    assert caught.value.kind == "timeout"
    assert f"The model {name!r} at 127.0.0.1:{stub.port} did not answer within 0.5 s" in str(
        caught.value
    )
    assert "ASSISTANT_MODEL_TIMEOUT_S" in str(caught.value)


async def test_a_rejected_request_quotes_the_provider(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    _, model = model_for("no_tools")
    with pytest.raises(ModelProviderError) as caught:
        await model.bind_tools(MEMORY_TOOLS).ainvoke(PROMPT)
    assert caught.value.kind == "rejected"
    assert "rejected the request" in str(caught.value)
    assert "(400: tools is not supported by this model)" in str(caught.value)


async def test_streamed_replies_fail_readably_too(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    _, model = model_for("bad_key")
    with pytest.raises(ModelProviderError, match="refused the API key"):
        async for _ in model.astream(PROMPT):
            pass


def test_repeated_extraction_failures_become_one_warning(
    model_for: Callable[..., tuple[str, models.BaseChatModel]],
) -> None:
    _, model = model_for("full")
    providers.record_extraction(model, RuntimeError("The model provider rejected it"))
    assert providers.extraction_warning(model) == ""
    providers.record_extraction(model, RuntimeError("The model provider rejected it"))
    assert providers.extraction_warning(model) == (
        "Memory is not being saved: extraction failed on the last 2 turns "
        "(The model provider rejected it)."
    )
    providers.record_extraction(model, None)
    assert providers.extraction_warning(model) == ""
