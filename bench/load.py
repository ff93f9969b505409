"""Load test: many concurrent users against a real `langgraph dev`, assistant vs a bare echo graph.

What it measures
    One `langgraph dev` process on loopback (started like `examples/devserver.py`'s `DevServer`,
    scripted offline model, ``--n-jobs-per-worker`` = ``--jobs``) serves two graphs: the
    ``assistant`` and ``echo`` (`bench/echo_graph.py`, one node that echoes the last
    message). Through langgraph-sdk, ``--users`` users each get their own thread and send
    ``--turns`` turns one after another (each `runs.wait` waits for the previous one);
    the users run concurrently. The echo graph gets the same users x turns pattern on
    fresh threads, in the same server process, just before the assistant. Each pair of
    phases runs ``--rounds`` times (default 2: the second round is warm). A phase's
    threads (and so its runs and checkpoints) are deleted when it ends, so that no phase
    pays for another's records: the dev runtime scans every thread and run it holds when
    it creates or joins a run. What the assistant stored stays in the store.

    Turns are bilingual and carry per-user personal facts ("My name is …", "I live in …",
    "我叫…", "我住在…", "我对…过敏", …) that the scripted model extracts. With ``--auth``
    (default) the server uses the project's custom auth with a dev token per user
    (``ASSISTANT_DEV_TOKENS``), so the user id comes from ``Authorization: Bearer tokNN``;
    with ``--no-auth`` it comes from the run context's ``user_id``.

Report
    Per phase: errors, runs/s (completed runs / phase wall time), p50/p95/max turn latency
    (wall time of one `runs.wait`), the server's own view from its log (queue wait and
    execution time per run), and CPU seconds used by the server and by this client.
    Then the assistant/echo throughput ratio per round (goal >= 0.8), and isolation:
    each user's ``("user_facts", user)`` namespace must hold all of their own facts
    (as the scripted extractor finds them in their turns) and no "foreign facts"
    (another user's name or city; goal 0). Error-level records in the server log (a
    failed `remember` still answers the turn) are summarised too. Exit status 1 on
    failed turns, foreign or missing facts, or the overall timeout (default 15 min).

Run (after ``pip install -e '.[dev]'``; a few minutes on 2 cores)::

    python bench/load.py                       # 50 users x 10 turns, 50 jobs, auth on
    python bench/load.py --users 5 --turns 3 --rounds 1 --no-auth   # quick smoke run

Only loopback addresses are used; the scripted model and the bundled embeddings make no
network calls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant.memory import normalize_fact
from devserver import DevServer, group_stats
from scripted import extract_statements

ECHO_GRAPH = Path(__file__).resolve().with_name("echo_graph.py")
ASSISTANT_ID = "assistant"
ECHO_ID = "echo"

# Per-user values: index i gives user i its own name and cities (checked distinct below);
# allergens, jobs and hobbies are shared pools, so they do not count as foreign.
EN_NAMES = (
    "Alice Bruno Chloe Dmitri Elena Farid Greta Hiroshi Ingrid Jamal Keiko Lorenzo Mira "
    "Nadia Oskar Priya Quentin Rosa Sven Tamar Umberto Vera Wesley Ximena Yusuf Zara Amara "
    "Boris Camille Diego Esther Felix Giulia Hamid Isla Jonas Kofi Leila Mateo Noor Olga "
    "Pablo Rania Stefan Tomas Ursula Viktor Wanda Yara Zoltan"
).split()
EN_CITIES = (
    "Lisbon Oslo Nairobi Lima Quito Hanoi Dublin Vienna Prague Warsaw Cairo Dakar Accra "
    "Lagos Bogota Santiago Montreal Toronto Seattle Denver Austin Boston Chicago Phoenix "
    "Portland Helsinki Tallinn Riga Vilnius Krakow Budapest Zagreb Athens Istanbul Tbilisi "
    "Yerevan Baku Tashkent Almaty Mumbai Chennai Dhaka Colombo Bangkok Manila Jakarta Perth "
    "Auckland Sapporo Busan"
).split()
ZH_NAMES = [surname + given for surname in "王李张刘陈杨黄赵吴周" for given in "伟芳娜敏静"]
ZH_CITIES = (
    "北京 上海 广州 深圳 成都 杭州 重庆 武汉 西安 苏州 天津 南京 长沙 郑州 东莞 青岛 沈阳 "
    "宁波 昆明 合肥 佛山 福州 无锡 厦门 哈尔滨 济南 温州 南宁 长春 泉州 石家庄 贵阳 南昌 "
    "金华 常州 嘉兴 南通 徐州 太原 大连 烟台 惠州 台州 绍兴 珠海 兰州 海口 扬州 洛阳 乌鲁木齐"
).split()
EN_ALLERGENS = ("peanuts", "shellfish", "pollen", "penicillin", "latex")
ZH_ALLERGENS = ("花生", "海鲜", "花粉", "青霉素", "芒果")
JOBS = ("nurse", "pilot", "chef", "librarian", "carpenter")
EN_HOBBIES = ("hiking", "chess", "jazz", "painting", "cycling")
ZH_HOBBIES = ("喝茶", "爬山", "下棋", "游泳", "读书")
MAX_USERS = min(len(EN_NAMES), len(EN_CITIES), len(ZH_NAMES), len(ZH_CITIES))


@dataclass(frozen=True)
class User:
    """One simulated user: identity, token and the turns they send."""

    index: int
    user_id: str
    token: str
    turns: tuple[str, ...]
    markers: tuple[str, ...]
    """Values only this user states (names, cities): in anyone else's memory they leak."""

    @property
    def expected_facts(self) -> dict[str, str]:
        """Facts the scripted extractor finds in this user's turns: normalised -> content."""
        return {
            normalize_fact(str(fact["content"])): str(fact["content"])
            for turn in self.turns
            for fact in extract_statements(turn)
        }


