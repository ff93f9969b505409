"""One user's memory: the one way in for nodes, tools, routes, the MCP server and the store API.

`UserMemory` reads a user's facts, profile, episodes and audit trail, and makes every change
a user or the assistant asks for: save, correct, forget, a fact put through the store API,
the model's decisions about a turn (apply), and undoing a rolled-back turn (settle); and it
keeps the extraction's own records: what was heard, and messages held for a batch. Each
change is made through one `assistant.memory.writer.Writer`, which writes the store, keeps
the recall index in step, writes the audit entries and records the turn together, so no
caller can write without them.

>>> from langgraph.store.memory import InMemoryStore
>>> UserMemory(InMemoryStore(), "alice")
UserMemory(user_id='alice')
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, Item, SearchItem

from assistant.memory import facts
from assistant.memory.audit import CHAT_VIA, list_audit
from assistant.memory.consolidate import ConsolidationReport, MemoryOperation, apply_operations
from assistant.memory.episodes import LIST_LIMIT, list_episodes, recall_episodes, save_episode
from assistant.memory.heard import heard_message_ids, list_heard, record_heard
from assistant.memory.held import held_messages, hold_message, release_held
from assistant.memory.namespaces import user_facts_namespace, validate_user_id
from assistant.memory.search.index import (
    WEIGHTS,
    FusionWeights,
    hybrid_search,
    pinned_count,
    pinned_facts,
    settle_windows,
    warm_index,
)
from assistant.memory.search.matching import matching
from assistant.memory.turns import settle_turn
from assistant.memory.user_actions import Forgotten, correct_memory, edit_memory, forget_memory
from assistant.memory.writer import Writer

__all__ = ["UserMemory", "recall", "save_memory"]


class UserMemory:
    """The memory of ``user_id`` in ``store``: what it holds, and every change to it.

    Raises:
        InvalidUserIdError: ``user_id`` cannot name a store namespace.
    """

    def __init__(self, store: BaseStore, user_id: str) -> None:
        """The memory of ``user_id`` (validated) in ``store``."""
        self.store: BaseStore = store
        self.user_id: str = validate_user_id(user_id)

    def __repr__(self) -> str:
        """``UserMemory(user_id='alice')``."""
        return f"UserMemory(user_id={self.user_id!r})"

    def _writer(self, **source: Any) -> Writer:
        """The writer of one change (see `assistant.memory.writer.Writer` for ``source``)."""
        return Writer(store=self.store, user_id=self.user_id, **source)

    # ----------------------------------------------------------------------- reading

    async def recall(
        self,
        query: str,
        *,
        limit: int,
        weights: FusionWeights = WEIGHTS,
        now: datetime | None = None,
    ) -> list[SearchItem]:
        """The current facts most relevant to ``query``, best first (`assistant.memory.recall`)."""
        return await recall(self.store, self.user_id, query, limit=limit, weights=weights, now=now)

    async def search(self, query: str, *, limit: int) -> list[SearchItem]:
        """The current facts that match ``query``, best first, scored; none when nothing does.

        ``score`` is the match score, at least `assistant.memory.search.MATCH_FLOOR`
        (`assistant.memory.search.matching`). What a person reads, or picks a fact to
        forget from, comes from here; recall for a prompt ranks without a floor.
        """
        return await matching(self.store, self.user_id, query, limit=limit)

    async def profile(self) -> list[SearchItem]:
        """The pinned facts (name, home, standing preferences, hard constraints)."""
        return await pinned_facts(self.store, user_facts_namespace(self.user_id))

    async def pinned_count(self) -> int | None:
        """How many pinned facts `profile` holds, from the recall index (no store read).

        None while the user's index is first built.
        """
        return await pinned_count(self.store, user_facts_namespace(self.user_id))

    async def facts(self, *, include_superseded: bool = False) -> list[Item]:
        """Every current fact, oldest first; superseded ones too when asked."""
        return await facts.list_memories(
            self.store, self.user_id, include_superseded=include_superseded
        )

    async def get(self, key: str) -> Item | None:
        """One stored fact (current or superseded), or None."""
        return await facts.get_memory(self.store, self.user_id, key)

    async def episodes(
        self,
        query: str | None = None,
        *,
        limit: int = LIST_LIMIT,
        exclude_thread_id: str | None = None,
        now: datetime | None = None,
    ) -> list[SearchItem]:
        """Past conversations: the most relevant to ``query`` or, with none, the latest first.

        With a query, ``exclude_thread_id`` leaves one thread out and ``now`` is when the
        question is asked, for "last Tuesday" and the like.
        """
        if query is None:
            return await list_episodes(self.store, self.user_id, limit=limit)
        return await recall_episodes(
            self.store,
            self.user_id,
            query,
            limit=limit,
            exclude_thread_id=exclude_thread_id,
            now=now,
        )

    async def audit(self) -> list[dict[str, Any]]:
        """The audit trail (every forget, correction, supersede and undo), newest first."""
        return await list_audit(self.store, self.user_id)

    async def heard(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """What memory made of the latest messages, newest first (`assistant.memory.heard`)."""
        return await list_heard(self.store, self.user_id, limit=limit)

    async def heard_in(self, thread_id: str) -> set[str]:
        """The ids of the thread's latest messages whose outcome is recorded."""
        return await heard_message_ids(self.store, self.user_id, thread_id)

    async def held(
        self, *, thread_id: str | None = None, other_than: str | None = None
    ) -> list[dict[str, Any]]:
        """Messages held for a batched extraction, oldest first: a thread's, or all others'."""
        return await held_messages(
            self.store, self.user_id, thread_id=thread_id, other_than=other_than
        )

    async def warm(self) -> int:
        """Build the recall index now (searches otherwise build it on first use)."""
        return await warm_index(self.store, user_facts_namespace(self.user_id))

    # ----------------------------------------------------------------------- changing

    async def save(self, content: str, **metadata: Any) -> str:
        """Store one new, current fact and return its key (see `save_memory`).

        It returns once the fact's vectors are held and kept, its window's too (which a
        turn's own writes leave to the next search: `assistant.memory.search.sync.record_write`).
        """
        key = await facts.save_memory(self._writer(), content, **metadata)
        await settle_windows(self.store, user_facts_namespace(self.user_id), key)
        return key

    async def save_episode(
        self, *, thread_id: str, summary: str, started_at: str | None = None
    ) -> dict[str, Any]:
        """Save or refresh the episode of ``thread_id``; ``ended_at`` is now."""
        return await save_episode(
            self._writer(), thread_id=thread_id, summary=summary, started_at=started_at
        )

    async def put_episode(self, thread_id: str, value: dict[str, Any] | None) -> None:
        """Write an episode as given (None deletes it): one a client of the store API sent."""
        await self._writer().put_episode(thread_id, value)

    async def correct(
        self,
        key: str,
        content: str,
        *,
        actor: str,
        via: str,
        thread_id: str | None = None,
        client: str | None = None,
    ) -> str:
        """Replace a fact the user corrected; the old one stays as superseded history.

        Audited as ``actor`` ``via`` a path (`assistant.memory.audit`). Returns the corrected
        fact's key. Raises :class:`KeyError` for an unknown key, :class:`ValueError` for
        content the memory layer refuses.
        """
        writer = self._writer(actor=actor, via=via, thread_id=thread_id, client=client)
        return await correct_memory(writer, key, content)

    async def forget(
        self,
        key: str,
        *,
        actor: str,
        via: str,
        thread_id: str | None = None,
        client: str | None = None,
    ) -> Forgotten | None:
        """Forget a fact and its earlier versions, with their words everywhere memory keeps them.

        Audited as ``actor`` ``via`` a path. Returns None when the fact does not exist.
        """
        writer = self._writer(actor=actor, via=via, thread_id=thread_id, client=client)
        return await forget_memory(writer, key)

    async def edit(
        self, key: str, sent: Mapping[str, Any], *, actor: str, via: str, client: str | None = None
    ) -> dict[str, Any]:
        """Write a fact a client put through the store API (`assistant.memory.client_facts`).

        A new wording is audited as a correction. Returns the value stored; raises
        :class:`ValueError` for a value the memory layer refuses.
        """
        return await edit_memory(self._writer(actor=actor, via=via, client=client), key, sent)

    async def apply(
        self,
        operations: Sequence[MemoryOperation],
        known: Sequence[Item],
        *,
        min_confidence: float,
        thread_id: str | None = None,
        message_id: str | None = None,
        via: str = CHAT_VIA,
        client: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConsolidationReport:
        """Carry out the model's decisions about a turn (`assistant.memory.consolidate`).

        ``known`` are the facts the model was shown (its ``target`` numbers count from 1);
        ``metadata`` goes on every fact written. With ``thread_id`` and ``message_id``, what
        the turn changed is recorded, so that a rolled-back turn can be undone (`settle`).
        """
        writer = self._writer(via=via, thread_id=thread_id, client=client, message_id=message_id)
        return await apply_operations(
            writer, operations, known, min_confidence=min_confidence, metadata=metadata
        )

    async def note_heard(self, **entry: Any) -> dict[str, Any]:
        """Record what memory made of one message (`assistant.memory.heard.record_heard`)."""
        return await record_heard(self.store, self.user_id, **entry)

    async def hold(self, **message: Any) -> dict[str, Any]:
        """Hold a message for a later, batched extraction (`assistant.memory.held`)."""
        return await hold_message(self.store, self.user_id, **message)

    async def release(self, records: Iterable[dict[str, Any]]) -> None:
        """Drop held messages once extracted (or found unneeded)."""
        await release_held(self.store, self.user_id, records)

    async def settle(self, thread_id: str, message_ids: Collection[str]) -> list[str]:
        """Undo the thread's last turn if its message is gone (rolled back); the undone keys.

        ``message_ids`` are the thread's messages as the new run found them
        (`assistant.memory.turns`).
        """
        return await settle_turn(self._writer(thread_id=thread_id), message_ids)


async def save_memory(store: BaseStore, user_id: str, content: str, **metadata: Any) -> str:
    """Store one new, current fact for ``user_id`` and return its key.

    The same as ``UserMemory(store, user_id).save(content, **metadata)``: every call
    stores its own item, and ``metadata`` (e.g. ``category``, ``pinned``, ``speaker``,
    ``said_at``, ``context``) is kept on the stored value.
    """
    return await UserMemory(store, user_id).save(content, **metadata)


async def recall(
    store: BaseStore,
    user_id: str,
    query: str,
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    now: datetime | None = None,
) -> list[SearchItem]:
    """The user's current facts most relevant to ``query``, best first (hybrid recall).

    Vector, BM25 and (for a question naming days, resolved against ``now``, default
    now) date rankings are fused by reciprocal rank, with a correction for the
    embedder's same-language bias and a boost for the speaker asked about (see
    :class:`FusionWeights`). Superseded facts are never returned.
    """
    return await hybrid_search(
        store, user_facts_namespace(user_id), query, limit=limit, weights=weights, now=now
    )
