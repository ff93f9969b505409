"""What a user asks of their memory, by chat, console, command line, MCP or the store API.

Forget, correct, and a fact put through the store API; each is kept in the user's audit
trail with who made it and through what.

Forgetting means the words are gone (`forget_memory`): the fact and its earlier versions are
deleted, and everything else the memory layer keeps for the user loses its words too: the
audit trail's entries about them, what memory heard, held messages that say them, unsettled
turns that could put them back, and other facts' contexts and episode summaries that quote
them word for word. The audit trail keeps that a fact was forgotten, when, by whom and via
what. Every eraser reads all it must, with no cap, and a forget is written down before it
starts (`forget_memory`), so one cut short is finished by a retry or at start-up
(`resume_forgets`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, Item

from assistant.inference.e5 import E5Embeddings
from assistant.memory.audit import redact_audit
from assistant.memory.client_facts import put_memory
from assistant.memory.episodes import redact_episodes
from assistant.memory.facts import (
    delete_memory,
    fact_versions,
    get_memory,
    normalize_fact,
    redact_contexts,
    supersede_memory,
)
from assistant.memory.heard import forget_heard
from assistant.memory.held import forget_held
from assistant.memory.namespaces import FORGETS_NAMESPACE, every_item, user_forgets_namespace
from assistant.memory.records import FORGOTTEN, Owner, now_iso
from assistant.memory.turns import forget_turns
from assistant.memory.wording import quotes_fact
from assistant.memory.writer import Writer

__all__ = ["Forgotten", "correct_memory", "edit_memory", "forget_memory", "resume_forgets"]


async def forget_cached(owner: Owner, keys: Collection[str], texts: Collection[str]) -> int:
    """Drop the embedder's cached texts that quote the fact (the bundled e5 keeps them)."""
    return E5Embeddings.forget_cached(
        lambda text: any(quotes_fact(text, wording) for wording in texts)
    )


Eraser = Callable[[Writer, Collection[str], Collection[str]], Awaitable[int]]
"""Takes a forgotten fact's ``keys`` (it and its earlier versions) and ``texts`` (their
words) out of one namespace of the user's, through ``writer``; returns how many records
changed. Each module that keeps a user's words brings its own."""

ERASERS: dict[str, Eraser] = {
    "contexts": redact_contexts,
    "audit": redact_audit,
    "heard": forget_heard,
    "held": forget_held,
    "turns": forget_turns,
    "episodes": redact_episodes,
    "cached": forget_cached,
}
"""Every eraser of a forget, in the order they run, by the name `Forgotten.erased` counts."""


@dataclass(frozen=True, kw_only=True)
class Forgotten:
    """What :func:`forget_memory` did."""

    entry: dict[str, Any]
    """The audit entry of the forget, as stored: no words of the fact."""
    content: str
    """The forgotten fact's text, for the reply to whoever asked; it is kept nowhere."""
    erased: dict[str, int] = field(default_factory=dict)
    """How many of each were deleted or lost the words: ``versions`` (the fact and its
    earlier versions), other facts' ``contexts`` that quoted it, ``audit`` entries,
    ``heard`` excerpts, ``held`` messages, unsettled ``turns``, ``episodes``, and
    ``cached`` embeddings of texts that said it. A resumed forget counts what it did."""


async def forget_memory(writer: Writer, key: str) -> Forgotten | None:
    """Delete one fact because the user asked, with its words everywhere the memory keeps them.

    The fact's earlier versions (the facts it superseded) go with it; later versions, if
    it was itself superseded, stay. ``writer`` says who asked, via what and from which
    client (an MCP client's name, the ``x-assistant-client`` header), when known.

    The forget is written down first, in ``("memory_forgets", user_id)`` under the fact's
    key (its versions' keys and every wording to erase), then carried out, then the record
    is deleted. A forget cut short (a crash, a kill -9) is finished by the next forget of
    the same key, although the fact itself is already gone, or at start-up
    (:func:`resume_forgets`). Returns None when the fact neither exists nor has a forget
    under way.
    """
    store, user_id = writer.store, writer.user_id
    journal = user_forgets_namespace(user_id)
    pending = await store.aget(journal, key)
    if pending is not None:  # cut short: finished as the user first asked it, and audited so
        record = dict(pending.value)
        writer = Writer(
            store=store,
            user_id=user_id,
            actor=record.get("actor"),
            via=str(record.get("via") or writer.via),
            client=record.get("client"),
            thread_id=record.get("thread_id"),
        )
    else:
        item = await get_memory(store, user_id, key)
        if item is None:
            return None
        versions = await fact_versions(store, user_id, key) or [item]
        record = {
            "fact_key": key,
            "keys": [version.key for version in versions],
            "texts": _wordings(versions),
            "content": str(item.value.get("content", "")),
            "audit_key": uuid.uuid4().hex,
            "at": now_iso(),
            "actor": writer.actor,
            "via": writer.via,
            "client": writer.client,
            "thread_id": writer.thread_id,
        }
        await store.aput(journal, key, record, index=False)
    forgotten = await _erase(writer, record)
    await store.adelete(journal, key)
    return forgotten


