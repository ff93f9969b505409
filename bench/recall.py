"""Recall quality of our hybrid memory recall against plain vector search, BM25, mem0 and LangMem.

What is measured
    bench/data/recall_dataset.json: 20 users, 382 short facts stated over time (53 replace
    an older fact, named by ``supersedes``), 426 bilingual queries, each with the one fact
    id it expects (and, for 125 of them, the stale fact it must not prefer). Every system
    gets the same facts in the same order (each user's events by day), the same embedder
    (``E5Embeddings``, multilingual-e5-small with passage/query prefixes) and the same
    oracle for replacements, applied with its own primitive:

    ours            ``save_memory`` / ``supersede_memory`` (old fact kept, status
                    superseded, out of recall), searched with hybrid ``recall``.
    store vector    the same store contents, searched with ``store.asearch(namespace,
                    query=..., filter={"status": {"$ne": "superseded"}})``: only the
                    ranking differs from ours.
    bm25            ``rank_bm25`` over each user's current facts only.
    mem0 add-only   mem0 ``add(infer=False)``: old and new fact both stored.
    mem0 +update    the replacement applied with ``Memory.update(old_id, text=new)``.
    langmem ...     LangMem's search tool; add-only, or +update with its manage tool's
                    ``update`` action (a put on the old key).

    Rows marked ``·`` are ablations of ours (one ranking switched off by its weight).

    Metrics (k = 10 results per query): R@1 and R@5 (expected id within the top 1 / 5),
    MRR@10, stale rate (over the queries that have a stale id: the stale fact ranks above
    the expected one within the top 10, or it is in the top 5 and the expected one is
    not), R@5 per kind (query language - fact language), and mean ms per query. Query
    vectors are computed once before any timing (e5's cache), so ms/query is the search
    itself; bench/overhead.py times the whole turn, query embedding included.

    ``--calibrate`` measures e5's same-script bias without any query label: over pairs of
    a query (``query:`` prefix) and a fact (``passage:`` prefix) from different users
    (so unrelated), mean cosine of same-script pairs minus cross-script pairs (script =
    ``assistant.inference.tokens.is_cjk_text``), pooled and per query script (Latin / CJK queries),
    since e5's bias is not symmetric. The per-script values are what ``FusionWeights``'
    ``latin_query_offset`` and ``cjk_query_offset`` should be. It then shows our
    recall for a few offsets and for the two per-script values; that sweep uses the
    labels, so it is for looking at, not for choosing the value.

Install and run (offline; nothing is downloaded)::

    pip install -e '.[bench]'
    python bench/recall.py [--calibrate] [--offset X]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from assistant.inference.embedding_queue import UNCLAIMED
from assistant.inference.models import E5Embeddings, get_embeddings
from assistant.inference.tokens import is_cjk_text
from assistant.memory import WEIGHTS, FusionWeights, recall
from peers import BM25Peer, LangMemPeer, Mem0Peer, NetworkGuard, OursPeer, Peer, StoreVectorPeer

DATASET = Path(__file__).resolve().parent / "data" / "recall_dataset.json"
KINDS = ("en-en", "zh-zh", "en-zh", "zh-en")
TOP_K = 10
SWEEP = (0.0, 0.02, 0.04, 0.08)


# --------------------------------------------------------------------------- metrics


@dataclass
class Result:
    """One system's answers and timings over the whole query set."""

    name: str
    ranked: dict[str, list[str]] = field(default_factory=dict)
    ms: list[float] = field(default_factory=list)


def _rank(ids: Sequence[str], fact_id: str | None) -> int | None:
    """1-based rank of ``fact_id`` in ``ids``, None when absent."""
    if fact_id is None:
        return None
    try:
        return ids.index(fact_id) + 1
    except ValueError:
        return None


def is_stale_hit(ids: Sequence[str], expected: str, stale: str) -> bool:
    """The stale fact wins: above the expected one in the top 10, or top 5 without it.

    >>> is_stale_hit(["old", "new"], "new", "old"), is_stale_hit(["new", "old"], "new", "old")
    (True, False)
    >>> is_stale_hit(["a", "b", "old", "c", "d", "new"], "new", "old")
    True
    """
    top = list(ids[:TOP_K])
    rank_e, rank_s = _rank(top, expected), _rank(top, stale)
    above = rank_s is not None and rank_e is not None and rank_s < rank_e
    top5_only = rank_s is not None and rank_s <= 5 and (rank_e is None or rank_e > 5)
    return above or top5_only


