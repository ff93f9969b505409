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

import re
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.store.base import BaseStore, Item
from pydantic import BaseModel, ConfigDict, Field

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
from assistant.memory.wording import (
    allergens,
    drops_names,
    names_an_allergy,
    read_for,
    related,
)
from assistant.memory.writer import Writer

__all__ = [
    "CATEGORIES",
    "ConsolidationReport",
    "MemoryOperation",
    "MemoryOperations",
    "HARD_CONSTRAINT",
    "PROFILE_CATEGORIES",
    "apply_operations",
    "is_hard_constraint",
    "target_of",
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

HARD_CONSTRAINT = "constraint"
"""The category of what limits what may be suggested: kept in every prompt, heeded."""

PROFILE_CATEGORIES = frozenset({"identity", "location", HARD_CONSTRAINT})
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


def _both_required(schema: dict[str, Any]) -> None:
    """Ask for both fields in every answer, ``user_says`` first.

    A grammar built from the JSON schema (llama.cpp's) then makes the model restate the
    message before it decides. An answer without them still parses (the defaults).
    """
    schema["required"] = ["user_says", "operations"]


class MemoryOperations(BaseModel):
    """The changes a user message implies; empty when it holds nothing durable."""

    model_config = ConfigDict(json_schema_extra=_both_required)

    user_says: str = Field(
        default="",
        description="The message restated as one plain sentence about the user, in the "
        "message's language, keeping any no or never; empty when it says nothing about them.",
    )
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


def is_hard_constraint(category: str, content: str) -> bool:
    """Whether a fact limits what may be suggested: filed so, or naming an allergy.

    Qwen2.5-Coder-1.5B files about a third of its facts under the wrong category; an allergy
    filed as ``relationship`` or ``other`` is never heeded (`assistant.nodes.recall.heeded`)
    and may be given up for the budget, so a fact that `names_an_allergy` is always a hard
    constraint. Read wherever it matters (heeding, the prompt's budget), so a fact stored
    under another category before it was filed right still counts.

    >>> is_hard_constraint("other", "Lily ist allergisch gegen Erdnüsse")
    True
    >>> is_hard_constraint("location", "Lives in Porto"), is_hard_constraint("constraint", "x")
    (False, True)
    """
    return category == HARD_CONSTRAINT or names_an_allergy(content)


ALLERGIST = re.compile(r"allergist|alergista|allergolog|alergolog|аллерголог", re.IGNORECASE)


def loses_an_allergy(old: str, new: str) -> bool:
    """Whether writing ``new`` over the fact ``old`` would lose an allergy ``old`` names.

    ``new`` must name every allergen of ``old`` (in any language `SAME_THING` knows), or,
    for an allergy that names none ("…allergic to them"), name an allergy at all.

    >>> loses_an_allergy("Lily is allergic to peanuts", "Lily's trip snacks: apples, carrots")
    True
    >>> loses_an_allergy("Lily is allergic to peanuts", "Lily is allergic to eggs")
    True
    >>> loses_an_allergy("Lily is allergic to peanuts", "Lily outgrew her peanut allergy")
    False
    >>> loses_an_allergy("Works as an allergist in Porto", "Works as a dermatologist in Porto")
    False
    """
    stems = allergens(old)
    if not stems:
        return names_an_allergy(old) and not ALLERGIST.search(old) and not names_an_allergy(new)
    kept = read_for(new)
    return any(stem not in kept for stem in stems)


def _category(operation: MemoryOperation) -> str:
    """The operation's category, and ``constraint`` for any fact that names an allergy.

    >>> op = MemoryOperation(action="add", content="Daughter Lily is allergic to peanuts",
    ...                      category="relationship", confidence=0.9)
    >>> _category(op), _category(op.model_copy(update={"content": "女儿对花生过敏"}))
    ('constraint', 'constraint')
    >>> _category(op.model_copy(update={"content": "Daughter Lily loves peanuts"}))
    'relationship'
    """
    category = operation.category.strip().lower()
    if is_hard_constraint(category, operation.content):
        return HARD_CONSTRAINT
    return category if category in CATEGORIES else "other"


def _pinned(operation: MemoryOperation, category: str) -> bool:
    if category == HARD_CONSTRAINT:
        return True  # shapes every reply, whatever the model said
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
    """Embed every text this turn may write in one call, before the first write.

    The bundled embeddings keep what they embed, so each write then finds its vector ready
    instead of waiting for the model once per fact; and the store's own index, which embeds
    a written text in a background task that knows no user, finds it cached too (a single
    fact written first and embedded after was embedded twice, once for each). A served
    model keeps nothing, so it is left to embed as each write asks (and a failure here is
    left to the write).
    """
    from assistant.inference.models import E5Embeddings
    from assistant.memory.search.index import store_embeddings

    embeddings = store_embeddings(store)
    texts = [
        content
        for operation in operations
        if operation.action in ("add", "update", "supersede")
        and (content := _usable_content(operation, min_confidence)) is not None
    ]
    if texts and isinstance(embeddings, E5Embeddings):
        with suppress(Exception):
            await embeddings.aembed_documents(texts)


@dataclass(frozen=True)
class Step:
    """One write that consolidation decided on: what to do, to which known fact."""

    action: Literal["add", "update", "supersede", "skip"]
    content: str
    category: str
    confidence: float
    pinned: bool
    """Whether the written fact belongs to the profile."""
    profile: bool | None
    """What the model said about the profile (None: it did not say)."""
    target: Item | None = None
    """The known fact it changes or confirms (None for ``add``)."""


def plan(
    operations: Sequence[MemoryOperation], known: Sequence[Item], *, min_confidence: float
) -> list[Step]:
    """The writes the model's ``operations`` come to, checked against the ``known`` facts.

    No store is read: a confused model is kept from damaging stored facts here. Operations
    below ``min_confidence`` or with empty or oversized content are dropped; a fact said
    twice in one message is written once; one already known word for word becomes a
    *skip* of it, and so does a long one said again under a one-word label
    (`_labelled_copy`); an *update* or *supersede* of a target that does not exist becomes
    an *add*, and so does one of a target it shares no word with, in the same script
    (`assistant.memory.wording.related`); an *update* that drops a name, place or number of
    its target is a *supersede* (`assistant.memory.wording.drops_names`); an *update* or
    *supersede* of an allergy by a fact that does not name its allergen is an *add*
    (`loses_an_allergy`; asked "Can you suggest
    some snacks for Lily's school trip?", Qwen2.5-Coder-1.5B superseded "Daughter Lily is
    allergic to peanuts" with snacks it made up, and the allergy left recall); a *skip* with no
    target does nothing; and each known fact is changed at most once per turn.

    >>> known = [Item(value={"content": "Lives in Hangzhou"}, key="k1", namespace=(),
    ...     created_at="2026-01-01T00:00:00", updated_at="2026-01-01T00:00:00")]
    >>> ops = [MemoryOperation(action="add", content="lives in hangzhou", category="location",
    ...     confidence=0.9), MemoryOperation(action="supersede", content="Lives in Chengdu",
    ...     category="location", confidence=0.9, target=7)]
    >>> [(step.action, step.content, step.target and step.target.key)
    ...     for step in plan(ops, known, min_confidence=0.5)]
    [('skip', 'lives in hangzhou', 'k1'), ('add', 'Lives in Chengdu', None)]
    """
    by_text = {normalize_fact(str(item.value.get("content", ""))): item for item in known}
    written: set[str] = set()
    targeted: set[str] = set()
    steps: list[Step] = []
    for operation in operations:
        content = _usable_content(operation, min_confidence)
        if content is None or (text := normalize_fact(content)) in written:
            continue
        same = by_text.get(text) or _labelled_copy(content, by_text)
        action, target = _action(operation, known, same)
        if target is not None and target.key in targeted:
            continue
        if action == "skip" and target is None:
            continue
        category = _category(operation)
        steps.append(
            Step(
                action=action,
                content=content,
                category=category,
                confidence=operation.confidence,
                pinned=_pinned(operation, category),
                profile=operation.profile,
                target=target,
            )
        )
        if action in ("add", "supersede"):
            written.add(text)
        if target is not None:
            targeted.add(target.key)
    return steps


LABEL = re.compile(r"^\s*[^\W\d_]{2,20}\s*[:：]\s*")
"""One word and a colon at the start of a fact ("family: "), as a small model labels one."""

MIN_LABELLED_COPY_CHARS = 30
"""A known fact shorter than this, said again under a label, may be someone else's fact
said the same way ("Daughter: allergic to peanuts"): it is not taken for a copy."""


def _labelled_copy(content: str, by_text: Mapping[str, Item]) -> Item | None:
    """The known fact ``content`` says again word for word under a one-word label.

    Extracting "Thanks, Melanie! Your kind words really mean a lot..." with "I'm looking
    into adoption agencies" known, Qwen2.5-Coder-1.5B added "family: I'm looking into
    adoption agencies": after two LoCoMo sessions five of one user's twelve facts were known
    ones again under that label, and they crowded recall. Such a fact is the known one (a
    *skip* of it), when it is `MIN_LABELLED_COPY_CHARS` long or more.

    >>> item = Item(value={"content": "I'm looking into adoption agencies."}, key="k",
    ...     namespace=(), created_at="2026-01-01T00:00:00", updated_at="2026-01-01T00:00:00")
    >>> by_text = {normalize_fact(str(item.value["content"])): item}
    >>> _labelled_copy("family: I'm looking into adoption agencies", by_text).key
    'k'
    >>> _labelled_copy("I'm looking into adoption agencies again", by_text) is None
    True
    """
    bare = LABEL.sub("", content, count=1)
    if bare == content or len(bare.strip()) < MIN_LABELLED_COPY_CHARS:
        return None
    return by_text.get(normalize_fact(bare))


def _action(
    operation: MemoryOperation, known: Sequence[Item], same: Item | None
) -> tuple[Literal["add", "update", "supersede", "skip"], Item | None]:
    """What ``operation`` comes to, and its target: ``same`` is a known fact with its words."""
    if same is not None and operation.action != "skip":
        return "skip", same
    target = target_of(operation, known)
    if operation.action == "add" or target is None and operation.action != "skip":
        return "add", None
    if (
        operation.action != "skip"
        and target is not None
        and not related(str(target.value.get("content", "")), operation.content)
    ):
        return "add", None  # a change of a fact it shares no word with: another fact
    if (
        operation.action != "skip"
        and target is not None
        and loses_an_allergy(str(target.value.get("content", "")), operation.content)
    ):
        return "add", None  # an allergy is changed only by what is said about the allergy
    if (
        operation.action == "update"
        and target is not None
        and drops_names(str(target.value.get("content", "")), operation.content)
    ):
        return "supersede", target  # not a refinement: the old wording stays as history
    return operation.action, target


def target_of(operation: MemoryOperation, known: Sequence[Item]) -> Item | None:
    """The known fact ``operation`` names by its number (1-based); None when it names none.

    A number out of range names none.
    """
    if operation.target is not None and 1 <= operation.target <= len(known):
        return known[operation.target - 1]
    return None


@dataclass
class _Steps:
    """Carries out planned steps for one turn through its writer, and reports what changed."""

    writer: Writer
    said: dict[str, Any]
    """Where and when the facts were said, put on every fact written."""
    report: ConsolidationReport = field(default_factory=ConsolidationReport)

    async def write(self, step: Step) -> None:
        if step.action == "add":
            self.report.added.append(await self._save(step))
            return
        assert step.target is not None
        writer = self.writer
        fresh = await get_memory(writer.store, writer.user_id, step.target.key)
        if fresh is None or not is_current(fresh.value):
            return  # changed meanwhile (e.g. corrected or forgotten by a tool)
        if step.action == "update":
            await self._update(step, fresh)
        elif step.action == "supersede":
            await self._supersede(step, fresh)
        else:
            await confirm_memory(writer, fresh.key, pinned=step.profile)
            self.report.confirmed.append(fresh.key)

    def _fields(self, step: Step) -> dict[str, Any]:
        """What a fact written by ``step`` holds besides its words."""
        return {"category": step.category, "confidence": step.confidence, **self.said}

    async def _save(self, step: Step) -> str:
        return await save_memory_once(
            self.writer,
            step.content,
            **self._fields(step),
            pinned=step.pinned,
            thread_id=self.writer.thread_id,
            message_id=self.writer.message_id,
        )

    async def _update(self, step: Step, target: Item) -> None:
        # rewording a profile fact keeps it in the profile, unless the model said otherwise
        pinned = True if step.profile is None and target.value.get("pinned") else step.pinned
        previous = float(target.value.get("confidence", 0.0) or 0.0)
        fields = {**self._fields(step), "confidence": max(step.confidence, previous)}
        await update_memory(self.writer, target.key, step.content, **fields, pinned=pinned)
        self.report.updated.append(target.key)

    async def _supersede(self, step: Step, target: Item) -> None:
        new_key = await supersede_memory(
            self.writer,
            target.key,
            step.content,
            action="supersede",
            **self._fields(step),
            pinned=step.pinned or bool(target.value.get("pinned")),
            message_id=self.writer.message_id,
        )
        self.report.superseded.append(target.key)
        self.report.added.append(new_key)


async def apply_operations(
    writer: Writer,
    operations: Sequence[MemoryOperation],
    known: Sequence[Item],
    *,
    min_confidence: float,
    metadata: Mapping[str, Any] | None = None,
) -> ConsolidationReport:
    """Carry out the model's ``operations`` against the ``known`` facts it was shown.

    ``target`` numbers refer to ``known`` (1-based); `plan` decides what is written, so a
    confused model cannot damage stored facts, and each write then checks that its target
    is still current. ``metadata`` goes on every fact written (where and when it was said:
    ``said_at``, ``context``, ``turn``; see `assistant.extraction.extract.provenance`). The
    ``writer`` (`assistant.memory.writer`) says in the audit trail where a superseding
    message came from, and keeps what the turn changed, so that a rolled-back turn can be
    undone (`assistant.memory.turns`).
    """
    await _embed_together(writer.store, operations, min_confidence)
    steps = _Steps(writer, dict(metadata or {}))
    for step in plan(operations, known, min_confidence=min_confidence):
        await steps.write(step)
    return steps.report
