"""`respond`: answer the user with memory in view; call memory tools when asked to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from assistant import models, prompts, providers
from assistant.context import Context
from assistant.history import keep_recent_start, truncate_text
from assistant.nodes.compress import should_compress
from assistant.state import RecalledEpisode, RecalledFact, State, TurnMetrics
from assistant.tokens import count_message_tokens, count_messages_tokens
from assistant.tools import MEMORY_TOOLS

MAX_TOOL_ROUNDS = 3
"""Tool calls allowed per user turn; after that the model must answer in words."""

TOOL_LIMIT_REPLY = (
    "I couldn't finish that with my memory tools. Could you say it another way?\n"
    "我没能用记忆工具完成这件事，能换个说法吗？"
)

EMPTY_MESSAGE_REPLY = (
    "Your message looks empty. What would you like to talk about?\n"
    "你的消息好像是空的，想聊些什么呢？"
)


async def respond(state: State, runtime: Runtime[Context]) -> State:
    """Call the chat model on the system prompt plus the thread's recent messages."""
    context = runtime.context or Context()
    messages = state.get("messages", [])
    if not messages or not isinstance(messages[-1], HumanMessage | ToolMessage):
        return {}  # a run with no new user message: nothing to answer
    if _is_blank(messages[-1]):
        return {"messages": [AIMessage(content=EMPTY_MESSAGE_REPLY)]}
    system = build_system_prompt(
        persona=context.system_prompt,
        now=datetime.now().astimezone(),
        profile=state.get("profile", []),
        facts=state.get("recalled", []),
        episodes=state.get("episodes", []),
        summary=state.get("summary", ""),
    )
    model = models.get_chat_model(context.model)
    tools_allowed = tool_rounds(messages) < MAX_TOOL_ROUNDS
    prompt = [
        SystemMessage(content=system),
        *fit_messages(skip_unanswered(messages), max_tokens=context.max_context_tokens),
    ]
    turn = state.get("metrics", {})
    trace: RunnableConfig = {
        "run_name": "respond",
        "metadata": {
            "memory_profile_fact_ids": turn.get("profile_fact_ids", []),
            "memory_recalled_fact_ids": turn.get("recalled_fact_ids", []),
            "memory_episode_thread_ids": turn.get("episode_thread_ids", []),
            "memory_tokens": turn.get("memory_tokens", 0),
        },
    }
    warning = providers.extraction_warning(model)
    if warning:
        trace["metadata"] = {**trace.get("metadata", {}), "memory_warning": warning}
    # Memory figures ride into LangSmith traces; a model without tools answers without them.
    response = await providers.ainvoke_with_tools(
        model, MEMORY_TOOLS if tools_allowed else [], prompt, trace
    )
    if not isinstance(response, AIMessage):
        raise TypeError(f"The chat model returned {type(response).__name__}, not an AIMessage")
    if response.tool_calls and not tools_allowed:
        # Out of tool rounds but the model still asked: answer in words, no dangling calls.
        response = AIMessage(content=response.text or TOOL_LIMIT_REPLY, id=response.id)
    if warning:  # clients (the CLI) show it; LangSmith has it in the trace metadata
        response.response_metadata["memory_warning"] = warning
    metrics = TurnMetrics(
        message_id=state.get("metrics", {}).get("message_id", ""),
        prompt_tokens=count_messages_tokens(prompt),
    )
    return {"messages": [response], "metrics": metrics}


