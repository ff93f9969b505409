"""The one write path records a turn before it changes a fact, so a rollback can undo it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from assistant.memory.namespaces import user_facts_namespace, user_turns_namespace
from assistant.memory.turns import settle_turn
from assistant.memory.writer import Writer

USER = "alice"


class CancelledFactWrites(InMemoryStore):
    """A store in which a fact's write is cancelled, as a rolled-back run's would be."""

    async def aput(  # type: ignore[override]
        self, namespace: tuple[str, ...], key: str, value: Any, **kwargs: Any
    ) -> None:
        if namespace == user_facts_namespace(USER):
            await super().aput(namespace, key, value, **kwargs)  # it lands, then the run stops
            raise asyncio.CancelledError
        await super().aput(namespace, key, value, **kwargs)


async def test_a_turn_cancelled_after_a_fact_landed_can_still_be_undone() -> None:
    store = CancelledFactWrites()
    writer = Writer(store=store, user_id=USER, thread_id="t1", message_id="m1")
    with pytest.raises(asyncio.CancelledError):
        await writer.put_fact("k1", {"content": "Lives in Lyon"}, before=None)
    # the run stopped right after the write, yet the turn's record names the fact and its
    # value before
    record = await store.aget(user_turns_namespace(USER), "t1")
    assert record is not None and record.value["before"] == {"k1": None}

    settle = Writer(store=store, user_id=USER, thread_id="t1")
    assert await settle_turn(settle, message_ids=[]) == ["k1"]  # the message is gone
    assert await store.aget(user_facts_namespace(USER), "k1") is None
