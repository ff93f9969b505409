"""Episodes: a compressed thread's summary, recalled in the user's other threads."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.inference.tokens import count_text_tokens
from assistant.memory import UserMemory, recall_episodes, user_episodes_namespace
from assistant.memory import episodes as episodes_module
from assistant.run.context import Context
from helpers import between, config, operations_json, system_prompt


@pytest.fixture
def store(both_stores: BaseStore) -> BaseStore:
    """Every test in this module runs on the in-memory store and on Postgres."""
    return both_stores


if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

Graph = CompiledStateGraph[Any, Any, Any, Any]
USER = "default-user"

SMALL = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=60)
"""48 tokens per turn (two 80-character messages): the 5th turn compresses."""

KYOTO = "Trip to Kyoto in May: budget 2000 USD, hotel near Kyoto Station booked."


def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Make each save see a later time: 2026-01-01T00:00, then 01:00, 02:00, ..."""
    times = (f"2026-01-01T{hour:02d}:00:00+00:00" for hour in itertools.count())
    monkeypatch.setattr(episodes_module, "now_iso", lambda: next(times))
    return times


def question(n: int) -> str:
    """An 80-character question with no fact about the user (so `remember` skips it)."""
    text = f"Kyoto question {n}: which temple opens earliest in spring, and why is that so?"
    return text.ljust(79, ".") + "?"


def replies(summary: str = KYOTO) -> Iterator[Any]:
    """Endless script: the summary when summarising, no facts, else an 80-character reply."""

    def reply(messages: list[BaseMessage]) -> str:
        if "<existing_summary>" in messages[0].text:
            return summary
        if "<user_message>" in messages[0].text:
            return operations_json()  # nothing durable
        return "Kinkaku-ji opens at nine; Fushimi Inari never closes, so go there early.".ljust(80)

    return itertools.repeat(reply)


async def compress_thread(chat: Chat, thread_id: str, turns: int = 5) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for n in range(1, turns + 1):
        state = await chat(question(n), thread_id=thread_id, context=SMALL)
    assert state["metrics"]["compressed"] is True
    return state


# --------------------------------------------------------------------------- the store layer


async def test_save_episode_keeps_the_start_and_refreshes_the_rest(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock(monkeypatch)
    first = await UserMemory(store, USER).save_episode(
        thread_id="thread-a", summary="  Planned Kyoto.  "
    )
    second = await UserMemory(store, USER).save_episode(
        thread_id="thread-a", summary="Booked the hotel."
    )

    assert first == {
        "content": "Planned Kyoto.",
        "thread_id": "thread-a",
        "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00",
    }
    assert second["started_at"] == first["started_at"]
    assert second["ended_at"] == "2026-01-01T01:00:00+00:00"
    assert second["content"] == "Booked the hotel."
    [item] = await store.asearch(user_episodes_namespace(USER))  # one episode per thread
    assert item.key == "thread-a"
    assert item.value == second


async def test_save_episode_uses_a_given_start(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock(monkeypatch)
    saved = await UserMemory(store, USER).save_episode(
        thread_id="t", summary="x", started_at="2025-12-31T23:00:00+00:00"
    )
    assert saved["started_at"] == "2025-12-31T23:00:00+00:00"
    assert saved["ended_at"] == "2026-01-01T00:00:00+00:00"


async def test_recall_episodes_skips_the_current_thread(store: InMemoryStore) -> None:
    await UserMemory(store, USER).save_episode(thread_id="thread-a", summary=KYOTO)
    await UserMemory(store, USER).save_episode(
        thread_id="thread-b", summary="Kyoto restaurants: tofu."
    )
    await UserMemory(store, USER).save_episode(thread_id="thread-c", summary="Learning the violin.")

    found = await recall_episodes(store, USER, "Kyoto trip", limit=2, exclude_thread_id="thread-a")
    assert [item.key for item in found] == ["thread-b", "thread-c"]
    found = await recall_episodes(store, USER, "Kyoto trip", limit=1, exclude_thread_id="thread-c")
    assert [item.key for item in found] == ["thread-a"]
    everything = await recall_episodes(store, USER, "Kyoto trip", limit=5)
    assert sorted(item.key for item in everything) == ["thread-a", "thread-b", "thread-c"]
    assert await recall_episodes(store, USER, "Kyoto trip", limit=0) == []


WEEK = [
    ("thread-mon", "2026-03-02", "Compared two laptops and picked the lighter one."),
    ("thread-tue", "2026-03-03", "Talked about the dentist appointment and a new toothbrush."),
    ("thread-thu", "2026-03-05", "Planned the Kyoto trip: temples, trains and a budget."),
    ("thread-sat", "2026-03-07", "Practised violin scales and chose a piece for the recital."),
]


async def save_week(store: InMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """One conversation a day, each started and ended that day."""
    for thread_id, day, summary in WEEK:
        monkeypatch.setattr(episodes_module, "now_iso", lambda day=day: f"{day}T18:00:00+00:00")
        await UserMemory(store, USER).save_episode(
            thread_id=thread_id, summary=summary, started_at=f"{day}T17:00:00+00:00"
        )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did we talk about last Tuesday?", "thread-tue"),
        ("What did we discuss on March 5?", "thread-thu"),
        ("我们上周六聊了什么？", "thread-sat"),
        ("Which laptop did I choose?", "thread-mon"),
        ("What did we plan for the trip?", "thread-thu"),
    ],
)
async def test_a_question_about_a_past_session_finds_that_session(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch, question: str, expected: str
) -> None:
    await save_week(store, monkeypatch)
    asked = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)  # the Tuesday after
    found = await recall_episodes(store, USER, question, limit=1, now=asked)
    assert [item.key for item in found] == [expected]


