"""Durable `make dev`: threads, checkpoints and memories in Postgres survive a crash.

Each test owns its servers (it crashes or restarts them): the ``durable`` preset, or
``dev_tokens`` or ``make_dev`` with ``storage="postgres"`` (what ``make dev`` serves),
on a database of its own in the embedded Postgres the test session starts, or on an
embedded Postgres the server starts itself in its working directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_helpers import (
    ASSISTANT_ID,
    DEV_TOKENS,
    SLOW_MARK,
    StartServer,
    connect,
    current_facts,
    new_thread,
    run_turn,
    stored_episodes,
    stored_items,
    thread_values,
    unique,
    user_message,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from devserver import DevServer
from helpers import create_database
from scripted import SLOW_SECONDS

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

SMALL_BUDGET = {"max_context_tokens": 120, "keep_recent_tokens": 50, "summary_max_tokens": 80}
"""Small enough that the third turn is compressed into a summary."""


@pytest.fixture
def database(postgres_uri: str) -> str:
    """A fresh database for one test, in the session's embedded Postgres."""
    return create_database(postgres_uri, f"e2e_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def pg_folder() -> Iterator[Path]:
    """A temp folder for an embedded Postgres of the test's own, outside pytest's tmp.

    As root, pgserver runs Postgres as user ``pgserver``, which must traverse the
    folders above its data; pytest keeps its temp root private (0700).
    """
    folder = Path(tempfile.mkdtemp(prefix="assistant-pg-"))
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def _messages(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(m["id"], m["type"], m["content"]) for m in values["messages"]]


async def test_a_crash_right_after_a_run_loses_nothing(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    workdir = tmp_path / "crash"
    user_id = unique("crash")
    marker = unique("crash")
    context: dict[str, Any] = {"user_id": user_id, **SMALL_BUDGET}

    first = own_server("durable", workdir, postgres_uri=database)
    async with get_client(url=first.url, api_key=None) as sdk:
        old_thread = await new_thread(sdk)
        for text in (
            f"({marker} 1) Hi, my name is Alice and I live in Hangzhou.",
            f"({marker} 2) I am allergic to peanuts, so please keep that in mind.",
            f"({marker} 3) I really like green tea with jasmine in the afternoon.",
        ):
            await run_turn(first, sdk, old_thread, text, **context)
        old_before = await thread_values(sdk, old_thread)
        # A thread created and run moments before the crash: its record is not yet
        # flushed by the dev runtime (every ~10 s).
        new = await new_thread(sdk)
        await run_turn(first, sdk, new, f"({marker} 4) I work as a nurse.", user_id=user_id)
        new_before = await thread_values(sdk, new)
        facts_before = await stored_items(sdk, ["user_facts", user_id])
        episodes_before = await stored_episodes(sdk, user_id)
        first.kill()  # SIGKILL of the whole process group, as soon as the run returned

    assert old_before.get("summary"), f"no summary after three turns: {old_before}"
    assert any("nurse" in fact["content"] for fact in facts_before.values()), facts_before

    second = own_server("durable", workdir, postgres_uri=database)
    async with get_client(url=second.url, api_key=None) as sdk:
        old_after = await thread_values(sdk, old_thread)
        assert _messages(old_after) == _messages(old_before), second.log_tail()
        assert old_after["summary"] == old_before["summary"]
        new_after = await thread_values(sdk, new)
        assert _messages(new_after) == _messages(new_before), second.log_tail()
        thread = await sdk.threads.get(new)
        assert thread["thread_id"] == new
        assert await stored_items(sdk, ["user_facts", user_id]) == facts_before
        assert await stored_episodes(sdk, user_id) == episodes_before

        values = await run_turn(second, sdk, new, f"({marker} 5) Where do I work?", user_id=user_id)
        assert len(values["messages"]) == len(new_before["messages"]) + 2


async def test_postgres_restarted_under_a_running_server(
    tmp_path: Path, own_server: StartServer, pg_folder: Path
) -> None:
    from assistant.server.persistence.storage import embedded_postgres, stop_embedded_postgres

    data = pg_folder
    uri = embedded_postgres(data)
    # Only now: embedded_postgres imports pgserver with platformdirs' warning about an unset
    # XDG_RUNTIME_DIR silenced, and this test may be the first in its worker to import it.
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    try:
        server = own_server("durable", tmp_path / "server", postgres_uri=uri)
        user_id = unique("restart")
        context = {"user_id": user_id}
        async with get_client(url=server.url, api_key=None) as sdk:
            thread = await new_thread(sdk)
            await run_turn(server, sdk, thread, "I live in Hangzhou.", **context)
            before = await current_facts(sdk, user_id)

            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=data.resolve(), user="pgserver")

            values = await run_turn(
                server, sdk, thread, "I am allergic to peanuts.", user_id=user_id
            )
            assert len(values["messages"]) == 4
            after = await current_facts(sdk, user_id)
        assert before.items() <= after.items()
        assert any("peanut" in fact["content"] for fact in after.values()), after
    finally:
        stop_embedded_postgres(data)


def _postmaster_pid(data: Path) -> int:
    return int((data / "postmaster.pid").read_text(encoding="utf-8").splitlines()[0])


async def test_the_embedded_database_recovers_from_a_crash_and_is_shared(
    tmp_path: Path, own_server: StartServer, pg_folder: Path
) -> None:
    """The server's own embedded Postgres: killed dirty with it, then used by two servers."""
    workdir = tmp_path / "embedded"
    data = pg_folder
    env: dict[str, str | None] = {"ASSISTANT_POSTGRES_DIR": str(data)}
    user_id = unique("embedded")

    first = own_server("durable", workdir, env=env)
    async with get_client(url=first.url, api_key=None) as sdk:
        thread = await new_thread(sdk)
        await run_turn(first, sdk, thread, "My name is Alice.", user_id=user_id)
        facts = await current_facts(sdk, user_id)
    assert facts
    postgres = _postmaster_pid(data)
    first.kill()
    os.kill(postgres, signal.SIGKILL)  # the database dies mid-flight too: a dirty folder

    second = own_server("durable", workdir, env=env)
    third = own_server("durable", tmp_path / "other", env=env)  # same folder
    async with (
        get_client(url=second.url, api_key=None) as sdk,
        get_client(url=third.url, api_key=None) as other,
    ):
        assert await current_facts(sdk, user_id) == facts
        await run_turn(
            third, other, await new_thread(other), "I live in Hangzhou.", user_id=user_id
        )
        assert len(await current_facts(sdk, user_id)) == len(facts) + 1
    assert _postmaster_pid(data) != postgres
    second.stop()
    third.stop()
    assert not (data / "postmaster.pid").exists(), "the last server out did not stop Postgres"


async def test_a_restored_thread_keeps_its_owner(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """With auth, the thread re-created after a crash is still its owner's, and only theirs."""
    options: dict[str, Any] = {"storage": "postgres", "postgres_uri": database}
    workdir = tmp_path / "owner"

    first = own_server("dev_tokens", workdir, **options)
    async with connect(first, DEV_TOKENS["alice"]) as alice:
        thread = await new_thread(alice)
        await run_turn(first, alice, thread, "I live in Hangzhou.")
        before = await thread_values(alice, thread)
        first.kill()

    second = own_server("dev_tokens", workdir, **options)
    async with (
        connect(second, DEV_TOKENS["alice"]) as alice,
        connect(second, DEV_TOKENS["bob"]) as bob,
    ):
        restored = await alice.threads.get(thread)
        assert restored["metadata"].get("owner") == "alice", restored
        assert _messages(await thread_values(alice, thread)) == _messages(before)
        with pytest.raises(NotFoundError):
            await bob.threads.get(thread)
        assert [t["thread_id"] for t in await bob.threads.search()] == []


async def test_a_threads_metadata_and_runs_survive_a_crash(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """kill -9 right after two acknowledged runs: the thread keeps what its client set on
    it and its run list; a thread created just before, that never ran, comes back too."""
    options: dict[str, Any] = {"storage": "postgres", "postgres_uri": database}
    workdir = tmp_path / "metadata"

    first = own_server("dev_tokens", workdir, **options)
    async with connect(first, DEV_TOKENS["alice"]) as alice:
        thread = str((await alice.threads.create(metadata={"purpose": "gift ideas"}))["thread_id"])
        await run_turn(first, alice, thread, "I need a gift idea for my mother.")
        await run_turn(first, alice, thread, "She likes gardening.")
        runs_before = sorted(run["run_id"] for run in await alice.runs.list(thread))
        idle = str((await alice.threads.create(metadata={"purpose": "later"}))["thread_id"])
        first.kill()  # SIGKILL of the whole process group, right after the acknowledgements

    assert len(runs_before) == 2
    second = own_server("dev_tokens", workdir, **options)
    async with (
        connect(second, DEV_TOKENS["alice"]) as alice,
        connect(second, DEV_TOKENS["bob"]) as bob,
    ):
        restored = await alice.threads.get(thread)
        assert restored["metadata"].get("purpose") == "gift ideas", restored
        assert restored["metadata"].get("owner") == "alice", restored
        runs_after = await alice.runs.list(thread)
        assert sorted(run["run_id"] for run in runs_after) == runs_before, second.log_tail()
        for run in runs_after:  # one the records saved while waiting resumes, adding nothing
            await alice.runs.join(thread, run["run_id"])
        runs_after = await alice.runs.list(thread)
        assert {run["status"] for run in runs_after} == {"success"}, runs_after
        found = await alice.threads.search(metadata={"purpose": "gift ideas"})
        assert [t["thread_id"] for t in found] == [thread]
        assert (await alice.threads.get(idle))["metadata"].get("purpose") == "later"
        with pytest.raises(NotFoundError):
            await bob.threads.get(thread)
        values = await run_turn(second, alice, thread, "What did I ask about?")
        assert len(values["messages"]) == 6


# --------------------------------------------------------------------------- rollback, runs cut off

SLOW = {"ASSISTANT_SCRIPTED_SLOW_ON": SLOW_MARK}
"""A reply to a message with SLOW_MARK takes SLOW_SECONDS: a run to catch in flight."""

MAKE_DEV_USER = "default-user"
"""The one user of the ``make_dev`` preset (no token)."""

RUN_RECORDS = Path(".langgraph_api") / ".langgraph_ops.pckl"
"""Where the dev runtime keeps its thread and run records (under the server's workdir)."""

RECORDS_SAVED_EVERY_S = 10.0
"""How often the dev runtime writes them (langgraph-runtime-inmem 0.36.7)."""


def _human_texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"] if m["type"] == "human"]


def _checkpoints_of_run(database: str, run_id: str) -> int:
    import psycopg

    with psycopg.connect(database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE metadata ->> 'run_id' = %s", (run_id,)
        ).fetchone()
    return int(row[0]) if row else 0


async def _until_stored(sdk: LangGraphClient, content: str) -> None:
    """Wait until the user's memory holds ``content`` (stored while the reply is written)."""
    for _ in range(100):
        if content in {f["content"] for f in (await current_facts(sdk, MAKE_DEV_USER)).values()}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{content!r} was never stored")


async def test_a_rollback_on_postgres_takes_the_run_back_and_frees_the_thread(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """``make dev``'s Postgres deletes the rolled-back run (it answered 500, wedging the thread)."""
    server = own_server(
        "make_dev", tmp_path / "rollback", storage="postgres", postgres_uri=database, env=SLOW
    )
    async with connect(server) as sdk:
        thread = await new_thread(sdk)
        await run_turn(server, sdk, thread, "My name is Alice.")
        first = await sdk.runs.create(
            thread, ASSISTANT_ID, input=user_message(f"I live in Lyon. {SLOW_MARK}")
        )
        await _until_stored(sdk, "Lives in Lyon")
        second = await sdk.runs.create(
            thread, ASSISTANT_ID, input=user_message("Hello again"), multitask_strategy="rollback"
        )
        await sdk.runs.join(thread, second["run_id"])

        values = await thread_values(sdk, thread)
        assert _human_texts(values) == ["My name is Alice.", "Hello again"]
        assert len(values["messages"]) == 4, values["messages"]
        assert (await sdk.threads.get(thread))["status"] == "idle"
        with pytest.raises(NotFoundError):
            await sdk.runs.get(thread, first["run_id"])
        assert _checkpoints_of_run(database, first["run_id"]) == 0
        facts = {f["content"] for f in (await current_facts(sdk, MAKE_DEV_USER)).values()}
        assert "Name is Alice" in facts and "Lives in Lyon" not in facts, facts
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            audit = (await http.get("/memory/audit")).json()["audit"]
        assert [entry["action"] for entry in audit].count("rollback") == 1, audit

        # Not wedged: the next run (default strategy: reject if busy) is taken and answered.
        values = await run_turn(server, sdk, thread, "Still there?")
        assert _human_texts(values)[-1] == "Still there?"
    log = server.log_path.read_text(encoding="utf-8", errors="replace")
    assert "missing adelete_for_runs" not in log and "adelete_for_runs is not" not in log


async def _next_save(records: Path, after: float) -> float:
    """Wait until the dev runtime writes its records after mtime ``after``; the new mtime."""
    patience = 3 * RECORDS_SAVED_EVERY_S
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        saved = records.stat().st_mtime if records.exists() else 0.0
        if saved > after:
            return saved
        await asyncio.sleep(0.05)
    raise AssertionError(f"the dev runtime did not write {records} for {patience} s")


async def _status(sdk: LangGraphClient, thread: str, run_id: str) -> str:
    return str((await sdk.runs.get(thread, run_id))["status"])


TURNS = [
    "My name is Alice.",
    f"I like green tea. {SLOW_MARK}",
    "I work as a nurse.",
    "Where do I work?",
]
"""The crash tests' turns: the second is a slow reply to cut off, the third waits behind it."""


async def _slow_and_waiting(sdk: LangGraphClient, thread: str) -> tuple[Any, Any]:
    """Start the slow reply (``TURNS[1]``), with the next run (``TURNS[2]``) queued behind."""
    cut = await sdk.runs.create(thread, ASSISTANT_ID, input=user_message(TURNS[1]))
    waiting = await sdk.runs.create(
        thread, ASSISTANT_ID, input=user_message(TURNS[2]), multitask_strategy="enqueue"
    )
    return cut, waiting


async def _answered_after_restart(
    server: DevServer, sdk: LangGraphClient, thread: str, runs: tuple[Any, Any]
) -> dict[str, Any]:
    """Both ``runs`` finish after the restart, then the last turn: each message once, answered."""
    for run in runs:
        await asyncio.wait_for(sdk.runs.join(thread, run["run_id"]), timeout=60)
        assert await _status(sdk, thread, run["run_id"]) == "success", server.log_tail()
    values = await run_turn(server, sdk, thread, TURNS[3])
    assert _human_texts(values) == TURNS, server.log_tail()
    assert [m["type"] for m in values["messages"]] == ["human", "ai"] * len(TURNS)
    return values


async def test_runs_cut_off_by_a_crash_run_after_a_restart(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """SIGKILL mid-reply with a run queued behind: after a restart both run, then a new one.

    A run left ``running`` (a crash mid-reply, or a thread wedged by an earlier version) is
    set back to ``pending`` at start-up and retried; it resumes from its own checkpoints.
    The dev runtime keeps run records in memory and writes them every ~10 s, so the kill
    comes right after a write that caught the reply in flight and the next run queued.
    """
    workdir = tmp_path / "cut-off"
    options: dict[str, Any] = {"storage": "postgres", "postgres_uri": database}
    records = workdir / RUN_RECORDS

    first = own_server("make_dev", workdir, env=SLOW, **options)
    async with connect(first) as sdk:
        thread = await new_thread(sdk)
        await run_turn(first, sdk, thread, TURNS[0])
        facts_before = await current_facts(sdk, MAKE_DEV_USER)
        # Start the slow reply so that the next write of the records lands in its middle,
        # with seconds to spare on both sides for a busy machine.
        saved = await _next_save(records, after=0.0)
        lead = RECORDS_SAVED_EVERY_S - SLOW_SECONDS / 2 - 0.5
        if time.time() > saved + lead + 1:
            saved = await _next_save(records, after=saved)
        await asyncio.sleep(max(0.0, saved + lead - time.time()))
        cut, queued = await _slow_and_waiting(sdk, thread)
        while await _status(sdk, thread, cut["run_id"]) == "pending":
            await asyncio.sleep(0.05)
        assert records.stat().st_mtime == saved, "the records were written before the reply began"
        await _next_save(records, after=saved)
        assert await _status(sdk, thread, cut["run_id"]) == "running"
        assert await _status(sdk, thread, queued["run_id"]) == "pending"
        first.kill()  # SIGKILL of the whole process group, right after the write

    second = own_server("make_dev", workdir, **options)
    async with connect(second) as sdk:
        await _answered_after_restart(second, sdk, thread, (cut, queued))
        facts_after = await current_facts(sdk, MAKE_DEV_USER)
    assert facts_before.items() <= facts_after.items()
    assert any("nurse" in fact["content"] for fact in facts_after.values()), facts_after
    log = second.log_path.read_text(encoding="utf-8", errors="replace")
    assert log.count("Retrying runs left running") == 1, "the cut-off run was not left running"


WITHDRAWN = "Actually, never mind that."
"""A message whose run is cancelled while it waits: it must never run."""


async def test_acknowledged_runs_the_records_never_held_run_after_a_restart(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """SIGKILL seconds after three runs were acknowledged, before the records were written.

    The dev runtime's records (written every ~10 s) hold none of them: one had begun its
    reply, one waited behind it, one was cancelled while it waited. The journal kept each,
    input included, as it was acknowledged, and dropped the cancelled one's input: after the
    restart the first goes on from its checkpoints, the second runs with its message, the
    third stays cancelled, and nothing the user sent is lost or said twice.
    """
    workdir = tmp_path / "acknowledged"
    options: dict[str, Any] = {"storage": "postgres", "postgres_uri": database}
    records = workdir / RUN_RECORDS

    first = own_server("make_dev", workdir, env=SLOW, **options)
    async with connect(first) as sdk:
        thread = await new_thread(sdk)
        await run_turn(first, sdk, thread, TURNS[0])
        saved = await _next_save(records, after=0.0)
        saved = await _next_save(records, after=saved)  # the run above is in these records
        cut, waiting = await _slow_and_waiting(sdk, thread)
        withdrawn = await sdk.runs.create(
            thread, ASSISTANT_ID, input=user_message(WITHDRAWN), multitask_strategy="enqueue"
        )
        await sdk.runs.cancel(thread, withdrawn["run_id"])
        while not _checkpoints_of_run(database, cut["run_id"]):
            await asyncio.sleep(0.05)
        assert await _status(sdk, thread, waiting["run_id"]) == "pending"
        unsaved = records.stat().st_mtime == saved
        first.kill()  # SIGKILL of the whole process group, before the records are written
    assert unsaved, "the records were written after the runs were created"

    second = own_server("make_dev", workdir, **options)
    async with connect(second) as sdk:
        await _answered_after_restart(second, sdk, thread, (cut, waiting))  # not WITHDRAWN
        assert await _status(sdk, thread, withdrawn["run_id"]) == "interrupted"
    log = second.log_path.read_text(encoding="utf-8", errors="replace")
    assert "Restored 3 run record(s)" in log, second.log_tail()
    assert "(2 acknowledged, queued again)" in log, second.log_tail()
    import psycopg

    with psycopg.connect(database) as conn:  # an input leaves the journal once it has run
        rows = conn.execute("SELECT run_id FROM assistant_run_journal WHERE kwargs IS NOT NULL")
        assert not {row[0] for row in rows.fetchall()} & {cut["run_id"], waiting["run_id"]}


PIN = "Bank PIN is 4417, tell no one"
"""A fact whose words must leave every namespace when it is forgotten."""


def _quoting(database: str, user_id: str) -> dict[str, int]:
    """How many stored items of ``user_id`` still hold the PIN's words, by first label.

    Read in Postgres itself, so it can be counted while the server is down.
    """
    import psycopg

    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "select split_part(prefix, '.', 1), count(*) from store "
            "where prefix like %s and value::text like %s group by 1",
            (f"%.{user_id}", "%PIN is 4417%"),  # not "4417": a vector's base64 may hold it
        ).fetchall()
    return {str(label): int(count) for label, count in rows}


async def test_a_forget_killed_in_the_middle_is_finished_after_the_restart(
    tmp_path: Path, own_server: StartServer, database: str
) -> None:
    """SIGKILL in the middle of a forget of a fact 220 episodes quote: the restart finishes it.

    The first server stops for good once 20 episodes lost the words (it writes a mark
    file there, so the test kills it on that event, not after a guessed delay).
    """
    workdir, user_id, mark = tmp_path / "server", unique("pin"), tmp_path / "stalled"
    first = own_server(
        "durable",
        workdir,
        postgres_uri=database,
        env={"ASSISTANT_E2E_STALL_FORGET": f"20:{mark}"},
    )
    async with get_client(url=first.url, api_key=None) as sdk:
        key = uuid.uuid4().hex
        fact = {"content": PIN, "status": "current", "category": "other", "pinned": False}
        await sdk.store.put_item(["user_facts", user_id], key, fact)
        for n in range(220):
            summary = f"Conversation {n}: the user said {PIN}, and asked about loans."
            episode = {
                "content": summary,
                "thread_id": f"t{n}",
                "ended_at": f"2026-01-{n % 28 + 1:02}",
            }
            await sdk.store.put_item(["user_episodes", user_id], f"t{n}", episode)
    assert _quoting(database, user_id) == {"user_facts": 1, "user_episodes": 220}

    async with httpx.AsyncClient(base_url=first.url, timeout=None) as http:
        forget = asyncio.create_task(
            http.delete(
                f"/memory/facts/{key}",
                params={"user_id": user_id},
                headers={"x-assistant-client": "e2e"},
            )
        )
        for _ in range(1200):  # wait for the mark: the forget is in the middle
            if mark.exists() or forget.done():
                break
            await asyncio.sleep(0.1)
        assert mark.exists(), f"the forget never reached its 21st episode\n{first.log_tail()}"
        first.kill()
        with pytest.raises(httpx.HTTPError):
            await forget
    at_the_crash = _quoting(database, user_id)
    print(f"\nafter the SIGKILL: {at_the_crash} still quote the fact")
    assert at_the_crash == {"user_episodes": 200, "memory_forgets": 1}  # the journal holds it

    second = own_server("durable", workdir, postgres_uri=database)
    async with httpx.AsyncClient(base_url=second.url, timeout=120) as http:
        retry = await http.delete(
            f"/memory/facts/{key}",
            params={"user_id": user_id},
            headers={"x-assistant-client": "e2e"},
        )
        # The retry finishes it (200), unless start-up already had (nothing left: 404).
        assert retry.status_code in (200, 404), retry.text
        if retry.status_code == 200:
            print(f"the retry erased: {retry.json()['erased']}")
        for _ in range(1200):  # start-up's resume may still be writing
            if not _quoting(database, user_id):
                break
            await asyncio.sleep(0.1)
        left = _quoting(database, user_id)
        print(f"after the restart: {left or 'nothing'} quotes the fact")
        assert left == {}, second.log_tail()
        audit = (await http.get("/memory/audit", params={"user_id": user_id})).json()["audit"]
    forgets = [entry for entry in audit if entry["action"] == "forget"]
    assert [(e["fact_key"], e["via"], e["client"]) for e in forgets] == [(key, "api", "e2e")]
