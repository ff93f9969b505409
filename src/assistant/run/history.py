"""Pure helpers that cut a thread's history without breaking it.

A cut always lands on a human message, so an AI message with tool calls is never
separated from its tool messages, and the kept part starts the way providers expect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from assistant.inference.tokens import (
    count_message_tokens,
    count_messages_tokens,
    count_text_tokens,
)

__all__ = [
    "context_tokens",
    "keep_budget",
    "keep_recent_start",
    "latest_user_message",
    "memory_tokens",
    "truncate_text",
]

TokenCounter = Callable[[BaseMessage], int]
"""Counts the tokens of one message."""


def latest_user_message(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The user's message the turn answers: the latest one, before any tool round.

    >>> latest_user_message([HumanMessage("hi"), AIMessage("hello")]).text
    'hi'
    >>> latest_user_message([AIMessage("hello")]) is None
    True
    """
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


def context_tokens(
    messages: Sequence[BaseMessage], *, summary: str, memory: Sequence[str] = ()
) -> int:
    """Tokens ``max_context_tokens`` counts: the messages, the summary and the memory shown.

    Everything memory puts beside the messages in a prompt (the running summary, and the
    profile, facts and episodes recalled for the turn: ``memory``) rides in the prompt
    with them, so all of it shares one budget, as LangMem's summary message shares its
    ``max_tokens`` with the messages kept.

    >>> from langchain_core.messages import HumanMessage
    >>> context_tokens([HumanMessage("a" * 40)], summary="b" * 40)
    24
    >>> context_tokens([HumanMessage("a" * 40)], summary="", memory=["b" * 40])
    24
    """
    return (
        count_messages_tokens(messages)
        + (count_text_tokens(summary.strip()) if summary.strip() else 0)
        + memory_tokens(memory)
    )


def memory_tokens(memory: Sequence[str]) -> int:
    """Tokens of the memory texts a prompt shows beside the messages.

    >>> memory_tokens(["a" * 40, "", "b" * 40])
    20
    """
    return sum(count_text_tokens(text) for text in memory if text.strip())


def keep_budget(
    *,
    max_context_tokens: int,
    keep_recent_tokens: int,
    summary_max_tokens: int,
    memory_tokens: int = 0,
) -> int:
    """How many tokens of recent messages a compression keeps verbatim.

    ``keep_recent_tokens``, but no more than the budget leaves beside a summary as long as
    it may grow and the memory the turn showed, so a compression always brings the thread
    back within budget (unless the latest exchange alone is over it, which
    `keep_recent_start` keeps all the same).

    >>> keep_budget(max_context_tokens=2400, keep_recent_tokens=200, summary_max_tokens=300)
    200
    >>> keep_budget(max_context_tokens=600, keep_recent_tokens=500, summary_max_tokens=200)
    400
    >>> keep_budget(
    ...     max_context_tokens=600, keep_recent_tokens=500, summary_max_tokens=200,
    ...     memory_tokens=150,
    ... )
    250
    """
    room = max_context_tokens - summary_max_tokens - memory_tokens
    return max(min(keep_recent_tokens, room), 0)


def keep_recent_start(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter = count_message_tokens,
) -> int:
    """Index where the kept, most recent part of ``messages`` should begin.

    The kept part is the longest suffix that starts with a human message and fits in
    ``max_tokens``. When even the last human turn does not fit, it starts at the last
    human message, so the current turn is never dropped. Returns 0 when everything
    fits or when there is no human message to cut at.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> msgs = [HumanMessage("a" * 40), AIMessage("b" * 40), HumanMessage("c")]
    >>> keep_recent_start(msgs, max_tokens=10)
    2
    """
    suffix_tokens = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix_tokens[i] = suffix_tokens[i + 1] + token_counter(messages[i])
    if suffix_tokens[0] <= max_tokens:
        return 0
    human_starts = [i for i, message in enumerate(messages) if isinstance(message, HumanMessage)]
    if not human_starts:
        return 0
    for start in human_starts:
        if start > 0 and suffix_tokens[start] <= max_tokens:
            return start
    return human_starts[-1]


def truncate_text(text: str, max_tokens: int, *, marker: str = "\n[…]\n") -> str:
    """Shorten ``text`` to about ``max_tokens``, keeping its start and its end.

    >>> truncate_text("short", 10)
    'short'
    >>> len(truncate_text("x" * 10_000, 100)) < 500
    True
    """
    if count_text_tokens(text) <= max_tokens:
        return text
    # Binary search the character budget: token density differs between scripts.
    low, high = 0, len(text) // 2
    while low < high:
        mid = (low + high + 1) // 2
        if count_text_tokens(text[:mid] + text[-mid:]) + 3 <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low] + marker + text[len(text) - low :] if low else marker.strip()


MAX_TOKENS_PER_FOLDED_MESSAGE = 1000
"""Each message is shortened to this in a transcript for the summariser."""


def format_transcript(messages: Sequence[BaseMessage]) -> str:
    """Render messages as ``Role: text`` lines for the summariser, each one capped.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> print(format_transcript([HumanMessage("I live in Hangzhou"), AIMessage("Noted!")]))
    User: I live in Hangzhou
    Assistant: Noted!
    """
    lines: list[str] = []
    for message in messages:
        text = truncate_text(message.text.strip(), MAX_TOKENS_PER_FOLDED_MESSAGE)
        if isinstance(message, AIMessage) and message.tool_calls:
            names = ", ".join(call["name"] for call in message.tool_calls)
            text = f"{text} [called tools: {names}]".strip()
        if text:
            lines.append(f"{_role(message)}: {text}")
    return "\n".join(lines)


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "User"
    if isinstance(message, AIMessage):
        return "Assistant"
    if isinstance(message, ToolMessage):
        return "Tool"
    return message.type.capitalize()
