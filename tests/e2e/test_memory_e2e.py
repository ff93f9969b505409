"""Memory end to end: a real `langgraph dev`, the scripted model, langgraph-sdk only.

What a user would notice: facts said in one thread are known in the next, another
user sees none of them, a long thread stays within its budget without forgetting who
the user is, a restart loses nothing, a missing model fails fast with a clear message,
and streaming shows the reply but not the memory bookkeeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import (
    ASSISTANT_ID,
    ScriptedLog,
    StartServer,
    message_tokens,
    new_thread,
    prompt_facts,
    run_turn,
    section,
    stored_facts,
    thread_tokens,
    unique,
    user_message,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from assistant.devserver import DevServer
from assistant.tokens import TOKENS_PER_MESSAGE, count_text_tokens

pytestmark = pytest.mark.e2e

ALICE_FACTS = {"Name is Alice", "Lives in Hangzhou", "对花生过敏"}
"""What the scripted extractor finds in Alice's two introductions below."""


@dataclass(frozen=True)
class Alice:
    """A user who introduced herself in two threads, in two languages."""

    user_id: str
    english_thread: str
    chinese_thread: str


@pytest.fixture(scope="module")
async def alice(server: DevServer, client: LangGraphClient) -> AsyncIterator[Alice]:
    """Alice states facts in English in one thread and in Chinese in another."""
    user = Alice(
        user_id=unique("alice"),
        english_thread=await new_thread(client),
        chinese_thread=await new_thread(client),
    )
    await run_turn(
        server,
        client,
        user.english_thread,
        "Hi, my name is Alice and I live in Hangzhou.",
        user_id=user.user_id,
    )
    await run_turn(server, client, user.chinese_thread, "我对花生过敏。", user_id=user.user_id)
    yield user


# --------------------------------------------------------------------------- 1. recall


async def test_facts_from_two_threads_are_recalled_in_a_third(
    alice: Alice, server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    facts = await stored_facts(client, alice.user_id)
    assert {fact["content"] for fact in facts} == ALICE_FACTS
    learned_in = {fact["content"]: fact["thread_id"] for fact in facts}
    assert learned_in["Lives in Hangzhou"] == alice.english_thread
    assert learned_in["对花生过敏"] == alice.chinese_thread

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
    assert set(prompt_facts(call["system"])) == ALICE_FACTS, call["system"]
    assert call["messages"] == 1, "a new thread must not carry other threads' messages"
    assert {fact["content"] for fact in values["recalled"]} == ALICE_FACTS
    reply = values["messages"][-1]
    assert reply["type"] == "ai"
    assert reply["content"].startswith("[scripted]")


# --------------------------------------------------------------------------- 2. isolation


async def test_another_user_sees_none_of_alices_facts(
    alice: Alice, server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    bob = unique("bob")
    assert await stored_facts(client, bob) == []

    marker = unique("nosy")
    thread = await new_thread(client)
    values = await run_turn(
        server,
        client,
        thread,
        f"What is Alice's name, where does Alice live, and what is she allergic to? ({marker})",
        user_id=bob,
    )

    call = scripted_log.respond_call(marker)
    assert prompt_facts(call["system"]) == []
    for leaked in ("Hangzhou", "花生", "Name is Alice"):
        assert leaked not in call["system"], call["system"]
    assert values["recalled"] == []
    assert await stored_facts(client, bob) == []
    # Alice's own memory is untouched by Bob's question.
    assert {fact["content"] for fact in await stored_facts(client, alice.user_id)} == ALICE_FACTS


# --------------------------------------------------------------------------- 3. long thread

LONG_THREAD_TURNS = 60
BUDGET = {"max_context_tokens": 600, "keep_recent_tokens": 250, "summary_max_tokens": 200}
SYSTEM_ALLOWANCE = 300
"""Tokens for the persona, the time line, the tags and up to five short recalled facts."""
PROMPT_BOUND = BUDGET["max_context_tokens"] + BUDGET["summary_max_tokens"] + SYSTEM_ALLOWANCE
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

        values = (await client.threads.get_state(thread))["values"]
        messages = values["messages"]
        message_counts.append(len(messages))
        assert len(messages) <= max_messages, where
        assert thread_tokens(messages) <= BUDGET["max_context_tokens"], where
        assert messages[-1]["type"] == "ai" and messages[-1]["content"].startswith("[scripted]")
        previous_summary = values.get("summary", "").strip()
        if previous_summary and first_summary_turn is None:
            first_summary_turn = turn
        assert count_text_tokens(previous_summary) <= BUDGET["summary_max_tokens"], where

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

SMALL_BUDGET = {"max_context_tokens": 120, "keep_recent_tokens": 50, "summary_max_tokens": 80}


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
        before = (await sdk.threads.get_state(thread))["values"]
        facts_before = await stored_facts(sdk, user_id)
    assert before.get("summary"), f"no summary after three turns: {before}"
    assert {"Name is Alice", "Lives in Hangzhou", "Allergic to peanuts"} <= {
        fact["content"] for fact in facts_before
    }
    first.stop()

    second = start_dev_server(workdir, scripted=True)
    async with get_client(url=second.url, api_key=None) as sdk:
        after = (await sdk.threads.get_state(thread))["values"]
        assert [(m["id"], m["type"], m["content"]) for m in after["messages"]] == [
            (m["id"], m["type"], m["content"]) for m in before["messages"]
        ], f"messages changed across the restart\nserver log:\n{second.log_tail()}"
        assert after["summary"] == before["summary"]
        facts_after = await stored_facts(sdk, user_id)
        assert sorted(f["content"] for f in facts_after) == sorted(
            f["content"] for f in facts_before
        )

        values = await run_turn(second, sdk, thread, f"({marker} 4) What do I drink?", **context)
    assert values["messages"][-1]["content"].startswith("[scripted]")
    call = ScriptedLog(second.scripted_log_path).respond_call(f"({marker} 4)")
    assert section(call["system"], "summary") == before["summary"].strip()
    assert prompt_facts(call["system"]), "facts stored before the restart are recalled after it"


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

    values = (await client.threads.get_state(thread))["values"]
    assert streamed == values["messages"][-1]["content"]
    assert streamed.startswith("[scripted]")
    assert summary not in streamed and values["summary"] == summary
    assert "Likes green tea" not in streamed  # the extraction's output