def metrics(result: Result, queries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """R@1, R@5, MRR@10, stale rate and R@5 per kind (as fractions), and ms/query."""
    hits1 = hits5 = 0
    rr = 0.0
    stale_hits = stale_total = 0
    kind_hits: Counter[str] = Counter()
    kind_total: Counter[str] = Counter()
    for query in queries:
        ids = result.ranked[query["id"]][:TOP_K]
        rank = _rank(ids, query["expected"])
        hits1 += rank == 1
        hit5 = rank is not None and rank <= 5
        hits5 += hit5
        rr += 1 / rank if rank else 0.0
        kind_total[query["kind"]] += 1
        kind_hits[query["kind"]] += hit5
        if query["stale"]:
            stale_total += 1
            stale_hits += is_stale_hit(ids, query["expected"], query["stale"])
    n = len(queries)
    row = {
        "R@1": hits1 / n,
        "R@5": hits5 / n,
        "MRR@10": rr / n,
        "stale": stale_hits / stale_total if stale_total else 0.0,
        "ms": float(np.mean(result.ms)) if result.ms else 0.0,
    }
    for kind in KINDS:
        row[kind] = kind_hits[kind] / kind_total[kind] if kind_total[kind] else float("nan")
    return row


# --------------------------------------------------------------------------- running


def load_dataset(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for user in data["users"]:
        user["events"] = sorted(user["events"], key=lambda event: event["day"])  # stable
    return data


def summary_line(data: dict[str, Any]) -> str:
    events = [event for user in data["users"] for event in user["events"]]
    updates = sum(1 for event in events if event["supersedes"])
    queries = data["queries"]
    kinds = Counter(query["kind"] for query in queries)
    stale = sum(1 for query in queries if query["stale"])
    by_kind = ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS)
    return (
        f"dataset: {len(data['users'])} users, {len(events)} facts ({updates} supersede an "
        f"older one), {len(queries)} queries ({by_kind}; {stale} with a stale fact)"
    )


async def ingest(peer: Peer, data: dict[str, Any]) -> float:
    """Feed every user's events in day order; a replacement goes through ``supersede``."""
    start = time.perf_counter()
    for user in data["users"]:
        for event in user["events"]:
            args = (event["fact_id"], event["content"], event["lang"])
            if event["supersedes"]:
                await peer.supersede(user["user_id"], event["supersedes"], *args)
            else:
                await peer.add(user["user_id"], *args)
    return time.perf_counter() - start


async def run_queries(peer: Peer, queries: Sequence[dict[str, Any]], name: str) -> Result:
    result = Result(name)
    for query in queries:
        start = time.perf_counter()
        ids = await peer.search(query["user_id"], query["text"], TOP_K)
        result.ms.append((time.perf_counter() - start) * 1000)
        result.ranked[query["id"]] = ids
    return result


class SeededUUIDs:
    """A drop-in for ``uuid.uuid4`` drawing from a seeded generator.

    Store keys (ours, mem0's and LangMem's) are uuid4s, and our recall breaks exact score
    ties by key; seeding them makes every run rank exactly alike.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)


def with_offset(weights: FusionWeights, offset: float) -> FusionWeights:
    """The same offset for queries in either script (the pooled calibration)."""
    return dataclasses.replace(weights, latin_query_offset=offset, cjk_query_offset=offset)


def by_script(weights: FusionWeights, latin: float, cjk: float) -> FusionWeights:
    return dataclasses.replace(weights, latin_query_offset=latin, cjk_query_offset=cjk)


class NonZeroPeer(OursPeer):
    """Ours, keeping only results with a fused score above zero.

    With ``vector_weight=0`` every vector-only candidate scores 0 and their order would
    come down to the random store keys; dropping them leaves the BM25 hits, in order.
    """

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        items = await recall(self.store, user_id, query, limit=k, weights=self.weights)
        return [str(item.value.get("fact_id") or item.key) for item in items if item.score]


# --------------------------------------------------------------------------- calibration


@dataclass
class Calibration:
    offset: float
    same_mean: float
    cross_mean: float
    same_pairs: int
    cross_pairs: int
    per_direction: dict[str, float]


def calibrate(data: dict[str, Any]) -> Calibration:
    """Same-script minus cross-script mean cosine over unrelated (cross-user) query/fact pairs.

    Uses the query texts and fact texts only (no expected ids, no kinds).
    """
    embeddings = get_embeddings()
    queries = data["queries"]
    facts = [(user["user_id"], event) for user in data["users"] for event in user["events"]]
    q = np.asarray([embeddings.embed_query(query["text"]) for query in queries], dtype=np.float64)
    f = np.asarray(
        embeddings.embed_documents([event["content"] for _, event in facts]), dtype=np.float64
    )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    cos = q @ f.T
    q_user = np.array([query["user_id"] for query in queries])
    f_user = np.array([user_id for user_id, _ in facts])
    q_cjk = np.array([is_cjk_text(query["text"]) for query in queries])
    f_cjk = np.array([is_cjk_text(event["content"]) for _, event in facts])
    unrelated = q_user[:, None] != f_user[None, :]
    same = q_cjk[:, None] == f_cjk[None, :]
    same_mean = float(cos[unrelated & same].mean())
    cross_mean = float(cos[unrelated & ~same].mean())
    per_direction = {}
    for label, query_cjk in (("latin query", False), ("CJK query", True)):
        rows = q_cjk == query_cjk
        block, mask = cos[rows], unrelated[rows]
        same_block = mask & (f_cjk[None, :] == query_cjk)
        cross_block = mask & (f_cjk[None, :] != query_cjk)
        per_direction[label] = float(block[same_block].mean() - block[cross_block].mean())
    return Calibration(
        offset=same_mean - cross_mean,
        same_mean=same_mean,
        cross_mean=cross_mean,
        same_pairs=int((unrelated & same).sum()),
        cross_pairs=int((unrelated & ~same).sum()),
        per_direction=per_direction,
    )


# --------------------------------------------------------------------------- output

COLUMNS = ("R@1", "R@5", "MRR@10", "stale", *KINDS)


def table(
    rows: Sequence[tuple[str, dict[str, float]]], *, label: str = "system", timing: bool = True
) -> str:
    width = max(len(label), *(len(name) for name, _ in rows))
    head = f"{label:<{width}} | " + " | ".join(f"{c:>6}" for c in COLUMNS)
    head += " | ms/query" if timing else ""
    lines = [head, "-" * len(head)]
    for name, row in rows:
        cells = " | ".join(f"{row[c]:>6.3f}" for c in COLUMNS)
        lines.append(f"{name:<{width}} | {cells}" + (f" | {row['ms']:>8.2f}" if timing else ""))
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def use_kept_vectors(path: Path, texts: Sequence[tuple[bool, str]], *, write: bool) -> None:
    """Serve ``texts`` (``(is_query, text)``) from the e5 vectors kept in ``path``.

    e5's vectors differ in their last bits between processors (seen between two 2-core
    development machines), and that is enough to reorder near-ties. The slice that CI checks reads
    the vectors bench/RESULTS.md's figures were made with, so it tests this code, not the CPU.
    With ``write`` they are embedded here and written to ``path`` first.
    """
    embeddings = get_embeddings()
    if not isinstance(embeddings, E5Embeddings):
        raise SystemExit("--vectors serves the bundled e5 embeddings' texts; unset the others")
    if write:
        vectors = [
            embeddings.embed_query(text) if query else embeddings.embed_documents([text])[0]
            for query, text in texts
        ]
        np.savez_compressed(
            path,
            queries=np.array([query for query, _ in texts]),
            texts=np.array([text for _, text in texts]),
            vectors=np.asarray(vectors, dtype=np.float32),
        )
    if not path.exists():
        raise SystemExit(f"{path} does not exist: run `python bench/figures.py --only recall`")
    kept = np.load(path)
    found = {
        (bool(query), str(text)): [float(x) for x in vector]
        for query, text, vector in zip(kept["queries"], kept["texts"], kept["vectors"], strict=True)
    }
    missing = [text for query, text in texts if (query, text) not in found]
    if missing:
        raise SystemExit(
            f"{path} has no vector for {len(missing)} texts (first: {missing[0]!r}): "
            "run `python bench/figures.py --only recall` to write it again"
        )
    for query, text in texts:  # the in-process cache every store reads (no user's key)
        embeddings._remember((UNCLAIMED, query, text), found[query, text])


async def main(args: argparse.Namespace) -> None:
    data = load_dataset(args.dataset)
    if args.users:  # a slice: the first N users and their queries
        data["users"] = data["users"][: args.users]
        kept = {user["user_id"] for user in data["users"]}
        data["queries"] = [query for query in data["queries"] if query["user_id"] in kept]
    queries = data["queries"]
    print(summary_line(data))
    weights = WEIGHTS if args.offset is None else with_offset(WEIGHTS, args.offset)
    embeddings = get_embeddings()
    if args.vectors is not None:
        texts = [(False, e["content"]) for u in data["users"] for e in u["events"]]
        use_kept_vectors(
            args.vectors, [*texts, *((True, q["text"]) for q in queries)], write=args.write_vectors
        )
    started = time.perf_counter()
    with NetworkGuard() as guard, mock.patch("uuid.uuid4", SeededUUIDs(args.seed)):
        # Embed every text once up front (e5's in-process cache), so that no system pays
        # for embedding inside its timings and none is favoured by going first.
        embeddings.embed_documents([e["content"] for u in data["users"] for e in u["events"]])
        for query in queries:
            embeddings.embed_query(query["text"])

        ours = OursPeer(weights=weights, name="ours (hybrid recall)")
        writers: list[Peer] = [ours, BM25Peer(name="bm25 (current facts)")]
        if not args.no_peers:
            writers += [
                Mem0Peer(update_in_place=False, name="mem0 add-only"),
                Mem0Peer(update_in_place=True, name="mem0 +update"),
                LangMemPeer(update_in_place=False, name="langmem add-only"),
                LangMemPeer(update_in_place=True, name="langmem +update"),
            ]
        ingest_s = {peer.name: await ingest(peer, data) for peer in writers}
        plain = StoreVectorPeer(ours.store, writes=False, name="store vector (asearch)")
        ablations: list[Peer] = [
            OursPeer(
                ours.store,
                weights=dataclasses.replace(weights, lexical_weight=0.0),
                name="· ours, vector ranking only",
            ),
            NonZeroPeer(
                ours.store,
                weights=dataclasses.replace(weights, vector_weight=0.0),
                name="· ours, BM25 ranking only",
            ),
        ]
        order = [ours, plain, *writers[1:], *ablations]
        results = [await run_queries(peer, queries, peer.name) for peer in order]

        calibration = None
        sweep: list[tuple[str, dict[str, float]]] = []
        if args.calibrate:
            calibration = calibrate(data)
            offsets = sorted({*SWEEP, round(calibration.offset, 4)})
            for offset in offsets:
                peer = OursPeer(ours.store, weights=with_offset(weights, offset))
                tag = " (pooled, measured)" if offset == round(calibration.offset, 4) else ""
                label = f"{offset:.4f} both scripts{tag}"
                sweep.append((label, metrics(await run_queries(peer, queries, label), queries)))
            latin = calibration.per_direction["latin query"]
            cjk = calibration.per_direction["CJK query"]
            peer = OursPeer(ours.store, weights=by_script(weights, latin, cjk))
            label = f"per query script {latin:.4f}/{cjk:.4f} (measured)"
            sweep.append((label, metrics(await run_queries(peer, queries, label), queries)))
    print(
        f"weights: cross-language offsets latin/CJK query={weights.latin_query_offset}/"
        f"{weights.cjk_query_offset}, rrf_k={weights.rrf_k},"
        f" vector/lexical={weights.vector_weight}/{weights.lexical_weight},"
        f" candidates={weights.candidates}; k={TOP_K}; query vectors precomputed"
    )
    print()
    print(
        table([(result.name, metrics(result, queries)) for result in results], timing=args.timing)
    )
    print()
    print(
        "ingest (s, all users, embeddings cached): "
        + ", ".join(f"{name} {seconds:.2f}" for name, seconds in ingest_s.items())
    )
    if calibration is not None:
        print()
        print(
            f"calibration: e5 same-script bias over unrelated (cross-user) pairs = "
            f"{calibration.same_mean:.4f} (same script, {calibration.same_pairs} pairs) - "
            f"{calibration.cross_mean:.4f} (cross script, {calibration.cross_pairs} pairs) = "
            f"{calibration.offset:.4f}"
        )
        print(
            "  by query script: "
            + ", ".join(f"{k} {v:.4f}" for k, v in calibration.per_direction.items())
        )
        print(
            f"  -> FusionWeights should have latin_query_offset "
            f"{calibration.per_direction['latin query']:.3f} and cjk_query_offset "
            f"{calibration.per_direction['CJK query']:.3f} (src has "
            f"{WEIGHTS.latin_query_offset} and {WEIGHTS.cjk_query_offset})"
        )
        print()
        print(
            "our recall by cross-language offset (uses the labels: to look at, not to tune;"
            " last row: the per-query-script offsets, as src uses them):"
        )
        print(table(sweep, label="offset"))
    print()
    elapsed = time.perf_counter() - started
    print(f"network attempts: {guard.attempts or 'none'}; total {elapsed:.0f} s")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET, help="recall dataset JSON")
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="measure e5's same-script bias and show our recall for a few offsets",
    )
    parser.add_argument("--seed", type=int, default=20240611, help="seeds the store keys")
    parser.add_argument("--users", type=int, default=0, help="only the first N users (a slice)")
    parser.add_argument("--no-peers", action="store_true", help="skip mem0 and LangMem")
    parser.add_argument(
        "--no-timing", dest="timing", action="store_false", help="leave out the ms/query column"
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=None,
        help="read every text's e5 vector from this .npz (the slice CI checks)",
    )
    parser.add_argument(
        "--write-vectors",
        action="store_true",
        help="with --vectors: embed the texts here and write the file first",
    )
    parser.add_argument(
        "--offset",
        type=float,
        default=None,
        help="one cross-language offset for queries in either script (default: src's "
        "per-script FusionWeights)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