async def _erase(writer: Writer, record: Mapping[str, Any]) -> Forgotten:
    """Carry out the forget ``record`` holds; every step can be done again harmlessly."""
    keys, texts = list(record["keys"]), list(record["texts"])
    deleted = 0
    for version in keys:
        deleted += await delete_memory(writer, version)
    erased = {"versions": deleted}
    for name, erase in ERASERS.items():
        erased[name] = await erase(writer, keys, texts)
    entry = await writer.audit(
        "forget",
        fact_key=str(record["fact_key"]),
        content=FORGOTTEN,
        forgotten=True,
        entry_key=str(record["audit_key"]),
    )
    return Forgotten(entry=entry, content=str(record.get("content", "")), erased=erased)


async def resume_forgets(store: BaseStore) -> dict[str, int]:
    """Finish every forget that was cut short, for every user; how many per user.

    Run at start-up (`assistant.server.webapp.lifespan`): a server killed in the middle of a
    forget left its record, and the words it had not yet erased. Each is audited as the
    user asked it (who, via what, from which client), as a retry's is.
    """
    finished: dict[str, int] = {}
    namespaces = await store.alist_namespaces(prefix=(FORGETS_NAMESPACE,), limit=100_000)
    for namespace in namespaces:
        if len(namespace) != 2:
            continue
        user_id = namespace[1]
        for item in await every_item(store, namespace):
            writer = Writer(store=store, user_id=user_id)
            if await forget_memory(writer, item.key) is not None:
                finished[user_id] = finished.get(user_id, 0) + 1
    return finished


def _wordings(versions: list[Item]) -> list[str]:
    """Every wording of the given versions of a fact: their contents and their histories."""
    return sorted(
        {
            text
            for version in versions
            for text in (
                version.value.get("content"),
                *(entry.get("content") for entry in version.value.get("history") or []),
            )
            if isinstance(text, str) and text.strip() and text != FORGOTTEN
        }
    )


async def edit_memory(writer: Writer, key: str, sent: Mapping[str, Any]) -> dict[str, Any]:
    """Write a fact a client put through the store API, as the memory layer writes one.

    See `assistant.memory.client_facts.plan_put` for what a client may set. A new wording
    of a stored fact keeps the old one in its history and is audited as a correction.
    Returns the value stored. Raises :class:`ValueError` for a value the memory layer
    refuses.
    """
    before, after = await put_memory(writer, key, sent)
    if before is not None and before.get("content") != after["content"]:
        await writer.audit(
            "correct",
            fact_key=key,
            content=str(before.get("content", "")),
            new_content=after["content"],
        )
    return after


async def correct_memory(writer: Writer, key: str, content: str) -> str:
    """Replace a fact the user corrected; the old one is kept as superseded history.

    Returns the key of the corrected fact. Correcting a fact that was already
    superseded corrects its current successor instead, so two concurrent corrections
    never leave two current versions.
    """
    item = await get_memory(writer.store, writer.user_id, key)
    while item is not None and item.value.get("status") == "superseded":
        successor = item.value.get("superseded_by")
        item = await get_memory(writer.store, writer.user_id, successor) if successor else None
    if item is None:
        raise KeyError(f"No fact with key={key!r} for user_id={writer.user_id!r}.")
    if normalize_fact(content) == normalize_fact(str(item.value.get("content", ""))):
        return item.key
    return await supersede_memory(
        writer,
        item.key,
        content,
        action="correct",
        pinned=bool(item.value.get("pinned")),
        confidence=1.0,
    )
