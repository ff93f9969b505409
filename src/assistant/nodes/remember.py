"""`remember`: turn the user's new message into memory changes.

It reads the user's messages, never assistant text, and runs in parallel with `respond`, so
memory adds no latency to the reply. The gate (`assistant.extraction.gate`) decides what
happens to the message: ``skip`` (it cannot hold a fact: no model call), ``extract`` (one
structured call now, together with any messages the thread held) or ``hold`` (the gate is
unsure: it waits to be extracted with others, see `assistant.extraction.extract`). Then it
extracts, in a call of their own, the thread's messages whose extraction failed (held to be
tried again, `assistant.extraction.extract.MAX_EXTRACTION_ATTEMPTS`) and those a run
interrupted before anything was made of them. The outcome and its reason go into the turn's
metrics and the user's record of what was heard, so a user can see whether what they said
was kept.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from assistant.extraction import extract, gate
from assistant.extraction.extract import Said
from assistant.nodes.tools import asks_to_forget_everything
from assistant.run.context import Context
from assistant.run.scope import RunScope, node_scope
from assistant.run.state import State, TurnMetrics

logger = logging.getLogger(__name__)


async def remember(state: State, runtime: Runtime[Context]) -> State:
    """Apply what the latest user message changes to the user's stored facts."""
    messages = state.get("messages", [])
    latest = messages[-1] if messages else None
    turn = state.get("metrics", {}).get("message_id", "")
    if not isinstance(latest, HumanMessage):
        return {"metrics": _metrics(turn, "skipped", "no new user message")}
    scope = node_scope(runtime)
    said = Said(
        id=latest.id or "",
        text=latest.text,
        said_at=datetime.now(UTC).isoformat(),
        context=_answered(messages),
        turn=sum(isinstance(m, HumanMessage) for m in messages) - 1,
    )
    if asks_to_forget_everything(said.text):
        return {"metrics": await _forgetting_everything(scope, said, messages, turn)}
    waiting = await extract.held(scope)
    metrics = await _extract_latest(
        scope, said, turn, held=[other for other in waiting if not other.attempts]
    )
    # Then the messages whose extraction failed, and those interrupted before anything
    # was made of them, on their own: one the model cannot take never fails the new
    # message's extraction too.
    known = {other.id for other in waiting}
    missed = [other for other in await extract.unheard(scope, messages) if other.id not in known]
    again = [other for other in waiting if other.attempts] + missed
    if again:
        await extract.extract(scope, again)
    return {"metrics": metrics}


FORGETS_EVERYTHING = "asks to forget everything: nothing waiting is extracted"


async def _forgetting_everything(
    scope: RunScope, said: Said, messages: Sequence[AnyMessage], turn: str
) -> TurnMetrics:
    """A request to forget everything: what waits for an extraction is dropped unread.

    The messages held in any of the user's threads, and this thread's messages that were
    never extracted, would otherwise bring back facts `respond` is forgetting
    (`assistant.nodes.requests`).
    """
    await scope.memory.release(await scope.memory.held())
    for other in [*await extract.unheard(scope, messages), said]:
        await extract.record(scope, other, "skipped", FORGETS_EVERYTHING)
    return _metrics(turn, "skipped", FORGETS_EVERYTHING)


async def _extract_latest(
    scope: RunScope, said: Said, turn: str, *, held: list[Said]
) -> TurnMetrics:
    """What the gate and the extraction make of the latest message (with ``held`` ones)."""
    verdict = await _judge(said.text)
    decision = verdict.decision
    if decision == "hold" and (scope.context.extraction_hold_s <= 0 or not scope.thread_id):
        decision = "extract"  # holding is off, or there is no thread to hold it in
    overdue = bool(held) and extract.waited(held) >= scope.context.extraction_hold_s
    if decision == "skip":
        await extract.record(scope, said, "skipped", verdict.reason)
        if overdue:  # the timer that should have taken them died with a restart
            await extract.extract(scope, held)
        return _metrics(turn, "skipped", verdict.reason)
    if decision == "hold" and not overdue:
        batch = await extract.hold(scope, said, held)
        if len(batch) < extract.HOLD_BATCH:
            await extract.record(scope, said, "held", verdict.reason)
            return _metrics(turn, "held", verdict.reason)
    else:
        batch = [*held, said]
    result = await extract.extract(scope, batch)
    metrics = _metrics(turn, result.outcome, result.reason)
    if result.report is not None:
        report = result.report
        metrics["added"], metrics["updated"] = report.added, report.updated
        metrics["superseded"], metrics["confirmed"] = report.superseded, report.confirmed
    return metrics


MAX_CONTEXT_CHARS = 300
"""How much of the assistant's last words a fact keeps as its ``context``."""


def _answered(messages: Sequence[AnyMessage]) -> str:
    """The end of the assistant's words just before the latest message: what it may answer.

    The end, because that is where a question usually is.

    >>> _answered([AIMessage("What is your cat called?"), HumanMessage("Mochi")])
    'What is your cat called?'
    >>> _answered([HumanMessage("hi")])
    ''
    """
    before = messages[-2] if len(messages) > 1 else None
    if not isinstance(before, AIMessage):
        return ""
    text = " ".join(before.text.split())
    return text if len(text) <= MAX_CONTEXT_CHARS else text[-MAX_CONTEXT_CHARS:]


async def _judge(text: str) -> gate.Verdict:
    """The gate's verdict; a gate that fails sends the message (it cannot tell)."""
    try:
        return await gate.judge(text)
    except Exception:
        logger.exception("The extraction gate failed; the message goes to extraction")
        return gate.Verdict(decision="extract", reason="the gate failed: the model reads it")


def _metrics(turn: str, outcome: str, reason: str) -> TurnMetrics:
    return TurnMetrics(message_id=turn, extraction=outcome, extraction_reason=reason)
