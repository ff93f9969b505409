"""Memory end to end: a real `langgraph dev`, the scripted model, langgraph-sdk only.

What a user would notice: facts said in one thread are known in the next (who the user
is in the profile, the rest as relevant facts, earlier threads as past conversations),
another user sees none of them, a long thread stays within its budget without forgetting who
the user is, a restart loses nothing, a missing model fails fast with a clear message,
and streaming shows the reply but not the memory bookkeeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import (
    ASSISTANT_ID,
    ScriptedLog,
    StartServer,
    current_facts,
    message_tokens,
    new_thread,
    prompt_episodes,
    prompt_facts,
    prompt_profile,
    run_turn,
    section,
    stored_episodes,
    stored_facts,
    stored_items,
    thread_tokens,
    thread_values,
    unique,
    user_message,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from assistant import prompts
from assistant.devserver import DevServer
from assistant.prompting import build_system_prompt
from assistant.tokens import TOKENS_PER_MESSAGE, count_text_tokens

pytestmark = pytest.mark.e2e

ALICE_PROFILE = ["Name is Alice", "对花生过敏", "Lives in Hangzhou"]
"""Alice's pinned facts, in profile order: identity, then constraints, then location."""
ALICE_OTHER_FACTS = ["喜欢吃辣"]
"""Alice's facts outside the profile (a preference): recalled into ``<user_facts>``."""
ALICE_FACTS = {*ALICE_PROFILE, *ALICE_OTHER_FACTS}
"""What the scripted extractor finds in Alice's two introductions below."""
ALICE_TRACES = ("Alice", "Hangzhou", "花生", "吃辣", "West Lake", "tea houses")
"""Text from Alice's facts and her episode that must never reach another user's prompt."""

SMALL_BUDGET = {"max_context_tokens": 120, "keep_recent_tokens": 50, "summary_max_tokens": 80}
"""Budgets so small that two or three turns are enough to compress a thread."""


@dataclass(frozen=True)
class Alice:
    """A user who introduced herself in two threads, in two languages."""

    user_id: str
    english_thread: str
    chinese_thread: str


@pytest.fixture(scope="module")
async def alice(server: DevServer, client: LangGraphClient) -> AsyncIterator[Alice]:
    """Alice states facts in English in one thread and in Chinese in another.

    The English thread runs on small budgets and goes on long enough to compress, so
    Alice also has a past conversation (an episode) in the store.
    """
    user = Alice(
        user_id=unique("alice"),
        english_thread=await new_thread(client),
        chinese_thread=await new_thread(client),
    )
    for text in (
        "Hi, my name is Alice and I live in Hangzhou.",
        "Could you suggest a few quiet tea houses near West Lake for Saturday afternoon, "
        "somewhere with a view of the water and not too many tourists around?",
        "Also, which of them would still be open after the evening rain starts?",
    ):
        await run_turn(
            server, client, user.english_thread, text, user_id=user.user_id, **SMALL_BUDGET
        )
    await run_turn(
        server, client, user.chinese_thread, "我对花生过敏，我很喜欢吃辣。", user_id=user.user_id
    )
    episodes = await stored_episodes(client, user.user_id)
    assert list(episodes) == [user.english_thread], f"expected one episode: {episodes}"
    yield user


# --------------------------------------------------------------------------- 1. recall