def make_users(count: int, turns: int) -> list[User]:
    """``count`` users with ``turns`` turns each (the 10-turn script, cycled if longer)."""
    if not 1 <= count <= MAX_USERS:
        raise SystemExit(f"--users must be between 1 and {MAX_USERS}")
    users = []
    for i in range(count):
        name, city, zh_name, zh_city = EN_NAMES[i], EN_CITIES[i], ZH_NAMES[i], ZH_CITIES[i]
        pool = i % 5
        script = (
            f"Hi! My name is {name} and I live in {city}.",
            f"你好，我叫{zh_name}。",
            "What's the weather like today?",
            f"我住在{zh_city}，我对{ZH_ALLERGENS[pool]}过敏。",
            f"I work as a {JOBS[pool]} and I really like {EN_HOBBIES[pool]}.",
            "Can you remind me where I live?",
            f"我喜欢{ZH_HOBBIES[pool]}。",
            "thanks!",
            f"By the way, I'm allergic to {EN_ALLERGENS[pool]}.",
            "What do you remember about me? 你还记得我吗？",
        )
        chosen = tuple(script[n % len(script)] for n in range(turns))
        users.append(
            User(
                index=i,
                user_id=f"user{i + 1:02d}",
                token=f"tok{i + 1:02d}",
                turns=chosen,
                markers=(name, city, zh_name, zh_city),
            )
        )
    for user in users:  # a marker must never occur in another user's own facts
        for other in users:
            if other is not user:
                clash = [m for m in user.markers for f in other.expected_facts if m.lower() in f]
                assert not clash, f"{user.user_id} marker {clash} occurs in {other.user_id}'s facts"
    return users


class LoadServer(DevServer):
    """DevServer whose langgraph.json also serves the echo graph, with JSON logs."""

    def write_config(self) -> Path:
        """Add ``"echo"`` next to ``"assistant"`` in the config DevServer writes."""
        path = super().write_config()
        config = json.loads(path.read_text(encoding="utf-8"))
        config["graphs"][ECHO_ID] = f"{ECHO_GRAPH}:graph"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        return path


