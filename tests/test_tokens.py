"""Offline token estimates: fair to Chinese, aware of images and tool calls."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from assistant.inference.tokens import (
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NON_TEXT_BLOCK,
    count_message_tokens,
    count_messages_tokens,
    count_text_tokens,
)


def test_english_is_about_four_characters_per_token() -> None:
    assert count_text_tokens("hello world") == 3  # 11 chars -> ceil(11 / 4)
    assert count_text_tokens("abcd") == 1
    assert count_text_tokens("a" * 400) == 100


def test_each_chinese_character_is_one_token() -> None:
    assert count_text_tokens("我住在杭州") == 5
    # Full-width punctuation counts like a character too.
    assert count_text_tokens("我住在杭州。") == 6


def test_chinese_is_not_undercounted_like_four_chars_per_token() -> None:
    chinese = "我对花生过敏，请记住。" * 20
    assert count_text_tokens(chinese) == len(chinese)


def test_mixed_text_adds_both_parts() -> None:
    # 5 CJK characters + 8 narrow characters ("I moved " -> 2 tokens).
    assert count_text_tokens("I moved 我住在杭州") == 5 + 2


def test_empty_text_is_zero() -> None:
    assert count_text_tokens("") == 0
    assert count_messages_tokens([]) == 0


def test_plain_message_adds_per_message_overhead() -> None:
    assert count_message_tokens(HumanMessage("hello world")) == TOKENS_PER_MESSAGE + 3


def test_image_block_is_counted_but_its_url_is_not_read_as_text() -> None:
    huge_data_url = "data:image/png;base64," + "A" * 100_000
    message = HumanMessage(
        content=[
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": huge_data_url}},
        ]
    )
    tokens = count_message_tokens(message)
    assert tokens == TOKENS_PER_MESSAGE + count_text_tokens("what is this?") + (
        TOKENS_PER_NON_TEXT_BLOCK
    )
    assert tokens < 200


def test_image_only_message_is_not_free() -> None:
    message = HumanMessage(content=[{"type": "image_url", "image_url": {"url": "http://x/y.png"}}])
    assert count_message_tokens(message) == TOKENS_PER_MESSAGE + TOKENS_PER_NON_TEXT_BLOCK


def test_tool_calls_add_to_an_ai_message() -> None:
    without = AIMessage(content="Let me check.")
    with_calls = AIMessage(
        content="Let me check.",
        tool_calls=[
            {"id": "call-1", "name": "get_weather", "args": {"city": "Hangzhou", "days": 3}}
        ],
    )
    assert count_message_tokens(with_calls) > count_message_tokens(without) + 5


def test_messages_sum_their_counts() -> None:
    messages = [
        HumanMessage("我住在杭州"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "lookup", "args": {}}]),
        ToolMessage("sunny", tool_call_id="c1"),
    ]
    assert count_messages_tokens(messages) == sum(count_message_tokens(m) for m in messages)


def test_a_200k_character_message_is_in_the_right_order_of_magnitude() -> None:
    text = ("lorem ipsum dolor sit amet " * 8000)[:200_000]
    assert len(text) == 200_000
    assert 40_000 <= count_message_tokens(HumanMessage(text)) <= 60_000
    chinese = ("我住在杭州，喜欢喝龙井茶。" * 20_000)[:200_000]
    assert 150_000 <= count_message_tokens(HumanMessage(chinese)) <= 210_000
