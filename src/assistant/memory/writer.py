"""The one write path into a user's memory: the store, the index, the audit trail, the turn.

Every change to a user's facts or episodes is made through a `Writer`, which
`assistant.memory.UserMemory` creates for each change: it writes the item and tells the
recall index (`assistant.memory.search.index.record_write`) in the same step, writes the audit
entries the change calls for with who made it and through what, and, for a turn of a
thread, keeps each fact's value from before the turn and records it before the fact is
written (`assistant.memory.turns`), so that a rolled-back turn can be undone. No other module
writes a fact or an episode to the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore

from assistant.memory.audit import CHAT_VIA, client_detail, record_audit
from assistant.memory.namespaces import (
    user_episodes_namespace,
    user_facts_namespace,
    user_turns_namespace,
)
from assistant.memory.records import now_iso
from assistant.memory.search.index import record_write

__all__ = ["Writer"]


@dataclass(kw_only=True)
class Writer:
    """Writes one change to ``user_id``'s memory, on behalf of ``actor``, via ``via``.

    ``via``, ``thread_id`` and ``client`` are what the audit trail records
    (`assistant.memory.audit`); ``thread_id`` also goes into a changed fact's history.
    With ``message_id`` (and ``thread_id``), the change is a turn of that thread:
    each fact's write is preceded by the turn's record of what it changed.
    """

    store: BaseStore
    user_id: str
    """Whose memory changes (validated by `assistant.memory.UserMemory`)."""
    actor: str | None = None
    """Who asked for the change (default: the user)."""
    via: str = CHAT_VIA
    """The path the change came in by: ``chat``, ``mcp`` or ``api``."""
    thread_id: str | None = None
    """The thread it came from, if any."""
    client: str | None = None
    """The program that asked, as it named itself (unverified), if known."""
    message_id: str | None = None
    """The message of the turn it is, if it is one."""
    before: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Each fact written so far and its value before the change (None: it was new)."""

    async def put_fact(
        self, key: str, value: dict[str, Any] | None, *, before: dict[str, Any] | None
    ) -> None:
        """Write the fact ``key`` as ``value`` (None deletes it); ``before`` is what it was.

        In a turn, the turn's record is written first, with ``key``'s value before it: a
        run cancelled (rolled back) between the two leaves a record that undoes a change
        that was made, or that restores a value that did not change, never a change that
        nothing can undo.

        A new fact (``before`` None) is audited as an ``add``, with the path and client it
        came by, as every other change is.
        """
        if key not in self.before:
            self.before[key] = None if before is None else dict(before)
            await self.record_turn()
        await self._write(user_facts_namespace(self.user_id), key, value)
        if before is None and value is not None:
            await self.audit("add", fact_key=key, content=str(value.get("content", "")))

    async def put_episode(self, thread_id: str, value: dict[str, Any] | None) -> None:
        """Write the episode of ``thread_id`` as ``value`` (None deletes it)."""
        await self._write(user_episodes_namespace(self.user_id), thread_id, value)

    async def _write(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None
    ) -> None:
        if value is None:
            await self.store.adelete(namespace, key)
        else:
            await self.store.aput(namespace, key, value)
        await record_write(self.store, namespace, key, value)

    async def audit(
        self,
        action: str,
        *,
        fact_key: str,
        content: str,
        entry_key: str | None = None,
        **details: Any,
    ) -> dict[str, Any]:
        """Add the entry of ``action`` on ``fact_key`` to the user's audit trail; return it.

        ``entry_key`` names the entry, for a step that may be done twice (`record_audit`).
        """
        return await record_audit(
            self.store,
            self.user_id,
            action=action,
            fact_key=fact_key,
            content=content,
            actor=self.actor or self.user_id,
            via=self.via,
            thread_id=self.thread_id,
            entry_key=entry_key,
            **details,
            **client_detail(self.client),
        )

    async def record_turn(self) -> None:
        """Record what a turn changed, so that it can be undone if the turn is rolled back.

        `put_fact` calls it before each fact the turn changes for the first time. One record
        per thread (`assistant.memory.turns`): the message and each fact's value
        before the turn.
        """
        if self.before and self.thread_id and self.message_id:
            record = {"message_id": self.message_id, "before": self.before, "at": now_iso()}
            await self.store.aput(
                user_turns_namespace(self.user_id), self.thread_id, record, index=False
            )
