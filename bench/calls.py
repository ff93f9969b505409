"""LLM calls and tokens per user turn, by kind, over the scripted 1,000-turn conversation.

What is measured: the assistant graph (default :class:`~assistant.run.context.Context`, an
in-process ``InMemorySaver`` and ``make_store()``) runs the bilingual conversation of
``bench/conversation.py`` with every model call going to ``RecordingModel`` (the one fake
model with the offline scripted rules, plus a call log, from ``bench/tokens.py``). Calls are
counted by kind:

- ``reply``: respond's answer (one per turn);
- ``tool``: a respond call that asked for memory tools (search/forget/correct) before the
  answer;
- ``extract``: remember's structured memory-operations call (skipped when the gate,
  `assistant.extraction.gate`, judges that the message holds no fact);
- ``summarize``: compress folding old messages into the running summary.

Input tokens are the request's messages and output tokens the answer text (for extraction,
the operations as JSON), both estimated with ``assistant.inference.tokens`` (``count_text_tokens``;
+4 per message). Everything is averaged per user turn. Goal: at most 1.4 calls per turn.
The gate's own figures, on labelled messages in 14 languages, are in ``bench/gate.py``.

Extraction calls are also broken down by the kind of turn (request, personal statement,
small talk, long message) and by whether the (rule-based) extractor changed memory, which
shows how many calls the gate could have saved.

``--experiment`` also runs other gates side by side, each monkeypatched into
``assistant.nodes.remember`` for that run only (src is unchanged; the default numbers are
the real ones):

- ``before``: the rule-based English/Chinese gate the project shipped before issue 19;
- ``signals``: only the signals that hold in every language (`assistant.extraction.gate.screen`);
- ``batch3``: the shipped gate, plus one extraction call per three messages that pass it
  (until then a message is only in the thread: its recent messages or its summary).

For each it prints calls per turn and what memory lost against the default: statement
turns that never reached extraction, default extractions that changed memory but were
skipped, and facts missing from the store at the end. The scripted extractor only finds
facts its rules know, so "lost" is a lower bound for a real model.

Run (about 1.5 minutes per pass over the conversation on an idle 2-core machine; each
experiment is one more pass)::

    pip install -e '.[bench]'
    python bench/calls.py
    python bench/calls.py --turns 300 --reply-tokens 250 --experiment none
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore

from assistant.extraction import extract, gate
from assistant.extraction.gate import Verdict
from assistant.memory import held_messages, list_memories
from assistant.nodes import remember as remember_module
from assistant.run.context import Context
from assistant.run.scope import RunScope
from conversation import Turn, describe, script
from gate_baseline import worth_extracting as gate_before
from tokens import RecordingModel, RunResult, run_assistant

GOAL_CALLS_PER_TURN = 1.4
HELD_WINDOW = 20
"""How many turns back an extraction call is searched for the messages it held."""
KINDS = ("reply", "tool", "extract", "summarize")
TURN_KINDS = ("request", "statement", "smalltalk", "long")
CHANGES = ("add", "update", "supersede")

# --------------------------------------------------------------------------- experiments


def gate_of(sends: Callable[[str], bool], reason: str) -> Callable[[str], Awaitable[Verdict]]:
    """An async gate for remember's ``_judge`` from a yes/no rule."""

    async def judge(text: str) -> Verdict:
        return Verdict(decision="extract" if sends(text) else "skip", reason=reason)

    return judge


@dataclass(frozen=True)
class Experiment:
    """A change to remember (monkeypatched) or to its settings, for one run."""

    name: str
    gate: Callable[[str], Awaitable[Verdict]] | None = None
    context: Context = field(default_factory=Context)
    description: str = ""