async def test_the_recall_node_finds_the_session_a_question_names(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the graph: "yesterday" is read against the real clock."""
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    long_ago = (datetime.now(UTC) - timedelta(days=9)).date().isoformat()
    for thread_id, day, summary in [
        ("thread-old", long_ago, "Chose a birthday present for a colleague."),
        ("thread-new", yesterday, "Chose paint colours for the kitchen."),
    ]:
        monkeypatch.setattr(episodes_module, "now_iso", lambda day=day: f"{day}T12:00:00+00:00")
        await UserMemory(store, USER).save_episode(
            thread_id=thread_id, summary=summary, started_at=f"{day}T11:00:00+00:00"
        )
    model = patch_model(replies())
    state = await chat(
        "What did we choose yesterday?", thread_id="thread-now", context=Context(episode_limit=1)
    )
    assert state["metrics"]["episode_thread_ids"] == ["thread-new"]
    assert "paint colours" in between(system_prompt(model), "past_conversations")


async def test_episodes_are_per_user(store: InMemoryStore) -> None:
    await UserMemory(store, "alice").save_episode(thread_id="thread-a", summary=KYOTO)
    assert await recall_episodes(store, "bob", "Kyoto", limit=5) == []


# --------------------------------------------------------------------------- through the graph


async def test_compressing_a_thread_saves_its_episode(
    patch_model: PatchModel, chat: Chat, graph: Graph, store: InMemoryStore
) -> None:
    patch_model(replies())
    state = await compress_thread(chat, "thread-a")

    item = await store.aget(user_episodes_namespace(USER), "thread-a")
    assert item is not None
    assert item.value["thread_id"] == "thread-a"
    assert item.value["content"] == KYOTO == state["summary"]
    assert item.value["started_at"] == state["started_at"]  # the thread's first turn
    assert item.value["ended_at"] >= item.value["started_at"]


async def test_a_thread_that_was_never_compressed_has_no_episode(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(replies())
    for n in range(1, 4):
        await chat(question(n), thread_id="thread-a", context=SMALL)
    assert await store.asearch(user_episodes_namespace(USER)) == []


async def test_a_new_thread_sees_the_past_conversation(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(replies())
    await compress_thread(chat, "thread-a")

    state = await chat("What did we plan for the Kyoto trip?", thread_id="thread-b")

    system = system_prompt(model)
    past = between(system, "past_conversations")
    assert past.startswith('<conversation from="')
    assert KYOTO in past
    assert system.index("</user_facts>") < system.index("<past_conversations>")
    assert state["episodes"][0]["thread_id"] == "thread-a"
    assert state["metrics"]["episode_thread_ids"] == ["thread-a"]


async def test_a_thread_does_not_see_its_own_episode(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(replies())
    await compress_thread(chat, "thread-a")
    await chat("What did we plan for the Kyoto trip?", thread_id="thread-a", context=SMALL)
    system = system_prompt(model)
    assert "<past_conversations>" not in system
    assert between(system, "summary") == KYOTO  # its own past is in its summary instead


async def test_episode_limit_zero_turns_past_conversations_off(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(replies())
    await compress_thread(chat, "thread-a")
    await chat("What about Kyoto?", thread_id="thread-b", context=Context(episode_limit=0))
    assert "<past_conversations>" not in system_prompt(model)


async def past_conversations_with_budget(patch_model: PatchModel, chat: Chat, budget: int) -> str:
    """Compress one thread with a long summary; the <past_conversations> block another sees."""
    long_summary = "Kyoto plans: " + "temples, gardens, tea houses and markets; " * 20
    model = patch_model(replies(long_summary))
    big = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=400)
    for n in range(1, 6):
        await chat(question(n), thread_id="thread-a", context=big)
    await chat(
        "Remind me of the Kyoto plans?",
        thread_id="thread-b",
        context=Context(episode_tokens=budget),
    )
    return between(system_prompt(model), "past_conversations")


async def test_a_long_episode_is_shortened_to_its_share(
    patch_model: PatchModel, chat: Chat
) -> None:
    past = await past_conversations_with_budget(patch_model, chat, 40)
    summary_part = past.split(">\n", 1)[1].rsplit("\n</conversation>", 1)[0]
    assert summary_part.startswith("Kyoto plans:")
    assert count_text_tokens(summary_part) <= 40


async def test_the_past_conversations_block_fits_episode_tokens(
    patch_model: PatchModel, chat: Chat
) -> None:
    past = await past_conversations_with_budget(patch_model, chat, 40)
    assert count_text_tokens(past) <= 40


async def test_a_second_compression_refreshes_the_same_episode(
    patch_model: PatchModel, chat: Chat, graph: Graph, store: InMemoryStore
) -> None:
    summaries = iter([KYOTO, KYOTO + " Also: rail pass bought."])

    def reply(messages: list[BaseMessage]) -> str:
        if "<existing_summary>" in messages[0].text:
            return next(summaries)
        if "<user_message>" in messages[0].text:
            return operations_json()
        return "Fushimi Inari never closes.".ljust(80)

    patch_model(itertools.repeat(reply))
    await compress_thread(chat, "thread-a")
    first = await store.aget(user_episodes_namespace(USER), "thread-a")
    for n in range(6, 9):
        await chat(question(n), thread_id="thread-a", context=SMALL)

    [item] = await store.asearch(user_episodes_namespace(USER))
    assert first is not None
    assert item.key == "thread-a"
    assert item.value["content"] == KYOTO + " Also: rail pass bought."
    assert item.value["started_at"] == first.value["started_at"]
    snapshot = await graph.aget_state(config("thread-a"))
    assert snapshot.values["summary"] == item.value["content"]
