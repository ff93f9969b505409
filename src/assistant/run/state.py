"""The graph's state: the thread's messages, its running summary, and this turn's memory."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class RecalledFact(TypedDict):
    """A stored fact put into this turn's prompt."""

    id: str
    """The store key of the fact."""
    content: str
    """The fact itself, in the user's language."""
    category: str
    """What kind of fact it is (identity, location, preference, ...)."""
    said_on: NotRequired[str]
    """The day the user first said it (``YYYY-MM-DD``), shown when the message asks when."""
    named_days: NotRequired[str]
    """The days its words name ("yesterday", "last week"), read as said on ``said_on``
    (`assistant.memory.named_days`), shown with it."""


class RecalledEpisode(TypedDict):
    """A past conversation put into this turn's prompt."""

    thread_id: str
    """The thread the episode summarises."""
    content: str
    """Its summary (shortened to fit the prompt)."""
    started_at: str
    """When the stretch it covers began (ISO 8601)."""
    ended_at: str
    """When it was last summarised (ISO 8601)."""


class TurnMetrics(TypedDict, total=False):
    """What memory did during one turn; shown in Studio next to the messages."""

    message_id: str
    """The user message the turn answered; a new one starts a new record."""
    started_at: str
    """When the turn started (ISO 8601): the time every reply call of the turn is shown,
    so a tool round does not change the prompt a provider's cache holds."""
    profile_fact_ids: list[str]
    """Keys of the pinned facts in the `<user_profile>` block."""
    recalled_fact_ids: list[str]
    """Keys of the facts in the `<user_facts>` block."""
    episode_thread_ids: list[str]
    """Threads whose episodes were in the `<past_conversations>` block."""
    memory_tokens: int
    """Tokens the profile, facts and episodes added to the system prompt."""
    prompt_tokens: int
    """Estimated tokens of the whole prompt sent to the model for the reply."""
    left_out: dict[str, int]
    """What ``max_prompt_tokens`` left out of the prompt: episodes, facts, profile facts
    (counts), summary and message tokens. Empty when everything fitted."""
    extraction: str
    """What memory made of the message: `kept` (it changed memory), `nothing` (the model
    found nothing new to keep), `skipped` (the gate judged it held no fact: no model call)
    or `failed` (nothing was saved from it)."""
    extraction_reason: str
    """Why, in a few words: the gate's reason, what was added, or the failure."""
    added: list[str]
    """Keys of facts stored this turn."""
    updated: list[str]
    """Keys of facts reworded this turn (old wording kept in their history)."""
    superseded: list[str]
    """Keys of facts the user contradicted this turn (kept, out of recall)."""
    confirmed: list[str]
    """Keys of facts the user said again (not stored twice)."""
    compressed: bool
    """Whether `compress` folded old messages into the summary after this turn."""
    recall_failed: bool
    """Whether the turn's recall failed (the store could not be read): the reply was
    written without long-term memory."""


def merge_metrics(current: TurnMetrics | None, update: TurnMetrics) -> TurnMetrics:
    """Merge a node's metrics into the turn's record, starting afresh for a new turn.

    >>> merge_metrics({"message_id": "a", "added": ["k"]}, {"message_id": "a", "compressed": True})
    {'message_id': 'a', 'added': ['k'], 'compressed': True}
    >>> merge_metrics({"message_id": "a", "added": ["k"]}, {"message_id": "b"})
    {'message_id': 'b'}

    A record broken by hand (not a dict) is replaced rather than failing every later turn:

    >>> merge_metrics("junk", {"message_id": "b"})  # type: ignore[arg-type]
    {'message_id': 'b'}
    """
    if not isinstance(update, dict):
        return current if isinstance(current, dict) else TurnMetrics()
    if not isinstance(current, dict) or current.get("message_id") != update.get("message_id"):
        return update
    merged = current.copy()
    merged.update(update)
    return merged


class State(TypedDict, total=False):
    """Everything the graph keeps for one thread."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Working memory: the thread's messages since the last compression."""
    summary: str
    """Running summary of the messages `compress` has folded away. Empty at first."""
    started_at: str
    """When the thread's first turn ran (ISO 8601); the start of its episode."""
    profile: list[RecalledFact]
    """The user's pinned facts for this turn (`<user_profile>`); replaced every turn."""
    recalled: list[RecalledFact]
    """Facts recalled for the latest user message (`<user_facts>`); replaced every turn."""
    heed: list[RecalledFact]
    """Hard constraints that are the facts most relevant to the latest message; `respond`
    puts a note on them right after it. Replaced every turn."""
    episodes: list[RecalledEpisode]
    """Past conversations recalled for the latest message; replaced every turn."""
    metrics: Annotated[TurnMetrics, merge_metrics]
    """What memory did this turn."""


class InputState(TypedDict):
    """What a client may send as a run's input: new messages, and nothing else.

    The summary, the profile, the recalled facts and the metrics belong to the graph; a
    client that could write them could break its own thread (a ``summary`` of ``123``).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    """New messages, in any shape LangGraph accepts (dicts with ``role`` and ``content``,
    or message objects)."""


def repair(state: dict[str, Any]) -> State:
    """The updates that reset fields a broken checkpoint holds to a working value.

    Clients cannot write these fields, but a state edited by the maintenance token, or by
    an older version of the graph, still must not fail every later turn.

    >>> repair({"summary": 123, "started_at": "2026-01-01T00:00:00+00:00"})
    {'summary': ''}
    >>> repair({"summary": "ok"})
    {}
    """
    update = State()
    if "summary" in state and not isinstance(state["summary"], str):
        update["summary"] = ""
    if "started_at" in state and not isinstance(state["started_at"], str):
        update["started_at"] = ""
    return update