EXPERIMENTS = {
    experiment.name: experiment
    for experiment in (
        Experiment(
            "before",
            gate_of(gate_before, "the gate before issue 19"),
            description="the rule-based English/Chinese gate before issue 19 (it lost facts)",
        ),
        Experiment(
            "signals",
            gate_of(lambda text: gate.screen(text) is None, "signals only"),
            description="only the signals that hold in every language; everything else sent",
        ),
        Experiment(
            "no-hold",
            context=Context(extraction_hold_s=0),
            description="the shipped gate, every message it sends extracted at once "
            "(extraction_hold_s=0)",
        ),
        Experiment(
            "hold-60",
            context=Context(extraction_hold_s=60),
            description="the shipped gate, held messages extracted within 60 s",
        ),
        Experiment(
            "hold-300",
            context=Context(extraction_hold_s=300),
            description="the shipped gate, held messages extracted within 300 s",
        ),
        Experiment(
            "hold-600",
            context=Context(extraction_hold_s=600),
            description="the shipped gate, held messages extracted within 600 s",
        ),
    )
}


@contextlib.contextmanager
def patched_remember(experiment: Experiment | None) -> Iterator[None]:
    """Apply ``experiment``'s gate to assistant.nodes.remember for the duration."""
    saved = remember_module._judge
    if experiment is not None and experiment.gate is not None:
        remember_module._judge = experiment.gate
    try:
        yield
    finally:
        remember_module._judge = saved


# --------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    """One run of the conversation, reduced to what the tables need."""

    label: str
    result: RunResult
    turns: int
    facts: set[str]
    covered: dict[int, int]
    """turn whose message went to an extraction call -> turn of that call."""
    buffered: int = 0
    """Batched experiment: messages still waiting in the buffer at the end."""


async def measure(
    label: str,
    conversation: list[Turn],
    *,
    reply_tokens: int,
    experiment: Experiment | None,
) -> Measured:
    model = RecordingModel(reply_tokens=reply_tokens)
    context = experiment.context if experiment is not None else Context()

    async def timers(store: BaseStore, thread_id: str) -> None:
        """What the server's timer does between turns: extract overdue held messages."""
        scope = RunScope(user_id=context.user_id, thread_id=thread_id, store=store, context=context)
        held = await extract.held(scope)
        if held and extract.waited(held) >= context.extraction_hold_s:
            await extract.release_held(scope)

    with patched_remember(experiment):
        result = await run_assistant(
            [turn.text for turn in conversation],
            context=context,
            model=model,
            variant=label,
            between_turns=timers,
        )
    assert result.store is not None
    facts = {
        str(item.value.get("content", ""))
        for item in await list_memories(result.store, Context().user_id)
    }
    covered = extracted_turns(model.recorder.calls, conversation)
    held = await held_messages(result.store, context.user_id)
    buffered = len(held)
    return Measured(
        label=label,
        result=result,
        turns=len(conversation),
        facts=facts,
        covered=covered,
        buffered=buffered,
    )


def extracted_turns(calls: list[Any], conversation: list[Turn]) -> dict[int, int]:
    """Turn whose message went to an extraction call -> turn of that call.

    A held message is extracted in a later turn's call, whose prompt holds its text.
    """
    texts = {turn.number: turn.text for turn in conversation}
    covered: dict[int, int] = {}
    for call in calls:
        if call.kind != "extract":
            continue
        for number in range(max(1, call.turn - HELD_WINDOW), call.turn + 1):
            if number not in covered and texts[number] in call.prompt:
                covered[number] = call.turn
    return covered


def held_summary(measured: Measured) -> str:
    """How long the messages extracted in a later turn's call waited."""
    delays = [call_turn - turn for turn, call_turn in measured.covered.items()]
    late = [delay for delay in delays if delay]
    if not late:
        return f"every message extracted in its own turn; held at the end: {measured.buffered}"
    return (
        f"messages extracted in a later turn's call: {len(late)} of {len(delays)} "
        f"(mean {sum(late) / len(late):.1f} turns later, max {max(late)}); "
        f"held at the end: {measured.buffered}"
    )


