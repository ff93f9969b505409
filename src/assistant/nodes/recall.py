"""`recall`: gather what memory holds for this turn: the profile, relevant facts, past episodes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.base import SearchItem

from assistant import extraction, memory
from assistant.context import Context
from assistant.history import truncate_text
from assistant.recall_query import MAX_QUERY_CHARS
from assistant.scope import RunScope, node_scope
from assistant.state import RecalledEpisode, RecalledFact, State, TurnMetrics, repair
from assistant.tokens import count_text_tokens

logger = logging.getLogger(__name__)

MIN_EPISODE_TOKENS = 20
"""An episode shortened below this says nothing useful and is left out."""

PROFILE_ORDER = ("identity", "constraint", "location", "preference")
"""Which pinned facts win when the profile budget is tight; other categories come after."""


async def recall(state: State, runtime: Runtime[Context]) -> State:
    """Load the user's profile, the facts relevant to the latest message, and past episodes.

    If the store cannot be searched, the turn goes on without memory (logged), so a
    memory outage never blocks a reply. An invalid user id still fails the run.

    First it settles the thread's last memory change: if the message it came from is no
    longer in the thread (the run was rolled back), the change is undone
    (`assistant.memory.turns`); and it extracts what the user's other threads held for a
    batch (`assistant.extraction`). It also resets fields a broken checkpoint holds.
    """
    scope = node_scope(runtime)
    context, user_id, store, thread_id = scope.context, scope.user_id, scope.store, scope.thread_id
    latest = _latest_user_message(state)
    query = (latest.text if latest else "")[:MAX_QUERY_CHARS]
    profile: list[RecalledFact] = []
    facts: list[RecalledFact] = []
    episodes: list[RecalledEpisode] = []
    try:
        if thread_id:
            message_ids = {message.id for message in state.get("messages", []) if message.id}
            undone = await memory.settle_turn(store, user_id, thread_id, message_ids)
            if undone:
                logger.info("Undid %d memory changes of a rolled-back turn", len(undone))
            await _release_other_threads(scope)
        profile = fit_profile(await memory.profile(store, user_id), context.profile_tokens)
        shown = {fact["id"] for fact in profile}
        found = await memory.recall(store, user_id, query, limit=context.recall_limit + len(shown))
        facts = [_fact(item) for item in found if item.key not in shown][: context.recall_limit]
        if context.episode_limit and query:
            past = await memory.recall_episodes(
                store, user_id, query, limit=context.episode_limit, exclude_thread_id=thread_id
            )
            episodes = fit_episodes(past, context.episode_tokens)
    except memory.InvalidUserIdError:
        raise
    except Exception:
        logger.exception("Recall failed; answering this turn without long-term memory")
    memory_tokens = sum(count_text_tokens(fact["content"]) for fact in [*profile, *facts])
    memory_tokens += sum(count_text_tokens(episode["content"]) for episode in episodes)
    metrics = TurnMetrics(
        message_id=(latest.id or "") if latest else "",
        profile_fact_ids=[fact["id"] for fact in profile],
        recalled_fact_ids=[fact["id"] for fact in facts],
        episode_thread_ids=[episode["thread_id"] for episode in episodes],
        memory_tokens=memory_tokens,
        compressed=False,
    )
    update: State = {
        **repair(dict(state)),
        "profile": profile,
        "recalled": facts,
        "episodes": episodes,
        "metrics": metrics,
    }
    if not update.get("started_at", state.get("started_at")):
        update["started_at"] = datetime.now(UTC).isoformat()
    return update


async def _release_other_threads(scope: RunScope) -> None:
    """Extract what the user's other threads held, before this thread reads memory.

    So a fact said elsewhere is never missing here. Never fails the turn.
    """
    try:
        await extraction.release_held(scope, other_threads=True)
    except Exception:
        logger.exception("Extracting other threads' held messages failed")


def _latest_user_message(state: State) -> HumanMessage | None:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return message
    return None


def _fact(item: SearchItem) -> RecalledFact:
    return RecalledFact(
        id=item.key,
        content=str(item.value.get("content", "")),
        category=str(item.value.get("category", "other")),
    )


def fit_profile(items: Sequence[SearchItem], max_tokens: int) -> list[RecalledFact]:
    """The pinned facts that fit in ``max_tokens``, most important first.

    Identity, then hard constraints, location and standing preferences; within a
    category, the most often repeated and then the oldest come first.
    """

    def rank(item: SearchItem) -> tuple[int, int, str]:
        category = str(item.value.get("category", "other"))
        order = PROFILE_ORDER.index(category) if category in PROFILE_ORDER else len(PROFILE_ORDER)
        return (order, -int(item.value.get("mentions", 1)), str(item.value.get("created_at", "")))

    chosen: list[RecalledFact] = []
    budget = max_tokens
    for item in sorted(items, key=rank):
        fact = _fact(item)
        cost = count_text_tokens(fact["content"]) + 2
        if cost <= budget:
            chosen.append(fact)
            budget -= cost
    return chosen


EPISODE_LINE_TOKENS = 20
"""What the `<conversation from=… to=…>` wrapper around each episode costs in the prompt."""


def fit_episodes(items: Sequence[SearchItem], max_tokens: int) -> list[RecalledEpisode]:
    """Past episodes, each shortened to an equal share of ``max_tokens``.

    Each share pays for the episode's date line too; when the budget cannot give every
    episode a useful share, the least relevant ones are left out.
    """
    items = list(items)
    while items and max_tokens // len(items) - EPISODE_LINE_TOKENS < MIN_EPISODE_TOKENS:
        items.pop()
    if not items:
        return []
    share = max_tokens // len(items) - EPISODE_LINE_TOKENS
    return [
        RecalledEpisode(
            thread_id=str(item.value.get("thread_id", item.key)),
            content=truncate_text(str(item.value.get("content", "")), share),
            started_at=str(item.value.get("started_at", "")),
            ended_at=str(item.value.get("ended_at", "")),
        )
        for item in items
    ]
