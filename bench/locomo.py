"""Retrieval recall on LoCoMo's dev split: our recall, through the public memory API, and BM25.

What is measured
    ../shared/data/locomo/locomo-dev.json (LoCoMo, Maharana et al. 2024, CC BY-NC 4.0: read
    from shared/, never copied here): one user per conversation, one memory per turn (its
    text), one query per question of categories 1-4 (5, adversarial, is left out, as
    retrieval on LoCoMo is usually scored). A question is a hit at k when one of its
    evidence turns is in the top k; recall@k is the share of questions with a hit.

    ours, text only      ``save_memory(store, user, text)``, ``recall(..., limit=10)``
    ours, turn metadata  plus the turn's metadata (thread_id and turn, which link a turn
                         to the next one) and what recall reads from it (memory/query.py,
                         lexical.py, user_index.py): speaker, role (speaker_a
                         is the user), said_at (the session's date), context (the
                         session's previous turn); recall is asked at the last session's
                         time (``now``)
    ours, text as        the turn as retrieval on LoCoMo is commonly measured (its data
      commonly measured  README): "<speaker> (<session date>): <text>", no metadata
    bm25                 ``rank_bm25.BM25Okapi``, same texts, lowercased ``\\w+`` tokens
    bm25, stem + stop    plus Lucene's English stop words and Porter stemming
                         (``snowballstemmer``), as Anserini's default BM25
    bm25 ..., text as    the same two over "<speaker> (<session date>): <text>", the
      commonly measured  figures the literature reports (recall@10 about 0.6)

    p50 ms: median time of one ``recall``, its query vector cached by an untimed call first.

Ablation (``--ablation``)
    Ours' three rows again (recall@10), once per scoring feature with that feature
    switched off (or, for one that is off by default, on), then with a few settings at
    other values: a ``FusionWeights`` field passed to ``recall(weights=...)``, or a module
    setting read while indexing (patched here, in the benchmark only, and the turns
    indexed again in a fresh store). Beside each, the same variant on the bilingual fact
    set (bench/recall.py: R@5, zh->en, en->zh), since a feature stays when it helps on
    either. Cells are the variant's figure and its change from the default; a feature
    whose removal costs nothing on both is one recall can do without. Each row is indexed
    on its own (its own seeded store keys), so the default row can differ from the
    table's by a tie or two.

Run (offline)::

    python bench/locomo.py [--limit-conversations N] [--ablation]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import pkgutil
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

from langgraph.store.base import BaseStore

import recall as fact_set
from assistant.inference.models import E5Embeddings
from assistant.memory import WEIGHTS, FusionWeights, recall, save_memory
from assistant.memory.search import lexical
from assistant.server.persistence.stores import make_store
from peers import NetworkGuard, OursPeer
from recall import SeededUUIDs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The categories retrieval is scored on; 5 (adversarial) is left out."""
KS = (5, 10)
DEPTH = 10
LUCENE_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
_DIA_ID = re.compile(r"D\d+:\d+")


class Turn(NamedTuple):
    dia_id: str
    speaker: str
    text: str
    said_at: datetime


class Question(NamedTuple):
    text: str
    category: int
    evidence: frozenset[str]


class Conversation(NamedTuple):
    user_id: str
    speaker_a: str
    turns: list[Turn]
    questions: list[Question]
    skipped: Counter[str]  # why questions or evidence ids were left out, how many


def read_conversation(sample: dict[str, Any]) -> Conversation:
    """One LoCoMo sample: its turns in order and its scored questions."""
    talk = sample["conversation"]
    sessions = sorted(
        (int(key.removeprefix("session_")), turns)
        for key, turns in talk.items()
        if re.fullmatch(r"session_\d+", key)
    )
    turns: list[Turn] = []
    for n, session in sessions:
        when = session_time(talk[f"session_{n}_date_time"])
        turns += [Turn(t["dia_id"], t["speaker"], t["text"], when) for t in session]
    known = {turn.dia_id for turn in turns}
    questions: list[Question] = []
    skipped: Counter[str] = Counter()
    for qa in sample["qa"]:
        cited = {dia_id for raw in qa.get("evidence", []) for dia_id in _DIA_ID.findall(raw)}
        if qa["category"] not in CATEGORIES:
            skipped[f"category {qa['category']}"] += 1
        elif not cited & known:
            skipped["with no evidence turn"] += 1
        else:
            unread = sum(not _DIA_ID.search(raw) for raw in qa.get("evidence", []))
            skipped["evidence ids ignored (unknown or malformed)"] += len(cited - known) + unread
            questions.append(Question(qa["question"], qa["category"], frozenset(cited & known)))
    return Conversation(sample["sample_id"], talk["speaker_a"], turns, questions, skipped)