def per_turn(measured: Measured) -> dict[str, tuple[int, float, float, float]]:
    """kind -> (calls, calls/turn, input tokens/turn, output tokens/turn)."""
    rows: dict[str, tuple[int, float, float, float]] = {}
    calls = measured.result.model.recorder.calls
    n = measured.turns
    for kind in (*KINDS, "total"):
        chosen = [call for call in calls if kind == "total" or call.kind == kind]
        rows[kind] = (
            len(chosen),
            len(chosen) / n,
            sum(call.input_tokens for call in chosen) / n,
            sum(call.output_tokens for call in chosen) / n,
        )
    return rows


def print_table(measured: Measured) -> None:
    rows = per_turn(measured)
    print(
        f"{'kind':<10}{'calls':>7}{'calls/turn':>12}{'in tok/turn':>13}{'out tok/turn':>14}"
        f"{'in tok/call':>13}{'out tok/call':>14}"
    )
    for kind, (count, rate, tokens_in, tokens_out) in rows.items():
        per_in = tokens_in * measured.turns / count if count else 0
        per_out = tokens_out * measured.turns / count if count else 0
        print(
            f"{kind:<10}{count:>7,}{rate:>12.3f}{tokens_in:>13,.0f}{tokens_out:>14,.1f}"
            f"{per_in:>13,.0f}{per_out:>14,.1f}"
        )


def extraction_breakdown(measured: Measured, conversation: list[Turn]) -> None:
    extracts = {
        call.turn: call for call in measured.result.model.recorder.calls if call.kind == "extract"
    }
    print(
        f"{'turn kind':<11}{'turns':>6}{'extracted':>11}{'changed memory':>16}"
        f"{'repeat only':>13}{'nothing found':>15}"
    )
    totals = Counter[str]()
    for kind in TURN_KINDS:
        chosen = [turn for turn in conversation if turn.kind == kind]
        calls = [extracts[turn.number] for turn in chosen if turn.number in extracts]
        changed = sum(1 for call in calls if any(a in CHANGES for a, _ in call.operations))
        repeat = sum(
            1
            for call in calls
            if call.operations and not any(a in CHANGES for a, _ in call.operations)
        )
        empty = sum(1 for call in calls if not call.operations)
        row = Counter(turns=len(chosen), extracted=len(calls), changed=changed, repeat=repeat)
        row["empty"] = empty
        totals.update(row)
        print(f"{kind:<11}{len(chosen):>6}{len(calls):>11}{changed:>16}{repeat:>13}{empty:>15}")
    print(
        f"{'all':<11}{totals['turns']:>6}{totals['extracted']:>11}{totals['changed']:>16}"
        f"{totals['repeat']:>13}{totals['empty']:>15}"
    )


def goal_check(measured: Measured) -> bool:
    rows = per_turn(measured)
    total = rows["total"][1]
    extracts = [call for call in measured.result.model.recorder.calls if call.kind == "extract"]
    empty = sum(1 for call in extracts if not call.operations)
    found_nothing = (
        f"  extraction calls that found nothing: {empty} of {len(extracts)} "
        f"({empty / measured.turns:.3f}/turn)"
    )
    if total <= GOAL_CALLS_PER_TURN:
        print(f"Goal ≤ {GOAL_CALLS_PER_TURN} calls/turn: {total:.3f} -> MET")
        print(found_nothing)
        return True
    excess = total - GOAL_CALLS_PER_TURN
    extra = {kind: rows[kind][1] for kind in ("tool", "extract", "summarize")}
    top = max(extra, key=lambda kind: extra[kind])
    print(
        f"Goal ≤ {GOAL_CALLS_PER_TURN} calls/turn: {total:.3f} -> MISSED by {excess:.3f} "
        f"({100 * excess / GOAL_CALLS_PER_TURN:.0f}% over)"
    )
    print(
        f"  beyond the 1.000 reply call: extract {extra['extract']:.3f}/turn, "
        f"summarize {extra['summarize']:.3f}/turn, tool rounds {extra['tool']:.3f}/turn -> "
        f"{top} dominates; to meet the goal they must fall to ≤ "
        f"{GOAL_CALLS_PER_TURN - 1:.3f}/turn together"
    )
    print(found_nothing)
    return False


