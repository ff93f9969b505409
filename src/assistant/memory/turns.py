"""Undo what a rolled-back turn changed in memory.

`remember` runs while the reply is still streaming, so a fact can be stored from a message
that the server then deletes: a client that sends a new run with
``multitask_strategy="rollback"`` cancels the run in flight and deletes it with its
checkpoints, the user's message included. The fact must go with it.

So every turn that changes memory leaves one record per thread, in
``("memory_turns", user_id)`` keyed by the thread id: the message it came from and, for
each fact it touched, the fact's value before the turn (``None`` for a new fact), written
by the turn's `assistant.memory.writer.Writer` when the turn is done. The next
turn on that thread settles the record before anything else (`settle_turn`):

* the message is still in the thread: the turn stands, and the record is dropped;
* the message is gone: the turn was rolled back. Each fact it added is deleted and each
  fact it changed is put back as it was, and each undo is written to the audit trail
  (``action="rollback"``).

Runs on one thread never overlap (the server queues or cancels them), so one record per
thread is enough. A fact the user forgets leaves every record (`forget_turns`), so that
undoing a turn can never put it back.
"""

from __future__ import annotations

from collections.abc import Collection

from assistant.memory.facts import delete_memory, get_memory
from assistant.memory.namespaces import every_item, user_turns_namespace
from assistant.memory.writer import Writer

__all__ = ["forget_turns", "settle_turn"]


async def settle_turn(writer: Writer, message_ids: Collection[str]) -> list[str]:
    """Settle the thread's last memory change against its messages; return the undone keys.

    ``writer`` is the thread's (its ``thread_id``, acting for the user via the chat);
    ``message_ids`` are the ids of the thread's messages as the new run found them.
    """
    assert writer.thread_id, "only a thread's turns are settled"
    namespace = user_turns_namespace(writer.user_id)
    record = await writer.store.aget(namespace, writer.thread_id)
    if record is None:
        return []
    if record.value.get("message_id") in message_ids:
        await writer.store.adelete(namespace, writer.thread_id)
        return []
    undone: list[str] = []
    for key, value in (record.value.get("before") or {}).items():
        current = await get_memory(writer.store, writer.user_id, key)
        if value is None:
            await delete_memory(writer, key)
        else:
            await writer.put_fact(key, dict(value), before=current.value if current else None)
        content = (current.value if current else value or {}).get("content", "")
        await writer.audit(
            "rollback",
            fact_key=key,
            content=str(content),
            message_id=record.value.get("message_id"),
            restored=value is not None,
        )
        undone.append(key)
    await writer.store.adelete(namespace, writer.thread_id)
    return undone


async def forget_turns(writer: Writer, keys: Collection[str], texts: Collection[str]) -> int:
    """Take the forgotten facts out of every unsettled turn; return how many records changed.

    A rolled-back turn then neither restores them (with their words) nor audits their undo.
    A turn records facts by key, so ``texts`` are not read.
    """
    store, namespace = writer.store, user_turns_namespace(writer.user_id)
    changed = 0
    for item in await every_item(store, namespace):
        before = dict(item.value.get("before") or {})
        kept = {key: value for key, value in before.items() if key not in keys}
        if len(kept) == len(before):
            continue
        await store.aput(namespace, item.key, {**item.value, "before": kept}, index=False)
        changed += 1
    return changed
