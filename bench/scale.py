"""Memory at scale: the server's resident memory as users with 1,000 facts each come to recall.

Loads ``--users`` users x ``--facts`` facts into an embedded Postgres (the store `make dev`
uses), with each fact's kept vector written next to it as the memory layer writes it, but
from random unit vectors (embedding a million facts with e5 would take hours and changes
nothing here). Then, in this process, which runs the same memory layer as the server, each
user recalls once, and the process's resident memory is printed as users accumulate.

What it shows: what grows with facts (the store, on disk in Postgres) and what grows with
active users (the in-process recall index, bounded by ``MAX_CACHED_FACTS``).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from langgraph.store.base import BaseStore, PutOp

from assistant import memory
from assistant.memory import index as recall_index
from assistant.memory.facts import fact_key
from assistant.models import EMBEDDING_DIMS
from assistant.storage import embedded_postgres, open_store, stop_embedded_postgres

TOPICS = ["tea", "hiking", "Python", "cats", "Chengdu", "piano", "running", "sushi", "Kyoto"]


def rss_mb() -> float:
    """This process's resident memory in MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def load(store: BaseStore, users: int, facts: int, rng: np.random.Generator) -> None:
    """Write every user's facts and their kept vectors, a user per batch."""
    embeddings = recall_index.store_embeddings(store)
    now = "2026-12-01T00:00:00+00:00"
    for user in range(users):
        user_id = f"user-{user:04d}"
        namespace = memory.user_facts_namespace(user_id)
        vectors = rng.standard_normal((facts, EMBEDDING_DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = [
            f"Fact {i} of {user_id}: likes {TOPICS[i % len(TOPICS)]} ({i})" for i in range(facts)
        ]
        keys = [fact_key(text) for text in texts]
        ops = [
            PutOp(
                namespace,
                key,
                {
                    "content": text,
                    "category": "preference",
                    "status": "current",
                    "pinned": False,
                    "mentions": 1,
                    "history": [],
                    "created_at": now,
                    "updated_at": now,
                },
                index=False,
            )
            for key, text in zip(keys, texts, strict=True)
        ]
        await store.abatch(ops)
        await recall_index._save_vectors(
            store,
            namespace,
            {key: (text, vector) for key, text, vector in zip(keys, texts, vectors, strict=True)},
            embeddings,
        )


async def main(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="assistant-scale-"))
    uri = embedded_postgres(folder)
    rng = np.random.default_rng(7)
    try:
        async with open_store(uri) as store:
            started = time.perf_counter()
            await load(store, args.users, args.facts, rng)
            print(
                f"loaded {args.users} users x {args.facts} facts (with kept vectors) into "
                f"Postgres in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            baseline = rss_mb()
            print(f"process resident memory before any recall: {baseline:.0f} MiB")
            print(" users recalled | facts in the recall index | RSS MiB | growth MiB | ms/recall")
            marks = {m for m in (1, 10, 50, 100, 250, 500, 750, 1000) if m <= args.users}
            marks.add(args.users)
            spent = 0.0
            for user in range(args.users):
                user_id = f"user-{user:04d}"
                began = time.perf_counter()
                await memory.recall(store, user_id, f"what does {user_id} like?", limit=5)
                spent += time.perf_counter() - began
                if user + 1 in marks:
                    registry = recall_index._registry(store)
                    cached = sum(len(entry) for entry in registry.users.values())
                    now = rss_mb()
                    print(
                        f" {user + 1:>14} | {cached:>24,} | {now:>7.0f} | {now - baseline:>10.0f} "
                        f"| {1000 * spent / (user + 1):>9.1f}",
                        flush=True,
                    )
            print(
                f"the index keeps at most MAX_CACHED_FACTS = {recall_index.MAX_CACHED_FACTS:,} "
                "facts across users; past that, least recently used users are dropped and "
                "listed again from Postgres on their next turn"
            )
    finally:
        stop_embedded_postgres(folder)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--facts", type=int, default=1000)
    asyncio.run(main(parser.parse_args()))
