"""Extraction quality with a real model, on a sample of the labelled hearing test split.

What is measured
    A fixed sample of ``bench/data/heard/`` ``part_e`` and ``part_f`` (the test split,
    written by people who never saw the prompts): per language, the first ``--facts`` fact
    messages and ``--others`` non-fact messages by the SHA-1 of their id, in ten languages
    by default (60 facts, 30 non-facts). Each fact of the sample carries gold labels,
    written before any model was run on it (bench/data/heard/README.md): ``keywords``
    (groups of alternatives; a stored fact keeps the message's fact when it holds one
    alternative of every group, as a lowercase substring, in the message's language or in
    English), ``subject`` (``user``, or who else the fact is about, with the
    ``subject_words`` that name them) and ``categories`` (those a right fact may have).

    Each message goes through the product's own extraction path, in process, for a user of
    its own with an empty memory (``InMemoryStore`` with the bundled e5 embeddings,
    ``make_store()``): ``assistant.extraction.extract.known_facts``, ``decide_operations`` (the
    real prompt and the provider's structured-output fallbacks,
    ``assistant.providers``) within the product's extraction timeout, and
    ``UserMemory.apply`` (consolidation, the confidence floor). What is scored is what was
    stored.

    The model: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``ASSISTANT_MODEL`` when set, else
    the local Qwen2.5-Coder-1.5B-Instruct that ``examples/local_model.py`` serves
    (``bench/real_model.py``). The output names it.

Columns (per language and overall)
    kept          facts with a stored fact that holds the key words
    + subject     of those, the fact is about the right person: a fact about someone
                  else names them (``subject_words``); a fact about the user counts as
                  right when kept
    category      kept facts whose stored category is one of the gold ``categories``
    advice        messages (facts or not) with a stored "fact" that is advice or the
                  assistant speaking ("should", "recommend", "建议", ...: :data:`ADVICE`)
    non-facts     non-fact messages that stored anything
    failed        extraction calls that failed (timeout, unreadable answer)

Targets (issue 29): at least 90% of facts kept with their key words and the right
subject; at most 5% of non-facts stored. A sample is small: one message is 1.7% of the
facts and 3.3% of the non-facts.

Run::

    python bench/extraction.py [--languages en,zh,...] [--facts 6] [--others 3] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import real_model
from assistant.extraction import extract as extraction
from assistant.extraction import gate
from assistant.memory import UserMemory, list_memories
from assistant.run.context import Context
from assistant.server.persistence.stores import make_store

HEARD = Path(__file__).parent / "data" / "heard"
TEST_PARTS = ("part_e.json", "part_f.json")
LANGUAGES = ("en", "zh", "es", "de", "fr", "pt", "it", "ru", "ja", "ko")
"""The default sample's languages: every one of them has gold labels."""
DEV_PARTS = ("part_c.json", "part_d.json")
DEV_LANGUAGES = ("en", "zh", "es", "de", "ja", "ru")
"""``--split dev``: a smaller sample of the dev split (4 facts and 3 non-facts a language),
labelled the same way before any model read it, to work on without touching the test
split."""
GOAL_KEPT = 0.90
GOAL_NON_FACTS = 0.05
ADVICE = (
    "should",
    "recommend",
    "suggest",
    "consider ",
    "make sure",
    "you can",
    "you could",
    "try to",
    "it is important",
    "it's important",
    "consult",
    "the assistant",
    "debería",
    "deberías",
    "recomiend",
    "te recomiendo",
    "deveria",
    "recomend",
    "dovrebbe",
    "consiglio",
    "devrait",
    "conseill",
    "sollte",
    "empfehl",
    "应该",
    "應該",
    "建议",
    "建議",
    "べき",
    "おすすめ",
    "してください",
    "следует",
    "рекоменд",
    "совет",
    "해야",
    "추천",
)
"""Words that mark a stored "fact" as advice or the assistant speaking, not the user."""


# --------------------------------------------------------------------------- the sample


def load(parts: Sequence[str] = TEST_PARTS) -> list[dict[str, Any]]:
    """The messages of the test split's parts."""
    return [m for name in parts for m in json.loads((HEARD / name).read_text(encoding="utf-8"))]


def _order(message: dict[str, Any]) -> str:
    return hashlib.sha1(str(message["id"]).encode()).hexdigest()


def sample(
    messages: Sequence[dict[str, Any]], languages: Sequence[str], facts: int, others: int
) -> list[dict[str, Any]]:
    """Per language, the first ``facts`` fact and ``others`` non-fact messages by the SHA-1
    of their id (a fixed, arbitrary order), languages in the order given."""
    chosen: list[dict[str, Any]] = []
    for language in languages:
        for is_fact, count in ((True, facts), (False, others)):
            pool = [m for m in messages if m["lang"] == language and bool(m["fact"]) == is_fact]
            chosen += sorted(pool, key=_order)[:count]
    return chosen


