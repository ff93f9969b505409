"""Consolidation: apply the model's decisions about a turn's facts to the store.

The `remember` node asks the model, in one structured call, what the user's new
message changes: for each durable fact, *add* it, *update* (reword) a known fact,
*supersede* a known fact it contradicts, or *skip* it because a known fact already
says it. This module checks those decisions and carries them out, so that:

* nothing is stored twice (a normalised repeat of a known fact becomes a skip);
* a contradicted fact is superseded, never deleted, with its history kept and an entry
  in the audit trail;
* the profile is maintained: facts flagged as profile material are pinned, and a
  fact that supersedes a pinned one takes its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.store.base import BaseStore, Item
from pydantic import BaseModel, Field

from assistant.memory.audit import client_detail, record_audit
from assistant.memory.facts import (
    MAX_FACT_CHARS,
    confirm_memory,
    get_memory,
    normalize_fact,
    save_memory_once,
    supersede_memory,
    update_memory,
)
from assistant.memory.records import is_current
from assistant.memory.turns import record_turn

__all__ = [
    "CATEGORIES",
    "ConsolidationReport",
    "MemoryOperation",
    "MemoryOperations",
    "PROFILE_CATEGORIES",
    "apply_operations",
]

CATEGORIES = (
    "identity",
    "location",
    "preference",
    "constraint",
    "decision",
    "project",
    "relationship",
    "other",
)
"""The kinds of fact the model may report."""

PROFILE_CATEGORIES = frozenset({"identity", "location", "constraint"})
"""Categories pinned to the profile when the model does not say either way."""


class MemoryOperation(BaseModel):
    """One change to the user's memory that their message implies."""

    action: Literal["add", "update", "supersede", "skip"] = Field(
        description="add: new fact; update: refine known fact `target`; supersede: the "
        "message contradicts known fact `target`; skip: known fact `target` says this already."
    )
    content: str = Field(
        description="The fact as one short third-person sentence, in the user's language."
    )
    category: str = Field(description="One of: " + ", ".join(CATEGORIES))
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are it is durable.")
    target: int | None = Field(
        default=None, description="Number of the known fact for update, supersede or skip."
    )
    profile: bool | None = Field(
        default=None,
        description="True for facts that should shape every reply: name, language, home "
        "city, standing preferences about answers, hard constraints.",
    )


class MemoryOperations(BaseModel):
    """The changes a user message implies; empty when it holds nothing durable."""

    operations: list[MemoryOperation] = Field(default_factory=list)


@dataclass
class ConsolidationReport:
    """What :func:`apply_operations` did, by fact key."""

    added: list[str] = field(default_factory=list)
    """Facts stored new."""
    updated: list[str] = field(default_factory=list)
    """Facts reworded (old wording in their history)."""
    superseded: list[str] = field(default_factory=list)
    """Old facts the user contradicted (kept, marked superseded)."""
    confirmed: list[str] = field(default_factory=list)
    """Known facts the user said again."""


def _category(operation: MemoryOperation) -> str:
    category = operation.category.strip().lower()
    return category if category in CATEGORIES else "other"


def _pinned(operation: MemoryOperation, category: str) -> bool:
    return operation.profile if operation.profile is not None else category in PROFILE_CATEGORIES


def _usable_content(operation: MemoryOperation, min_confidence: float) -> str | None:
    """The operation's content, or None when it is too unsure, empty or oversized to write."""
    content = operation.content.strip()
    if operation.confidence < min_confidence or not content or len(content) > MAX_FACT_CHARS:
        return None
    return content


async def _embed_together(
    store: BaseStore, operations: Sequence[MemoryOperation], min_confidence: float
) -> None:
    """Embed every text this turn may write in one call, before the writes ask one by one.

    The bundled embeddings keep what they embed, so each write then finds its vector ready
    instead of waiting for the model once per fact. A served model keeps nothing, so it
    is left to embed as each write asks (and a failure here is left to the write).
    """
    from assistant.memory.index import store_embeddings
    from assistant.models import E5Embeddings

    embeddings = store_embeddings(store)
    texts = [
        content
        for operation in operations
        if operation.action in ("add", "update", "supersede")
        and (content := _usable_content(operation, min_confidence)) is not None
    ]
    if len(texts) > 1 and isinstance(embeddings, E5Embeddings):
        with suppress(Exception):
            await embeddings.aembed_documents(texts)