def server_cpu_seconds(pgid: int) -> float | None:
    """User + system CPU seconds of every live process in the server's process group."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(f[11]) + int(f[12]) for _, f in group_stats(pgid)) / ticks
    except (OSError, ValueError, IndexError):
        return None


def load_average() -> str:
    """The 1/5/15-minute load averages (other work on the machine skews the numbers)."""
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of ``values`` (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@dataclass
class Phase:
    """One graph under the full users x turns load."""

    name: str
    graph: str
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    run_ids: set[str] = field(default_factory=set)
    wall_s: float = 0.0
    server_cpu_s: float | None = None
    client_cpu_s: float = 0.0
    model_calls: Counter[str] = field(default_factory=Counter)
    queue_ms: list[float] = field(default_factory=list)
    exec_ms: list[float] = field(default_factory=list)
    started_at: list[float] = field(default_factory=list)
    by_turn: dict[int, list[float]] = field(default_factory=dict)
    """Latencies (ms) by turn number: the first turns of a cold round pay the most."""

    @property
    def bursts(self) -> int:
        """Groups of runs the server started together (no 100 ms gap inside a group)."""
        times = sorted(self.started_at)
        return sum(
            1 for a, b in zip([None, *times], times, strict=False) if a is None or b - a > 0.1
        )

    @property
    def completed(self) -> int:
        return len(self.latencies_ms)

    @property
    def runs_per_s(self) -> float:
        return self.completed / self.wall_s if self.wall_s else 0.0


def check_reply(graph: str, text: str, result: Any) -> str | None:
    """What is wrong with a run's final values, or None when the reply is as expected."""
    if not isinstance(result, dict):
        return f"unexpected result {result!r:.200}"
    if "__error__" in result:
        return f"run failed: {result['__error__']!r:.300}"
    messages = result.get("messages") or []
    last = messages[-1] if messages else {}
    content = str(last.get("content", ""))
    if last.get("type") != "ai":
        return f"last message is {last.get('type')!r}, not an AI reply"
    if graph == ECHO_ID and content != f"echo: {text}":
        return f"echo mismatch: {content!r:.120}"
    if graph == ASSISTANT_ID and not content.startswith("[scripted]"):
        return f"not a scripted reply: {content!r:.120}"
    return None


async def run_user(
    phase: Phase, client: LangGraphClient, user: User, thread_id: str, auth: bool
) -> None:
    """Send the user's turns one after another on their thread."""
    context = None if auth else {"user_id": user.user_id}
    for number, text in enumerate(user.turns, start=1):
        started = time.perf_counter()
        try:
            result = await client.runs.wait(
                thread_id,
                phase.graph,
                input={"messages": [{"role": "user", "content": text}]},
                context=context,
                raise_error=False,
                on_run_created=lambda meta: phase.run_ids.add(str(meta["run_id"])),
            )
        except Exception as error:  # noqa: BLE001 - every failure is counted and reported
            phase.errors.append(f"{user.user_id} turn {number}: {type(error).__name__}: {error}")
            continue
        elapsed_ms = (time.perf_counter() - started) * 1000
        problem = check_reply(phase.graph, text, result)
        if problem:
            phase.errors.append(f"{user.user_id} turn {number}: {problem}")
        else:
            phase.latencies_ms.append(elapsed_ms)
            phase.by_turn.setdefault(number, []).append(elapsed_ms)


