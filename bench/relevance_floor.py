"""The relevance floor of search and forget by text: does "nothing matches" hold, in any language?

What is measured
    bench/data/relevance_floor.json: four users with twelve facts each (English, Chinese,
    German, Spanish, Japanese, and sentences that mix two of them), and 235 queries: 175
    that should find one named fact (a keyword, a paraphrase, a question, "forget that
    ...", the fact in another language, a misspelling, code-switching) and 60 that should
    find nothing in that user's memory (in the same styles and languages). Each query is
    searched in its user's memory with ``assistant.memory.search.matching``, the function
    behind ``memories search``, ``memories forget TEXT``, ``/memory/facts?query=``, the
    chat's search_memory and MCP's search_memories, with the project's embedder
    (multilingual-e5-small). The first fact at or above the floor is what forget would
    offer.

    precision   of the queries for which some fact reached the floor, the share whose
                first fact is the one expected
    recall      of the queries that expect a fact, the share whose first fact is it
    false match of the queries that expect nothing, the share for which some fact
                reached the floor (a forget would have offered it)

    Per query language (``typo`` and ``mixed`` are their own rows), on each split. The
    floor (``MATCH_FLOOR``) was chosen on the dev split (``--sweep`` shows the choice:
    the floor with the best F0.5, precision weighing twice recall); the test split checks
    it. The data was written by the engineer who chose the floor, so read the test
    figures as an upper bound.

Run (offline)::

    python bench/relevance_floor.py [--sweep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.memory import UserMemory, make_store
from assistant.memory.search import MATCH_FLOOR, matching

DATA = Path(__file__).parent / "data" / "relevance_floor.json"

LANGUAGES = ("en", "zh", "de", "es", "ja", "mixed", "typo")


@dataclass(frozen=True)
class Outcome:
    """One query's best fact and its score, and what the query expects."""

    lang: str
    split: str
    expect: str | None
    best: str | None
    score: float


async def outcomes() -> list[Outcome]:
    """Every query's best fact at any score, searched in its user's memory."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    store = make_store()
    ids: dict[tuple[str, str], str] = {}
    for fact in data["facts"]:
        key = await UserMemory(store, fact["user"]).save(fact["content"])
        ids[(fact["user"], key)] = fact["id"]
    found = []
    for query in data["queries"]:
        hits = await matching(store, query["user"], query["text"], limit=1, floor=-1e9)
        best = hits[0] if hits else None
        found.append(
            Outcome(
                lang=query["lang"],
                split=query["split"],
                expect=query["expect"],
                best=ids[(query["user"], best.key)] if best else None,
                score=float(best.score or 0.0) if best else float("-inf"),
            )
        )
    return found


def figures(found: list[Outcome], floor: float) -> dict[str, float]:
    """Precision, recall and false-match rate of ``floor`` over ``found``."""
    right = sum(o.score >= floor and o.best == o.expect for o in found if o.expect)
    offered = sum(o.score >= floor for o in found)
    wanted = sum(1 for o in found if o.expect)
    unrelated = [o for o in found if o.expect is None]
    return {
        "precision": right / offered if offered else 1.0,
        "recall": right / wanted if wanted else 1.0,
        "false_match": (
            sum(o.score >= floor for o in unrelated) / len(unrelated) if unrelated else 0.0
        ),
        "queries": len(found),
    }


def table(found: list[Outcome], floor: float) -> str:
    """Figures per split and per query language."""
    lines = [
        f"floor {floor:.3f}",
        f"{'split':5} {'lang':6} {'queries':>7} {'precision':>9} {'recall':>6} {'false match':>11}",
    ]
    for split in ("dev", "test"):
        rows: dict[str, list[Outcome]] = defaultdict(list)
        for outcome in found:
            if outcome.split == split:
                rows[outcome.lang].append(outcome)
                rows["all"].append(outcome)
        for lang in (*LANGUAGES, "all"):
            f = figures(rows[lang], floor)
            lines.append(
                f"{split:5} {lang:6} {f['queries']:7.0f} {f['precision']:9.3f} "
                f"{f['recall']:6.3f} {f['false_match']:11.3f}"
            )
    return "\n".join(lines)


def sweep(found: list[Outcome]) -> float:
    """The floor with the best F0.5 on the dev split (precision weighs twice recall)."""
    dev = [o for o in found if o.split == "dev"]
    best: tuple[float, float] | None = None
    for step in range(-50, 201):
        floor = step / 1000
        f = figures(dev, floor)
        p, r = f["precision"], f["recall"]
        score = 1.25 * p * r / (0.25 * p + r) if p + r else 0.0
        if best is None or score > best[0] + 1e-12:
            best = (score, floor)
    assert best is not None
    return best[1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Print the figures at `MATCH_FLOOR` (and, with ``--sweep``, the dev split's best)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="choose the floor on dev")
    args = parser.parse_args(argv)
    found = asyncio.run(outcomes())
    print(table(found, MATCH_FLOOR))
    result: dict[str, Any] = {"floor": MATCH_FLOOR}
    if args.sweep:
        chosen = sweep(found)
        print(f"\ndev split's best floor (F0.5): {chosen:.3f}")
        result["swept"] = chosen
    return result


if __name__ == "__main__":
    main()
