"""Give threads back their records after a crash of `langgraph dev`.

The dev runtime keeps its thread records (id, owner, status) in memory and writes them
to ``.langgraph_api/.langgraph_ops.pckl`` about every 10 s. With the Postgres
checkpointer, a thread's messages are committed with each step, but a thread created
less than ~10 s before a crash comes back without a record: the server answers 404
although its checkpoints are all there.

:func:`restore_thread_records` runs when the checkpointer opens, after the runtime has
loaded its records and before the server takes requests. For every thread that has
checkpoints but no record, it creates the record again with the same id and the
metadata the run left on its latest checkpoint: ``owner`` (stamped by
`assistant.server.auth` on every run), ``graph_id`` and ``assistant_id``. It uses the
runtime's own ``Threads.put``, the call ``POST /threads`` makes (through
`assistant.compat.dev_thread_records`), and patches nothing.

**The journal.** Under ``make dev`` the checkpointer also opens a journal in the same
Postgres (:func:`open_journal`): `assistant.auth` writes a thread's metadata to it when the
thread is created or its metadata changed (:func:`journal_thread`), and each run's record
when it is created (:func:`journal_run`), before the server acknowledges them. At start,
a thread without a record comes back with its whole metadata (``{"purpose": ...}`` as the
client set it, not only the owner), a thread created in that window that never ran comes
back too, and a thread's runs come back in its run list.

**Acknowledged runs.** Once the server has acknowledged a run (its answer's first bytes,
`assistant.server.persistence.acknowledged`), the runtime's record of it, input included,
is journaled too (:func:`journal_acknowledged_run`), and dropped from the journal once the
run has finished. At start, an acknowledged run the runtime's records lost is queued again:
one the crash took before it started runs with its input; one cut off after it wrote
checkpoints goes on from them. A run never acknowledged (refused after the auth handler, or
created from a batch) comes back ``success`` if it wrote checkpoints, else ``interrupted``.
A deleted thread leaves the journal (:func:`forget_thread`).

:func:`resume_interrupted_runs` runs at the same moment. The runtime retries every run
its records saved as ``running`` (a crash cut it off), with the run's input. But the
records may be up to ~10 s older than the checkpoints: a run that had already written
its input, or had even finished, would add the user's message a second time and answer
it twice. Such a run (one with checkpoints stamped with its id) is retried with no
input instead, which LangGraph reads as "go on from the last checkpoint": a finished run
does nothing, a cut-off one finishes its remaining steps. A run that wrote nothing is
retried as it was.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from assistant.compat import dev_thread_records

__all__ = [
    "RESTORED_METADATA",
    "close_journal",
    "forget_run",
    "forget_thread",
    "journal_acknowledged_run",
    "journal_run",
    "journal_thread",
    "open_journal",
    "restore_run_records",
    "restore_thread_records",
    "resume_interrupted_runs",
]

logger = logging.getLogger(__name__)

RESTORED_METADATA = ("owner", "graph_id", "assistant_id")
"""Checkpoint metadata keys copied onto a restored thread record."""

_LATEST_CHECKPOINTS = """
SELECT DISTINCT ON (thread_id) thread_id, metadata
FROM checkpoints
WHERE checkpoint_ns = ''
ORDER BY thread_id, checkpoint_id DESC
"""


# --------------------------------------------------------------------------- the journal

_JOURNAL_TABLES = """
CREATE TABLE IF NOT EXISTS assistant_thread_journal (
    thread_id text PRIMARY KEY,
    metadata jsonb NOT NULL,
    journaled_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS assistant_run_journal (
    run_id text PRIMARY KEY,
    thread_id text NOT NULL,
    record jsonb NOT NULL,
    journaled_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS assistant_run_journal_thread ON assistant_run_journal (thread_id);
ALTER TABLE assistant_run_journal ADD COLUMN IF NOT EXISTS kwargs jsonb;
"""
"""``kwargs``: an acknowledged run's record as the runtime holds it (input, config, context),
kept until the run has finished."""

_journal: list[Any] = []
"""The saver whose connections hold the journal, while `make dev`'s checkpointer is open."""


async def open_journal(saver: Any) -> None:
    """Create the journal's tables on the saver's Postgres and write to it from now on."""
    for statement in filter(None, (part.strip() for part in _JOURNAL_TABLES.split(";"))):
        await _execute(saver, statement)
    _journal[:] = [saver]


def close_journal() -> None:
    """Stop writing to the journal (the checkpointer is closing)."""
    _journal.clear()


async def journal_thread(
    thread_id: object, metadata: dict[str, Any], *, created: bool, owner: str | None = None
) -> None:
    """Keep a thread's metadata: a new thread's, or a change merged into what is kept.

    A change is merged only into a thread ``owner`` owns (``None``: the maintenance
    token's, any thread). Nothing happens outside `make dev`; a failure is logged, never
    raised, so a request never fails for the journal's sake.
    """
    if not _journal or thread_id is None:
        return
    document = json.dumps(metadata or {}, default=str)
    if created:
        statement = (
            "INSERT INTO assistant_thread_journal (thread_id, metadata) VALUES (%s, %s::jsonb) "
            "ON CONFLICT (thread_id) DO NOTHING"
        )
        parameters: tuple[Any, ...] = (str(thread_id), document)
    else:
        statement = (
            "UPDATE assistant_thread_journal SET metadata = metadata || %s::jsonb, "
            "journaled_at = now() WHERE thread_id = %s "
            "AND (%s::text IS NULL OR metadata->>'owner' = %s::text)"
        )
        parameters = (document, str(thread_id), owner, owner)
    await _journal_write(statement, parameters)


async def journal_run(
    run_id: object,
    thread_id: object,
    *,
    assistant_id: object,
    metadata: dict[str, Any],
    multitask_strategy: object,
) -> None:
    """Keep a run's record (not its input), so the thread's run list survives a crash."""
    if not _journal or thread_id is None or run_id is None:
        return
    record = {
        "assistant_id": str(assistant_id) if assistant_id else None,
        "metadata": metadata or {},
        "multitask_strategy": multitask_strategy,
        "created_at": datetime.now(UTC).isoformat(),
    }
    await _journal_write(
        "INSERT INTO assistant_run_journal (run_id, thread_id, record) VALUES (%s, %s, %s::jsonb) "
        "ON CONFLICT (run_id) DO NOTHING",
        (str(run_id), str(thread_id), json.dumps(record, default=str)),
    )


FINISHED = frozenset({"success", "error", "interrupted", "timeout"})
"""Run statuses after which a run's input is in its checkpoints, or never will be."""

_inputs_kept: set[str] = set()
"""Runs whose input this process journaled and has not dropped yet."""


async def journal_acknowledged_run(run_id: str) -> None:
    """Keep the record of a run the server is acknowledging, input included, until it ran.

    Called before the acknowledgement leaves (`assistant.server.persistence.acknowledged`):
    a crash after it finds the run in the journal. The inputs of runs this process kept
    that have finished since are dropped at the same time. Nothing happens outside `make
    dev`; a failure is logged, never raised.
    """
    records = dev_thread_records()
    if not _journal or records is None:
        return
    async with records.connect() as conn:
        wanted = {run_id, *_inputs_kept}
        found: dict[str, dict[str, Any]] = {}
        for run in reversed(records.runs(conn)):  # the newest last: stop once all are seen
            if (key := str(run.get("run_id"))) in wanted:
                found[key] = run
                if len(found) == len(wanted):
                    break
        done = [key for key in _inputs_kept if found.get(key, {}).get("status", "") in FINISHED]
        done += [key for key in _inputs_kept if key not in found]  # its thread was deleted
        run = found.get(run_id)
        kept = (
            json.dumps(run["kwargs"], default=_plain)
            if run is not None and run.get("kwargs") and run.get("status") not in FINISHED
            else None
        )
    if kept is None and not done:
        return
    # Claimed before the write: a run acknowledged meanwhile must not drop the same rows, or
    # the two updates lock them in turn and Postgres ends one as a deadlock.
    _inputs_kept.difference_update(done)
    written = await _journal_write(  # one round trip: this input kept, finished ones dropped
        "UPDATE assistant_run_journal SET kwargs = CASE WHEN run_id = %s THEN %s::jsonb END "
        "WHERE run_id = %s OR run_id = ANY(%s)",
        (run_id, kept, run_id, done),
    )
    if kept is not None and written:
        _inputs_kept.add(run_id)


async def forget_run(run_id: str, *, deleted: bool) -> None:
    """Drop a cancelled run's input from the journal, or a deleted run's whole entry."""
    if not _journal:
        return
    statement = (
        "DELETE FROM assistant_run_journal WHERE run_id = %s"
        if deleted
        else "UPDATE assistant_run_journal SET kwargs = NULL WHERE run_id = %s"
    )
    await _journal_write(statement, (run_id,))
    _inputs_kept.discard(run_id)


def _plain(value: object) -> object:
    """``value`` as JSON can hold it: the caller (a ``BaseUser``) as the dict it was made of.

    >>> _plain(datetime(2026, 1, 2, tzinfo=UTC)), _plain(uuid.UUID(int=1))
    ('2026-01-02T00:00:00+00:00', '00000000-0000-0000-0000-000000000001')
    """
    if callable(dump := getattr(value, "model_dump", None)):
        return dump()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


async def forget_thread(thread_id: object, *, owner: str | None = None) -> None:
    """Drop a deleted thread and its runs from the journal (only ``owner``'s thread)."""
    if not _journal or thread_id is None:
        return
    owned = "AND (%s::text IS NULL OR metadata->>'owner' = %s::text)"
    await _journal_write(
        "DELETE FROM assistant_run_journal WHERE thread_id = %s AND thread_id IN "
        f"(SELECT thread_id FROM assistant_thread_journal WHERE thread_id = %s {owned})",
        (str(thread_id), str(thread_id), owner, owner),
    )
    await _journal_write(
        f"DELETE FROM assistant_thread_journal WHERE thread_id = %s {owned}",
        (str(thread_id), owner, owner),
    )


JOURNAL_WRITE_TRIES = 3
"""Tries of a journal write that Postgres ended as a deadlock or a serialization failure."""


async def _journal_write(statement: str, parameters: tuple[Any, ...]) -> bool:
    """Run a journal write; whether it was written (a failure is logged, never raised).

    A write Postgres ended to break a deadlock or a serialization conflict with another
    is tried again: its run's record must not be lost to a collision.
    """
    from psycopg.errors import DeadlockDetected, SerializationFailure

    for attempt in range(1, JOURNAL_WRITE_TRIES + 1):
        try:
            await _execute(_journal[0], statement, parameters)
            return True
        except (DeadlockDetected, SerializationFailure):
            if attempt == JOURNAL_WRITE_TRIES:
                logger.exception("Could not write a thread's record to the journal")
        except Exception:
            logger.exception("Could not write a thread's record to the journal")
            return False
    return False


# --------------------------------------------------------------------------- at start


async def restore_thread_records(saver: Any) -> list[str]:
    """Re-create the dev runtime's record of threads that have checkpoints but no record.

    The record gets the thread's journaled metadata, or, for a thread the journal does not
    hold, `RESTORED_METADATA` from its latest checkpoint. A journaled thread that never ran
    comes back too.

    Args:
        saver: An ``AsyncPostgresSaver`` (its ``conn`` is a connection or a pool).

    Returns:
        The ids of the threads whose record was restored (empty outside `langgraph dev`).
    """
    records = dev_thread_records()
    if records is None:  # not the dev runtime: the platform keeps thread records itself
        return []
    latest = await _latest_checkpoint_metadata(saver)
    journaled = await _journaled_threads(saver)
    if not latest and not journaled:
        return []
    restored: list[str] = []
    async with records.connect() as conn:
        known = await records.thread_ids(conn)
        for thread_id in sorted(latest.keys() | journaled.keys()):
            if thread_id in known:
                continue
            metadata = latest.get(thread_id, {})
            kept = {key: metadata[key] for key in RESTORED_METADATA if key in metadata}
            kept.update(journaled.get(thread_id, {}))
            await records.put(conn, thread_id, kept)
            restored.append(thread_id)
    if restored:
        logger.warning(
            "Restored the records of %d thread(s) that were created shortly before the "
            "server stopped without saving them: %s",
            len(restored),
            ", ".join(restored),
        )
    return restored


async def restore_run_records(saver: Any) -> list[str]:
    """Put back the journaled runs the dev runtime's records lost, in their threads' lists.

    An acknowledged run (its input journaled) is queued again as ``pending``: with its
    input if it wrote no checkpoint, else with none, to go on from its checkpoints (a run
    that had finished does nothing). Any other comes back ``success`` if it wrote
    checkpoints, else ``interrupted``. The journal then keeps only the inputs of runs that
    are queued. Returns the ids of the runs put back.
    """
    records = dev_thread_records()
    if records is None:
        return []
    journaled = await _fetch(
        saver,
        "SELECT run_id, thread_id, record, kwargs FROM assistant_run_journal ORDER BY journaled_at",
    )
    queued: list[str] = []
    async with records.connect() as conn:
        runs = records.runs(conn)
        known = {str(run.get("run_id")) for run in runs}
        threads = await records.thread_ids(conn)
        missing = [
            row
            for row in journaled
            if str(row["run_id"]) not in known and str(row["thread_id"]) in threads
        ]
        started = await started_runs(saver, [str(row["run_id"]) for row in missing])
        for row in missing:
            run_id = str(row["run_id"])
            record = dict(row["record"] or {})
            kwargs = dict(row["kwargs"] or {})
            if kwargs and run_id in started:
                kwargs.update(input=None, command=None)  # go on from its checkpoints
            status = "pending" if kwargs else "success" if run_id in started else "interrupted"
            at = _when(record.get("created_at"))
            records.add_run(
                conn,
                {
                    "run_id": uuid.UUID(run_id),
                    "thread_id": uuid.UUID(str(row["thread_id"])),
                    "assistant_id": uuid.UUID(str(record.get("assistant_id")))
                    if record.get("assistant_id")
                    else None,
                    "metadata": dict(record.get("metadata") or {}),
                    "status": status,
                    "kwargs": kwargs,
                    "multitask_strategy": record.get("multitask_strategy") or "enqueue",
                    "created_at": at,
                    "updated_at": at,
                },
            )
            if status == "pending":
                queued.append(run_id)
    await _execute(
        saver,
        "UPDATE assistant_run_journal SET kwargs = NULL "
        "WHERE kwargs IS NOT NULL AND NOT (run_id = ANY(%s))",
        (queued,),
    )
    _inputs_kept.update(queued)
    restored = [str(row["run_id"]) for row in missing]
    if restored:
        logger.warning(
            "Restored %d run record(s) lost when the server stopped without saving them "
            "(%d acknowledged, queued again): %s",
            len(restored),
            len(queued),
            ", ".join(restored),
        )
    return restored


def _when(value: object) -> datetime:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.now(UTC)


async def _journaled_threads(saver: Any) -> dict[str, dict[str, Any]]:
    rows = await _fetch(saver, "SELECT thread_id, metadata FROM assistant_thread_journal")
    return {str(row["thread_id"]): dict(row["metadata"] or {}) for row in rows}


_STARTED_RUNS = """
SELECT DISTINCT metadata->>'run_id' AS run_id
FROM checkpoints
WHERE metadata->>'run_id' = ANY(%s)
"""


async def resume_interrupted_runs(saver: Any) -> list[str]:
    """Make the runtime's retry of runs that already wrote checkpoints resume, not repeat.

    Args:
        saver: An ``AsyncPostgresSaver`` (its ``conn`` is a connection or a pool).

    Returns:
        The ids of the runs that will resume (empty outside `langgraph dev`).
    """
    records = dev_thread_records()
    if records is None:  # not the dev runtime: the platform keeps run records itself
        return []
    async with records.connect() as conn:
        runs = records.runs(conn)
        waiting = [str(run["run_id"]) for run in runs if run.get("status") == "pending"]
        started = await started_runs(saver, waiting)
        resumed = resume_instead_of_repeating(runs, started)
    if resumed:
        logger.warning(
            "Runs cut off by a crash after they had saved their input resume from their "
            "last checkpoint instead of running their input again: %s",
            ", ".join(resumed),
        )
    return resumed


async def started_runs(saver: Any, run_ids: list[str]) -> set[str]:
    """Those of ``run_ids`` that have written at least one checkpoint."""
    if not run_ids:
        return set()
    rows = await _fetch(saver, _STARTED_RUNS, (run_ids,))
    return {str(row["run_id"]) for row in rows}


def resume_instead_of_repeating(runs: list[dict[str, Any]], started: set[str]) -> list[str]:
    """Clear the input of each pending run in ``started``; the ids of the runs changed."""
    resumed: list[str] = []
    for run in runs:
        if run.get("status") != "pending" or str(run.get("run_id")) not in started:
            continue
        kwargs = run.get("kwargs")
        if not isinstance(kwargs, dict) or (
            kwargs.get("input") is None and kwargs.get("command") is None
        ):
            continue
        kwargs["input"] = None
        kwargs["command"] = None
        resumed.append(str(run["run_id"]))
    return resumed


async def _execute(saver: Any, statement: str, parameters: tuple[Any, ...] = ()) -> None:
    """Run ``statement`` on the saver's connection or pool (autocommit)."""
    pool = saver.conn
    if hasattr(pool, "connection"):
        async with pool.connection() as conn:
            await conn.execute(statement, parameters)
            return
    await pool.execute(statement, parameters)


async def _fetch(saver: Any, query: str, parameters: tuple[Any, ...] = ()) -> list[Any]:
    """The rows of ``query`` on the saver's connection or pool."""
    pool = saver.conn
    if hasattr(pool, "connection"):
        async with pool.connection() as conn:
            cursor = await conn.execute(query, parameters)
            return list(await cursor.fetchall())
    cursor = await pool.execute(query, parameters)
    return list(await cursor.fetchall())


async def _latest_checkpoint_metadata(saver: Any) -> dict[str, dict[str, Any]]:
    """``{thread_id: metadata of its latest root checkpoint}`` for every thread."""
    rows = await _fetch(saver, _LATEST_CHECKPOINTS)
    return {str(row["thread_id"]): dict(row["metadata"] or {}) for row in rows}