def session_time(stamp: str) -> datetime:
    """LoCoMo's session time, as UTC.

    >>> session_time("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    """
    return datetime.strptime(stamp, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_metadata(conversation: Conversation, index: int) -> dict[str, Any]:
    """What the assistant knows about a turn besides its text, as ``save_memory`` metadata."""
    turn = conversation.turns[index]
    session, number = turn.dia_id.split(":")
    previous = conversation.turns[index - 1] if index else None
    same_session = previous is not None and previous.dia_id.startswith(f"{session}:")
    return {
        "speaker": turn.speaker,
        "role": "user" if turn.speaker == conversation.speaker_a else "other",
        "said_at": turn.said_at.date().isoformat(),
        "context": previous.text if previous is not None and same_session else "",
        "thread_id": session,
        "turn": int(number),
    }


def plain_text(conversation: Conversation, index: int) -> str:
    """A turn's own words, as the product stores what was said."""
    return conversation.turns[index].text


def commonly_measured(conversation: Conversation, index: int) -> str:
    """A turn as retrieval on LoCoMo is commonly measured: "<speaker> (<session date>): <text>".

    >>> turn = Turn("D1:2", "Ben", "We camped.", session_time("1:56 pm on 8 May, 2023"))
    >>> commonly_measured(Conversation("c", "Ana", [turn], [], Counter()), 0)
    'Ben (8 May, 2023): We camped.'
    """
    turn = conversation.turns[index]
    day = turn.said_at
    return f"{turn.speaker} ({day.day} {day:%B}, {day.year}): {turn.text}"


class Ours:
    """``save_memory`` every turn (with or without its metadata), ``recall`` each question.

    ``text`` says what a turn's memory holds (:func:`plain_text` or
    :func:`commonly_measured`); ``weights`` are passed to ``recall``.
    """

    def __init__(
        self,
        name: str,
        *,
        metadata: bool,
        text: Callable[[Conversation, int], str] = plain_text,
        weights: FusionWeights = WEIGHTS,
        store: BaseStore | None = None,
    ) -> None:
        self.name, self.metadata, self.text, self.weights = name, metadata, text, weights
        self.store = store if store is not None else make_store()
        self.dia_ids: dict[str, str] = {}
        self.ms: list[float] = []

    async def ingest(self, conversation: Conversation) -> None:
        for index, turn in enumerate(conversation.turns):
            metadata = turn_metadata(conversation, index) if self.metadata else {}
            content = self.text(conversation, index)
            key = await save_memory(self.store, conversation.user_id, content, **metadata)
            self.dia_ids[key] = turn.dia_id

    async def search(self, conversation: Conversation, question: Question) -> list[str]:
        now = conversation.turns[-1].said_at if self.metadata else None
        user, text, weights = conversation.user_id, question.text, self.weights
        await recall(self.store, user, text, limit=DEPTH, now=now, weights=weights)  # caches
        start = time.perf_counter()
        items = await recall(self.store, user, text, limit=DEPTH, now=now, weights=weights)
        self.ms.append((time.perf_counter() - start) * 1000)
        # A memory no ranking found scores 0 (a ranking switched off by its weight): left out.
        return [self.dia_ids[item.key] for item in items if item.score]


class BM25:
    """``rank_bm25.BM25Okapi`` over one conversation's turns; ties kept in turn order."""

    def __init__(
        self,
        name: str,
        analyze: Callable[[str], list[str]],
        *,
        text: Callable[[Conversation, int], str] = plain_text,
    ) -> None:
        self.name, self.analyze, self.text = name, analyze, text
        self.ms: list[float] = []
        self.index: dict[str, tuple[Any, list[str], list[set[str]]]] = {}

    async def ingest(self, conversation: Conversation) -> None:
        from rank_bm25 import BM25Okapi

        texts = [self.text(conversation, index) for index in range(len(conversation.turns))]
        docs = [self.analyze(text) or [""] for text in texts]
        dia_ids = [turn.dia_id for turn in conversation.turns]
        self.index[conversation.user_id] = (BM25Okapi(docs), dia_ids, [set(d) for d in docs])

    async def search(self, conversation: Conversation, question: Question) -> list[str]:
        bm25, dia_ids, vocabularies = self.index[conversation.user_id]
        terms = self.analyze(question.text)
        scores = bm25.get_scores(terms)
        shared = [row for row, words in enumerate(vocabularies) if words & set(terms)]
        return [dia_ids[row] for row in sorted(shared, key=lambda row: -scores[row])[:DEPTH]]


def words(text: str) -> list[str]:
    """Lowercased ``\\w+`` tokens.

    >>> words("Caroline's LGBTQ group, yesterday!")
    ['caroline', 's', 'lgbtq', 'group', 'yesterday']
    """
    return re.findall(r"\w+", text.lower())


def stemmed_words(stemmer: Any) -> Callable[[str], list[str]]:
    return lambda text: stemmer.stemWords([w for w in words(text) if w not in LUCENE_STOP_WORDS])


def is_hit(ranked: Sequence[str], evidence: frozenset[str], k: int) -> bool:
    """Whether one of the evidence turns is among the top ``k``.

    >>> evidence = frozenset({"D3:4", "D9:9"})
    >>> is_hit(["D1:2", "D3:4"], evidence, 2), is_hit(["D1:2", "D3:4"], evidence, 1)
    (True, False)
    """
    return not evidence.isdisjoint(ranked[:k])


def recall_at(questions: Sequence[Question], ranked: Sequence[Sequence[str]]) -> dict[str, float]:
    """Recall@k (share of questions with a hit) as ``"all@5"``, ``"temporal@10"``, ..."""
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for question, found in zip(questions, ranked, strict=True):
        for group in ("all", CATEGORIES[question.category]):
            totals[group] += 1
            for k in KS:
                hits[f"{group}@{k}"] += is_hit(found, question.evidence, k)
    groups = ("all", *CATEGORIES.values())
    return {
        f"{g}@{k}": hits[f"{g}@{k}"] / totals[g] if totals[g] else float("nan")
        for g in groups
        for k in KS
    }


def table(rows: Sequence[tuple[str, dict[str, float], list[float]]], counts: Counter[str]) -> str:
    """A markdown table: a row per system, recall@5 / recall@10 per category, p50 ms."""
    groups = ["all", *CATEGORIES.values()]
    lines = [["system", *(f"{g} ({counts[g]})" for g in groups), "p50 ms"]]
    for name, row, ms in rows:
        cells = [f"{row[f'{g}@5']:.3f} / {row[f'{g}@10']:.3f}" for g in groups]
        lines.append([name, *cells, f"{statistics.median(ms):.2f}" if ms else "-"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    lines.insert(1, ["-" * width for width in widths])
    return "\n".join(
        "| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
        for line in lines
    )


def systems_to_compare() -> list[Ours | BM25]:
    """The table's rows: ours three ways, BM25 plain and stemmed on two texts."""
    systems: list[Ours | BM25] = [
        Ours("ours, text only", metadata=False),
        Ours("ours, turn metadata", metadata=True),
        Ours("ours, text as commonly measured", metadata=False, text=commonly_measured),
        BM25("bm25", words),
    ]
    try:
        import snowballstemmer
    except ImportError:
        print("bm25, stem + stop: skipped (snowballstemmer is not installed)")
        return [*systems, BM25("bm25, text as commonly measured", words, text=commonly_measured)]
    stemmed = stemmed_words(snowballstemmer.stemmer("porter"))
    return [
        *systems,
        BM25("bm25, stem + stop", stemmed),
        BM25("bm25, text as commonly measured", words, text=commonly_measured),
        BM25("bm25, stem + stop, text as commonly measured", stemmed, text=commonly_measured),
    ]


def load_samples(data: Path, limit: int | None) -> list[dict[str, Any]] | None:
    """The first ``limit`` conversations of ``data`` (all for None); None, said, if absent."""
    if not data.exists():
        print(f"LoCoMo data not found at {data}: nothing to measure (see its README)")
        return None
    samples: list[dict[str, Any]] = json.loads(data.read_text(encoding="utf-8"))
    return samples[: limit or None]


async def main(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    samples = load_samples(args.data, args.limit_conversations)
    if samples is None:
        return
    conversations = [read_conversation(sample) for sample in samples]
    systems = systems_to_compare()
    questions = [q for c in conversations for q in c.questions]
    ranked: dict[str, list[list[str]]] = {system.name: [] for system in systems}
    ingest_s = dict.fromkeys(ranked, 0.0)
    # The ablation indexes the same texts again for every variant: e5's in-process cache
    # (4,096 texts by default) keeps all their vectors then, so that they are embedded once.
    cache = mock.patch.object(E5Embeddings, "_cache_size", 200_000) if args.ablation else None
    with NetworkGuard() as guard, cache or nullcontext():
        with mock.patch("uuid.uuid4", SeededUUIDs(args.seed)):
            for conversation in conversations:
                for system in systems:
                    start = time.perf_counter()
                    await system.ingest(conversation)
                    ingest_s[system.name] += time.perf_counter() - start
                for question in conversation.questions:
                    for system in systems:
                        ranked[system.name].append(await system.search(conversation, question))
        skipped = sum((c.skipped for c in conversations), Counter[str]())
        counts = Counter(["all"] * len(questions) + [CATEGORIES[q.category] for q in questions])
        print(
            f"LoCoMo dev: {len(conversations)} conversations, "
            f"{sum(len(c.turns) for c in conversations)} turns (one memory each), "
            f"{len(questions)} questions scored; left out: "
            + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
            + " (category 5 = adversarial, not scored for retrieval)"
        )
        print("cells: recall@5 / recall@10 (questions with an evidence turn in the top k)")
        print()
        rows = [(s.name, recall_at(questions, ranked[s.name]), s.ms) for s in systems]
        print(table(rows, counts))
        print()
        print("ingest (s): " + ", ".join(f"{name} {s:.1f}" for name, s in ingest_s.items()))
        if args.ablation:
            print()
            print(await ablation(conversations, seed=args.seed))
    elapsed = time.perf_counter() - started
    print(f"network attempts: {guard.attempts or 'none'}; total {elapsed:.0f} s")


# --------------------------------------------------------------------------- ablation


class Feature(NamedTuple):
    """A scoring feature and the settings that switch it off, and on.

    A setting is a ``FusionWeights`` field (passed to ``recall``) or, when its name has
    a dot, a module attribute read while indexing (patched, the turns indexed again).
    """

    name: str
    off: dict[str, Any]
    on: dict[str, Any]


FEATURES = (
    Feature("vector side", {"vector_weight": 0.0}, {"vector_weight": 1.5}),
    Feature("lexical side", {"lexical_weight": 0.0}, {"lexical_weight": 1.0}),
    Feature("date ranking", {"date_weight": 0.0}, {"date_weight": 3.0}),
    Feature(
        "speaker boost (and names out of the query)", {"speaker_boost": 0.0}, {"speaker_boost": 1.0}
    ),
    Feature(
        "frequent names out of a text-only question",
        {"frequent_name_share": 0.0},
        {"frequent_name_share": 0.1},
    ),
    Feature("keyword feedback (RM3)", {"feedback_weight": 0.0}, {"feedback_weight": 0.3}),
    Feature(
        "common words kept out of the feedback",
        {"feedback_max_share": 1.0},
        {"feedback_max_share": 0.1},
    ),
    Feature(
        "cross-language offsets",
        {"latin_query_offset": 0.0, "cjk_query_offset": 0.0},
        {"latin_query_offset": 0.006, "cjk_query_offset": 0.086},
    ),
    Feature("window vector (turn before + text)", {"window_weight": 0.0}, {"window_weight": 1.0}),
    Feature("next turn's similarity", {"next_turn_weight": 0.0}, {"next_turn_weight": 0.3}),
    Feature(
        "next turn's words",
        {"assistant.memory.search.lexical.NEXT_TURN_WEIGHT": 0.0},
        {"assistant.memory.search.lexical.NEXT_TURN_WEIGHT": 0.5},
    ),
    Feature(
        "previous turn as context",
        {"assistant.memory.search.lexical.CONTEXT_WEIGHT": 0.0},
        {"assistant.memory.search.lexical.CONTEXT_WEIGHT": 0.5},
    ),
    Feature(
        "stemming",
        {"assistant.memory.search.lexical.STEM": False},
        {"assistant.memory.search.lexical.STEM": True},
    ),
    Feature(
        "English stop words",
        {"assistant.memory.search.lexical.STOP_WORDS": frozenset()},
        {"assistant.memory.search.lexical.STOP_WORDS": lexical.STOP_WORDS},
    ),
)
"""What ``--ablation`` switches, one at a time."""

BM25_CONSTANTS = "assistant.memory.search.lexical.BM25Index.__init__.__kwdefaults__"
"""Where the keyword index's k1 and b defaults live (patched to try others)."""

OTHER_VALUES: tuple[tuple[str, str, Any], ...] = (
    ("candidates", "candidates", 20),
    ("candidates", "candidates", 100),
    ("rrf_k", "rrf_k", 60),
    ("vector_weight", "vector_weight", 1.5),
    ("feedback_memories", "feedback_memories", 10),
    ("BM25", BM25_CONSTANTS, {"k1": 1.2, "b": 0.75}),
)
"""Settings that are not on or off, tried at another value than src's: (label, setting,
value)."""


def shown(value: Any) -> str:
    """A setting's value for a label: ``k1=0.9, b=0.4`` for a dict."""
    if isinstance(value, dict):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    return str(value)


def current(setting: str) -> Any:
    """A setting's value in src: the ``FusionWeights`` default, or the module attribute."""
    return pkgutil.resolve_name(setting) if "." in setting else getattr(WEIGHTS, setting)


def toggled(feature: Feature) -> tuple[str, dict[str, Any]]:
    """The variant that flips ``feature`` from src's default: its label and settings."""
    is_off = all(current(name) == value for name, value in feature.off.items())
    change = feature.on if is_off else feature.off
    values = ", ".join(f"{name.rpartition('.')[2]}={value}" for name, value in change.items())
    return f"{feature.name} {'on' if is_off else 'off'} ({values})", change


@contextmanager
def settings(change: dict[str, Any]) -> Iterator[FusionWeights]:
    """The weights for ``change``, its module settings patched meanwhile."""
    with ExitStack() as stack:
        for name, value in change.items():
            if "." in name:
                stack.enter_context(mock.patch(name, value))
        fields = {name: value for name, value in change.items() if "." not in name}
        yield dataclasses.replace(WEIGHTS, **fields)


async def recall_at_10(conversations: Sequence[Conversation], ours: Ours, *, seed: int) -> float:
    """One row of ours, indexed afresh, scored as recall@10 over every question."""
    with mock.patch("uuid.uuid4", SeededUUIDs(seed)):
        ranked = []
        for conversation in conversations:
            await ours.ingest(conversation)
            ranked += [await ours.search(conversation, q) for q in conversation.questions]
    return recall_at([q for c in conversations for q in c.questions], ranked)["all@10"]


async def fact_set_figures(weights: FusionWeights, *, seed: int) -> dict[str, float]:
    """bench/recall.py's figures (R@5, per kind) for our recall with ``weights``."""
    data = fact_set.load_dataset(fact_set.DATASET)
    with mock.patch("uuid.uuid4", SeededUUIDs(seed)):
        peer = OursPeer(weights=weights)
        await fact_set.ingest(peer, data)
        result = await fact_set.run_queries(peer, data["queries"], peer.name)
    return fact_set.metrics(result, data["queries"])


ABLATION_ROWS: tuple[tuple[str, Callable[[FusionWeights], Ours]], ...] = (
    ("LoCoMo text only", lambda w: Ours("", metadata=False, weights=w)),
    ("turn metadata", lambda w: Ours("", metadata=True, weights=w)),
    ("commonly measured", lambda w: Ours("", metadata=False, text=commonly_measured, weights=w)),
)
"""The LoCoMo rows of the ablation: recall@10 of ours with each kind of memory."""

FACT_SET_COLUMNS = (("facts R@5", "R@5"), ("zh->en", "zh-en"), ("en->zh", "en-zh"))
"""The fact-set columns of the ablation (bench/recall.py's figures the issue guards)."""


async def ablation(conversations: Sequence[Conversation], *, seed: int) -> str:
    """Recall with each feature flipped in turn, as a markdown table of figures and changes."""
    variants = [("default (src as it is)", {})] + [toggled(f) for f in FEATURES]
    variants += [
        (f"{label} {shown(value)} (src: {shown(current(setting))})", {setting: value})
        for label, setting, value in OTHER_VALUES
        if current(setting) != value
    ]
    figures: list[tuple[str, list[float]]] = []
    for label, change in variants:
        with settings(change) as weights:
            row = [
                await recall_at_10(conversations, make(weights), seed=seed)
                for _, make in ABLATION_ROWS
            ]
            facts = await fact_set_figures(weights, seed=seed)
        figures.append((label, row + [facts[key] for _, key in FACT_SET_COLUMNS]))
    base = figures[0][1]
    header = ["variant", *(f"{name} R@10" for name, _ in ABLATION_ROWS)]
    lines = [header + [name for name, _ in FACT_SET_COLUMNS]]
    for label, row in figures:
        cells = [
            f"{value:.3f}" if row is base else f"{value:.3f} ({value - b:+.3f})"
            for value, b in zip(row, base, strict=True)
        ]
        lines.append([label, *cells])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    lines.insert(1, ["-" * width for width in widths])
    return (
        "ablation: one feature flipped (or one setting changed) from src at a time; "
        "LoCoMo dev recall@10 and bench/recall.py's figures (change from src's)\n"
        + "\n".join(
            "| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
            for line in lines
        )
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo JSON (the dev split)")
    parser.add_argument(
        "--limit-conversations", type=int, default=0, help="only the first N conversations"
    )
    parser.add_argument("--seed", type=int, default=20240611, help="seeds the store keys")
    parser.add_argument(
        "--ablation", action="store_true", help="also flip each scoring feature in turn"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
