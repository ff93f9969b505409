"""Recall on long, dated, two-person conversations (English and Chinese): ours against peers.

What is measured
    bench/data/conversations.json (made by bench/data/make_conversations.py, deterministic):
    24 conversations of 18 dated sessions (about 400 turns each), 1,608 questions labelled
    with their evidence turns, in five categories (single-hop, multi-hop, temporal,
    open-domain, paraphrase), half of the conversations in the dev split and half in test.
    Each conversation is one user's memory: every turn is stored, by every system, as one
    item whose content is the turn's text. Ours stores it with ``save_memory(store, user,
    text, **metadata)``: the speaker, the session's date, the previous turn, the session
    and the turn's position ride along as metadata, as the assistant's own writes carry
    them; and it searches with ``recall(store, user, question, limit=10, now=asked_on)``.
    The peers get the same texts:

    ours      ``assistant.memory.save_memory`` / ``recall``
    bm25      ``rank_bm25`` over words and CJK bigrams (bench/peers.py)
    e5        the store's own vector search (``store.asearch``) over ours' store
    rrf       plain reciprocal-rank fusion (k=60) of the bm25 and e5 rankings, top 50 each
    mem0      mem0 ``add(infer=False)`` + ``search``, same e5 embedder, in-memory Qdrant
    langmem   LangMem's manage/search memory tools on an InMemoryStore with the same index

    Rows marked ``·`` are ablations of ours (one idea switched off), rows marked ``+`` ideas
    that were measured and left out of the defaults (switched on); each is stored afresh in
    its own store when the idea is at index time.

    recall@k of a question is the share of its evidence turns in the top k; the table shows
    the mean per category, for k = 5 and 10, per split. Nothing is tuned on the test split:
    the weights in src were chosen on dev (``--split dev``) and test is only read.

    The latency line times ``recall`` for one user holding 10,000 turns, the e5 query
    embedding included (each query text is new to the embedder's cache).

Embeddings are cached in bench/.cache/ (first run: a few minutes of e5 on one thread).

Install and run (offline; nothing is downloaded)::

    pip install -e '.[bench]'
    python bench/conversations.py [--split dev|test|both] [--no-peers] [--no-ablation]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from assistant.inference.embedding_queue import UNCLAIMED
from assistant.inference.models import E5Embeddings, get_embeddings
from assistant.memory import WEIGHTS, FusionWeights, UserMemory, recall, save_memory
from assistant.memory.search import lexical
from assistant.memory.search.query import analyze_query
from assistant.server.persistence.stores import make_store
from peers import BM25Peer, LangMemPeer, Mem0Peer, NetworkGuard, Peer, StoreVectorPeer
from recall import SeededUUIDs

HERE = Path(__file__).resolve().parent
DATASET = HERE / "data" / "conversations.json"
CACHE = HERE / ".cache" / "conversations-e5.npz"
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "paraphrase")
KS = (5, 10)
DEPTH = 10
LATENCY_ITEMS = 10_000
LATENCY_QUERIES = 200


# --------------------------------------------------------------------------- data


def load(path: Path = DATASET) -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))[
        "conversations"
    ]
    return conversations


def turn_metadata(turns: Sequence[dict[str, Any]], index: int, owner: str) -> dict[str, Any]:
    """What the assistant knows about a turn besides its text, as ``save_memory`` metadata."""
    turn = turns[index]
    previous = (
        turns[index - 1] if index and turns[index - 1]["session"] == turn["session"] else None
    )
    return {
        "fact_id": turn["id"],
        "speaker": turn["speaker"],
        "role": "user" if turn["speaker"] == owner else "other",
        "said_at": turn["date"],
        "context": previous["text"] if previous else "",
        "thread_id": turn["id"].rsplit(":", 1)[0],
        "turn": turn["turn"],
    }


def asked_at(question: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(question["asked_on"]).replace(hour=20, tzinfo=UTC)


# --------------------------------------------------------------------------- embeddings


def warm_embeddings(conversations: Sequence[dict[str, Any]], extra_passages: Sequence[str]) -> None:
    """Fill e5's in-process cache from bench/.cache, embedding (and saving) what is missing."""
    passages = {t["text"] for c in conversations for t in c["turns"]} | set(extra_passages)
    queries = {q["text"] for c in conversations for q in c["questions"]}
    E5Embeddings._cache_size = len(passages) + len(queries) + 50_000
    known: dict[tuple[bool, str], list[float]] = {}
    if CACHE.exists():
        saved = np.load(CACHE, allow_pickle=False)
        for kind, is_query in (("passage", False), ("query", True)):
            for text, row in zip(saved[f"{kind}_texts"], saved[f"{kind}_vectors"], strict=True):
                known[is_query, str(text)] = [float(x) for x in row]
    missing_p = sorted(text for text in passages if (False, text) not in known)
    missing_q = sorted(text for text in queries if (True, text) not in known)
    if missing_p or missing_q:
        started = time.perf_counter()
        print(f"embedding {len(missing_p)} passages and {len(missing_q)} queries (cached after)")
        embeddings = get_embeddings()
        for text, vector in zip(missing_p, embeddings.embed_documents(missing_p), strict=True):
            known[False, text] = vector
        for text in missing_q:
            known[True, text] = embeddings.embed_query(text)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = {}
        for kind, is_query in (("passage", False), ("query", True)):
            texts = sorted(text for flag, text in known if flag == is_query)
            arrays[f"{kind}_texts"] = np.asarray(texts)
            arrays[f"{kind}_vectors"] = np.asarray(
                [known[is_query, text] for text in texts], dtype=np.float32
            )
        np.savez(CACHE, **arrays)
        print(f"  done in {time.perf_counter() - started:.0f} s")
    for (query, text), vector in known.items():  # as no user's work: the memory calls here
        E5Embeddings._cache[UNCLAIMED, query, text] = vector


