"""LLM calls and tokens per user turn, by kind, over the scripted 1,000-turn conversation.

First, the extraction gate (``worth_extracting``) on the labelled turns of
``bench/data/gate_turns.json``: the share of fact-bearing turns it keeps (goal: 100%) and of
other turns (questions, recall requests, greetings, commands) it skips, per language, next to
the gate before issue 10 as the baseline (``--gate-only`` prints just this).

What is measured: the assistant graph (default :class:`~assistant.context.Context`, an
in-process ``InMemorySaver`` and ``make_store()``) runs the bilingual conversation of
``bench/conversation.py`` with every model call going to ``RecordingModel`` (the one fake
model with the offline scripted rules, plus a call log, from ``bench/tokens.py``). Calls are
counted by kind:

- ``reply``: respond's answer (one per turn);
- ``tool``: a respond call that asked for memory tools (search/forget/correct) before the
  answer;
- ``extract``: remember's structured memory-operations call (skipped when
  ``worth_extracting`` says the message holds nothing durable);
- ``summarize``: compress folding old messages into the running summary.

Input tokens are the request's messages and output tokens the answer text (for extraction,
the operations as JSON), both estimated with ``assistant.tokens`` (``count_text_tokens``;
+4 per message). Everything is averaged per user turn. Goal: at most 1.3 calls per turn.

Extraction calls are also broken down by the kind of turn (request, personal statement,
small talk, long message) and by whether the (rule-based) extractor changed memory, which
shows how many calls the gate could have saved.

When the goal is missed, the script also runs EXPERIMENTS (``--experiment``), each one a
change monkeypatched into ``assistant.nodes.remember`` for that run only (src is unchanged;
the default numbers are the real ones):

- ``first-person``: ``worth_extracting`` without its length fallback (first person only);
  like the default, both experimental gates leave "forget ..." requests to the memory tools;
- ``declarative``: a first-person subject in a sentence that is neither a question nor a
  request ("help me", "帮我", "Draft an email to my ..." do not count);
- ``declarative-batch3``: that gate, plus one extraction call per three messages that pass
  it (until then a message is only in the thread: its recent messages or its summary).

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
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.context import Context
from assistant.memory import list_memories
from assistant.nodes import remember as remember_module
from conversation import Turn, describe, script
from tokens import RecordingModel, RunResult, run_assistant

GOAL_CALLS_PER_TURN = 1.3
KINDS = ("reply", "tool", "extract", "summarize")
TURN_KINDS = ("request", "statement", "smalltalk", "long")
CHANGES = ("add", "update", "supersede")

# --------------------------------------------------------------------------- experiments

_FIRST_PERSON = re.compile(
    r"\b(i|i'm|im|i've|i'd|i'll|me|my|mine|myself|we|we're|our|ours|us)\b|我|咱|本人",
    re.IGNORECASE,
)
"""The first gate the project shipped: any first-person word, anywhere."""
_MEMORY_REQUEST = getattr(remember_module, "_MEMORY_REQUEST", None)
"""Requests to forget or list memories, which the default gate leaves to the memory tools."""


def _memory_request(text: str) -> bool:
    return _MEMORY_REQUEST is not None and _MEMORY_REQUEST.search(text) is not None


def gate_first_person(text: str) -> bool:
    """Experiment: the first shipped gate without its length fallback (any first-person word)."""
    return not _memory_request(text) and _FIRST_PERSON.search(text.strip()) is not None


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_EN_SUBJECT = re.compile(r"\b(i|i'm|im|i've|i'd|i'll|my|mine|we|we're|we've|our|ours)\b", re.I)
_ZH_SUBJECT = re.compile(r"(?<![帮给让教告诉跟替和问请发])(?:我|咱|本人)")
_EN_REQUEST = re.compile(
    r"^\s*(please|can|could|would|will|help|write|draft|give|tell|show|explain|compare|make|"
    r"list|suggest|find|how|what|why|which|where|when|who|is|are|do|does|did|should)\b",
    re.I,
)


def gate_declarative(text: str) -> bool:
    """Experiment: some sentence that is not a question or a request has a first-person subject.

    "I prefer window seats." / "我对花生过敏。" pass; "Help me plan ..." / "帮我写一封邮件。" /
    "How do I ...?" / "为什么我 ... ？" do not.
    """
    if _memory_request(text):
        return False
    for sentence in _SENTENCE.findall(text.strip()):
        sentence = sentence.strip()
        if not sentence or sentence.endswith(("?", "？")) or _EN_REQUEST.match(sentence):
            continue
        if _EN_SUBJECT.search(sentence) or _ZH_SUBJECT.search(sentence):
            return True
    return False


# --------------------------------------------------------------------------- the gate

GATE_TURNS = Path(__file__).parent / "data" / "gate_turns.json"
"""Labelled user turns: text, lang (en/zh), kind, and whether it states a durable fact."""

_PREVIOUS_MEMORY_REQUEST = re.compile(
    r"(?:^|[.!?。！？]\s*)(?:please\s+|can you\s+|could you\s+)?(?:forget|delete)\b"
    r"|what do you (?:remember|know) about me"
    r"|(?:^|[.!?。！？]\s*)(?:请)?(?:忘掉|忘记|删掉|删除)|你(?:还)?(?:记得|知道)(?:关于)?我",
    re.IGNORECASE,
)
_PREVIOUS_FACT_CUE = re.compile(
    r"\b(remember|don't forget|i am|i'm|i have|i've got|i live|i work|i moved|i prefer|"
    r"i like|i love|i hate|i can't|my name|my \w+ (is|are))\b"
    r"|记住|别忘|我(是|叫|住|有|喜欢|不喜欢|对|搬|决定|养|在做)",
    re.IGNORECASE,
)


def gate_previous(text: str) -> bool:
    """Baseline: the gate before issue 10 (a fact cue anywhere counted, questions too)."""
    text = text.strip()
    if _PREVIOUS_MEMORY_REQUEST.search(text):
        return False
    if _PREVIOUS_FACT_CUE.search(text):
        return True
    for sentence in _SENTENCE.findall(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith(("?", "？")) or _EN_REQUEST.match(sentence):
            continue
        if _EN_SUBJECT.search(sentence) or _ZH_SUBJECT.search(sentence):
            return True
    return False


def gate_report() -> None:
    """Share of fact-bearing turns kept and of other turns skipped, per gate and language."""
    turns = json.loads(GATE_TURNS.read_text(encoding="utf-8"))
    facts = [t for t in turns if t["fact"]]
    others = [t for t in turns if not t["fact"]]
    print(
        f"Extraction gate on {len(turns)} labelled turns ({GATE_TURNS.name}): "
        f"{len(facts)} state a fact, {len(others)} do not"
    )
    print(f"{'gate':<10}{'lang':<6}{'facts kept':>14}{'non-facts skipped':>20}")
    gates = (("previous", gate_previous), ("current", remember_module.worth_extracting))
    for name, gate in gates:
        for lang in ("en", "zh", "all"):
            kept = [t for t in facts if lang in ("all", t["lang"]) and gate(t["text"])]
            fact_total = sum(lang in ("all", t["lang"]) for t in facts)
            skipped = [t for t in others if lang in ("all", t["lang"]) and not gate(t["text"])]
            other_total = sum(lang in ("all", t["lang"]) for t in others)
            print(
                f"{name:<10}{lang:<6}{len(kept) / fact_total:>9.1%} ({len(kept)}/{fact_total})"
                f"{len(skipped) / other_total:>12.1%} ({len(skipped)}/{other_total})"
            )
    current = remember_module.worth_extracting
    missed = [t["text"] for t in facts if not current(t["text"])]
    passed = [t["text"] for t in others if current(t["text"])]
    print(f"current gate: facts dropped {missed or 'none'}; non-facts extracted {passed or 'none'}")
    for kind in ("question", "recall", "greeting", "command"):
        chosen = [t for t in others if t["kind"] == kind]
        skipped = sum(not current(t["text"]) for t in chosen)
        print(f"  {kind:<9} skipped {skipped}/{len(chosen)}")


class BatchedDecide:
    """Stands in for remember's ``decide_operations``: one model call per ``size`` messages.

    Messages that pass the gate are buffered; every ``size``-th one sends the buffered
    messages to the real ``decide_operations`` together (known facts: those shown for the
    latest message, which always include the profile). Until then the turn makes no call.
    """

    def __init__(self, real: Callable[..., Any], size: int, recorder: Any) -> None:
        self.real, self.size, self.recorder = real, size, recorder
        self.buffer: list[tuple[int, str]] = []
        self.flushed: dict[int, int] = {}
        """turn of a buffered message -> turn of the call that extracted it."""

    async def __call__(self, text: str, known: Any, *, context: Context) -> list[Any]:
        self.buffer.append((self.recorder.turn, text))
        if len(self.buffer) < self.size:
            return []
        batch, self.buffer = self.buffer, []
        for turn, _ in batch:
            self.flushed[turn] = self.recorder.turn
        return list(await self.real("\n\n".join(t for _, t in batch), known, context=context))


@dataclass(frozen=True)
class Experiment:
    """A change to remember, monkeypatched for one run."""

    name: str
    gate: Callable[[str], bool] | None
    batch: int = 1
    description: str = ""


EXPERIMENTS = {
    experiment.name: experiment
    for experiment in (
        Experiment(
            "first-person",
            gate_first_person,
            description="worth_extracting := gate_first_person (no length fallback)",
        ),
        Experiment(
            "declarative",
            gate_declarative,
            description="worth_extracting := gate_declarative",
        ),
        Experiment(
            "declarative-batch3",
            gate_declarative,
            batch=3,
            description="worth_extracting := gate_declarative, and decide_operations batched: "
            "one extraction call per 3 messages that pass the gate",
        ),
    )
}


@contextlib.contextmanager
def patched_remember(experiment: Experiment | None, recorder: Any) -> Iterator[Any]:
    """Apply ``experiment`` to assistant.nodes.remember for the duration (None: the default)."""
    saved = remember_module.worth_extracting, remember_module.decide_operations
    batched = None
    if experiment is not None and experiment.gate is not None:
        remember_module.worth_extracting = experiment.gate
    if experiment is not None and experiment.batch > 1:
        batched = BatchedDecide(remember_module.decide_operations, experiment.batch, recorder)
        remember_module.decide_operations = batched  # type: ignore[assignment]
    try:
        yield batched
    finally:
        remember_module.worth_extracting, remember_module.decide_operations = saved


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
    with patched_remember(experiment, model.recorder) as batched:
        result = await run_assistant(
            [turn.text for turn in conversation], context=Context(), model=model, variant=label
        )
    assert result.store is not None
    facts = {
        str(item.value.get("content", ""))
        for item in await list_memories(result.store, Context().user_id)
    }
    if batched is not None:
        covered, buffered = dict(batched.flushed), len(batched.buffer)
    else:
        covered = {c.turn: c.turn for c in model.recorder.calls if c.kind == "extract"}
        buffered = 0
    return Measured(
        label=label,
        result=result,
        turns=len(conversation),
        facts=facts,
        covered=covered,
        buffered=buffered,
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
        f"extract calls {other_calls} (default {len(base_extracts)})"
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
    delays = [call_turn - turn for turn, call_turn in other.covered.items()]
    if any(delays):
        print(
            f"  delay from message to extraction: mean {sum(delays) / len(delays):.1f} turns, "
            f"max {max(delays)}; messages still buffered at the end: {other.buffered}"
        )
    missing = sorted(base.facts - other.facts)
    print(
        f"  current facts at the end: {len(other.facts)} (default {len(base.facts)}); "
        f"missing vs default: {len(missing)}" + (f" e.g. {missing[:3]}" if missing else "")
    )


async def amain(args: argparse.Namespace) -> None:
    gate_report()
    print()
    if args.gate_only:
        return
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
    parser.add_argument(
        "--gate-only", action="store_true", help="only the extraction gate on the labelled turns"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
