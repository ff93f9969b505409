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

What it cannot restore: the runtime's run records (the list of runs of a thread) and
a thread created in that window that never ran (it has no checkpoint and held nothing).

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

import logging
from typing import Any

from assistant.compat import dev_thread_records

__all__ = ["RESTORED_METADATA", "restore_thread_records", "resume_interrupted_runs"]

logger = logging.getLogger(__name__)

RESTORED_METADATA = ("owner", "graph_id", "assistant_id")
"""Checkpoint metadata keys copied onto a restored thread record."""

_LATEST_CHECKPOINTS = """
SELECT DISTINCT ON (thread_id) thread_id, metadata
FROM checkpoints
WHERE checkpoint_ns = ''
ORDER BY thread_id, checkpoint_id DESC
"""


async def restore_thread_records(saver: Any) -> list[str]:
    """Re-create the dev runtime's record of threads that have checkpoints but no record.

    Args:
        saver: An ``AsyncPostgresSaver`` (its ``conn`` is a connection or a pool).

    Returns:
        The ids of the threads whose record was restored (empty outside `langgraph dev`).
    """
    records = dev_thread_records()
    if records is None:  # not the dev runtime: the platform keeps thread records itself
        return []
    latest = await _latest_checkpoint_metadata(saver)
    if not latest:
        return []
    restored: list[str] = []
    async with records.connect() as conn:
        known = await records.thread_ids(conn)
        for thread_id, metadata in latest.items():
            if thread_id in known:
                continue
            kept = {key: metadata[key] for key in RESTORED_METADATA if key in metadata}
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