async def apply_operations(
    store: BaseStore,
    user_id: str,
    operations: Sequence[MemoryOperation],
    known: Sequence[Item],
    *,
    min_confidence: float,
    thread_id: str | None = None,
    message_id: str | None = None,
    via: str = "chat",
    client: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ConsolidationReport:
    """Carry out the model's ``operations`` against the ``known`` facts it was shown.

    ``metadata`` goes on every fact written (where and when it was said: ``said_at``,
    ``context``, ``turn``; see `assistant.extraction.provenance`).

    ``target`` numbers refer to ``known`` (1-based). Operations below
    ``min_confidence``, with empty or oversized content, or with a target that does
    not exist are dropped or downgraded (an update or supersede of an unknown target
    becomes an add), so a confused model cannot damage stored facts. ``via`` and
    ``client`` say in the audit trail where a superseding message came from
    (`assistant.memory.audit`).
    """
    report = ConsolidationReport()
    said = dict(metadata or {})
    await _embed_together(store, operations, min_confidence)
    by_text = {normalize_fact(str(item.value.get("content", ""))): item for item in known}
    added_now: set[str] = set()
    touched: set[str] = set()
    before: dict[str, dict[str, Any] | None] = {}
    for operation in operations:
        content = _usable_content(operation, min_confidence)
        if content is None:
            continue
        text = normalize_fact(content)
        if text in added_now:
            continue  # the same fact twice in one message
        category = _category(operation)
        pinned = _pinned(operation, category)
        target = None
        if operation.target is not None and 1 <= operation.target <= len(known):
            target = known[operation.target - 1]
        action = operation.action
        if text in by_text and action != "skip":
            action, target = "skip", by_text[text]
        if target is not None and target.key in touched:
            continue  # one change per fact per turn
        if action in ("update", "supersede") and target is None:
            action = "add"
        if target is not None and action != "add":
            fresh = await get_memory(store, user_id, target.key)
            if fresh is None or not is_current(fresh.value):
                continue  # changed meanwhile (e.g. corrected or forgotten by a tool)
            target = fresh
            before[target.key] = dict(target.value)
        if action == "add":
            key = await save_memory_once(
                store,
                user_id,
                content,
                category=category,
                confidence=operation.confidence,
                pinned=pinned,
                thread_id=thread_id,
                message_id=message_id,
                **said,
            )
            report.added.append(key)
            before[key] = None
            added_now.add(text)
            touched.add(key)
        elif action == "update" and target is not None:
            if operation.profile is None and target.value.get("pinned"):
                pinned = True  # rewording a profile fact keeps it in the profile
            previous = target.value.get("confidence", 0.0)
            await update_memory(
                store,
                user_id,
                target.key,
                content,
                thread_id=thread_id,
                category=category,
                confidence=max(operation.confidence, float(previous or 0.0)),
                pinned=pinned,
                **said,
            )
            report.updated.append(target.key)
            touched.add(target.key)
        elif action == "supersede" and target is not None:
            new_key = await supersede_memory(
                store,
                user_id,
                target.key,
                content,
                thread_id=thread_id,
                category=category,
                confidence=operation.confidence,
                pinned=pinned or bool(target.value.get("pinned")),
                message_id=message_id,
                **said,
            )
            await record_audit(
                store,
                user_id,
                action="supersede",
                fact_key=target.key,
                content=str(target.value.get("content", "")),
                actor=user_id,
                via=via,
                thread_id=thread_id,
                new_content=content,
                new_fact_key=new_key,
                **client_detail(client),
            )
            report.superseded.append(target.key)
            report.added.append(new_key)
            before[new_key] = None
            added_now.add(text)
            touched.update({target.key, new_key})
        elif action == "skip" and target is not None:
            await confirm_memory(store, user_id, target.key, pinned=operation.profile)
            report.confirmed.append(target.key)
            touched.add(target.key)
    if before and thread_id and message_id:
        await record_turn(store, user_id, thread_id=thread_id, message_id=message_id, before=before)
    return report
