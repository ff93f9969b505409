"""Retrieval recall on LoCoMo's dev split: our recall, through the public memory API, and BM25.

What is measured
    ../shared/data/locomo/locomo-dev.json (LoCoMo, Maharana et al. 2024, CC BY-NC 4.0: read
    from shared/, never copied here): one user per conversation, one memory per turn (its
    text), one query per question of categories 1-4 (5, adversarial, is left out, as
    retrieval on LoCoMo is usually scored). A question is a hit at k when one of its
    evidence turns is in the top k; recall@k is the share of questions with a hit.

    ours, text only      ``save_memory(store, user, text)``, ``recall(..., limit=10)``
    ours, turn metadata  plus what recall reads from a turn (memory/query.py, lexical.py):
                         speaker, role (speaker_a is the user), said_at (the session's
                         date), context (the session's previous turn), thread_id, turn;
                         recall is asked at the last session's time (``now``)
    bm25                 ``rank_bm25.BM25Okapi``, same texts, lowercased ``\\w+`` tokens
    bm25, stem + stop    plus Lucene's English stop words and Porter stemming
                         (``snowballstemmer``), as Anserini's default BM25

    p50 ms: median time of one ``recall``, its query vector cached by an untimed call first.

Run (offline)::

    python bench/locomo.py [--limit-conversations N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

from langgraph.store.base import BaseStore

from assistant.memory import make_store, recall, save_memory
from peers import NetworkGuard
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


class Ours:
    """``save_memory`` every turn (text only, or with its metadata), ``recall`` each question."""

    def __init__(self, name: str, *, metadata: bool, store: BaseStore | None = None) -> None:
        self.name, self.metadata = name, metadata
        self.store = store if store is not None else make_store()
        self.dia_ids: dict[str, str] = {}
        self.ms: list[float] = []

    async def ingest(self, conversation: Conversation) -> None:
        for index, turn in enumerate(conversation.turns):
            metadata = turn_metadata(conversation, index) if self.metadata else {}
            key = await save_memory(self.store, conversation.user_id, turn.text, **metadata)
            self.dia_ids[key] = turn.dia_id

    async def search(self, conversation: Conversation, question: Question) -> list[str]:
        now = conversation.turns[-1].said_at if self.metadata else None
        user, text = conversation.user_id, question.text
        await recall(self.store, user, text, limit=DEPTH, now=now)  # caches the query vector
        start = time.perf_counter()
        items = await recall(self.store, user, text, limit=DEPTH, now=now)
        self.ms.append((time.perf_counter() - start) * 1000)
        return [self.dia_ids[item.key] for item in items]


class BM25:
    """``rank_bm25.BM25Okapi`` over one conversation's turns; ties kept in turn order."""

    def __init__(self, name: str, analyze: Callable[[str], list[str]]) -> None:
        self.name, self.analyze = name, analyze
        self.ms: list[float] = []
        self.index: dict[str, tuple[Any, list[str], list[set[str]]]] = {}

    async def ingest(self, conversation: Conversation) -> None:
        from rank_bm25 import BM25Okapi

        docs = [self.analyze(turn.text) or [""] for turn in conversation.turns]
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


async def main(args: argparse.Namespace) -> None:
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}: nothing to measure (see its README)")
        return
    started = time.perf_counter()
    samples = json.loads(args.data.read_text(encoding="utf-8"))[: args.limit_conversations or None]
    conversations = [read_conversation(sample) for sample in samples]
    systems: list[Ours | BM25] = [
        Ours("ours, text only", metadata=False),
        Ours("ours, turn metadata", metadata=True),
        BM25("bm25", words),
    ]
    try:
        import snowballstemmer

        systems.append(BM25("bm25, stem + stop", stemmed_words(snowballstemmer.stemmer("porter"))))
    except ImportError:
        print("bm25, stem + stop: skipped (snowballstemmer is not installed)")
    questions = [q for c in conversations for q in c.questions]
    ranked: dict[str, list[list[str]]] = {system.name: [] for system in systems}
    ingest_s = dict.fromkeys(ranked, 0.0)
    with NetworkGuard() as guard, mock.patch("uuid.uuid4", SeededUUIDs(args.seed)):
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
    elapsed = time.perf_counter() - started
    print(f"network attempts: {guard.attempts or 'none'}; total {elapsed:.0f} s")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo JSON (the dev split)")
    parser.add_argument(
        "--limit-conversations", type=int, default=0, help="only the first N conversations"
    )
    parser.add_argument("--seed", type=int, default=20240611, help="seeds the store keys")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
