"""Numeric-library thread limits: the server's default (1) against the libraries' own, under load.

What is measured
    In a fresh process per measurement, as the server loads them (the bundled e5 model,
    numpy), with ``ASSISTANT_NUMERIC_THREADS`` at ``off`` (OpenBLAS's default: a thread per
    core) or at the default ``1`` (`assistant.inference.e5.limit_numeric_threads`):

    * **vector products**: what recall computes per query at 10,000 facts, the query
      against each fact's text vector and window vector (two 10,000 x 384 products);
    * **e5 query**: one query embedding (a new text each time, so the cache never answers);
    * **both**: the two together, a recall's numeric work.

    Each is timed ``--calls`` times. The settings alternate ``--rounds`` times, so a change in
    the machine's other load falls on both. ``--busy`` processes spin on a core each the
    whole time (default 1: another process holding one core, as on a shared machine).

Run (offline; about a minute)::

    python bench/threads.py [--rounds 3] [--calls 60] [--busy 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("off", "1")

CHILD = """
import json, sys, time
import numpy as np
from assistant.inference.e5 import E5Embeddings
from threadpoolctl import threadpool_info

calls = int(sys.argv[1])
e5 = E5Embeddings()
blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
rng = np.random.default_rng(7)
vectors = rng.standard_normal((10_000, 384)).astype(np.float32)
windows = rng.standard_normal((10_000, 384)).astype(np.float32)
query = rng.standard_normal(384).astype(np.float32)
e5.embed_query("warm up")
products, queries, both = [], [], []
for n in range(calls):
    start = time.perf_counter()
    scores = vectors @ query + windows @ query
    products.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    vector = np.asarray(e5.embed_query(f"where did I say my sister lives, question {n}?"))
    queries.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    vector = np.asarray(e5.embed_query(f"which city was it again, question {n}?"), np.float32)
    scores = vectors @ vector + windows @ vector
    both.append((time.perf_counter() - start) * 1000)
print(json.dumps({"blas": blas, "products": products, "queries": queries, "both": both}))
"""


@contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` other processes spinning on a core each meanwhile (a shared machine's load)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5 if count else 0)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def measure(setting: str, calls: int) -> dict[str, list[float]]:
    env = {**os.environ, "ASSISTANT_NUMERIC_THREADS": setting}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(calls)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[float]] = json.loads(done.stdout.splitlines()[-1])
    return result


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--busy", type=int, default=1, help="processes spinning on a core")
    args = parser.parse_args()
    print(f"load average at start: {load_average()}, cores: {os.cpu_count()}")
    pooled: dict[str, dict[str, list[float]]] = {s: {} for s in SETTINGS}
    blas: dict[str, list[int]] = {}
    began = time.perf_counter()
    with busy_cores(args.busy):
        for _ in range(args.rounds):
            for setting in SETTINGS:
                result = measure(setting, args.calls)
                blas[setting] = [int(n) for n in result.pop("blas")]
                for name, values in result.items():
                    pooled[setting].setdefault(name, []).extend(values)
    print(
        f"{args.busy} other process(es) spinning on a core; {args.rounds} rounds x {args.calls} "
        f"calls per setting, alternated; {time.perf_counter() - began:.0f} s; "
        f"load average at the end: {load_average()}"
    )
    print("")
    header = (
        f"{'ASSISTANT_NUMERIC_THREADS':<26}{'BLAS threads':>13}"
        f"{'2 products p50/p90':>21}{'e5 query p50/p90':>19}{'both p50/p90':>15}"
    )
    print(header)
    print("-" * len(header))
    for setting in SETTINGS:
        cells = [
            f"{p(pooled[setting][name], 0.5):.1f} / {p(pooled[setting][name], 0.9):.1f}"
            for name in ("products", "queries", "both")
        ]
        label = "off (library default)" if setting == "off" else f"{setting} (default)"
        threads = ",".join(str(n) for n in blas[setting]) or "none"
        print(f"{label:<26}{threads:>13}{cells[0]:>21}{cells[1]:>19}{cells[2]:>15}")
    print("(ms; 10,000 x 384 float32: the query against each fact's text and window vectors)")
    print("")
    limited = statistics.median(pooled["1"]["both"])
    default = statistics.median(pooled["off"]["both"])
    verdict = "met" if limited <= default else "MISSED"
    print(
        f"goal: a recall's numeric work (e5 query + 2 products) p50 at the limit <= at the "
        f"library default, with a core busy: {limited:.1f} ms vs {default:.1f} ms "
        f"({limited / default:.2f}x) -> {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