def unlabelled(chosen: Sequence[dict[str, Any]]) -> list[str]:
    """The ids of sampled facts without gold key words (they cannot be scored)."""
    return [m["id"] for m in chosen if m["fact"] and not m.get("keywords")]


# --------------------------------------------------------------------------- scoring


def folded(text: str) -> str:
    """Text as key words are matched: NFKC, lowercase.

    >>> folded("Ｌives in MÜNCHEN")
    'lives in münchen'
    """
    return unicodedata.normalize("NFKC", text).casefold()


def has_keywords(fact: str, groups: Sequence[Sequence[str]]) -> bool:
    """Whether ``fact`` holds one alternative of every group (lowercase substrings).

    >>> has_keywords("Lactose intolerant", [["lactose", "leite", "milk"]])
    True
    >>> has_keywords("Lives in Bristol", [["lactose"]])
    False
    >>> has_keywords("女儿对花生过敏", [["花生", "peanut"], ["女儿", "daughter"]])
    True
    """
    text = folded(fact)
    return bool(groups) and all(any(folded(word) in text for word in group) for group in groups)


def names_subject(fact: str, message: dict[str, Any]) -> bool:
    """Whether ``fact`` is about whom the message's fact is about: a fact about someone
    else must name them (one of ``subject_words``); one about the user needs nothing more.

    >>> daughter = {"subject": "daughter", "subject_words": ["딸", "daughter"]}
    >>> names_subject("Daughter's first birthday is on 18 May", daughter)
    True
    >>> names_subject("Is having a first birthday party on 18 May", daughter)
    False
    >>> names_subject("Lives in Bristol", {"subject": "user"})
    True
    """
    if message.get("subject", "user") == "user":
        return True
    words = [*message.get("subject_words", []), str(message["subject"])]
    return any(folded(word) in folded(fact) for word in words)


def is_advice(fact: str) -> bool:
    """Whether a stored "fact" reads as advice or as the assistant speaking.

    >>> is_advice("Should avoid grapefruit with amlodipine")
    True
    >>> is_advice("Has high blood pressure and takes amlodipine")
    False
    """
    text = folded(fact)
    return any(marker in text for marker in ADVICE)


@dataclass
class Outcome:
    """What extraction stored for one message."""

    message: dict[str, Any]
    facts: list[tuple[str, str]] = field(default_factory=list)
    """(content, category) of each stored fact."""
    failed: str = ""
    seconds: float = 0.0
    ran: bool = True
    """Whether the model read it (``--gate-first`` sends it only what the gate sends)."""
    sent: bool = True
    """Whether the product's gate sends the message to extraction; one it skips stores
    nothing in the product, whatever the model would have made of it."""

    @property
    def matched(self) -> list[tuple[str, str]]:
        """The stored facts holding the message's key words."""
        groups = self.message.get("keywords") or []
        return [fact for fact in self.facts if has_keywords(fact[0], groups)]

    @property
    def kept(self) -> bool:
        return bool(self.matched)

    @property
    def right_subject(self) -> bool:
        return any(names_subject(content, self.message) for content, _ in self.matched)

    @property
    def right_category(self) -> bool:
        allowed = set(self.message.get("categories") or [])
        return any(category in allowed for _, category in self.matched)

    @property
    def advice(self) -> list[str]:
        return [content for content, _ in self.facts if is_advice(content)]

    @property
    def stored(self) -> bool:
        """Whether the model stored anything for it."""
        return bool(self.facts)

    @property
    def kept_in_product(self) -> bool:
        """Kept with the right subject, and the gate sends it."""
        return self.sent and self.kept and self.right_subject

    @property
    def stored_in_product(self) -> bool:
        """Stored something, and the gate sends it."""
        return self.sent and self.stored


def share(flags: Sequence[bool]) -> str:
    """``"83% (5/6)"``; ``"-"`` for none.

    >>> share([True, False, True])
    '67% (2/3)'
    """
    return f"{sum(flags) / len(flags):.0%} ({sum(flags)}/{len(flags)})" if flags else "-"


