"""MCP search latency: ``search_memories`` over ``/memory/mcp`` against the assistant's own recall.

One user holds ``--facts`` facts (1,000 by default) in two places, written the same way:

* a real ``langgraph dev`` (the scripted model, the project's auth with a dev token), seeded
  through MCP itself: ``add_memory`` calls of 50 statements each, so every fact went through
  extraction and consolidation and has its vector kept, as in use;
* this process's in-memory store (the same embeddings and index), seeded through
  `assistant.memory.UserMemory.apply` with the same facts, which is what the server does with
  the model's answer.

Then the same ``--queries`` questions (none seen before by either side, so each embeds its
query once) are asked of both: ``search_memories`` through the MCP SDK's own client over
Streamable HTTP (a round trip: HTTP, the guard, auth, JSON-RPC, recall, the answer), and
`assistant.memory.recall` in process (recall alone). The p50s and their ratio are printed.

    .venv/bin/python bench/mcp_latency.py [--facts 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation, TextContent

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant import memory
from assistant.config.constants import MCP_PATH
from assistant.memory import MemoryOperation
from assistant.server.persistence.stores import make_store
from devserver import DevServer

USER = "bench-user"
TOKEN = "bench-token-0123456789"
BATCH = 50
"""Statements per ``add_memory`` call (about 1,100 characters, under the 2,000 cap)."""

ADJECTIVES = [
    "crimson", "quiet", "spicy", "ancient", "tiny", "wooden", "frozen", "golden", "bitter",
    "gentle", "noisy", "velvet", "rusty", "sunny", "hollow", "silver", "humid", "narrow",
    "fragrant", "brisk", "muddy", "polished", "salty", "woolen", "electric", "faded", "lush",
    "stormy", "crisp", "dusty", "glassy", "misty",
]  # fmt: skip
NOUNS = [
    "kites", "teapots", "trains", "lanterns", "gardens", "violins", "harbors", "novels",
    "bridges", "mushrooms", "canyons", "bicycles", "pianos", "orchards", "chess sets",
    "typewriters", "islands", "markets", "glaciers", "lighthouses", "telescopes", "cathedrals",
    "noodles", "fountains", "deserts", "sailboats", "vineyards", "museums", "forests",
    "records", "puzzles", "spices", "maps",
]  # fmt: skip


def things(count: int) -> list[str]:
    """``count`` distinct things a user may like ("crimson kites", ...)."""
    pairs = [f"{adjective} {noun}" for adjective, noun in itertools.product(ADJECTIVES, NOUNS)]
    if count > len(pairs):
        raise SystemExit(f"--facts may be at most {len(pairs)}, got {count}")
    random.Random(7).shuffle(pairs)
    return pairs[:count]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(part.text for part in content if isinstance(part, TextContent))


async def over_mcp(url: str, liked: list[str], questions: list[str], limit: int) -> list[float]:
    """Seed the server through ``add_memory``, then time ``search_memories`` (ms each)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(*streams, client_info=Implementation(name="bench", version="1")) as session,
    ):
        await session.initialize()
        started = time.perf_counter()
        for start in range(0, len(liked), BATCH):
            text = " ".join(f"I like {thing}." for thing in liked[start : start + BATCH])
            result = await session.call_tool("add_memory", {"text": text})
            assert not result.is_error, text_of(result)
        facts = (await http.get(url.replace(MCP_PATH, "/memory/facts"))).json()["facts"]
        stored = len(facts)
        print(
            f"server: {stored} facts stored through {len(liked) // BATCH} add_memory calls "
            f"in {time.perf_counter() - started:.1f} s"
        )
        await session.call_tool("search_memories", {"query": "warm-up", "limit": limit})
        timings = []
        for question in questions:
            started = time.perf_counter()
            result = await session.call_tool("search_memories", {"query": question, "limit": limit})
            timings.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, text_of(result)
        return timings


async def in_process(liked: list[str], questions: list[str], limit: int) -> list[float]:
    """Seed an in-memory store through the memory layer, then time `memory.recall` (ms each)."""
    store = make_store()
    for start in range(0, len(liked), BATCH):
        operations = [
            MemoryOperation(
                action="add", content=f"Likes {thing}", category="preference", confidence=0.9
            )
            for thing in liked[start : start + BATCH]
        ]
        await memory.UserMemory(store, USER).apply(operations, [], min_confidence=0.6)
    print(f"in process: {len(await memory.list_memories(store, USER))} facts stored")
    await memory.recall(store, USER, "warm-up", limit=limit)
    timings = []
    for question in questions:
        started = time.perf_counter()
        await memory.recall(store, USER, question, limit=limit)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def report(name: str, timings: list[float]) -> float:
    p50 = statistics.median(timings)
    print(
        f"{name:<44} p50 {p50:7.1f} ms   p90 {percentile(timings, 0.9):7.1f} ms   "
        f"max {max(timings):7.1f} ms   (n={len(timings)})"
    )
    return p50


async def main(facts: int, queries: int, limit: int) -> None:
    liked = things(facts)
    rng = random.Random(11)
    questions = [
        f"Do I like {thing}? ({number})"
        for number, thing in enumerate(rng.choices(liked, k=queries))
    ]
    with tempfile.TemporaryDirectory(prefix="mcp-latency-") as workdir:
        server = DevServer(
            workdir=Path(workdir),
            auth=True,
            env={"ASSISTANT_DEV_TOKENS": f"{TOKEN}={USER}"},
            inherit_settings=False,
        )
        with server:
            mcp_timings = await over_mcp(f"{server.url}{MCP_PATH}", liked, questions, limit)
    local_timings = await in_process(liked, questions, limit)
    print()
    print(f"{facts:,} facts, {queries} questions, limit {limit}")
    mcp_p50 = report("search_memories over MCP (HTTP round trip)", mcp_timings)
    local_p50 = report("memory.recall in process (the assistant's)", local_timings)
    print(f"ratio of p50s: {mcp_p50 / local_p50:.2f}x (the goal: within 2x)")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    asyncio.run(main(args.facts, args.queries, args.limit))