async def test_facts_from_two_threads_are_recalled_in_a_third(
    alice: Alice, server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    facts = await current_facts(client, alice.user_id)
    assert sorted(fact["content"] for fact in facts.values()) == sorted(ALICE_FACTS)
    key_of = {fact["content"]: key for key, fact in facts.items()}
    learned_in = {fact["content"]: fact["thread_id"] for fact in facts.values()}
    assert learned_in["Lives in Hangzhou"] == alice.english_thread
    assert learned_in["对花生过敏"] == alice.chinese_thread
    assert learned_in["喜欢吃辣"] == alice.chinese_thread
    assert {fact["content"] for fact in facts.values() if fact["pinned"]} == set(ALICE_PROFILE)

    marker = unique("dinner")
    thread = await new_thread(client)
    values = await run_turn(
        server,
        client,
        thread,
        f"What should I cook for dinner tonight? 晚饭吃什么？ ({marker})",
        user_id=alice.user_id,
    )

    call = scripted_log.respond_call(marker)
    system = call["system"]
    # Pinned facts go to the profile, the others to the relevant facts: each exactly once.
    assert prompt_profile(system) == ALICE_PROFILE, system
    assert prompt_facts(system) == ALICE_OTHER_FACTS, system
    # The English thread's episode is a past conversation here; its summary is in it.
    past = prompt_episodes(system)
    assert past is not None and "my name is Alice and I live in Hangzhou" in past, system
    assert call["messages"] == 1, "a new thread must not carry other threads' messages"

    assert [fact["content"] for fact in values["profile"]] == ALICE_PROFILE
    assert [fact["content"] for fact in values["recalled"]] == ALICE_OTHER_FACTS
    assert [episode["thread_id"] for episode in values["episodes"]] == [alice.english_thread]
    metrics = values["metrics"]
    assert metrics["profile_fact_ids"] == [key_of[content] for content in ALICE_PROFILE]
    assert metrics["recalled_fact_ids"] == [key_of[content] for content in ALICE_OTHER_FACTS]
    assert metrics["episode_thread_ids"] == [alice.english_thread]
    reply = values["messages"][-1]
    assert reply["type"] == "ai"
    assert reply["content"].startswith("[scripted]")
    for content in ALICE_FACTS:
        assert content in reply["content"], reply["content"]
    assert "我还记得 1 段以前的对话" in reply["content"], reply["content"]


# --------------------------------------------------------------------------- 2. isolation


async def test_another_user_sees_none_of_alices_facts(
    alice: Alice, server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    bob = unique("bob")
    assert await stored_facts(client, bob) == []
    assert await stored_episodes(client, bob) == {}
    alice_facts_before = await stored_items(client, ["user_facts", alice.user_id])
    alice_episodes_before = await stored_episodes(client, alice.user_id)

    marker = unique("nosy")
    thread = await new_thread(client)
    values = await run_turn(
        server,
        client,
        thread,
        f"What is Alice's name, where does Alice live, what is she allergic to, and what "
        f"did we talk about near West Lake? ({marker})",
        user_id=bob,
    )

    call = scripted_log.respond_call(marker)
    system = call["system"]
    assert prompt_profile(system) == [], system
    assert prompt_facts(system) == [], system
    assert prompt_episodes(system) is None, system
    for leaked in ALICE_TRACES:
        assert leaked not in system, system
    assert values["profile"] == []
    assert values["recalled"] == []
    assert values["episodes"] == []
    metrics = values["metrics"]
    assert metrics["profile_fact_ids"] == metrics["recalled_fact_ids"] == [], metrics
    assert metrics["episode_thread_ids"] == [] and metrics["memory_tokens"] == 0, metrics
    reply = values["messages"][-1]["content"]
    assert "nothing yet" in reply and "earlier conversation" not in reply, reply
    assert await stored_facts(client, bob) == []
    assert await stored_episodes(client, bob) == {}
    # Alice's own memory is untouched by Bob's question.
    assert await stored_items(client, ["user_facts", alice.user_id]) == alice_facts_before
    assert await stored_episodes(client, alice.user_id) == alice_episodes_before


# --------------------------------------------------------------------------- 3. long thread

LONG_THREAD_TURNS = 60
BUDGET = {"max_context_tokens": 600, "keep_recent_tokens": 250, "summary_max_tokens": 200}
BARE_SYSTEM_TOKENS = count_text_tokens(
    build_system_prompt(persona=prompts.PERSONA, now=datetime(2026, 9, 30, 23, 59, tzinfo=UTC))
)
"""The system prompt with no memory in it: persona, time line, tool guidance and tags.

Measured from the template rather than fixed, so rewording the persona does not move
the bound; the memory the prompt carries is bounded by the allowances below."""
SYSTEM_ALLOWANCE = 30
"""Slack for the time line (time-zone names) and the tags of the summary block."""
MEMORY_ALLOWANCE = 100
"""The profile and up to five short recalled facts. The thread is the user's only one,
so no past conversation rides in its prompt."""
LONG_THREAD_PROFILE = ["Name is Alice", "Lives in Hangzhou"]
"""What turn 1 pins to the profile; no later turn states a fact about the user."""
PROMPT_BOUND = (
    BUDGET["max_context_tokens"]
    + BUDGET["summary_max_tokens"]
    + TOKENS_PER_MESSAGE
    + BARE_SYSTEM_TOKENS
    + SYSTEM_ALLOWANCE
    + MEMORY_ALLOWANCE
)
MIN_REPLY_TOKENS = 20
"""The shortest scripted reply ("[scripted] Got it. ... (prompt ≈ N tokens)") is longer."""

_TOPICS = [
    "I spent the weekend trying a new braised pork recipe from an old cookbook",
    "work has been busy because our team is shipping a reading app for kids next month",
    "the weather turned cold and rainy, so the evening walks along the lake stopped",
    "my brother keeps sending me articles about electric bikes and battery prices",
    "I finally finished the long novel about a family of tea merchants",
    "our neighbourhood opened a small library with a quiet room upstairs",
    "I have been practising the guitar for twenty minutes before breakfast",
    "a colleague suggested a weekend trip to the mountains for the autumn leaves",
    "the dentist said I should floss more and drink fewer sugary drinks",
    "my old laptop fan makes a loud noise whenever I open a video call",
    "I started a small balcony garden with mint, basil and cherry tomatoes",
    "the train tickets for the holiday sold out within an hour this year",
]
_DETAILS = [
    "It took longer than I expected, but the result was worth the effort.",
    "I wrote down a few notes so that I can remember what went well.",
    "Next time I want to plan it better and start a little earlier in the day.",
    "My friends had different opinions about it, which made the discussion fun.",
    "I am not sure yet whether it is worth the money or the time.",
    "Some parts were confusing, so I looked for advice from people online.",
    "It reminded me of something similar I did a few years ago with my family.",
]
_ASKS = [
    "Could you suggest one simple thing I could do differently next week",
    "What would be a sensible first step if I want to improve this",
    "Please give me a short checklist I can follow without much effort",
    "Is there anything I should be careful about before I continue",
    "How would you approach this if you had only one free evening",
]


def long_thread_turn(turn: int, marker: str) -> str:
    """User turn ``turn`` (1-based) of the long thread: 30-60 words, one line, varied."""
    tag = f"[{marker} turn {turn:02d}]"
    if turn == 1:
        text = (
            f"{tag} Hello! My name is Alice and I live in Hangzhou, near West Lake. "
            "I want to use this chat to plan my meals, my weekends and some small "
            "projects, so please keep track of what I tell you over time."
        )
    else:
        text = (
            f"{tag} Quick update: {_TOPICS[turn % len(_TOPICS)]}. "
            f"{_DETAILS[(turn * 3) % len(_DETAILS)]} {_ASKS[(turn * 5) % len(_ASKS)]}?"
        )
    words = len(text.split())
    assert 30 <= words <= 60, f"turn {turn} has {words} words: {text}"
    return text


async def test_long_thread_stays_within_budget_and_keeps_who_the_user_is(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    user_id = unique("longthread")
    marker = unique("long")
    # The thread's messages stay within max_context_tokens, so it holds only so many turns.
    turns = [long_thread_turn(turn, marker) for turn in range(1, LONG_THREAD_TURNS + 1)]
    shortest_turn = 2 * TOKENS_PER_MESSAGE + MIN_REPLY_TOKENS + min(map(count_text_tokens, turns))
    max_messages = 2 * (BUDGET["max_context_tokens"] // shortest_turn)
    thread = await new_thread(client)
    previous_summary = ""
    prompt_tokens: dict[int, int] = {}
    message_counts: list[int] = []
    first_summary_turn: int | None = None

    for turn in range(1, LONG_THREAD_TURNS + 1):
        await run_turn(
            server,
            client,
            thread,
            turns[turn - 1],
            user_id=user_id,
            **BUDGET,
        )
        call = scripted_log.respond_call(f"[{marker} turn {turn:02d}]")
        where = f"turn {turn}: prompt_tokens={call['prompt_tokens']}"
        # The messages in the prompt never exceed the budget; the whole prompt stays bounded.
        assert message_tokens(call) <= BUDGET["max_context_tokens"], where
        assert call["prompt_tokens"] <= PROMPT_BOUND, where
        prompt_tokens[turn] = call["prompt_tokens"]
        # The summary written after the previous turn is what this turn's prompt carries.
        if previous_summary:
            assert section(call["system"], "summary") == previous_summary, where
        else:
            assert "<summary>" not in call["system"], where
        # Who the user is rides in every prompt after the turn that said it; the thread's
        # own episode is never offered back to it as a past conversation.
        expected_profile = LONG_THREAD_PROFILE if turn > 1 else []
        assert prompt_profile(call["system"]) == expected_profile, where
        assert prompt_episodes(call["system"]) is None, where
        remembered = [*prompt_profile(call["system"]), *prompt_facts(call["system"])]
        assert sum(count_text_tokens(f"- {line}\n") for line in remembered) <= MEMORY_ALLOWANCE

        values = await thread_values(client, thread)
        messages = values["messages"]
        message_counts.append(len(messages))
        assert len(messages) <= max_messages, where
        assert thread_tokens(messages) <= BUDGET["max_context_tokens"], where
        assert messages[-1]["type"] == "ai" and messages[-1]["content"].startswith("[scripted]")
        previous_summary = values.get("summary", "").strip()
        if previous_summary and first_summary_turn is None:
            first_summary_turn = turn
        assert count_text_tokens(previous_summary) <= BUDGET["summary_max_tokens"], where
        if previous_summary:  # every compression refreshes the thread's episode
            episodes = await stored_episodes(client, user_id)
            assert list(episodes) == [thread], where
            assert episodes[thread]["content"] == previous_summary, where
            assert episodes[thread]["started_at"] == values["started_at"], where

    assert first_summary_turn is not None and first_summary_turn <= 10, first_summary_turn
    # Who the user is, said only in turn 1, survives 60 turns of folding.
    assert "Alice" in previous_summary and "Hangzhou" in previous_summary, previous_summary
    # The summary keeps moving: recent turns are folded into it, the latest is not.
    assert f"[{marker} turn {LONG_THREAD_TURNS:02d}]" not in previous_summary
    assert any(f"[{marker} turn {n}]" in previous_summary for n in range(50, LONG_THREAD_TURNS))
    summaries = [
        entry
        for entry in scripted_log.entries()
        if entry["kind"] == "summarize" and marker in entry["summary"]
    ]
    assert len(summaries) >= LONG_THREAD_TURNS // 5, len(summaries)

    print(
        f"E2E_FIGURES turn10={prompt_tokens[10]} turn30={prompt_tokens[30]} "
        f"turn60={prompt_tokens[60]} messages={message_counts[-1]} "
        f"max_messages={max(message_counts)}/{max_messages} "
        f"max_prompt={max(prompt_tokens.values())}/{PROMPT_BOUND} "
        f"first_summary_turn={first_summary_turn}"
    )


# --------------------------------------------------------------------------- 4. restart

RESTART_PROFILE = ["Name is Alice", "Allergic to peanuts", "Lives in Hangzhou"]
RESTART_OTHER_FACTS = ["Likes green tea with jasmine in the afternoon"]


async def test_restart_keeps_messages_summary_and_facts(
    tmp_path: Path, start_dev_server: StartServer
) -> None:
    workdir = tmp_path / "restart"
    user_id = unique("restart")
    marker = unique("restart")
    context: dict[str, Any] = {"user_id": user_id, **SMALL_BUDGET}

    first = start_dev_server(workdir, scripted=True)
    async with get_client(url=first.url, api_key=None) as sdk:
        thread = await new_thread(sdk)
        for text in (
            f"({marker} 1) Hi, my name is Alice and I live in Hangzhou.",
            f"({marker} 2) I am allergic to peanuts, so please keep that in mind.",
            f"({marker} 3) I really like green tea with jasmine in the afternoon.",
        ):
            await run_turn(first, sdk, thread, text, **context)
        before = await thread_values(sdk, thread)
        facts_before = await stored_items(sdk, ["user_facts", user_id])
        episodes_before = await stored_episodes(sdk, user_id)
    assert before.get("summary"), f"no summary after three turns: {before}"
    assert sorted(fact["content"] for fact in facts_before.values()) == sorted(
        [*RESTART_PROFILE, *RESTART_OTHER_FACTS]
    )
    assert list(episodes_before) == [thread], episodes_before
    assert episodes_before[thread]["content"] == before["summary"]
    first.stop()

    second = start_dev_server(workdir, scripted=True)
    async with get_client(url=second.url, api_key=None) as sdk:
        after = await thread_values(sdk, thread)
        assert [(m["id"], m["type"], m["content"]) for m in after["messages"]] == [
            (m["id"], m["type"], m["content"]) for m in before["messages"]
        ], f"messages changed across the restart\nserver log:\n{second.log_tail()}"
        assert after["summary"] == before["summary"]
        assert after["started_at"] == before["started_at"]
        assert await stored_items(sdk, ["user_facts", user_id]) == facts_before
        assert await stored_episodes(sdk, user_id) == episodes_before

        values = await run_turn(second, sdk, thread, f"({marker} 4) What do I drink?", **context)
    assert values["messages"][-1]["content"].startswith("[scripted]")
    call = ScriptedLog(second.scripted_log_path).respond_call(f"({marker} 4)")
    system = call["system"]
    assert section(system, "summary") == before["summary"].strip()
    # Facts stored before the restart are recalled after it, each in its own block.
    assert prompt_profile(system) == RESTART_PROFILE, system
    assert prompt_facts(system) == RESTART_OTHER_FACTS, system
    assert prompt_episodes(system) is None, "a thread is not its own past conversation"


# --------------------------------------------------------------------------- 5. no model

MODEL_SETTINGS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASSISTANT_MODEL")


async def test_no_model_configured_fails_fast_with_a_clear_error(
    tmp_path: Path, start_dev_server: StartServer
) -> None:
    dev = start_dev_server(tmp_path / "unconfigured", scripted=False, env={})
    user_id = unique("nomodel")
    async with get_client(url=dev.url, api_key=None) as sdk:
        for attempt in range(2):  # the second run shows the server is still healthy
            thread = await new_thread(sdk)
            run = await sdk.runs.create(
                thread,
                ASSISTANT_ID,
                input=user_message("Hi, my name is Bob and I live in Chengdu."),
                context={"user_id": user_id},
            )
            result = await asyncio.wait_for(sdk.runs.join(thread, run["run_id"]), timeout=30)
            assert isinstance(result, dict) and "__error__" in result, (
                f"attempt {attempt}: expected an error, got {result!r}\n{dev.log_tail()}"
            )
            error = result["__error__"]
            assert error["error"] == "ModelNotConfiguredError", error
            for setting in MODEL_SETTINGS:
                assert setting in error["message"], error["message"]
            status = (await sdk.runs.get(thread, run["run_id"]))["status"]
            assert status == "error", status

        assert await sdk.assistants.search(), "the server stops answering after a failed run"
        assert await stored_facts(sdk, user_id) == [], "a failed turn must store nothing"
        assert await stored_episodes(sdk, user_id) == {}, "a failed turn must store nothing"


# --------------------------------------------------------------------------- 6. streaming


async def test_streaming_shows_the_reply_but_not_memory_calls(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    user_id = unique("stream")
    marker = unique("stream")
    context: dict[str, Any] = {"user_id": user_id, **SMALL_BUDGET}
    thread = await new_thread(client)
    await run_turn(
        server, client, thread, f"({marker} 1) My name is Alice and I live in Hangzhou.", **context
    )
    await run_turn(
        server, client, thread, f"({marker} 2) I am allergic to peanuts and shellfish.", **context
    )

    mark = scripted_log.mark()
    events: list[tuple[str, Any]] = []
    async for part in client.runs.stream(
        thread,
        ASSISTANT_ID,
        input=user_message(f"({marker} 3) I really like green tea with jasmine flowers."),
        context=context,
        stream_mode="messages-tuple",
    ):
        events.append((part.event, part.data))

    # This run made all three kinds of model call: a reply, an extraction and a summary.
    kinds = [entry["kind"] for entry in scripted_log.since(mark)]
    assert sorted(kinds) == ["extract", "respond", "summarize"], kinds
    summary = scripted_log.since(mark, "summarize")[0]["summary"]

    assert not [data for event, data in events if event == "error"], events
    chunks = [data for event, data in events if event == "messages"]
    assert len(chunks) > 3, f"expected the reply token by token, got {events}"
    for message, metadata in chunks:
        assert message["type"] == "AIMessageChunk", message
        assert metadata["langgraph_node"] == "respond", metadata
    assert len({message["id"] for message, _ in chunks}) == 1, "only one message streams"
    streamed = "".join(message["content"] for message, _ in chunks)

    values = await thread_values(client, thread)
    assert streamed == values["messages"][-1]["content"]
    assert streamed.startswith("[scripted]")
    assert summary not in streamed and values["summary"] == summary
    assert "Likes green tea" not in streamed  # the extraction's output