def table(outcomes: Sequence[Outcome], languages: Sequence[str]) -> str:
    """The per-language table (and ``all``)."""
    head = (
        "lang",
        "kept",
        "+ subject",
        "category",
        "advice",
        "non-facts stored",
        "failed",
        "gate sent facts",
        "gate sent others",
    )
    rows = [head]
    for language in [*languages, "all"]:
        chosen = [o for o in outcomes if language in ("all", o.message["lang"])]
        facts = [o for o in chosen if o.message["fact"]]
        others = [o for o in chosen if not o.message["fact"]]
        kept = [o for o in facts if o.kept]
        rows.append(
            (
                language,
                share([o.kept for o in facts]),
                share([o.kept and o.right_subject for o in facts]),
                share([o.right_category for o in kept]),
                share([bool(o.advice) for o in chosen]),
                share([bool(o.facts) for o in others]),
                str(sum(bool(o.failed) for o in chosen)),
                share([o.sent for o in facts]),
                share([o.sent for o in others]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def goals(outcomes: Sequence[Outcome]) -> str:
    """The two targets, met or missed, for the product (the gate, then the model) and for
    the model alone (every message extracted); or not run, when a run cut short scored
    none."""
    facts = [o for o in outcomes if o.message["fact"]]
    others = [o for o in outcomes if not o.message["fact"]]
    lines = []
    for label, kept_of, stored_of in (
        ("the product (gate, then model)", _kept_in_product, _stored_in_product),
        ("the model alone (every message)", _kept_by_model, _stored_by_model),
    ):
        if label.startswith("the model") and not all(o.ran for o in outcomes):
            lines.append(f"targets, {label}: not run (--gate-first)")
            continue
        parts = [
            _target("facts kept with key words and right subject", facts, kept_of, GOAL_KEPT),
            _target("non-facts stored", others, stored_of, GOAL_NON_FACTS, at_most=True),
        ]
        lines.append(f"targets, {label}: " + "; ".join(parts))
    return "\n".join(lines)


def _target(
    name: str,
    outcomes: Sequence[Outcome],
    counted: Callable[[Outcome], bool],
    goal: float,
    *,
    at_most: bool = False,
) -> str:
    """``name``'s share of ``outcomes`` against its goal.

    >>> _target("kept", [], bool, 0.9)
    'kept: none run'
    """
    if not outcomes:
        return f"{name}: none run"
    value = sum(map(counted, outcomes)) / len(outcomes)
    met = value <= goal if at_most else value >= goal
    bound = "≤" if at_most else "≥"
    return f"{name} {value:.1%} ({bound} {goal:.0%}: {'met' if met else 'MISSED'})"


def _kept_in_product(outcome: Outcome) -> bool:
    return outcome.kept_in_product


def _stored_in_product(outcome: Outcome) -> bool:
    return outcome.stored_in_product


def _kept_by_model(outcome: Outcome) -> bool:
    return outcome.kept and outcome.right_subject


def _stored_by_model(outcome: Outcome) -> bool:
    return outcome.stored


def details(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per message scored wrong, with what was stored."""
    lines: list[str] = []
    for o in outcomes:
        m = o.message
        if m["fact"] and o.kept and o.right_subject and o.right_category and not o.advice:
            continue
        if not m["fact"] and not o.facts:
            continue
        if o.failed:
            why = f"failed: {o.failed[:80]}"
        elif not m["fact"]:
            why = "non-fact stored"
        elif not o.kept:
            why = "key words missing"
        elif not o.right_subject:
            why = f"wrong subject (about {m['subject']})"
        elif not o.right_category:
            why = f"category (gold {'/'.join(m.get('categories', []))})"
        else:
            why = "advice stored"
        if not o.sent:
            why += " (the gate skips it)"
        stored = "; ".join(f"{content} [{category}]" for content, category in o.facts) or "-"
        text = re.sub(r"\s+", " ", m["text"])
        lines.append(f"  {m['id']:<9} {why}: {text[:70]!r} -> {stored[:160]}")
    return lines


# --------------------------------------------------------------------------- running


async def extract_one(
    message: dict[str, Any], context: Context, *, gate_first: bool = False
) -> Outcome:
    """The product's extraction path on one message, for a user of its own.

    ``gate_first``: a message the gate skips is not sent to the model (as in the product).
    """
    store = make_store()
    memory = UserMemory(store, f"heard-{message['id']}")
    text = str(message["text"])
    started = time.perf_counter()
    outcome = Outcome(message)
    outcome.sent = (await gate.judge(text)).decision != "skip"
    if gate_first and not outcome.sent:
        outcome.ran = False
        return outcome
    try:
        known = await extraction.known_facts(memory, text)
        operations = await asyncio.wait_for(
            extraction.decide_operations(text, known, context=context),
            timeout=extraction.extraction_timeout(context),
        )
        await memory.apply(
            operations,
            known,
            min_confidence=context.min_fact_confidence,
            thread_id="bench",
            message_id=str(message["id"]),
        )
    except Exception as error:  # scored as a failure, as the product records it
        outcome.failed = extraction.failure(error, context)
    outcome.seconds = time.perf_counter() - started
    outcome.facts = [
        (str(item.value.get("content", "")), str(item.value.get("category", "")))
        for item in await list_memories(store, memory.user_id)
    ]
    return outcome


def interleaved(chosen: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``chosen`` in the order it is run: one message of each language in turn (within a
    language, facts and non-facts mixed by the SHA-1 of their id), so a run cut short by
    its time budget has scored every language, and both kinds, alike.

    >>> [m["lang"] for m in interleaved([{"id": "en1", "lang": "en"}, {"id": "en2", "lang": "en"},
    ...                                   {"id": "zh1", "lang": "zh"}])]
    ['en', 'zh', 'en']
    """
    by_language: dict[str, list[dict[str, Any]]] = {}
    for message in sorted(chosen, key=_order):  # facts and non-facts mixed
        by_language.setdefault(message["lang"], []).append(message)
    languages = list(dict.fromkeys(m["lang"] for m in chosen))
    by_language = {language: by_language[language] for language in languages}
    rounds = max((len(group) for group in by_language.values()), default=0)
    return [group[n] for n in range(rounds) for group in by_language.values() if n < len(group)]


async def run(
    chosen: Sequence[dict[str, Any]],
    concurrency: int,
    progress: bool,
    budget_s: float,
    *,
    gate_first: bool = False,
) -> list[Outcome]:
    """Every message's outcome; messages not started within ``budget_s`` (0: none) are
    left out."""
    context = Context()
    gate = asyncio.Semaphore(concurrency)
    deadline = time.perf_counter() + budget_s if budget_s else float("inf")

    async def one(message: dict[str, Any]) -> Outcome | None:
        async with gate:
            if time.perf_counter() > deadline:
                return None
            outcome = await extract_one(message, context, gate_first=gate_first)
        if progress:
            print(
                f"  {message['id']}: {len(outcome.facts)} facts, {outcome.seconds:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        return outcome

    done = await asyncio.gather(*(one(m) for m in interleaved(chosen)))
    return [outcome for outcome in done if outcome is not None]


async def main(args: argparse.Namespace) -> None:
    dev = args.split == "dev"
    parts = DEV_PARTS if dev else TEST_PARTS
    default = (DEV_LANGUAGES, 4, 3) if dev else (LANGUAGES, 6, 3)
    languages = [lang.strip() for lang in (args.languages or ",".join(default[0])).split(",")]
    languages = [lang for lang in languages if lang]
    facts_each = default[1] if args.facts is None else args.facts
    others_each = default[2] if args.others is None else args.others
    chosen = sample(load(parts), languages, facts_each, others_each)
    missing = unlabelled(chosen)
    if missing:
        raise SystemExit(f"sampled facts without gold key words: {missing}")
    started = time.perf_counter()
    load_before = real_model.load_average()
    with real_model.serving() as endpoint:
        outcomes = await run(
            chosen, args.concurrency, args.progress, args.budget_s, gate_first=args.gate_first
        )
    elapsed = time.perf_counter() - started
    facts = sum(1 for m in chosen if m["fact"])
    print(
        f"Extraction on the heard {args.split} split "
        f"({', '.join(part.removesuffix('.json') for part in parts)}): {len(chosen)} messages in "
        f"{len(languages)} languages, {facts} facts, {len(chosen) - facts} non-facts; "
        "each through the product's extraction path for a fresh user"
    )
    if len(outcomes) < len(chosen):
        print(
            f"time budget ({args.budget_s:g} s) spent: {len(outcomes)} of {len(chosen)} messages "
            "scored (languages in turn), the rest not run"
        )
    print(endpoint.described)
    if args.gate_first:
        print(
            "--gate-first: the model read only what the gate sends; every column is the product's"
        )
    print()
    print(table(outcomes, languages))
    print()
    print(goals(outcomes))
    print()
    print("scored wrong (id, why, message -> what was stored [category]):")
    print("\n".join(details(outcomes)) or "  none")
    calls = sorted(o.seconds for o in outcomes)
    print()
    print(
        f"time: {elapsed:.0f} s, extraction p50 {calls[len(calls) // 2]:.0f} s, "
        f"max {calls[-1]:.0f} s, {args.concurrency} at once; load average "
        f"{load_before} before, {real_model.load_average()} after"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--split",
        choices=("test", "dev"),
        default="test",
        help="test: parts e and f, ten languages, 6 facts and 3 non-facts each (the figures); "
        "dev: parts c and d, six languages, 4 and 3 (to work on)",
    )
    parser.add_argument("--languages", default="", help="comma-separated (default: the split's)")
    parser.add_argument("--facts", type=int, default=None, help="fact messages per language")
    parser.add_argument("--others", type=int, default=None, help="non-fact messages per language")
    parser.add_argument(
        "--concurrency", type=int, default=2, help="extractions at once (the server's slots)"
    )
    parser.add_argument(
        "--progress", action="store_true", help="print each message's time (stderr)"
    )
    parser.add_argument(
        "--gate-first",
        action="store_true",
        help="send the model only the messages the gate sends: the product's figures only, "
        "in less time",
    )
    parser.add_argument(
        "--budget-s", type=float, default=0, help="start no message after this many seconds"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