async def run_phase(
    phase: Phase,
    server: LoadServer,
    clients: dict[str, LangGraphClient],
    users: list[User],
    auth: bool,
    deadline: float,
) -> None:
    """Create a fresh thread per user, then run all users concurrently and time it."""
    threads = await asyncio.gather(*(clients[u.user_id].threads.create() for u in users))
    log_mark = count_lines(server.scripted_log_path)
    assert server.process is not None
    cpu_before = server_cpu_seconds(server.process.pid)
    client_before = time.process_time()
    started = time.perf_counter()
    try:
        async with asyncio.timeout_at(deadline):
            await asyncio.gather(
                *(
                    run_user(phase, clients[u.user_id], u, str(t["thread_id"]), auth)
                    for u, t in zip(users, threads, strict=True)
                )
            )
    except TimeoutError:
        phase.errors.append("overall timeout reached during this phase; stopped")
        raise
    finally:
        phase.wall_s = time.perf_counter() - started
        phase.client_cpu_s = time.process_time() - client_before
        cpu_after = server_cpu_seconds(server.process.pid)
        if cpu_before is not None and cpu_after is not None:
            phase.server_cpu_s = cpu_after - cpu_before
        phase.model_calls = count_model_calls(server.scripted_log_path, log_mark)
    # The dev runtime scans every thread and run it holds on each new run: leftovers of
    # earlier phases would slow whichever phase comes later. Each phase starts with none
    # (the assistant's memories live in the store and stay).
    # One at a time: the dev runtime's thread deletion is not safe to run concurrently
    # (with a custom checkpointer, concurrent deletes fail with IndexError in its ops).
    for user, thread in zip(users, threads, strict=True):
        await clients[user.user_id].threads.delete(str(thread["thread_id"]))


def count_lines(path: Path) -> int:
    """Lines in ``path`` so far (0 when it does not exist yet)."""
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def count_model_calls(path: Path, mark: int) -> Counter[str]:
    """Scripted-model calls by kind logged after line ``mark``."""
    calls: Counter[str] = Counter()
    if path.exists():
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle):
                if number >= mark and line.strip():
                    calls[json.loads(line).get("kind", "?")] += 1
    return calls


def attach_server_timings(phases: list[Phase], log_path: Path) -> None:
    """Queue wait and execution time per run, from the server's JSON log."""
    by_run = {run_id: phase for phase in phases for run_id in phase.run_ids}
    if not log_path.exists():
        return
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if "Background run succeeded" not in line or not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        phase = by_run.get(str(record.get("run_id")))
        if phase is not None:
            phase.queue_ms.append(float(record.get("run_wait_time_ms") or 0))
            phase.exec_ms.append(float(record.get("run_exec_ms") or 0))
            with contextlib.suppress(TypeError, ValueError):
                started = datetime.fromisoformat(str(record.get("run_started_at")))
                phase.started_at.append(started.timestamp())


