"""Four server-like processes on one Postgres: errors, lost, duplicate and cross-user facts.

What is measured
    ``--workers`` processes (default 4), each with its own compiled graph
    (``assistant.graph.builder`` with ``AsyncPostgresSaver`` and ``AsyncPostgresStore``
    from ``assistant.server.persistence.storage``, its own connection pools) and the scripted model
    (``ScriptedChatModel`` from examples/scripted.py: rule-based replies and fact extraction,
    no network), on one Postgres with pgvector: the embedded one (started here, in a temp
    folder) or ``--postgres-uri``. Embeddings are the real bundled e5.

    ``--users`` users (default 50) x ``--rounds`` rounds (default 5) x 2 threads = 10
    turns per user. Each user has two threads; in each round both threads get a turn at
    the same moment, saying the same thing, each sent to a worker picked at random, so
    two processes consolidate the same user's same new fact at once. A user's next round
    starts when both turns of the round are done. Each user has their own made-up names
    (``Kestrel07``, ...), so a fact that lands in another user's memory is recognisable.

    Printed: turns failed (an exception, or ``remember`` reporting a failed
    extraction), facts lost (a statement's fact not among the user's current facts at
    the end), duplicate facts (current facts with the same normalised text), cross-user
    facts (a fact naming another user's words), wall time and turns per second, and
    the same turns run by ONE process for comparison.

Run (offline)::

    python bench/concurrency.py [--workers 4] [--users 50] [--rounds 5] [--postgres-uri URI]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import queue
import random
import shutil
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _examples  # noqa: F401 (puts examples/ on the path: the workers import scripted)

STATEMENTS = (
    "My name is {name}. I live in {city}.",
    "I am allergic to {food}.",
    "I work as a {job}.",
    "I really like {hobby}.",
    "My dog is named {pet}.",
)
"""What each round's two turns say (the scripted model extracts one fact per clause)."""

EXPECTED = (
    ("Name is {name}", "Lives in {city}"),
    ("Allergic to {food}",),
    ("Works as {job}",),
    ("Likes {hobby}",),
    ("Dog is {pet}",),
)
"""The facts each round must leave, in the scripted model's wording."""


def words(user: int) -> dict[str, str]:
    """Made-up words that belong to one user only."""
    return {
        "name": f"Kestrel{user:02d}",
        "city": f"Vorland{user:02d}",
        "food": f"quillnut{user:02d}",
        "job": f"lamplighter{user:02d}",
        "hobby": f"zither{user:02d} music",
        "pet": f"Rufus{user:02d}",
    }


@dataclass(frozen=True)
class Turn:
    user: int
    thread: int
    round: int


# --------------------------------------------------------------------------- workers


def worker_main(uri: str, tasks: Any, results: Any, worker: int) -> None:
    asyncio.run(_worker(uri, tasks, results, worker))


async def _worker(uri: str, tasks: Any, results: Any, worker: int) -> None:
    from langchain_core.messages import HumanMessage

    from assistant.graph import builder
    from assistant.inference import models
    from assistant.run.context import Context
    from assistant.server.persistence.storage import open_checkpointer, open_store
    from scripted import ScriptedChatModel

    model = ScriptedChatModel()
    models.get_chat_model = lambda model_name="": model  # the one model seam
    async with open_store(uri) as store, open_checkpointer(uri) as saver:
        graph = builder.compile(checkpointer=saver, store=store)
        running: set[asyncio.Task[None]] = set()

        async def run(turn: Turn, thread_id: str, text: str) -> None:
            error = ""
            try:
                state = await graph.ainvoke(
                    {"messages": [HumanMessage(content=text)]},
                    {"configurable": {"thread_id": thread_id}},
                    context=Context(user_id=f"user-{turn.user:02d}"),
                )
                if state.get("metrics", {}).get("extraction") == "failed":
                    error = "remember: extraction failed"
            except Exception as failure:  # counted, and the run goes on
                error = f"{type(failure).__name__}: {failure}"
            results.put((turn, worker, error))

        while True:
            task = await asyncio.to_thread(tasks.get)
            if task is None:
                break
            job = asyncio.create_task(run(*task))
            running.add(job)
            job.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running)


# --------------------------------------------------------------------------- the run


