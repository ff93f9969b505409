"""Cutting history: only at a human message, never between a tool call and its result."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from assistant.inference.tokens import count_text_tokens
from assistant.run.history import keep_recent_start, truncate_text


def chars(message: BaseMessage) -> int:
    """A simple token counter: one token per character of text."""
    return len(message.text)


def tool_turn(n: int) -> list[BaseMessage]:
    """A human turn in which the assistant calls two tools before answering."""
    return [
        HumanMessage(f"question {n} " + "q" * 20),
        AIMessage(
            "",
            tool_calls=[
                {"id": f"call-{n}-a", "name": "search", "args": {"q": str(n)}},
                {"id": f"call-{n}-b", "name": "lookup", "args": {"q": str(n)}},
            ],
        ),
        ToolMessage("r" * 30, tool_call_id=f"call-{n}-a"),
        ToolMessage("s" * 30, tool_call_id=f"call-{n}-b"),
        AIMessage(f"answer {n} " + "a" * 20),
    ]


def plain_turn(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"hello {n} " + "h" * 20), AIMessage(f"reply {n} " + "r" * 20)]


def test_returns_zero_when_everything_fits() -> None:
    messages = plain_turn(1) + plain_turn(2)
    total = sum(chars(m) for m in messages)
    assert keep_recent_start(messages, max_tokens=total, token_counter=chars) == 0
    assert keep_recent_start([], max_tokens=10, token_counter=chars) == 0


def test_keeps_the_longest_suffix_that_fits_and_starts_with_a_human() -> None:
    messages = plain_turn(1) + plain_turn(2) + plain_turn(3)
    last_two_turns = sum(chars(m) for m in messages[2:])
    start = keep_recent_start(messages, max_tokens=last_two_turns, token_counter=chars)
    assert start == 2
    # One token less and only the last turn fits.
    start = keep_recent_start(messages, max_tokens=last_two_turns - 1, token_counter=chars)
    assert start == 4


def test_cuts_only_at_human_messages() -> None:
    messages = plain_turn(1) + plain_turn(2) + plain_turn(3)
    for budget in range(1, sum(chars(m) for m in messages)):
        start = keep_recent_start(messages, max_tokens=budget, token_counter=chars)
        assert start == 0 or isinstance(messages[start], HumanMessage), budget


def test_keeps_at_least_the_last_human_turn_even_when_it_does_not_fit() -> None:
    messages = [*plain_turn(1), HumanMessage("x" * 1000), AIMessage("y" * 1000)]
    start = keep_recent_start(messages, max_tokens=10, token_counter=chars)
    assert start == 2
    assert messages[start].text == "x" * 1000


def test_no_human_message_means_no_cut() -> None:
    messages = [AIMessage("a" * 100), AIMessage("b" * 100)]
    assert keep_recent_start(messages, max_tokens=10, token_counter=chars) == 0


def test_never_separates_tool_calls_from_their_results() -> None:
    messages = plain_turn(1) + tool_turn(2) + plain_turn(3) + tool_turn(4) + plain_turn(5)
    total = sum(chars(m) for m in messages)
    for budget in range(1, total + 1):
        start = keep_recent_start(messages, max_tokens=budget, token_counter=chars)
        kept = messages[start:]
        calls_kept = {
            call["id"]
            for message in kept
            if isinstance(message, AIMessage)
            for call in message.tool_calls
        }
        for message in kept:
            if isinstance(message, ToolMessage):
                assert message.tool_call_id in calls_kept, (budget, start)
        # And no kept tool call has lost its result.
        results_kept = {m.tool_call_id for m in kept if isinstance(m, ToolMessage)}
        assert calls_kept <= results_kept, (budget, start)


def test_default_counter_is_the_project_token_counter() -> None:
    messages = plain_turn(1) + plain_turn(2)
    # Each plain message is 4 + 7 tokens, so 30 tokens hold only the last turn.
    assert keep_recent_start(messages, max_tokens=30) == 2


def test_truncate_text_leaves_short_text_alone() -> None:
    assert truncate_text("short", 10) == "short"
    assert truncate_text("", 10) == ""


@pytest.mark.parametrize("budget", [20, 100, 500])
def test_truncate_text_keeps_head_and_tail_within_budget_in_english(budget: int) -> None:
    text = "BEGIN " + " ".join(f"word{i}" for i in range(3000)) + " END"
    shortened = truncate_text(text, budget)
    assert count_text_tokens(shortened) <= budget
    assert shortened.startswith("BEGIN")
    assert shortened.endswith("END")
    assert "[…]" in shortened
    # It uses most of its budget rather than throwing the text away.
    assert count_text_tokens(shortened) >= budget * 0.8


@pytest.mark.parametrize("budget", [20, 100, 500])
def test_truncate_text_keeps_head_and_tail_within_budget_in_chinese(budget: int) -> None:
    text = "开头" + "我住在杭州，喜欢喝龙井茶。" * 500 + "结尾"
    shortened = truncate_text(text, budget)
    assert count_text_tokens(shortened) <= budget
    assert shortened.startswith("开头")
    assert shortened.endswith("结尾")
    assert count_text_tokens(shortened) >= budget * 0.8


def test_truncate_text_with_a_tiny_budget_returns_only_the_marker() -> None:
    assert truncate_text("x" * 1000, 1) == "[…]"
