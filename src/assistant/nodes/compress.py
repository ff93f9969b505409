"""`compress`: fold the oldest messages into the running summary when the thread is too long.

The messages, the summary and the memory shown beside them share one budget,
``max_context_tokens``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from assistant.inference import models
from assistant.inference.tokens import count_message_tokens
from assistant.run.context import Context
from assistant.run.history import (
    MAX_TOKENS_PER_FOLDED_MESSAGE,
    keep_budget,
    keep_recent_start,
    memory_tokens,
    truncate_text,
)
from assistant.run.prompting import shown_memory, summary_prompt, working_tokens
from assistant.run.scope import node_scope
from assistant.run.state import State, TurnMetrics

logger = logging.getLogger(__name__)

MAX_FOLD_INPUT_TOKENS = 12_000
"""Upper bound on the folded transcript sent to the summariser in one call."""


async def compress(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Summarise the oldest messages into ``summary`` and delete them with `RemoveMessage`.

    Runs when the messages, the running summary and the memory the turn's prompt showed
    (profile, facts, episodes) together are over ``max_context_tokens``
    (`context_tokens`). Keeps the most recent messages up to ``keep_recent_tokens`` (less
    when a summary at its cap and that memory would not leave room for them:
    `keep_budget`), cut at a human message; the latest exchange always stays. If the
    summariser fails, nothing is removed and the thread stays as it was.
    """
    context = runtime.context or Context()
    messages = state.get("messages", [])
    if working_tokens(state) <= context.max_context_tokens:
        return {}
    kept_tokens = keep_budget(
        max_context_tokens=context.max_context_tokens,
        keep_recent_tokens=context.keep_recent_tokens,
        summary_max_tokens=context.summary_max_tokens,
        memory_tokens=memory_tokens(shown_memory(state)),
    )
    start = keep_recent_start(messages, max_tokens=kept_tokens)
    folded = messages[: fold_end(messages[:start], max_tokens=MAX_FOLD_INPUT_TOKENS)]
    if not folded:
        return {}
    prompt = summary_prompt(
        max_tokens=context.summary_max_tokens,
        remembered=[fact["content"] for fact in state.get("profile", [])],
        summary=state.get("summary", ""),
        messages=folded,
    )
    try:
        model = models.get_chat_model(context.model)
        response = await model.ainvoke(
            [HumanMessage(content=prompt)], {"run_name": "summarize", "tags": [TAG_NOSTREAM]}
        )
    except Exception:
        logger.exception("Summarisation failed; keeping all %d messages", len(messages))
        return {}
    summary = response.text.strip()
    if not summary:
        logger.warning("Summariser returned nothing; keeping all %d messages", len(messages))
        return {}
    summary = truncate_text(summary, context.summary_max_tokens)
    await _save_episode(state, runtime, summary)
    removals = [RemoveMessage(id=message.id) for message in folded if message.id]
    metrics = TurnMetrics(
        message_id=state.get("metrics", {}).get("message_id", ""), compressed=True
    )
    return {"summary": summary, "messages": removals, "metrics": metrics}


async def _save_episode(state: State, runtime: Runtime[Context], summary: str) -> None:
    """Keep the thread's latest summary as its episode, for recall from other threads."""
    scope = node_scope(runtime)
    thread_id = scope.thread_id
    if not thread_id:
        return
    try:
        await scope.memory.save_episode(
            thread_id=thread_id,
            summary=summary,
            started_at=state.get("started_at"),
        )
    except Exception:
        logger.exception("Saving the episode of thread %s failed", thread_id)


def fold_end(messages: Sequence[BaseMessage], *, max_tokens: int) -> int:
    """How many of the oldest ``messages`` one summarisation call can take.

    All of them when they fit in ``max_tokens``; otherwise the longest prefix that fits
    and ends before a human message, so the rest is folded by the next compression
    instead of being deleted unread. At least the first turn is always taken.
    """
    total = 0
    end = 0
    for index, message in enumerate(messages):
        if index > 0 and isinstance(message, HumanMessage):
            if total > max_tokens:
                return end or index
            end = index
        total += min(count_message_tokens(message), MAX_TOKENS_PER_FOLDED_MESSAGE)
    return len(messages) if total <= max_tokens or not end else end