def server_log_errors(log_path: Path) -> Counter[str]:
    """Error-level records in the server's JSON log, by event and last exception line."""
    found: Counter[str] = Counter()
    if not log_path.exists():
        return found
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{") or '"level":"error"' not in line.replace(" ", ""):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        lines = str(record.get("exception") or "").strip().splitlines()
        cause = lines[-1] if lines else ""
        found[f"{record.get('logger', '?')}: {record.get('event', '?')} | {cause}"[:220]] += 1
    return found


@dataclass
class Isolation:
    """What the users' memory namespaces hold after the assistant phases."""

    users: int = 0
    expected: int = 0
    found_own: int = 0
    foreign_facts: list[str] = field(default_factory=list)
    foreign_episodes: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stray_namespaces: list[str] = field(default_factory=list)
    namespaces_note: str = ""
    errors: list[str] = field(default_factory=list)


async def check_isolation(clients: dict[str, LangGraphClient], users: list[User]) -> Isolation:
    """Read each user's facts and episodes with their own client and look for leaks."""
    report = Isolation(users=len(users))
    for user in users:
        client = clients[user.user_id]
        others = [(o.user_id, m) for o in users if o is not user for m in o.markers]
        try:
            facts = (await client.store.search_items(["user_facts", user.user_id], limit=1000))[
                "items"
            ]
            episodes = (
                await client.store.search_items(["user_episodes", user.user_id], limit=1000)
            )["items"]
        except Exception as error:  # noqa: BLE001
            report.errors.append(f"{user.user_id}: {type(error).__name__}: {error}")
            continue
        stored = {normalize_fact(str(item["value"].get("content", ""))) for item in facts}
        expected = user.expected_facts
        report.expected += len(expected)
        report.found_own += len(expected.keys() & stored)
        report.missing += [f"{user.user_id}: {expected[k]!r}" for k in expected if k not in stored]
        for item in facts:
            content = str(item["value"].get("content", ""))
            leaked = [f"{owner}:{m}" for owner, m in others if m.lower() in content.lower()]
            if leaked:
                report.foreign_facts.append(f"{user.user_id} has {content!r} ({leaked[0]})")
            elif normalize_fact(content) not in expected:
                report.unexpected.append(f"{user.user_id}: {content!r}")
        for item in episodes:
            content = json.dumps(item["value"], ensure_ascii=False)
            leaked = [f"{owner}:{m}" for owner, m in others if m.lower() in content.lower()]
            if leaked:
                report.foreign_episodes.append(f"{user.user_id} episode has {leaked[0]}")
    known = {u.user_id for u in users}
    try:
        found = await next(iter(clients.values())).store.list_namespaces(
            prefix=["user_facts"], limit=1000
        )
        report.stray_namespaces = [
            "/".join(ns) for ns in found["namespaces"] if len(ns) != 2 or ns[1] not in known
        ]
        report.namespaces_note = f"{len(found['namespaces'])} user_facts namespaces listed"
    except httpx.HTTPStatusError as error:
        report.namespaces_note = (
            f"namespace listing refused ({error.response.status_code}), as auth confines "
            "the store API to the caller's own namespaces"
        )
    return report


def print_report(
    args: argparse.Namespace,
    phases: list[Phase],
    isolation: Isolation | None,
    total_s: float,
    startup_s: float,
    log_errors: Counter[str],
    out: Callable[[str], None] = print,
) -> bool:
    """Print everything; return True when nothing failed, leaked or went missing."""
    out("")
    header = (
        f"{'phase':<14}{'runs':>6}{'errors':>8}{'wall s':>9}{'runs/s':>9}{'p50 ms':>9}"
        f"{'p95 ms':>9}{'max ms':>9}{'queue p50':>11}{'exec p50':>10}{'exec p95':>10}"
        f"{'bursts':>8}{'srv CPU s':>11}{'srv CPU %':>11}{'CPU ms/run':>12}{'client CPU s':>14}"
    )
    out(header)
    out("-" * len(header))
    for p in phases:
        cpu = f"{p.server_cpu_s:.1f}" if p.server_cpu_s is not None else "n/a"
        share = (
            f"{p.server_cpu_s * 100 / p.wall_s:.0f}"
            if p.server_cpu_s is not None and p.wall_s
            else "n/a"
        )
        per_run = (
            f"{p.server_cpu_s * 1000 / p.completed:.0f}"
            if p.server_cpu_s is not None and p.completed
            else "n/a"
        )
        out(
            f"{p.name:<14}{p.completed:>6}{len(p.errors):>8}{p.wall_s:>9.1f}{p.runs_per_s:>9.2f}"
            f"{percentile(p.latencies_ms, 50):>9.0f}{percentile(p.latencies_ms, 95):>9.0f}"
            f"{max(p.latencies_ms, default=0):>9.0f}"
            f"{percentile(p.queue_ms, 50):>11.0f}{percentile(p.exec_ms, 50):>10.0f}"
            f"{percentile(p.exec_ms, 95):>10.0f}{p.bursts:>8}{cpu:>11}{share:>11}{per_run:>12}"
            f"{p.client_cpu_s:>14.2f}"
        )
    out("")
    out(
        "latency = wall time of one runs.wait; queue/exec = the server's run_wait_time_ms / "
        "run_exec_ms from its log;\nbursts = groups of runs the server started together; "
        "srv CPU % = server CPU time / phase wall time (100 = one core busy)"
    )
    for p in phases:
        if p.by_turn:
            turns = " ".join(
                f"{n}:{percentile(v, 50):.0f}/{max(v):.0f}" for n, v in sorted(p.by_turn.items())
            )
            out(f"latency p50/max ms by turn, {p.name}: {turns}")
    for p in phases:
        if p.model_calls:
            calls = ", ".join(f"{k} {v}" for k, v in sorted(p.model_calls.items()))
            out(f"scripted model calls in {p.name}: {calls}")
    out("")
    ok = True
    rounds = sorted({p.name.split("#")[1] for p in phases})
    for r in rounds:
        pair = {p.graph: p for p in phases if p.name.endswith(f"#{r}")}
        if ASSISTANT_ID in pair and ECHO_ID in pair and pair[ECHO_ID].runs_per_s:
            ratio = pair[ASSISTANT_ID].runs_per_s / pair[ECHO_ID].runs_per_s
            verdict = "meets" if ratio >= 0.8 else f"misses by {0.8 - ratio:.2f}"
            warm = " (warm)" if r != "1" else ""
            out(
                f"throughput ratio assistant/echo, round {r}{warm}: {ratio:.2f} "
                f"({pair[ASSISTANT_ID].runs_per_s:.2f} / {pair[ECHO_ID].runs_per_s:.2f} runs/s; "
                f"goal >= 0.8: {verdict})"
            )
    errors = [e for p in phases for e in p.errors]
    out(f"errors: {len(errors)}")
    for error in errors[:5]:
        out(f"  {error}")
    ok = ok and not errors
    out(
        f"server-logged errors (runs still answered): {sum(log_errors.values())}"
        + (" (numbers in messages differ per batch; grouped by text)" if log_errors else "")
    )
    for text, count in log_errors.most_common(3):
        out(f"  {count} x {text}")
    if isolation is not None:
        out(
            f"isolation: {isolation.users} users; own facts stored {isolation.found_own}/"
            f"{isolation.expected}; foreign facts {len(isolation.foreign_facts)} (goal 0); "
            f"foreign episodes {len(isolation.foreign_episodes)}; "
            f"unexpected facts {len(isolation.unexpected)}"
        )
        for label, lines in (
            ("foreign", isolation.foreign_facts[:5] + isolation.foreign_episodes[:3]),
            ("unexpected", isolation.unexpected[:5]),
            ("store read failed", isolation.errors[:5]),
        ):
            for line in lines:
                out(f"  {label}: {line}")
        if isolation.missing:
            kinds = Counter(m.split(": ", 1)[1].split(" ")[0].strip("'") for m in isolation.missing)
            users_hit = len({m.split(":")[0] for m in isolation.missing})
            out(
                f"  missing own facts: {len(isolation.missing)} across {users_hit} users; "
                f"by first word: {dict(kinds.most_common(8))}"
            )
            for line in isolation.missing[:3]:
                out(f"  missing: {line}")
        out(
            f"namespaces: {isolation.namespaces_note}"
            + (f"; strays: {isolation.stray_namespaces[:5]}" if isolation.stray_namespaces else "")
        )
        ok = ok and not (
            isolation.foreign_facts
            or isolation.foreign_episodes
            or isolation.missing
            or isolation.errors
            or isolation.stray_namespaces
        )
    out(
        f"server start: {startup_s:.1f} s; total wall time: {total_s:.1f} s; "
        f"load average now {load_average()}"
    )
    return ok


async def drive(
    args: argparse.Namespace, server: LoadServer, users: list[User], deadline: float
) -> tuple[list[Phase], Isolation | None]:
    """Run the echo and assistant phases, ``--rounds`` times, then check isolation."""
    timeout = httpx.Timeout(connect=10.0, read=600.0, write=30.0, pool=600.0)
    clients = {
        u.user_id: get_client(
            url=server.url,
            api_key=None,
            headers={"Authorization": f"Bearer {u.token}"} if args.auth else None,
            timeout=timeout,
        )
        for u in users
    }
    phases: list[Phase] = []
    isolation: Isolation | None = None
    try:
        for r in range(1, args.rounds + 1):
            for graph in (ECHO_ID, ASSISTANT_ID):
                phase = Phase(name=f"{graph} #{r}", graph=graph)
                phases.append(phase)
                print(f"running {phase.name}: {len(users)} users x {args.turns} turns ...")
                await run_phase(phase, server, clients, users, args.auth, deadline)
                print(
                    f"  done in {phase.wall_s:.1f} s, {phase.completed} runs, "
                    f"{len(phase.errors)} errors",
                    flush=True,
                )
        async with asyncio.timeout_at(deadline):
            isolation = await check_isolation(clients, users)
    except TimeoutError:
        print("overall timeout reached; reporting what ran", flush=True)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients.values()), return_exceptions=True)
    return phases, isolation


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50, help="concurrent users (50)")
    parser.add_argument("--turns", type=int, default=10, help="turns per user (10)")
    parser.add_argument("--jobs", type=int, default=50, help="--n-jobs-per-worker (50)")
    parser.add_argument(
        "--auth",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="custom auth with a dev token per user (default on)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="echo+assistant rounds (2)")
    parser.add_argument(
        "--storage",
        choices=("postgres", "memory"),
        default="memory",
        help="where the server keeps threads, checkpoints and the store (memory)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="overall limit in seconds (900)"
    )
    parser.add_argument("--workdir", type=Path, help="server working directory (a temp dir)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the working directory (server.log etc.)"
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.jobs < 1 or args.rounds < 1:
        parser.error("--turns, --jobs and --rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    deadline_wall = began + args.timeout
    users = make_users(args.users, args.turns)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="assistant-load-"))
    env: dict[str, str | None] = {"LOG_JSON": "true", "LOG_COLOR": "false"}
    if args.auth:
        env["ASSISTANT_DEV_TOKENS"] = ",".join(f"{u.token}={u.user_id}" for u in users)
    server = LoadServer(
        workdir=workdir,
        scripted=True,
        auth=args.auth,
        n_jobs_per_worker=args.jobs,
        env=env,
        storage=args.storage,
        startup_timeout_s=min(180.0, args.timeout),
    )
    print(
        f"bench/load.py: {args.users} users x {args.turns} turns, {args.rounds} round(s), "
        f"--n-jobs-per-worker {args.jobs}, auth {'on (dev tokens)' if args.auth else 'off'}, "
        f"{os.cpu_count()} CPUs (load average {load_average()}); workdir {workdir}",
        flush=True,
    )
    phases: list[Phase] = []
    isolation: Isolation | None = None
    startup_s = 0.0
    try:
        server.start()
        startup_s = time.perf_counter() - began
        print(f"server ready at {server.url} in {startup_s:.1f} s", flush=True)
        loop_deadline = deadline_wall - time.perf_counter()
        phases, isolation = asyncio.run(_drive_with_deadline(args, server, users, loop_deadline))
    finally:
        server.stop()
    attach_server_timings(phases, server.log_path)
    log_errors = server_log_errors(server.log_path)
    ok = print_report(args, phases, isolation, time.perf_counter() - began, startup_s, log_errors)
    if args.keep or not ok:
        print(f"working directory kept: {workdir} (server.log, scripted_calls.jsonl)")
    elif args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


async def _drive_with_deadline(
    args: argparse.Namespace, server: LoadServer, users: list[User], remaining_s: float
) -> tuple[list[Phase], Isolation | None]:
    deadline = asyncio.get_running_loop().time() + max(1.0, remaining_s)
    return await drive(args, server, users, deadline)


if __name__ == "__main__":
    sys.exit(main())
