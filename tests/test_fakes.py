"""The test doubles themselves: if these lie, every graph test lies with them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from assistant import models, prompts
from assistant.memory import MemoryOperations
from helpers import rule_based_operations

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import PatchModel


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
    assert model.calls == [prompt] * 4


async def test_scripted_replies_get_their_own_ids(patch_model: PatchModel) -> None:
    model = patch_model(["a", "b", AIMessage("c"), AIMessage("d", id="kept")])
    ids = [(await model.ainvoke("x")).id for _ in range(4)]
    assert len(set(ids)) == 4
    assert ids[3] == "kept"


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
    assert model.calls[0] == [HumanMessage("judge this")]
    assert model.bind_tools([]) is model


async def test_structured_script_is_separate_when_given(patch_model: PatchModel) -> None:
    model = patch_model(["plain"], structured=['{"ok": false}'])
    assert (await model.with_structured_output(Verdict).ainvoke("x")) == Verdict(ok=False)
    assert (await model.ainvoke("x")).text == "plain"


def test_patch_model_replaces_the_seam(patch_model: PatchModel) -> None:
    model = patch_model([])
    assert models.get_chat_model() is model
    assert models.get_chat_model("any-name") is model


def test_rule_based_operations_read_the_numbered_known_facts() -> None:
    prompt = prompts.EXTRACTION_PROMPT.format(
        categories="location",
        known_facts="1. Likes tea\n2. Lives in Hangzhou",
        message="I moved from Hangzhou to Chengdu",
    )
    answer = MemoryOperations.model_validate_json(rule_based_operations([HumanMessage(prompt)]))
    [operation] = answer.operations
    assert (operation.action, operation.content, operation.target) == (
        "supersede",
        "Lives in Chengdu",
        2,
    )
