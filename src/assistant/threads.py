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
`assistant.auth` on every run), ``graph_id`` and ``assistant_id``. It uses the
runtime's own ``Threads.put``, the call ``POST /threads`` makes (through
`assistant.compat.dev_thread_records`), and patches nothing.

What it cannot restore: the runtime's run records (the list of runs of a thread) and
a thread created in that window that never ran (it has no checkpoint and held nothing).
"""

from __future__ import annotations

import logging
from typing import Any

from assistant.compat import dev_thread_records

__all__ = ["RESTORED_METADATA", "restore_thread_records"]

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


async def _latest_checkpoint_metadata(saver: Any) -> dict[str, dict[str, Any]]:
    """``{thread_id: metadata of its latest root checkpoint}`` for every thread."""
    pool = saver.conn
    if hasattr(pool, "connection"):
        async with pool.connection() as conn:
            cursor = await conn.execute(_LATEST_CHECKPOINTS)
            rows = await cursor.fetchall()
    else:
        cursor = await pool.execute(_LATEST_CHECKPOINTS)
        rows = await cursor.fetchall()
    return {str(row["thread_id"]): dict(row["metadata"] or {}) for row in rows}