# --------------------------------------------------------------------------- systems


class Ours:
    """``save_memory`` with the turn's metadata, ``recall`` with the question's date."""

    def __init__(
        self, *, weights: FusionWeights = WEIGHTS, name: str = "ours", metadata: bool = True
    ) -> None:
        self.name = name
        self.weights = weights
        self.metadata = metadata
        self.dated: FusionWeights | None = None
        self.store = make_store()

    async def ingest(self, conversation: dict[str, Any]) -> None:
        turns = conversation["turns"]
        user = conversation["id"]
        for index, turn in enumerate(turns):
            metadata = turn_metadata(turns, index, conversation["owner"])
            if not self.metadata:
                metadata = {"fact_id": metadata["fact_id"]}
            await save_memory(self.store, user, turn["text"], **metadata)
        await UserMemory(self.store, user).warm()  # as the server does before timing matters

    def view(self, weights: FusionWeights, name: str) -> Ours:
        """The same store, searched with other query-time weights."""
        other = Ours.__new__(Ours)
        other.name, other.weights, other.store = name, weights, self.store
        other.metadata, other.dated = self.metadata, None
        return other

    async def search(self, conversation: dict[str, Any], question: dict[str, Any]) -> list[str]:
        now = asked_at(question)
        weights = self.weights
        if self.dated is not None and analyze_query(question["text"], now.date()).dates:
            weights = self.dated
        items = await recall(
            self.store, conversation["id"], question["text"], limit=DEPTH, weights=weights, now=now
        )
        return [str(item.value["fact_id"]) for item in items]


class PeerSystem:
    """A bench/peers.py peer fed every turn as a fact (its id is the turn id)."""

    def __init__(self, peer: Peer, *, ingests: bool = True) -> None:
        self.peer = peer
        self.name = peer.name
        self.ingests = ingests

    async def ingest(self, conversation: dict[str, Any]) -> None:
        if not self.ingests:
            return
        for turn in conversation["turns"]:
            await self.peer.add(conversation["id"], turn["id"], turn["text"], conversation["lang"])

    async def search(self, conversation: dict[str, Any], question: dict[str, Any]) -> list[str]:
        return await self.peer.search(conversation["id"], question["text"], DEPTH)


class PlainRRF:
    """Textbook hybrid: reciprocal-rank fusion (k=60) of BM25 and e5, 50 candidates each."""

    name = "rrf (bm25 + e5)"

    def __init__(self, bm25: Peer, vector: Peer, *, k: int = 60, candidates: int = 50) -> None:
        self.bm25, self.vector, self.k, self.candidates = bm25, vector, k, candidates

    async def ingest(self, conversation: dict[str, Any]) -> None:
        return None

    async def search(self, conversation: dict[str, Any], question: dict[str, Any]) -> list[str]:
        user, text = conversation["id"], question["text"]
        scores: dict[str, float] = defaultdict(float)
        for peer in (self.bm25, self.vector):
            for rank, turn_id in enumerate(await peer.search(user, text, self.candidates), 1):
                scores[turn_id] += 1 / (self.k + rank)
        return sorted(scores, key=lambda key: (-scores[key], key))[:DEPTH]


# --------------------------------------------------------------------------- metrics


@dataclass
class Run:
    name: str
    ranked: dict[str, list[str]] = field(default_factory=dict)
    ms: list[float] = field(default_factory=list)


async def evaluate(system: Any, conversations: Sequence[dict[str, Any]]) -> Run:
    run = Run(system.name)
    for conversation in conversations:
        for question in conversation["questions"]:
            start = time.perf_counter()
            run.ranked[question["id"]] = await system.search(conversation, question)
            run.ms.append((time.perf_counter() - start) * 1000)
    return run


