"""Messages the gate is unsure about wait, and one extraction call covers several.

The gate is scripted here (`assistant.extraction.gate.judge` patched by text), so each test says
which message is held and which is sent; the model's extraction answers come from a script too.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.memory import InMemoryStore

from assistant.extraction import extract, gate
from assistant.memory import held_messages, list_heard
from assistant.memory.held import hold_message
from assistant.run.context import Context
from helpers import adds_json, operations_json, stored_facts

if TYPE_CHECKING:
    from conftest import Chat, PatchModel

USER = "default-user"


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> dict[str, gate.Decision]:
    """The gate's decision for each message text (unknown texts are skipped)."""
    decided: dict[str, gate.Decision] = {}

    async def judge(text: str, **_: Any) -> gate.Verdict:
        decision = decided.get(text, "skip")
        return gate.Verdict(decision=decision, reason=f"scripted {decision}")

    monkeypatch.setattr(gate, "judge", judge)
    return decided


def extraction_prompts(model: Any) -> list[str]:
    return [call.messages[0].text for call in model.calls if call.info.schema is not None]


async def test_a_held_message_is_extracted_with_the_next_message_the_gate_sends(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    verdicts.update({"Pescatarian these days.": "hold", "I live in Porto.": "extract"})
    model = patch_model(
        ["Nice.", "Lovely city."],
        structured=[
            adds_json(("Is pescatarian", "preference", 0.9), ("Lives in Porto", "location", 0.9))
        ],
    )

    first = await chat("Pescatarian these days.", context=Context())
    assert (first["metrics"]["extraction"], first["metrics"]["extraction_reason"]) == (
        "held",
        "scripted hold",
    )
    assert extraction_prompts(model) == []  # no call yet
    second = await chat("I live in Porto.", context=Context())

    [prompt] = extraction_prompts(model)  # one call read both messages
    assert "Pescatarian these days.\n\nI live in Porto." in prompt
    assert second["metrics"]["extraction"] == "kept"
    assert await stored_facts(store, USER) == ["Is pescatarian", "Lives in Porto"]
    assert await held_messages(store, USER) == []
    heard = {h["excerpt"]: (h["outcome"], h["reason"]) for h in await list_heard(store, USER)}
    assert heard == {  # the held message's record now says what became of it
        "Pescatarian these days.": ("kept", "added 2 (in one call with 1 more)"),
        "I live in Porto.": ("kept", "added 2 (in one call with 1 more)"),
    }


async def test_a_thread_holding_three_messages_extracts_them_in_one_call(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    texts = ["Night shifts mostly.", "Two kids.", "Rust at work."]
    verdicts.update(dict.fromkeys(texts, "hold"))
    model = patch_model(["Ok."] * 3, structured=[operations_json()])

    outcomes = [(await chat(text, context=Context()))["metrics"]["extraction"] for text in texts]

    assert outcomes == ["held", "held", "nothing"]
    [prompt] = extraction_prompts(model)
    assert all(text in prompt for text in texts)
    assert await held_messages(store, USER) == []


async def test_another_thread_extracts_what_the_user_held_elsewhere_before_it_recalls(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    verdicts["Allergic to sesame btw."] = "hold"
    model = patch_model(
        ["Noted.", "Here is a recipe."],
        structured=[adds_json(("Is allergic to sesame", "constraint", 0.95))],
    )
    await chat("Allergic to sesame btw.", thread_id="thread-a", context=Context())
    assert await stored_facts(store, USER) == []

    await chat("What should I cook tonight?", thread_id="thread-b", context=Context())

    assert await stored_facts(store, USER) == ["Is allergic to sesame"]
    reply_prompt = model.prompts("respond")[-1]
    assert "Is allergic to sesame" in reply_prompt  # in the other thread's very next reply


async def test_held_messages_are_extracted_when_the_hold_time_is_up(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    verdicts["Vegetarier seit 2019."] = "hold"
    patch_model(["Gut."], structured=[adds_json(("Ist Vegetarier", "preference", 0.9))])
    context = Context()
    context.extraction_hold_s = 0.05  # below what a caller may set, so the test is quick

    await chat("Vegetarier seit 2019.", context=context)
    for _ in range(200):  # the timer fires in this event loop
        if await stored_facts(store, USER):
            break
        await asyncio.sleep(0.01)

    assert await stored_facts(store, USER) == ["Ist Vegetarier"]
    assert await held_messages(store, USER) == []


async def test_overdue_held_messages_are_extracted_at_the_next_turn_after_a_restart(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    # Held by a server that died before its timer fired: only the store remembers it.
    record = await hold_message(
        store, USER, thread_id="thread-1", message_id="m-old", text="Vegan now."
    )
    item = await store.aget(("memory_held", USER), "thread-1:m-old")
    assert item is not None
    await store.aput(("memory_held", USER), item.key, {**record, "at": "2026-01-01T00:00:00+00:00"})
    patch_model(["Hi!"], structured=[adds_json(("Is vegan", "preference", 0.9))])

    state = await chat(
        "hello!", context=Context()
    )  # skipped by the gate, yet the overdue message goes

    assert state["metrics"]["extraction"] == "skipped"
    assert await stored_facts(store, USER) == ["Is vegan"]


async def test_holding_off_extracts_an_uncertain_message_at_once(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, verdicts: dict[str, Any]
) -> None:
    verdicts["Pescatarian these days."] = "hold"
    patch_model(["Nice."], structured=[adds_json(("Is pescatarian", "preference", 0.9))])

    state = await chat("Pescatarian these days.", context=Context(extraction_hold_s=0))

    assert state["metrics"]["extraction"] == "kept"
    assert await stored_facts(store, USER) == ["Is pescatarian"]


def test_how_long_a_message_waited_is_read_from_its_record() -> None:
    said = extract.Said(id="m1", text="x", thread_id="other", held_at="2026-01-01T00:00:00")
    assert said.held_record() == {"thread_id": "other", "id": "m1"}
    assert extract.waited([said]) > 3600
    assert extract.waited([extract.Said(id="m2", text="y")]) == float("inf")
