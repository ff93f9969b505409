"""`recall`: gather what memory holds for this turn: the profile, relevant facts, past episodes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.runtime import Runtime
from langgraph.store.base import SearchItem

from assistant import memory
from assistant.extraction import extract
from assistant.inference.tokens import count_text_tokens
from assistant.run.context import Context
from assistant.run.history import latest_user_message, truncate_text
from assistant.run.recall_query import MAX_QUERY_CHARS
from assistant.run.scope import RunScope, node_scope
from assistant.run.state import RecalledEpisode, RecalledFact, State, TurnMetrics, repair

logger = logging.getLogger(__name__)

MIN_EPISODE_TOKENS = 20
"""An episode shortened below this says nothing useful and is left out."""

WHOLE_MEMORY_FACTS = 12
"""A user with at most this many facts besides the profile may get them all in the prompt."""


HEED_RANK = 1
"""A hard constraint ranked this high among the user's facts for the message gets a note."""

PROFILE_ORDER = ("identity", "constraint", "location", "preference")
"""Which pinned facts win when the profile budget is tight; other categories come after."""


async def recall(state: State, runtime: Runtime[Context]) -> State:
    """Load the user's profile, the facts relevant to the latest message, and past episodes.

    If the store cannot be searched, the turn goes on without memory (logged), so a
    memory outage never blocks a reply. An invalid user id still fails the run.

    First it settles the thread's last memory change: if the message it came from is no
    longer in the thread (the run was rolled back), the change is undone
    (`assistant.memory.turns`); and it extracts what the user's other threads held for a
    batch (`assistant.extraction.extract`). It also resets fields a broken checkpoint holds.
    """
    scope = node_scope(runtime)
    latest = latest_user_message(state.get("messages", []))
    query = (latest.text if latest else "")[:MAX_QUERY_CHARS]
    recalled, failed = Recalled(), False
    try:
        if scope.thread_id:
            await _settle(scope, state)
            await _release_other_threads(scope)
        recalled = await _gather(scope, query)
    except memory.InvalidUserIdError:
        raise
    except Exception:
        logger.exception("Recall failed; answering this turn without long-term memory")
        failed = True
    update: State = {
        **repair(dict(state)),
        "profile": recalled.profile,
        "recalled": recalled.facts,
        "episodes": recalled.episodes,
        "heed": recalled.heed,
        "metrics": recalled.metrics((latest.id or "") if latest else "", failed=failed),
    }
    if not update.get("started_at", state.get("started_at")):
        update["started_at"] = datetime.now(UTC).isoformat()
    return update


@dataclass
class Recalled:
    """What `recall` found for the turn: the profile, relevant facts and past episodes."""

    profile: list[RecalledFact] = field(default_factory=list)
    facts: list[RecalledFact] = field(default_factory=list)
    episodes: list[RecalledEpisode] = field(default_factory=list)
    heed: list[RecalledFact] = field(default_factory=list)
    """Hard constraints that are the facts most relevant to the message (`heeded`)."""

    def metrics(self, message_id: str, *, failed: bool = False) -> TurnMetrics:
        """The turn's metrics: which memories the prompt holds, and what they cost in tokens.

        ``failed``: the recall failed, so the prompt holds no memory whatever is stored.
        """
        facts = [*self.profile, *self.facts]
        tokens = sum(count_text_tokens(fact["content"]) for fact in facts)
        tokens += sum(count_text_tokens(episode["content"]) for episode in self.episodes)
        return TurnMetrics(
            message_id=message_id,
            started_at=datetime.now(UTC).isoformat(),
            profile_fact_ids=[fact["id"] for fact in self.profile],
            recalled_fact_ids=[fact["id"] for fact in self.facts],
            episode_thread_ids=[episode["thread_id"] for episode in self.episodes],
            memory_tokens=tokens,
            compressed=False,
            recall_failed=failed,
        )


async def _settle(scope: RunScope, state: State) -> None:
    """Undo the thread's last memory change if its message is gone (a rolled-back run)."""
    assert scope.thread_id
    message_ids = {message.id for message in state.get("messages", []) if message.id}
    undone = await scope.memory.settle(scope.thread_id, message_ids)
    if undone:
        logger.info("Undid %d memory changes of a rolled-back turn", len(undone))


async def _gather(scope: RunScope, query: str) -> Recalled:
    """The profile that fits, the facts relevant to ``query``, and past episodes that fit.

    The episodes are searched beside the profile and the facts (their store reads overlap,
    and the query is embedded once for both).
    """
    context, user_memory = scope.context, scope.memory
    if not (context.episode_limit and query):
        return await _facts(scope, query)
    episodes = asyncio.ensure_future(
        user_memory.episodes(query, limit=context.episode_limit, exclude_thread_id=scope.thread_id)
    )
    try:
        recalled = await _facts(scope, query)
    except BaseException:
        episodes.cancel()
        raise
    recalled.episodes = fit_episodes(await episodes, context.episode_tokens)
    return recalled


