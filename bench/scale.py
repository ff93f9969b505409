"""Memory at scale: the server's resident memory as users with 1,000 facts each come to talk.

Loads ``--users`` users x ``--facts`` facts into an embedded Postgres (the store `make dev`
uses), with each fact's kept vector written next to it as the memory layer writes it, but
from random unit vectors (embedding a million facts with e5 would take hours and changes
nothing here). Then:

* a real ``langgraph dev`` on that Postgres (``make dev``'s storage, the scripted model, no
  auth, ``--jobs`` runs at once) answers one turn from each user, sent by ``--clients``
  concurrent langgraph-sdk clients, and the server's resident memory (every process in
  its process group) is printed as users accumulate, with the turn latency;
* with ``--in-process`` (default on), this process, which runs the same memory layer,
  recalls once per user, and its own resident memory is printed the same way, so what
  the recall index holds can be told from what the server itself holds.

What it shows: what grows with facts (the store, on disk in Postgres) and what grows with
active users (the in-process recall index, bounded by ``MAX_CACHED_FACTS``).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
from langgraph.store.base import BaseStore, PutOp
from langgraph_sdk import get_client

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant import memory
from assistant.inference.models import EMBEDDING_DIMS
from assistant.memory.facts import fact_key
from assistant.memory.search import user_index
from assistant.memory.search import vectors as kept_vectors
from assistant.server.persistence.storage import (
    embedded_postgres,
    open_store,
    stop_embedded_postgres,
)
from devserver import DevServer, group_stats

TOPICS = ["tea", "hiking", "Python", "cats", "Chengdu", "piano", "running", "sushi", "Kyoto"]


MARKS = (1, 10, 50, 100, 250, 500, 750, 1000)
"""Numbers of users after which memory is printed (and the last user, whatever it is)."""


def rss_mb(pid: int | str = "self") -> float:
    """The resident memory of process ``pid`` in MiB (Linux); NaN once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return float("nan")
    for line in lines:
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def group_rss_mb(pgid: int) -> float:
    """The resident memory of every process in process group ``pgid``, in MiB."""
    return sum(rss_mb(pid) for pid, _ in group_stats(pgid))


def marks(users: int) -> set[int]:
    """After how many users to print a row."""
    return {m for m in MARKS if m <= users} | {users}


async def load(store: BaseStore, users: int, facts: int, rng: np.random.Generator) -> None:
    """Write every user's facts and their kept vectors, a user per batch."""
    embeddings = kept_vectors.store_embeddings(store)
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
        await kept_vectors.save_vectors(
            store,
            namespace,
            {
                key: ([text], [vector])
                for key, text, vector in zip(keys, texts, vectors, strict=True)
            },
            embeddings,
        )


async def serve(uri: str, args: argparse.Namespace) -> None:
    """One turn from each user through a real server on ``uri``; print its memory."""
    workdir = Path(tempfile.mkdtemp(prefix="assistant-scale-server-"))
    server = DevServer(
        workdir=workdir,
        scripted=True,
        storage="postgres",
        postgres_uri=uri,
        n_jobs_per_worker=args.jobs,
        inherit_settings=False,
    )
    server.start()
    try:
        assert server.process is not None
        pgid = server.process.pid
        baseline = group_rss_mb(pgid)
        print(f"\nserver ({args.jobs} runs at once, {args.clients} clients), one turn per user")
        print(f"server resident memory, started, before any turn: {baseline:.0f} MiB")
        print(" users served | facts of served users | server RSS MiB | growth MiB | turn p50 ms")
        client = get_client(url=server.url, api_key=None, timeout=httpx.Timeout(300.0))
        latencies: list[float] = []
        served = 0

        async def one_user(user: int) -> None:
            user_id = f"user-{user:04d}"
            thread = await client.threads.create()
            began = time.perf_counter()
            result = await client.runs.wait(
                thread["thread_id"],
                "assistant",
                input={"messages": [{"role": "user", "content": f"what do I like, {user_id}?"}]},
                context={"user_id": user_id},
                raise_error=True,
            )
            latencies.append(1000 * (time.perf_counter() - began))
            if not isinstance(result, dict) or not result.get("messages"):
                raise SystemExit(f"{user_id}: unexpected run result {result!r:.200}")

        for mark in sorted(marks(args.users)):
            pending = iter(range(served, mark))  # shared: each client takes the next user

            async def client_loop(pending: Iterator[int] = pending) -> None:
                for user in pending:
                    await one_user(user)

            await asyncio.gather(*(client_loop() for _ in range(min(args.clients, mark - served))))
            served = mark
            now = group_rss_mb(pgid)
            print(
                f" {served:>12} | {served * args.facts:>21,} | {now:>14.0f} | "
                f"{now - baseline:>10.0f} | {statistics.median(latencies):>11.0f}",
                flush=True,
            )
        await client.aclose()
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


async def recall_in_process(store: BaseStore, args: argparse.Namespace) -> None:
    """Each user recalls once in this process; print its memory and the index's size."""
    baseline = rss_mb()
    print(f"\nthis process (the same memory layer), before any recall: {baseline:.0f} MiB")
    print(" users recalled | facts in the recall index | RSS MiB | growth MiB | ms/recall")
    spent = 0.0
    for user in range(args.users):
        user_id = f"user-{user:04d}"
        began = time.perf_counter()
        await memory.recall(store, user_id, f"what does {user_id} like?", limit=5)
        spent += time.perf_counter() - began
        if user + 1 in marks(args.users):
            registry = user_index.registry(store)
            cached = sum(len(entry) for entry in registry.users.values())
            now = rss_mb()
            print(
                f" {user + 1:>14} | {cached:>24,} | {now:>7.0f} | {now - baseline:>10.0f} "
                f"| {1000 * spent / (user + 1):>9.1f}",
                flush=True,
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
        await serve(uri, args)
        if args.in_process:
            async with open_store(uri) as store:
                await recall_in_process(store, args)
        print(
            f"the index keeps at most MAX_CACHED_FACTS = {user_index.MAX_CACHED_FACTS:,} "
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
    parser.add_argument("--jobs", type=int, default=10, help="server runs at once (10)")
    parser.add_argument("--clients", type=int, default=10, help="concurrent clients (10)")
    parser.add_argument(
        "--in-process",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also recall in this process and print its memory (default on)",
    )
    asyncio.run(main(parser.parse_args()))
