"""Faults in process: the real graph, store and checkpointer; a model that fails on cue.

When the model fails, what a user would notice is: the reply fails loudly but the
message is kept, a slow fact extraction never holds the reply back, and a failed
summary never deletes messages. The end-to-end counterparts run against a real server
in ``tests/e2e/test_robustness_e2e.py``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore

from assistant.extraction.extract import MAX_EXTRACTION_ATTEMPTS
from assistant.memory import list_heard
from assistant.run.context import Context
from assistant.run.prompts import UNANSWERED_MARK
from helpers import adds_json, config, quick_timeout, stored_facts

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

Graph = CompiledStateGraph[Any, Any, Any, Any]

USER = "default-user"
"""The user of every turn here (Context's default)."""


def question(n: int, length: int = 80) -> str:
    """A user question of exactly ``length`` characters with no fact in it (no extraction)."""
    head, tail = f"Topic {n}: ", " what else?"
    body = ("lorem ipsum dolor sit amet " * (length // 10 + 1))[: length - len(head) - len(tail)]
    return head + body + tail


def answer(n: int, length: int = 80) -> str:
    return (f"Answer {n}: " + "consectetur adipiscing elit " * (length // 10 + 1))[:length]


def texts(messages: list[BaseMessage]) -> list[str]:
    return [message.text for message in messages]


# --------------------------------------------------------------------------- respond fails


async def test_a_failing_reply_raises_and_the_checkpoint_keeps_the_message(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    model = patch_model([RuntimeError("model is down"), "Back again."], structured=[])

    with pytest.raises(RuntimeError, match="model is down"):
        await chat("hello")

    snapshot = await graph.aget_state(config())
    assert texts(snapshot.values["messages"]) == ["hello"]
    assert isinstance(snapshot.values["messages"][0], HumanMessage)
    assert snapshot.next == ("respond",), "only the failed node is left to run"
    failed = {task.name: task.error for task in snapshot.tasks}
    assert "model is down" in str(failed["respond"])

    state = await chat("are you back?")

    assert texts(state["messages"]) == ["hello", "are you back?", "Back again."]
    assert isinstance(state["messages"][-1], AIMessage)
    assert len(model.sent("respond")) == 2
    snapshot = await graph.aget_state(config())
    assert snapshot.next == ()


def _fails_on(marker: str) -> Any:
    def reply(messages: list[BaseMessage]) -> str:
        if any(marker in message.text for message in messages):
            raise RuntimeError(f"the provider rejected a request containing {marker!r}")
        return "Fine."

    return reply


async def test_a_message_the_model_cannot_take_does_not_break_the_thread(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(itertools.repeat(_fails_on("POISON")), structured=[])
    with pytest.raises(RuntimeError, match="POISON"):
        await chat("POISON")

    state = await chat("hello again")

    # Regression (fixed in 712dcb4): the failed message used to be sent again with every
    # later turn. The thread keeps it; the prompt leaves it out.
    assert state["messages"][-1].text == "Fine."
    assert texts(state["messages"]) == ["POISON", "hello again", "Fine."]
    assert texts(model.sent("respond")[-1][1:]) == ["hello again"]


async def test_the_next_reply_sees_the_unanswered_message_marked(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model([RuntimeError("model is down"), "Gardening gloves?"], structured=[])
    with pytest.raises(RuntimeError, match="model is down"):
        await chat("I need a gift idea for my mother")

    state = await chat("she likes gardening")

    assert state["messages"][-1].text == "Gardening gloves?"
    assert texts(model.sent("respond")[-1][1:]) == [
        f"{UNANSWERED_MARK}\nI need a gift idea for my mother",
        "she likes gardening",
    ]


async def test_a_failed_extraction_is_tried_again_with_the_next_turns_and_shown(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    down = RuntimeError("model is down")
    patch_model(
        itertools.repeat("Noted."),
        # Turn 1 fails; turn 2's retry fails again; turn 3's retry is answered (the new
        # messages of turns 2 and 3 hold no fact: no model reads them).
        structured=[down, down, adds_json(("Allergic to shellfish", "constraint", 0.95))],
    )

    state = await chat("I'm allergic to shellfish")
    assert state["metrics"]["extraction"] == "failed"
    assert await stored_facts(store, USER) == []
    (entry,) = await list_heard(store, USER)
    assert entry["outcome"] == "failed"
    assert f"attempt 1 of {MAX_EXTRACTION_ATTEMPTS}" in entry["reason"]

    state = await chat("ok")
    assert state["metrics"]["extraction"] == "skipped"
    assert await stored_facts(store, USER) == []
    await chat("thanks")

    assert await stored_facts(store, USER) == ["Allergic to shellfish"]
    outcomes = {e["excerpt"]: e["outcome"] for e in await list_heard(store, USER)}
    assert outcomes["I'm allergic to shellfish"] == "kept"


async def test_a_message_whose_extraction_always_fails_is_tried_a_bounded_number_of_times(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(itertools.repeat("Noted."), structured=itertools.repeat(RuntimeError("no")))

    for turn in range(MAX_EXTRACTION_ATTEMPTS + 3):
        await chat(f"I live in city number {turn}")

    first = "I live in city number 0"
    tries = [call for call in model.sent("remember") if any(first in m.text for m in call)]
    assert len(tries) == MAX_EXTRACTION_ATTEMPTS
    outcomes = {e["excerpt"]: e["reason"] for e in await list_heard(store, USER)}
    assert "not tried again" in outcomes[first]


# --------------------------------------------------------------------------- remember slow


async def test_a_slow_extraction_times_out_without_holding_the_reply(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    gate = asyncio.Event()  # the extractor answers only when let
    patch_model(
        ["Noted.", "Noted again."],
        # The second turn's message, then the first one tried again (already known).
        structured=[adds_json(("Lives in Hangzhou", "location", 0.9))] * 2,
        structured_gate=gate,
    )

    state = await chat("I live in Hangzhou", context=quick_timeout())

    assert state["messages"][-1].text == "Noted."
    assert state["metrics"]["extraction"] == "failed"
    assert state["metrics"]["extraction_reason"] == "the model did not answer within 0.05 s"
    assert "Remembering this turn failed" in caplog.text
    # The abandoned call is cancelled: letting it answer now lands nothing.
    gate.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert await stored_facts(store, USER) == []

    # The next turn, with a model that answers at once, stores the fact.
    state = await chat("I live in Hangzhou")
    assert state["metrics"]["extraction"] == "kept"
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]


# --------------------------------------------------------------------------- compress fails

SMALL = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=60)
"""48 tokens per turn (two 80-character messages): five turns fit, the sixth compresses."""


async def _seed_five_turns(graph: Graph) -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for turn in range(1, 6):
        history += [HumanMessage(question(turn)), AIMessage(answer(turn))]
    await graph.aupdate_state(
        config(), {"messages": history, "summary": "Earlier: topic zero."}, as_node="compress"
    )
    return list((await graph.aget_state(config())).values["messages"])


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("summariser is down"), TimeoutError("read timed out"), ConnectionError("reset")],
    ids=["runtime-error", "timeout", "connection-error"],
)
async def test_a_failing_summariser_removes_nothing(
    patch_model: PatchModel,
    chat: Chat,
    graph: Graph,
    store: InMemoryStore,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
) -> None:
    seeded = await _seed_five_turns(graph)
    model = patch_model(["Answer six.", failure], structured=[])

    state = await chat(question(6), context=SMALL)

    assert len(model.prompts("compress")) == 1, "compress tried once"
    assert "Summarisation failed" in caplog.text
    assert [m.id for m in state["messages"][:10]] == [m.id for m in seeded]
    assert texts(state["messages"][10:]) == [question(6), "Answer six."]
    assert state["summary"] == "Earlier: topic zero."
    assert state["metrics"]["compressed"] is False
    assert await store.asearch(("user_episodes", USER)) == []

    # The next turn tries again; with a working summariser it folds and saves the episode.
    patch_model(["Answer seven.", "Summary: topics one to six."], structured=[])
    state = await chat(question(7), context=SMALL)
    assert state["summary"] == "Summary: topics one to six."
    assert state["metrics"]["compressed"] is True
    assert len(state["messages"]) < 14
    assert isinstance(state["messages"][0], HumanMessage)
    episodes = await store.asearch(("user_episodes", USER))
    assert [item.value["content"] for item in episodes] == ["Summary: topics one to six."]


async def test_a_failing_gate_sends_the_message_to_extraction(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(text: str, **_: Any) -> None:
        raise RuntimeError("embedder down")

    monkeypatch.setattr("assistant.extraction.gate.judge", broken)
    patch_model(["Noted."], structured=[adds_json(("Lives in Hangzhou", "location", 0.9))])

    state = await chat("I live in Hangzhou")

    assert state["metrics"]["extraction"] == "kept"  # the gate could not tell: the model read it
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]