def scores(run: Run, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean recall@k (share of evidence turns in the top k) per category and overall."""
    totals: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        ranked = run.ranked[question["id"]]
        evidence = set(question["evidence"])
        for k in KS:
            value = len(evidence & set(ranked[:k])) / len(evidence)
            totals[f"{question['category']}@{k}"].append(value)
            totals[f"all@{k}"].append(value)
    return {key: sum(values) / len(values) for key, values in totals.items()}


def table(runs: Sequence[Run], questions: Sequence[dict[str, Any]], title: str) -> str:
    columns = [("all", "all")] + [(c, c[:6]) for c in CATEGORIES]
    width = max(28, *(len(run.name) for run in runs))
    head = f"{title:<{width}} |" + "|".join(f" {label:>6} @5  @10 " for _, label in columns)
    lines = [head, "-" * len(head)]
    for run in runs:
        row = scores(run, questions)
        cells = "|".join(f"  {row[f'{c}@5']:.3f} {row[f'{c}@10']:.3f} " for c, _ in columns)
        lines.append(f"{run.name:<{width}} |{cells}")
    return "\n".join(line.rstrip() for line in lines)


# --------------------------------------------------------------------------- ablation


@dataclass(frozen=True)
class Variant:
    """An ablation row: other query-time weights or module settings, or a fresh store.

    ``reingest`` variants change what is indexed, so they store every turn again.
    """

    name: str
    weights: FusionWeights | None = None
    patch: tuple[Any, str, Any] | None = None
    reingest: bool = False
    metadata: bool = True
    dated: FusionWeights | None = None
    """Other weights for questions that name days (fusion weights per query type)."""


def ablations(base: FusionWeights) -> list[Variant]:
    """Rows marked "·" switch one idea of ours off; rows marked "+" switch on one that was
    measured and left out of the defaults."""
    from assistant.memory.search import index, lexical

    replace = dataclasses.replace
    return [
        Variant("· no metadata (text only)", metadata=False, reingest=True),
        Variant(
            "· no previous-turn context", patch=(lexical, "CONTEXT_WEIGHT", 0.0), reingest=True
        ),
        Variant("· no date expansion", replace(base, expand_dates=False)),
        Variant("· no speaker boost, names kept", replace(base, speaker_boost=0.0)),
        Variant("· speaker boost, names kept", patch=(index, "without_names", lambda p, s: p)),
        Variant("· vector ranking only", replace(base, lexical_weight=0.0, date_weight=0.0)),
        Variant("· BM25 ranking only", replace(base, vector_weight=0.0, date_weight=0.0)),
        Variant("+ per type: BM25 x0.5 if dated", dated=replace(base, lexical_weight=0.5)),
        Variant("+ English Snowball stemming", patch=(lexical, "STEM", True), reingest=True),
        Variant(
            "+ jieba words with the bigrams", patch=(lexical, "CJK_MODE", "both"), reingest=True
        ),
        Variant("+ jieba words, no bigrams", patch=(lexical, "CJK_MODE", "words"), reingest=True),
    ]


async def run_variant(variant: Variant, ours: Ours, conversations: Sequence[dict[str, Any]]) -> Run:
    with ExitStack() as stack:
        if variant.patch is not None:
            stack.enter_context(mock.patch.object(*variant.patch))
        weights = variant.weights or ours.weights
        if variant.reingest:
            system = Ours(weights=weights, name=variant.name, metadata=variant.metadata)
            for conversation in conversations:
                await system.ingest(conversation)
        else:
            system = ours.view(weights, variant.name)
        system.dated = variant.dated
        return await evaluate(system, conversations)


# --------------------------------------------------------------------------- latency


async def latency(conversations: Sequence[dict[str, Any]]) -> Latency:
    """Milliseconds of ``recall`` for one user with 10k turns, query embedding included."""
    store = make_store()
    user = "latency"
    turns = [(c, i) for c in conversations for i in range(len(c["turns"]))]
    count = 0
    for conversation, index in turns[:LATENCY_ITEMS]:
        metadata = turn_metadata(conversation["turns"], index, conversation["owner"])
        await save_memory(store, user, conversation["turns"][index]["text"], **metadata)
        count += 1
    pad = 0
    while count < LATENCY_ITEMS:  # the dataset has fewer turns: repeat some, marked
        conversation, index = turns[pad % len(turns)]
        text = f"{conversation['turns'][index]['text']} ({pad})"
        await save_memory(store, user, text, speaker=conversation["turns"][index]["speaker"])
        count, pad = count + 1, pad + 1
    await UserMemory(store, user).warm()
    questions = [q for c in conversations for q in c["questions"]][:LATENCY_QUERIES]
    await recall(store, user, "warm up", limit=DEPTH)
    embeddings = get_embeddings()
    ms: list[float] = []
    e5_ms: list[float] = []
    for number, question in enumerate(questions):
        text = f"{question['text']} #{number}"  # new to the embedding cache
        start = time.perf_counter()
        await recall(store, user, text, limit=DEPTH, now=asked_at(question))
        ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        embeddings.embed_query(f"{text} (e5 alone)")
        e5_ms.append((time.perf_counter() - start) * 1000)
    searched: list[float] = []
    for number, question in enumerate(questions):  # again: the query vectors are cached now
        start = time.perf_counter()
        await recall(store, user, f"{question['text']} #{number}", limit=DEPTH)
        searched.append((time.perf_counter() - start) * 1000)
    ms.sort()
    return Latency(
        p50=statistics.median(ms),
        p95=ms[int(len(ms) * 0.95)],
        items=count,
        embed_p50=statistics.median(e5_ms),
        search_p50=statistics.median(searched),
    )


@dataclass
class Latency:
    p50: float
    p95: float
    items: int
    embed_p50: float
    """The e5 query embedding alone."""
    search_p50: float
    """recall with the query's embedding already cached."""


# --------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> None:
    everything = load(args.dataset)
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    conversations = [c for c in everything if c["split"] in splits]
    questions = {
        s: [q for c in conversations if c["split"] == s for q in c["questions"]] for s in splits
    }
    turns = sum(len(c["turns"]) for c in everything)
    print(
        f"dataset: {len(everything)} conversations ({turns} turns), "
        + ", ".join(f"{s} {len(questions[s])} questions" for s in splits)
        + "; recall@k = share of a question's evidence turns in the top k"
    )
    pad = [
        f"{c['turns'][i]['text']} ({n})"
        for n, (c, i) in enumerate(
            [(c, i) for c in everything for i in range(len(c["turns"]))][
                : max(0, LATENCY_ITEMS - turns)
            ]
        )
    ]
    warm_embeddings(everything, pad)
    started = time.perf_counter()
    # Store keys are uuid4s and exact score ties break by key: seeded, every run ranks alike.
    with NetworkGuard() as guard, mock.patch("uuid.uuid4", SeededUUIDs(args.seed)):
        ours = Ours(name="ours (save_memory + recall)")
        systems: list[Any] = [ours]
        bm25 = BM25Peer(name="bm25")
        vector = StoreVectorPeer(ours.store, writes=False, name="e5 (store vector search)")
        if not args.no_peers:
            systems += [
                PeerSystem(bm25),
                PeerSystem(vector, ingests=False),
                PlainRRF(bm25, vector),
                PeerSystem(Mem0Peer(update_in_place=False, name="mem0")),
                PeerSystem(LangMemPeer(update_in_place=False, name="langmem")),
            ]
        for system in systems:
            t0 = time.perf_counter()
            for conversation in conversations:
                await system.ingest(conversation)
            if args.verbose:
                print(f"  ingest {system.name}: {time.perf_counter() - t0:.1f} s")
        runs = []
        for system in systems:
            t0 = time.perf_counter()
            runs.append(await evaluate(system, conversations))
            if args.verbose:
                print(f"  queries {system.name}: {time.perf_counter() - t0:.1f} s")
        ablation_runs: list[Run] = []
        if not args.no_ablation:
            for variant in ablations(WEIGHTS):
                ablation_runs.append(await run_variant(variant, ours, conversations))
        timing = None if args.no_latency else await latency(everything)
    weights = WEIGHTS
    print(
        f"weights: rrf_k={weights.rrf_k}; vector/BM25={weights.vector_weight}/"
        f"{weights.lexical_weight}, dates={weights.date_weight} (questions naming days); "
        f"speaker x{1 + weights.speaker_boost}; previous turn at {lexical.CONTEXT_WEIGHT}; "
        f"candidates={weights.candidates}; k={DEPTH}"
    )
    for split in splits:
        print()
        print(table([*runs, *ablation_runs], questions[split], f"{split} split"))
    print()
    for run in runs:
        print(f"  {run.name}: {statistics.mean(run.ms):.2f} ms/question (embeddings cached)")
    if timing is not None:
        print(
            f"\nrecall latency, one user with {timing.items} turns, e5 query embedding "
            f"included: p50 {timing.p50:.1f} ms, p95 {timing.p95:.1f} ms; the e5 query "
            f"embedding alone: p50 {timing.embed_p50:.1f} ms; recall with the query vector "
            f"cached: p50 {timing.search_p50:.1f} ms"
        )
    print(
        f"\nnetwork attempts: {guard.attempts or 'none'}; "
        f"total {time.perf_counter() - started:.0f} s"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--no-peers", action="store_true", help="ours and its ablation only")
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--seed", type=int, default=20261201, help="seeds the store keys")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
