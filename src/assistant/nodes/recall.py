"""`recall`: find the user's facts that matter for the latest message."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from assistant import memory
from assistant.context import Context
from assistant.identity import require_store, run_user_id
from assistant.state import RecalledFact, State

MAX_QUERY_CHARS = 2000
"""Only the start of a very long message is used as the search query."""


async def recall(state: State, runtime: Runtime[Context]) -> State:
    """Search the user's facts for the latest user message and keep the best few."""
    context = runtime.context or Context()
    user_id = run_user_id(runtime)
    store = require_store(runtime.store)
    query = _latest_user_text(state)
    items = await memory.recall(store, user_id, query[:MAX_QUERY_CHARS], limit=context.recall_limit)
    recalled = [
        RecalledFact(
            id=item.key,
            content=str(item.value.get("content", "")),
            category=str(item.value.get("category", "other")),
        )
        for item in items
    ]
    return {"recalled": recalled}


def _latest_user_text(state: State) -> str:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return message.text
    return ""