def run_workers(uri: str, workers: int, users: int, rounds: int, seed: int) -> dict[str, Any]:
    context = mp.get_context("spawn")
    task_queues = [context.Queue() for _ in range(workers)]
    results = context.Queue()
    processes = [
        context.Process(target=worker_main, args=(uri, task_queues[i], results, i), daemon=True)
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    rng = random.Random(seed)
    run_id = uuid.uuid4().hex[:8]
    threads = {(u, t): f"{run_id}-{u:02d}-{t}" for u in range(users) for t in (0, 1)}
    per_worker: Counter[int] = Counter()

    def dispatch(user: int, round_: int) -> None:
        text = STATEMENTS[round_].format(**words(user))
        for thread in (0, 1):
            worker = rng.randrange(workers)
            task_queues[worker].put((Turn(user, thread, round_), threads[(user, thread)], text))

    started = time.perf_counter()
    for user in range(users):
        dispatch(user, 0)
    done: Counter[tuple[int, int]] = Counter()
    errors: list[str] = []
    expected_turns = users * rounds * 2
    for _ in range(expected_turns):
        try:
            turn, worker, error = results.get(timeout=600)
        except queue.Empty:
            errors.append("timed out waiting for a turn")
            break
        per_worker[worker] += 1
        if error:
            errors.append(f"user {turn.user} round {turn.round} thread {turn.thread}: {error}")
        done[(turn.user, turn.round)] += 1
        if done[(turn.user, turn.round)] == 2 and turn.round + 1 < rounds:
            dispatch(turn.user, turn.round + 1)
    elapsed = time.perf_counter() - started
    for task_queue in task_queues:
        task_queue.put(None)
    for process in processes:
        process.join(timeout=60)
    return {
        "elapsed": elapsed,
        "turns": sum(per_worker.values()),
        "errors": errors,
        "per_worker": dict(sorted(per_worker.items())),
    }


async def check_facts(uri: str, users: int, rounds: int) -> dict[str, Any]:
    from assistant import memory
    from assistant.server.persistence.storage import open_store

    lost: list[str] = []
    duplicates: list[str] = []
    cross: list[str] = []
    total = 0
    async with open_store(uri) as store:
        for user in range(users):
            facts = await memory.list_memories(store, f"user-{user:02d}")
            total += len(facts)
            texts = [str(item.value["content"]) for item in facts]
            normal = Counter(memory.normalize_fact(text) for text in texts)
            duplicates += [f"user {user}: {t!r} x{n}" for t, n in normal.items() if n > 1]
            for round_ in range(rounds):
                for wanted in EXPECTED[round_]:
                    fact = wanted.format(**words(user))
                    if memory.normalize_fact(fact) not in normal:
                        lost.append(f"user {user}: {fact!r}")
            others = [w for o in range(users) if o != user for w in words(o).values()]
            cross += [f"user {user}: {t!r}" for t in texts if any(w in t for w in others)]
    return {"lost": lost, "duplicates": duplicates, "cross": cross, "facts": total}


def fresh_database(base_uri: str, name: str) -> str:
    import psycopg

    from assistant.server.persistence.storage import database_uri

    with psycopg.connect(base_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_uri(base_uri, name)


async def prepare(uri: str) -> None:
    """Create the tables once, before the workers race to."""
    from assistant.server.persistence.storage import open_checkpointer, open_store

    async with open_store(uri), open_checkpointer(uri):
        pass


def report(label: str, run: dict[str, Any], facts: dict[str, Any], expected: int) -> None:
    print(f"\n{label}")
    rate = run["turns"] / run["elapsed"]
    print(f"  turns: {run['turns']} in {run['elapsed']:.1f} s -> {rate:.2f} turns/s")
    print(f"  turns per worker: {run['per_worker']}")
    print(f"  errors: {len(run['errors'])}")
    for line in run["errors"][:5]:
        print(f"    {line}")
    print(f"  facts stored: {facts['facts']} (expected {expected})")
    for name in ("lost", "duplicates", "cross"):
        label_ = {
            "lost": "facts lost",
            "duplicates": "duplicate facts",
            "cross": "cross-user facts",
        }
        print(f"  {label_[name]}: {len(facts[name])}")
        for line in facts[name][:5]:
            print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=len(STATEMENTS), choices=range(1, 6))
    parser.add_argument("--postgres-uri", default="", help="default: an embedded one, here")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--skip-single", action="store_true", help="skip the 1-process run")
    args = parser.parse_args()

    from assistant.server.persistence.storage import embedded_postgres, stop_embedded_postgres

    folder = None
    base = args.postgres_uri
    if not base:
        folder = Path(tempfile.mkdtemp(prefix="assistant-bench-pg-"))
        base = embedded_postgres(folder / "data")
    print(f"load average at start: {os.getloadavg()[0]:.2f}, cores: {os.cpu_count()}")
    expected = args.users * sum(len(EXPECTED[r]) for r in range(args.rounds))
    try:
        runs = [(args.workers, "concurrent")]
        if not args.skip_single:
            runs.append((1, "baseline"))
        for workers, name in runs:
            uri = fresh_database(base, f"bench_{name}_{uuid.uuid4().hex[:8]}")
            asyncio.run(prepare(uri))
            run = run_workers(uri, workers, args.users, args.rounds, args.seed)
            facts = asyncio.run(check_facts(uri, args.users, args.rounds))
            report(
                f"{workers} process(es), {args.users} users x {args.rounds * 2} turns "
                f"(2 threads per user, both threads' turns of a round at once)",
                run,
                facts,
                expected,
            )
    finally:
        if folder is not None:
            stop_embedded_postgres(folder / "data")
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