def compare(base: Measured, other: Measured, conversation: list[Turn]) -> None:
    base_extracts = {c.turn: c for c in base.result.model.recorder.calls if c.kind == "extract"}
    base_calls = sum(1 for c in base.result.model.recorder.calls if c.kind == "extract")
    other_calls = sum(1 for c in other.result.model.recorder.calls if c.kind == "extract")
    statements = [turn for turn in conversation if turn.kind == "statement"]
    missed_statements = [turn for turn in statements if turn.number not in other.covered]
    lost_changes = [
        number
        for number, call in base_extracts.items()
        if number not in other.covered and any(a in CHANGES for a, _ in call.operations)
    ]
    rate = per_turn(other)["total"][1]
    verdict = "MET" if rate <= GOAL_CALLS_PER_TURN else "missed"
    print(
        f"  calls/turn {rate:.3f} (default {per_turn(base)['total'][1]:.3f}) -> goal {verdict}; "
        f"extract calls {other_calls} (default {base_calls})"
    )
    print(
        f"  statement turns whose message never reached extraction: "
        f"{len(missed_statements)}/{len(statements)}"
        + (f" e.g. {missed_statements[0].text[:60]!r}" if missed_statements else "")
    )
    print(
        f"  turns whose default extraction changed memory but never reached extraction: "
        f"{len(lost_changes)}"
        + (
            f" e.g. turn {lost_changes[0]}: {conversation[lost_changes[0] - 1].text[:60]!r}"
            if lost_changes
            else ""
        )
    )
    print(f"  {held_summary(other)}")
    missing = sorted(base.facts - other.facts)
    print(
        f"  current facts at the end: {len(other.facts)} (default {len(base.facts)}); "
        f"missing vs default: {len(missing)}" + (f" e.g. {missing[:3]}" if missing else "")
    )


async def amain(args: argparse.Namespace) -> None:
    conversation = script(args.turns, args.seed)
    print(describe(conversation))
    padding = f"padded to ~{args.reply_tokens} tokens" if args.reply_tokens else "scripted as is"
    print(f"reply length: {padding}; Context: defaults")
    base = await measure("default", conversation, reply_tokens=args.reply_tokens, experiment=None)
    print()
    print(f"Per user turn, averaged over {base.turns} turns (default gate)")
    print_table(base)
    print()
    print("Extraction calls by turn kind (what the rule-based extractor returned)")
    extraction_breakdown(base, conversation)
    print()
    met = goal_check(base)
    print(f"  {held_summary(base)}")
    chosen = args.experiment
    if chosen == "auto":
        chosen = "none" if met else "all"
    names = list(EXPERIMENTS) if chosen == "all" else [] if chosen == "none" else [chosen]
    for name in names:
        experiment = EXPERIMENTS[name]
        print()
        print(f"EXPERIMENT {name} (not the default; src unchanged, monkeypatched for this run):")
        print(f"  {experiment.description}")
        other = await measure(
            name, conversation, reply_tokens=args.reply_tokens, experiment=experiment
        )
        compare(base, other, conversation)


def main() -> None:
    parser = argparse.ArgumentParser(description="LLM calls and tokens per user turn, by kind.")
    parser.add_argument("--turns", type=int, default=1000, help="conversation length (1000)")
    parser.add_argument("--seed", type=int, default=7, help="conversation seed (7)")
    parser.add_argument(
        "--reply-tokens", type=int, default=0, help="pad replies to ~N tokens (0: as scripted)"
    )
    parser.add_argument(
        "--experiment",
        choices=["auto", "none", "all", *EXPERIMENTS],
        default="auto",
        help="changes to remember to try (auto: all of them when the goal is missed)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
