"""The Postgres checkpointer ``make dev`` runs: ``AsyncPostgresSaver`` that can delete runs.

``multitask_strategy="rollback"`` cancels the run in flight and deletes it, checkpoints
included, so that the thread is as it was before the run's message. The dev runtime
(langgraph-runtime-inmem 0.36.7) deletes a run's checkpoints by calling the custom
checkpointer's ``adelete_for_runs``, which ``AsyncPostgresSaver`` (langgraph-checkpoint-
postgres 3.2.0) does not have: the server then answered 500 to the second run, kept the
rolled-back message, and left the run ``running`` for good, so the thread stayed busy and
every later run on it waited (see docs/storage.md).

:class:`RunDeletingPostgresSaver` adds it. Like the runtime's deletion from its own
in-memory checkpoints, it deletes every checkpoint whose metadata carries one of the runs'
ids (the server stamps ``run_id`` on each checkpoint a run writes, in every namespace);
it also deletes the pending writes saved against them and the channel blobs that no
remaining checkpoint of the thread refers to, all in one transaction. It is idempotent:
the runtime calls it when the rollback is asked, while the run may still be stopping, and
again once the run has stopped, so what the run wrote in between goes too.

What it leaves: writes a deleted run saved against a checkpoint that an earlier run wrote
(a run started with no input resumes there; this graph's runs always bring a message), and
``DeltaChannel`` history, which this graph does not use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = ["RUN_ID_INDEX", "RunDeletingPostgresSaver"]

RUN_ID_INDEX = "checkpoints_run_id_idx"
"""The index on the run id in checkpoint metadata that :meth:`adelete_for_runs` looks up."""

_CREATE_RUN_ID_INDEX = f"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS {RUN_ID_INDEX}
ON checkpoints ((metadata ->> 'run_id'))
"""

_DELETE_CHECKPOINTS = """
DELETE FROM checkpoints
WHERE metadata ->> 'run_id' = ANY(%s)
RETURNING thread_id, checkpoint_ns, checkpoint_id, checkpoint -> 'channel_versions' AS versions
"""

_DELETE_WRITES = """
DELETE FROM checkpoint_writes w
USING unnest(%s::text[], %s::text[], %s::text[]) AS d(thread_id, checkpoint_ns, checkpoint_id)
WHERE w.thread_id = d.thread_id
AND w.checkpoint_ns = d.checkpoint_ns
AND w.checkpoint_id = d.checkpoint_id
"""

# A blob is one channel's value at one version; checkpoints share it until the channel
# changes, so only the blobs no remaining checkpoint of the thread refers to may go.
_DELETE_UNREFERENCED_BLOBS = """
DELETE FROM checkpoint_blobs b
USING unnest(%s::text[], %s::text[], %s::text[], %s::text[])
    AS f(thread_id, checkpoint_ns, channel, version)
WHERE b.thread_id = f.thread_id
AND b.checkpoint_ns = f.checkpoint_ns
AND b.channel = f.channel
AND b.version = f.version
AND NOT EXISTS (
    SELECT 1 FROM checkpoints c
    WHERE c.thread_id = b.thread_id
    AND c.checkpoint_ns = b.checkpoint_ns
    AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
)
"""


class RunDeletingPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` with ``adelete_for_runs``, for ``multitask_strategy="rollback"``."""

    async def setup(self) -> None:
        """Create or migrate the tables, then index checkpoints by run id."""
        await super().setup()
        async with self._cursor() as cur:
            await cur.execute(_CREATE_RUN_ID_INDEX)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs wrote, their pending writes and freed blobs.

        Args:
            run_ids: Ids of the runs (as the server stamps them in checkpoint metadata).
                Unknown ids, and runs already deleted, are ignored.
        """
        if isinstance(run_ids, str):
            raise TypeError(f"run_ids must be a sequence of run ids, not a str: {run_ids!r}")
        ids = [str(run_id) for run_id in run_ids]
        if not ids:
            return
        async with self._cursor() as cur:
            if self.pipe:
                await self.pipe.sync()  # a transaction must not take in the pipeline's backlog
            async with cur.connection.transaction():
                await cur.execute(_DELETE_CHECKPOINTS, (ids,))
                deleted = await cur.fetchall()
                if not deleted:
                    return
                await cur.execute(_DELETE_WRITES, _columns(deleted, _CHECKPOINT_KEY))
                freed = _freed_blobs(deleted)
                if freed:
                    await cur.execute(_DELETE_UNREFERENCED_BLOBS, _columns(freed, _BLOB_KEY))


_CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")
_BLOB_KEY = ("thread_id", "checkpoint_ns", "channel", "version")


def _freed_blobs(deleted: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The blobs the deleted checkpoints referred to, each once.

    >>> freed = _freed_blobs([
    ...     {"thread_id": "t", "checkpoint_ns": "", "versions": {"messages": "2", "summary": 1}},
    ...     {"thread_id": "t", "checkpoint_ns": "", "versions": {"messages": "2"}},
    ... ])
    >>> [(blob["channel"], blob["version"]) for blob in freed]
    [('messages', '2'), ('summary', '1')]
    """
    seen: dict[tuple[str, ...], dict[str, str]] = {}
    for row in deleted:
        for channel, version in (row.get("versions") or {}).items():
            blob = {
                "thread_id": str(row["thread_id"]),
                "checkpoint_ns": str(row["checkpoint_ns"]),
                "channel": str(channel),
                "version": str(version),
            }
            seen.setdefault(tuple(blob.values()), blob)
    return list(seen.values())


def _columns(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> tuple[list[str], ...]:
    """``rows`` as one list per key, the shape ``unnest(%s, %s, ...)`` takes.

    >>> _columns([{"a": "1", "b": "x"}, {"a": "2", "b": "y"}], ("a", "b"))
    (['1', '2'], ['x', 'y'])
    """
    return tuple([str(row[key]) for row in rows] for key in keys)
