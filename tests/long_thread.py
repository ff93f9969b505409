"""A long thread's invariants, for any way of running the graph (in process or on a server).

`check_long_thread` sends numbered turns through a `LongThreadDriver` and, after every turn,
checks what the user would notice: the prompt's messages never exceed the budget and the
whole prompt stays bounded; the thread's messages and its running summary together stay
within the budget; the summary written after a turn rides in the next prompt; who the user
is, said only in turn 1, is in every later prompt and survives the folding; the thread's
messages stay bounded; every compression refreshes the thread's episode. The in-process
test runs it for 60 turns, the end-to-end smoke test for a few.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from assistant.inference.tokens import TOKENS_PER_MESSAGE, count_text_tokens
from assistant.run import prompts
from assistant.run.prompting import build_system_prompt
from prompt_log import (
    message_tokens,
    prompt_episodes,
    prompt_facts,
    prompt_profile,
    section,
    thread_tokens,
)

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


class LongThreadDriver(Protocol):
    """One thread of one user, however the graph is run."""

    thread_id: str

    async def send(self, text: str, **context: Any) -> None:
        """Run one user turn with this run context; fail on a run error."""

    async def values(self) -> dict[str, Any]:
        """The thread's state values, messages as dicts with ``type`` and ``content``."""

    async def episodes(self) -> dict[str, dict[str, Any]]:
        """The user's stored episodes, ``{thread_id: value}``."""

    def respond_call(self, marker: str) -> dict[str, Any]:
        """The scripted model's logged `respond` call whose latest message has ``marker``."""

    def entries(self) -> list[dict[str, Any]]:
        """Every call the scripted model logged."""


@dataclass(frozen=True)
class LongThreadFigures:
    """What a long thread measured, for the test's printout."""

    prompt_tokens: dict[int, int]
    message_counts: list[int]
    max_messages: int
    first_summary_turn: int


async def check_long_thread(driver: LongThreadDriver, marker: str, turns: int) -> LongThreadFigures:
    """Run ``turns`` turns (12 or more) through ``driver``, checking after each one."""
    # The thread's messages stay within max_context_tokens, so it holds only so many turns.
    texts = [long_thread_turn(turn, marker) for turn in range(1, turns + 1)]
    shortest_turn = 2 * TOKENS_PER_MESSAGE + MIN_REPLY_TOKENS + min(map(count_text_tokens, texts))
    max_messages = 2 * (BUDGET["max_context_tokens"] // shortest_turn)
    previous_summary = ""
    prompt_tokens: dict[int, int] = {}
    message_counts: list[int] = []
    first_summary_turn: int | None = None

    for turn in range(1, turns + 1):
        await driver.send(texts[turn - 1], **BUDGET)
        call = driver.respond_call(f"[{marker} turn {turn:02d}]")
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

        values = await driver.values()
        messages = values["messages"]
        message_counts.append(len(messages))
        assert len(messages) <= max_messages, where
        assert messages[-1]["type"] == "ai" and messages[-1]["content"].startswith("[scripted]")
        previous_summary = values.get("summary", "").strip()
        # The messages and the running summary share the budget (no turn here is over it).
        working = thread_tokens(messages) + count_text_tokens(previous_summary)
        assert working <= BUDGET["max_context_tokens"], where
        if previous_summary and first_summary_turn is None:
            first_summary_turn = turn
        assert count_text_tokens(previous_summary) <= BUDGET["summary_max_tokens"], where
        if previous_summary:  # every compression refreshes the thread's episode
            episodes = await driver.episodes()
            assert list(episodes) == [driver.thread_id], where
            assert episodes[driver.thread_id]["content"] == previous_summary, where
            assert episodes[driver.thread_id]["started_at"] == values["started_at"], where

    assert first_summary_turn is not None and first_summary_turn <= 10, first_summary_turn
    # Who the user is, said only in turn 1, survives all the folding.
    assert "Alice" in previous_summary and "Hangzhou" in previous_summary, previous_summary
    # The summary keeps moving: recent turns are folded into it, the latest is not.
    assert f"[{marker} turn {turns:02d}]" not in previous_summary
    recent = range(max(2, turns - 10), turns)
    assert any(f"[{marker} turn {n:02d}]" in previous_summary for n in recent)
    summaries = [
        entry
        for entry in driver.entries()
        if entry["kind"] == "summarize" and marker in entry["summary"]
    ]
    assert len(summaries) >= turns // 5, len(summaries)

    return LongThreadFigures(
        prompt_tokens=prompt_tokens,
        message_counts=message_counts,
        max_messages=max_messages,
        first_summary_turn=first_summary_turn,
    )