async def _facts(scope: RunScope, query: str) -> Recalled:
    """The profile that fits and the facts relevant to ``query`` (no episodes).

    The profile is read beside the recall: the recall asks for room for every pinned fact
    (their count is the index's), so that it need not wait to learn which ones the profile
    shows.
    """
    context, user_memory = scope.context, scope.memory
    besides = max(context.recall_limit, WHOLE_MEMORY_FACTS)
    profile_read = asyncio.ensure_future(user_memory.profile())
    try:
        count = await user_memory.pinned_count()
        if count is None:  # the index is first built: the profile's own read says
            count = len(await profile_read)
        asked = besides + count
        found = await user_memory.recall(query, limit=asked)
        pinned = await profile_read
    except BaseException:
        profile_read.cancel()
        raise
    profile = fit_profile(pinned, context.profile_tokens)
    shown = {fact["id"] for fact in profile}
    others = [_fact(item) for item in found if item.key not in shown]
    # Every current fact was found when fewer than asked came back; the memory goes in
    # whole when at most `besides` of them are not in the profile and they fit the budget.
    whole = (
        len(found) < asked
        and len(others) < besides
        and _tokens(others) <= context.whole_memory_tokens
    )
    facts = others if whole else others[: context.recall_limit]
    heed = await _heed(scope, query, found, shown=[*profile, *facts])
    if memory.asks_when(query):
        profile, facts = dated(profile, [*found, *pinned]), dated(facts, found)
    return Recalled(profile, facts, heed=heed)


def dated(facts: Sequence[RecalledFact], found: Sequence[SearchItem]) -> list[RecalledFact]:
    """``facts``, each with the day the user first said it, for a message that asks when.

    Facts are stored without the day they speak of, so "When did I move to Porto?" has only
    the day the fact was said to go by (a move supersedes the old city with a new fact, said
    that day); other messages do without the tokens. The day comes from ``found``. A fact
    whose words name days ("yesterday", "last week") also gets them, read as said when it
    was said (`assistant.memory.named_days`): a small model given "Went to a support group yesterday
    (said 2023-05-08)" answered "yesterday", or the day it was said.

    >>> from langgraph.store.base import SearchItem
    >>> found = [SearchItem(("user_facts", "u"), key, {"content": content,
    ...          "created_at": "2023-05-08T09:00:00+00:00"}, None, None)
    ...          for key, content in [("1", "Moved to Porto"), ("2", "Hiked yesterday")]]
    >>> dated([RecalledFact(id="1", content="Moved to Porto", category="location")], found)
    [{'id': '1', 'content': 'Moved to Porto', 'category': 'location', 'said_on': '2023-05-08'}]
    >>> dated([RecalledFact(id="2", content="Hiked yesterday", category="other")], found)[0]
    {'id': '2', 'content': 'Hiked yesterday', 'category': 'other', 'said_on': '2023-05-08', \
'named_days': '2023-05-07'}
    """
    values = {item.key: item.value for item in found}
    return [_dated(fact, values.get(fact["id"], {})) for fact in facts]


def _dated(fact: RecalledFact, value: dict[str, Any]) -> RecalledFact:
    said_on = str(value.get("created_at") or "")[:10]
    if not said_on:
        return fact
    named = memory.named_days(value)
    if named:
        return RecalledFact(**fact, said_on=said_on, named_days=named)
    return RecalledFact(**fact, said_on=said_on)


async def _heed(
    scope: RunScope, query: str, found: Sequence[SearchItem], *, shown: Sequence[RecalledFact]
) -> list[RecalledFact]:
    """The hard constraints to note under the message (`heeded`); never fails the turn.

    Whether the message is about food is asked only of a user with a hard constraint
    shown, whose facts recall has just ranked: the query's embedding is e5's cached one.
    """
    if not query or not any(_constraint(fact) for fact in shown):
        return []
    try:
        food = await memory.about_food(scope.store, query)
    except Exception:
        logger.exception("Telling whether the message is about food failed")
        food = False
    return heeded(found, shown=shown, food=food)


def _constraint(fact: RecalledFact) -> bool:
    return memory.is_hard_constraint(fact["category"], fact["content"])


def heeded(
    found: Sequence[SearchItem], *, shown: Sequence[RecalledFact], food: bool = False
) -> list[RecalledFact]:
    """The hard constraints to note under the message.

    For a message about ``food``, every hard constraint shown; else those among the
    ``HEED_RANK`` facts most relevant to the message.

    The rank, not the score, decides (e5's scores are not comparable from one query to
    the next); a constraint the prompt does not show is left out.

    >>> from langgraph.store.base import SearchItem
    >>> def item(key, category):
    ...     return SearchItem(("user_facts", "u"), key, {"content": key, "category": category},
    ...                       None, None)
    >>> shown = [_fact(item("Allergic to peanuts", "constraint"))]
    >>> [f["content"] for f in heeded([item("Allergic to peanuts", "constraint")], shown=shown)]
    ['Allergic to peanuts']
    >>> ranked = [item("Lives in Porto", "location"), item("Allergic to peanuts", "constraint")]
    >>> heeded(ranked, shown=shown)
    []
    >>> [f["content"] for f in heeded(ranked, shown=shown, food=True)]
    ['Allergic to peanuts']
    """
    if food:
        return [fact for fact in shown if _constraint(fact)]
    ids = {fact["id"] for fact in shown}
    top = [_fact(item) for item in found[:HEED_RANK]]
    return [fact for fact in top if _constraint(fact) and fact["id"] in ids]


def _tokens(facts: Sequence[RecalledFact]) -> int:
    return sum(count_text_tokens(fact["content"]) + 2 for fact in facts)


async def _release_other_threads(scope: RunScope) -> None:
    """Extract what the user's other threads held, before this thread reads memory.

    So a fact said elsewhere is never missing here. Never fails the turn.
    """
    try:
        await extract.release_held(scope, other_threads=True)
    except Exception:
        logger.exception("Extracting other threads' held messages failed")


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