def tool_rounds(messages: Sequence[BaseMessage]) -> int:
    """How many times the model has called tools since the user's latest message."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage) and message.tool_calls:
            rounds += 1
    return rounds


def after_respond(
    state: State, runtime: Runtime[Context]
) -> Literal["use_tools", "compress", "__end__"]:
    """Run the tools the model called; else compress when over budget; else finish."""
    messages = state.get("messages", [])
    if messages and isinstance(messages[-1], AIMessage) and messages[-1].tool_calls:
        return "use_tools"
    return should_compress(state, runtime)


def _is_blank(message: BaseMessage) -> bool:
    """A human message with no text and no image or file blocks."""
    if not isinstance(message, HumanMessage) or message.text.strip():
        return False
    return isinstance(message.content, str) or all(
        isinstance(block, str) or block.get("type") == "text" for block in message.content
    )


def build_system_prompt(
    *,
    persona: str,
    now: datetime,
    profile: Sequence[RecalledFact] = (),
    facts: Sequence[RecalledFact] = (),
    episodes: Sequence[RecalledEpisode] = (),
    summary: str = "",
) -> str:
    """The system prompt: persona, time, profile, recalled facts, past episodes, summary.

    >>> from datetime import datetime, timezone
    >>> print(build_system_prompt(persona="Be kind.", now=datetime(2026, 1, 2, tzinfo=timezone.utc),
    ...       profile=[{"id": "1", "content": "Name is Alice", "category": "identity"}],
    ...       facts=[{"id": "2", "content": "Likes green tea", "category": "preference"}]))
    Be kind.
    <BLANKLINE>
    Current time: 2026-01-02 00:00 (Friday, UTC)
    <BLANKLINE>
    Your memory tools look up (search_memory), forget (forget_memory) and correct
    (correct_memory) what you remember about this user. Use them when the user asks what you
    remember, or asks you to forget or correct something; find a fact's id with
    search_memory first. Never forget or change facts unless the user asks.
    <BLANKLINE>
    Who the user is (always true unless they say otherwise):
    <user_profile>
    - Name is Alice
    </user_profile>
    <BLANKLINE>
    What else you remember about this user (most relevant first; may be empty):
    <user_facts>
    - Likes green tea
    </user_facts>
    """
    summary = summary.strip()
    episodes_text = "\n".join(
        f'<conversation from="{episode["started_at"][:10]}" to="{episode["ended_at"][:10]}">\n'
        f"{episode['content']}\n</conversation>"
        for episode in episodes
    )
    return prompts.SYSTEM_PROMPT.format(
        persona=persona.strip(),
        time=now.strftime("%Y-%m-%d %H:%M (%A, %Z)"),
        user_profile="\n".join(f"- {fact['content']}" for fact in profile),
        user_facts="\n".join(f"- {fact['content']}" for fact in facts),
        episodes_block=prompts.EPISODES_BLOCK.format(episodes=episodes_text) if episodes else "",
        summary_block=prompts.SUMMARY_BLOCK.format(summary=summary) if summary else "",
    )


def skip_unanswered(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages without earlier user messages that never got a reply.

    A turn whose reply failed (a provider error, a rejected payload) leaves its user
    message in the thread; sending it again with every later turn could fail the thread
    for good. The thread keeps it; only the prompt leaves it out. The latest message
    always stays.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> [m.text for m in skip_unanswered(
    ...     [HumanMessage("a"), AIMessage("b"), HumanMessage("bad"), HumanMessage("c")])]
    ['a', 'b', 'c']
    """
    return [
        message
        for index, message in enumerate(messages)
        if not (
            isinstance(message, HumanMessage)
            and index + 1 < len(messages)
            and isinstance(messages[index + 1], HumanMessage)
        )
    ]


def fit_messages(messages: Sequence[BaseMessage], *, max_tokens: int) -> list[BaseMessage]:
    """The most recent messages that fit in ``max_tokens``, cut at a human message.

    Normally ``compress`` keeps the thread within budget; this guards the prompt when a
    single turn is larger than the budget, by shortening the oversized message's text.
    """
    kept = list(messages[keep_recent_start(messages, max_tokens=max_tokens) :])
    overflow = sum(count_message_tokens(message) for message in kept) - max_tokens
    if overflow <= 0:
        return kept
    fitted: list[BaseMessage] = []
    for message in kept:
        tokens = count_message_tokens(message)
        if overflow > 0 and tokens > overflow and message.text:
            shortened = truncate_text(message.text, max(tokens - overflow - 8, 1))
            message = message.model_copy(update={"content": _replace_text(message, shortened)})
            overflow = 0
        fitted.append(message)
    return fitted


def _replace_text(message: BaseMessage, text: str) -> str | list[str | dict[str, Any]]:
    """The message's content with its text replaced by ``text``, other blocks kept."""
    if isinstance(message.content, str):
        return text
    others = [
        block
        for block in message.content
        if isinstance(block, dict) and block.get("type") not in ("text", None)
    ]
    return [{"type": "text", "text": text}, *others]
