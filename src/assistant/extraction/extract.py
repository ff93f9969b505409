"""Fact extraction: one structured model call over one or more user messages, then the writes.

`remember` extracts the user's new message when the gate sends it (`assistant.extraction.gate`). A
message the gate is unsure about may be held (`assistant.memory.held`) and extracted
together with others, so that one call covers several. A held message is extracted at the
earliest of:

1. the next message of its thread that the gate sends (one call for both);
2. its thread holding `HOLD_BATCH` messages;
3. another thread of the same user starting a turn: that thread's `recall` extracts it
   first, so a fact never misses the user's other threads;
4. ``Context.extraction_hold_s`` after the oldest was held: a timer in the server process
   (`assistant.extraction.hold_timers`; after a restart, the user's next turn extracts what is
   overdue).

Until then the message is still in its own thread's messages, which the reply reads.

The call sees the user's closest stored facts and says, per durable fact, whether to add
it, update or supersede a known fact, or skip it as already known (see
:mod:`assistant.memory.consolidate`), using the strongest structured mechanism the provider
accepts (:func:`assistant.inference.providers.ainvoke_structured`). Any failure is logged, counted
for the provider and recorded: nothing already stored is lost. Every message's outcome (kept,
nothing to keep, held, skipped, failed) and its reason go to the user's record of what was
heard (`assistant.memory.heard`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.store.base import Item
from pydantic import BaseModel, Field

from assistant import memory
from assistant.config.settings import get_model_settings
from assistant.extraction import gate, hold_timers
from assistant.inference import models, providers
from assistant.memory import CATEGORIES, ConsolidationReport, MemoryOperation, MemoryOperations
from assistant.memory.consolidate import target_of
from assistant.memory.search.lexical import CJK_LETTER, tokenize
from assistant.memory.wording import (
    bare_names,
    foreign_script,
    new_names,
    normalize_fact,
    quotes_fact,
    replaces_name,
)
from assistant.run import prompts
from assistant.run.context import Context
from assistant.run.history import truncate_text
from assistant.run.prompting import as_data
from assistant.run.scope import RunScope

__all__ = [
    "HOLD_BATCH",
    "MAX_EXTRACTION_ATTEMPTS",
    "Extraction",
    "Said",
    "decide_operations",
    "extract",
    "hold",
    "known_facts",
    "numbered",
    "record",
    "release_held",
    "unheard",
]

logger = logging.getLogger(__name__)

Answer = TypeVar("Answer", bound=BaseModel)

MAX_EXTRACTION_TOKENS = 2000
"""Only this much of a huge message (its start and its end) goes to the model."""

KNOWN_FACTS_SHOWN = 8
"""How many of the user's closest stored facts the model sees, besides the profile."""

MAX_PROFILE_SHOWN = 20
"""At most this many profile facts are shown to the model."""

MAX_REASON_CHARS = 200
"""A failure's reason is cut to this many characters in the metrics and the record."""

HOLD_BATCH = 3
"""A thread's held messages are extracted together once this many wait."""

MAX_EXTRACTION_ATTEMPTS = 3
"""A message whose extraction failed is held and tried again with the user's next turns,
until this many extractions of it have failed."""


@dataclass(frozen=True)
class Said:
    """One user message that extraction reads."""

    id: str
    text: str
    thread_id: str = ""
    held_at: str = ""
    """When it was held for a batch (ISO time); empty for a message not held."""
    said_at: str = ""
    """When the user said it (ISO time); empty: now."""
    context: str = ""
    """What came just before it in the thread (the assistant's last words, shortened): the
    question a fragment like "Mochi, a tabby" answers. Recall reads it (`provenance`)."""
    turn: int | None = None
    """Its number among the thread's user messages (from 0)."""
    attempts: int = 0
    """How many extractions of it failed already."""

    @classmethod
    def from_held(cls, record: dict[str, Any]) -> Said:
        """A message from its held record (`assistant.memory.held`)."""
        turn = record.get("turn")
        return cls(
            id=str(record.get("id", "")),
            text=str(record.get("text", "")),
            thread_id=str(record.get("thread_id", "")),
            held_at=str(record.get("at", "")),
            said_at=str(record.get("at", "")),
            context=str(record.get("context", "")),
            turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
            attempts=_count_of(record.get("attempts")),
        )

    def held_record(self) -> dict[str, Any]:
        """The record `assistant.memory.held` keeps for it."""
        return {"thread_id": self.thread_id, "id": self.id}


@dataclass(frozen=True)
class Extraction:
    """What one extraction made of its messages."""

    outcome: str
    """``kept``, ``nothing`` or ``failed`` (`assistant.memory.OUTCOMES`)."""
    reason: str
    report: ConsolidationReport | None = None
    """What was written; None when it failed."""


# --------------------------------------------------------------------------- extracting


async def extract(
    scope: RunScope, batch: Sequence[Said], *, via: str = memory.CHAT_VIA, client: str | None = None
) -> Extraction:
    """One extraction call on ``batch``; record each message's outcome; release held ones.

    ``via`` and ``client`` name the path the messages came by in the audit trail: the chat
    (the default), or an agent over MCP (`assistant.server.mcp_server`).
    """
    for thread_id in {said.thread_id or scope.thread_id or "" for said in batch}:
        hold_timers.cancel(scope.user_id, thread_id)  # every held message of theirs is in ``batch``
    try:
        report = await _extract(scope, batch, via=via, client=client)
    except Exception as error:
        logger.exception("Remembering this turn failed; the reply stands")
        _count(scope.context, error)
        result = Extraction("failed", failure(error, scope.context))
    else:
        _count(scope.context, None)
        result = Extraction(*outcome(report), report=report)
    held = [said.held_record() for said in batch if said.held_at]
    if held:
        await scope.memory.release(held)
    done = result.report
    changed = [*done.added, *done.updated, *done.superseded] if done else []
    together = f" (in one call with {len(batch) - 1} more)" if len(batch) > 1 else ""
    for said in batch:
        reason = result.reason + together
        if result.outcome == "failed":
            reason += await _retry_later(scope, said)
        await record(scope, said, result.outcome, reason, facts=changed)
    return result


async def _retry_later(scope: RunScope, said: Said) -> str:
    """Hold a message whose extraction failed, to be tried with the next turn; say so.

    Nothing is lost while the model is down: the message waits in the held messages
    with its count of failed attempts, and `remember` (or another thread's `recall`)
    extracts it again with the user's next turn, at most `MAX_EXTRACTION_ATTEMPTS` times
    in all. No timer retries it: a model that is down would only fail again.
    """
    attempts = said.attempts + 1
    thread_id = said.thread_id or scope.thread_id
    if attempts >= MAX_EXTRACTION_ATTEMPTS or not thread_id or not said.id:
        return f"; not tried again (attempt {attempts} of {MAX_EXTRACTION_ATTEMPTS})"
    try:
        await scope.memory.hold(
            thread_id=thread_id,
            message_id=said.id,
            text=said.text,
            context=said.context,
            turn=said.turn,
            attempts=attempts,
            at=said.said_at or said.held_at,
        )
    except Exception:
        logger.exception("Could not keep a message whose extraction failed for a retry")
        return ""
    return (
        f"; it will be tried again with your next message "
        f"(attempt {attempts} of {MAX_EXTRACTION_ATTEMPTS})"
    )


def _count_of(value: object) -> int:
    """A stored count, or 0 when it is missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


async def _extract(
    scope: RunScope, batch: Sequence[Said], *, via: str, client: str | None
) -> ConsolidationReport:
    context = scope.context
    text = "\n\n".join(said.text for said in batch)
    known = await known_facts(scope.memory, text)
    operations = await asyncio.wait_for(
        decide_operations(text, known, context=context),
        timeout=extraction_timeout(context),
    )
    threads = {said.thread_id or scope.thread_id for said in batch}
    own = len(threads) == 1 and scope.thread_id in threads
    return await scope.memory.apply(
        operations,
        known,
        min_confidence=context.min_fact_confidence,
        # A rolled-back turn undoes what its message changed; a batch of other threads'
        # messages belongs to no one turn of this thread.
        thread_id=scope.thread_id if own else None,
        message_id=(batch[-1].id or None) if own else None,
        via=via,
        client=client,
        metadata=provenance(batch, own=own),
    )


def provenance(batch: Sequence[Said], *, own: bool) -> dict[str, Any]:
    """What recall can use about where the facts of ``batch`` were said.

    ``said_at`` (its last message's time) dates them; for a single message of this thread,
    ``turn`` places them in it and ``context`` keeps what they answered, so a question
    worded like the assistant's question finds the fact (`assistant.memory.search.lexical`). A
    batch of several messages has no one turn or context.

    >>> provenance([Said(id="m", text="Mochi, a tabby", said_at="2026-03-01T10:00:00+00:00",
    ...     context="What is your cat called?", turn=3)], own=True)
    {'said_at': '2026-03-01T10:00:00+00:00', 'context': 'What is your cat called?', 'turn': 3}
    """
    last = batch[-1]
    found: dict[str, Any] = {"said_at": last.said_at or last.held_at or _now()}
    if len(batch) == 1 and own:
        if last.context:
            found["context"] = last.context
        if last.turn is not None:
            found["turn"] = last.turn
    return found


async def known_facts(user: memory.UserMemory, text: str) -> list[Item]:
    """The facts the model is shown: the profile, then the closest others to ``text``."""
    pinned = (await user.profile())[:MAX_PROFILE_SHOWN]
    closest = await user.recall(text[:2000], limit=KNOWN_FACTS_SHOWN)
    shown = {item.key for item in pinned}
    return [*pinned, *(item for item in closest if item.key not in shown)]


async def decide_operations(
    text: str, known: Sequence[Item], *, context: Context
) -> list[MemoryOperation]:
    """Ask the model what ``text`` changes, given the ``known`` facts (numbered from 1).

    The message and the facts go into their blocks as data (`assistant.run.prompting.as_data`):
    neither can close its block and write instructions after it.
    """
    prompt = prompts.EXTRACTION_PROMPT.format(
        categories=", ".join(CATEGORIES),
        known_facts=numbered(known) or "(none)",
        message=as_data(truncate_text(text, MAX_EXTRACTION_TOKENS)),
    )
    result = await _ask(MemoryOperations, prompt, context)
    operations = _in_own_words(
        _said_in_full(
            [
                await _checked(_as_change(op, known, text), known, text, result.user_says, context)
                for op in _rescued(result.operations, known, text)
                if not _unfilled(op)
                and not _invented(op, text)
                and not _merges_known(op, known, text)
            ],
            result.user_says,
            text,
        ),
        text,
    )
    if _decides_nothing(operations, known):
        return _in_own_words(await _restated(result.user_says, text, known, operations), text)
    return operations


def _said_in_full(
    operations: Sequence[MemoryOperation], user_says: str, text: str
) -> list[MemoryOperation]:
    """``operations``, with a lone fact that only names something given the restatement's words.

    Qwen2.5-Coder-1.5B answers "Ich wohne seit letztem Jahr in München, die Stadt gefällt
    mir sehr." with the fact "München, Germany" (`assistant.memory.wording.bare_names`),
    every time. Shown beside "I am a nurse at a hospital in Hangzhou", it then answered
    "In which city do I live?" with Hangzhou; stored as "Ich wohne seit letztem Jahr in
    München." it answered München. When the message's only written fact is bare and the
    model's own restatement of the message (``user_says``) names it, the restatement is the
    fact, as long as a restatement could be one (`_could_be_fact`). With several facts
    the restatement says them all, so each stays as the model wrote it.

    >>> bare = MemoryOperation(action="add", content="München, Germany", category="location",
    ...                        confidence=0.9)
    >>> said = "Ich wohne seit letztem Jahr in München."
    >>> [op.content for op in _said_in_full([bare], said, said)]
    ['Ich wohne seit letztem Jahr in München.']
    >>> [op.content for op in _said_in_full([bare, bare], said, said)]
    ['München, Germany', 'München, Germany']
    """
    written = [op for op in operations if op.action != "skip"]
    names = bare_names(written[0].content) if len(written) == 1 else []
    said = user_says.strip()
    if not any(name in said.casefold() for name in names):
        return list(operations)
    full = written[0].model_copy(update={"content": said})
    if not _could_be_fact(full, text):
        return list(operations)
    logger.info("Extraction named only %r; keeping its restatement: %r", written[0].content, said)
    return [full if op is written[0] else op for op in operations]


def _in_own_words(operations: Sequence[MemoryOperation], text: str) -> list[MemoryOperation]:
    """``operations``, with a lone new fact that shares no word with its message as the message.

    Asked to write facts "in the language of the message, using the user's own words",
    Qwen2.5-Coder-1.5B still translates some into English, and a small model's translation
    loses what the fact is about: "аллергия на пыльцу березы, весной вообще ад" (birch pollen)
    became "I have an allergy to pineapples", and a Spanish "soy el único contador de la
    oficina" (the only accountant) "the only counter at the office". A fact that shares no
    search term with the message it came from (stems and Chinese bigrams, English stop words
    aside, as recall indexes them) was written in other words, most often another language;
    the user's own words cannot be mistranslated, and e5 finds them from a question in any
    language. Only a lone new or superseding fact (an update with no fact to update is one;
    the model's restatement of the message included, `_restated`) of a message short enough
    to be a fact (`MAX_RESTATED_CHARS`) is replaced: with several, which words are whose is
    unknown.

    >>> def add(content): return MemoryOperation(
    ...     action="add", content=content, category="constraint", confidence=0.9)
    >>> said = "аллергия на пыльцу березы, весной вообще ад"
    >>> [op.content for op in _in_own_words([add("I have an allergy to pineapples")], said)]
    ['аллергия на пыльцу березы, весной вообще ад']
    >>> [op.content for op in _in_own_words([add("Allergic to birch pollen")], "allergic 2 birch")]
    ['Allergic to birch pollen']
    """
    written = [op for op in operations if op.action != "skip"]
    own = " ".join(text.split())
    new = len(written) == 1 and (
        written[0].action in ("add", "supersede") or written[0].target is None
    )
    if not new:  # an update of a known fact merges words of its own
        return list(operations)
    if len(own) > MAX_RESTATED_CHARS or not _other_words(written[0].content, own):
        return list(operations)
    logger.info("Extraction wrote %r in other words; keeping the message's: %r", written[0], own)
    kept = written[0].model_copy(update={"content": own})
    return [kept if op is written[0] else op for op in operations]


def _other_words(content: str, text: str) -> bool:
    """Whether ``content`` and ``text`` both have search terms, and none in common."""
    said, written = set(tokenize(text)), set(tokenize(content))
    return bool(said) and bool(written) and not said & written


def _as_change(operation: MemoryOperation, known: Sequence[Item], text: str) -> MemoryOperation:
    """``operation``, with a *skip* that is really a change made the *supersede* it is.

    Such a skip's fact puts a name the user said where its target has another
    (`assistant.memory.wording.replaces_name`).

    >>> from langgraph.store.base import Item
    >>> lisbon = Item(value={"content": "I live in Lisbon"}, key="k", namespace=(),
    ...     created_at="2026-01-01T00:00:00", updated_at="2026-01-01T00:00:00")
    >>> skip = MemoryOperation(action="skip", content="I live in Porto", category="location",
    ...     confidence=0.9, target=1)
    >>> _as_change(skip, [lisbon], "We moved to Porto, no more Lisbon").action
    'supersede'
    >>> _as_change(skip, [lisbon], "I live in Lisbon, as I said").action
    'skip'
    """
    target = target_of(operation, known) if operation.action == "skip" else None
    if target is None or not replaces_name(
        str(target.value.get("content", "")), operation.content, text
    ):
        return operation
    logger.info("Extraction called a change already known; superseding: %r", operation.content)
    return operation.model_copy(update={"action": "supersede"})


class StillTrue(BaseModel):
    """Whether a known fact still holds after the user's message (`STILL_TRUE_PROMPT`)."""

    still_true: bool = Field(description="False only when the message says it no longer holds.")
    now: str = Field(default="", description="What holds instead; empty when it still holds.")


async def _checked(
    operation: MemoryOperation, known: Sequence[Item], text: str, user_says: str, context: Context
) -> MemoryOperation:
    """A *skip* of a known fact the message names something beyond, asked about once more.

    A small model often calls a move already known: "we moved to Porto, so I don't live in
    Lisbon anymore" answered with a skip of "Lives in Lisbon". When the model's own
    restatement of the message (``user_says``) names a name, place or number the known fact
    does not (`assistant.memory.wording.new_names`), its skip contradicts its reading, and
    one short question (`prompts.STILL_TRUE_PROMPT`) asks whether the fact still holds,
    and a fact that no longer does is superseded by what holds now. A failed question fails
    the extraction, which is tried again with the next turn. A message in Chinese, Japanese
    or Korean is not asked about: without capitals, nearly every repeat says words its
    fact does not, and the question would follow most of them.
    """
    target = target_of(operation, known) if operation.action == "skip" else None
    fact = str(target.value.get("content", "")) if target is not None else ""
    if not fact or CJK_LETTER.search(text) or not new_names(user_says, fact):
        return operation
    prompt = prompts.STILL_TRUE_PROMPT.format(
        known_facts=f"1. {as_data(fact, one_line=True)}",
        message=as_data(truncate_text(text, MAX_EXTRACTION_TOKENS)),
    )
    answer = await _ask(StillTrue, prompt, context)
    now = answer.now.strip()
    if answer.still_true or normalize_fact(now) in ("", normalize_fact(fact)):
        return operation
    changed = operation.model_copy(update={"action": "supersede", "content": now})
    if _unfilled(changed) or _invented(changed, text):
        return operation
    logger.info("A skipped fact no longer holds; superseding %r with %r", fact, now)
    return changed


async def _ask(schema: type[Answer], prompt: str, context: Context) -> Answer:
    """One structured question about memory to the context's model, never streamed."""
    return await providers.ainvoke_structured(
        models.get_chat_model(context.model),
        schema,
        [HumanMessage(content=prompt)],
        {"run_name": "remember", "tags": [TAG_NOSTREAM]},
    )


RESTATED_CONFIDENCE = 0.7
"""The confidence of a fact kept from the model's restatement (`_restated`)."""


def _decides_nothing(operations: Sequence[MemoryOperation], known: Sequence[Item]) -> bool:
    """Whether ``operations`` neither write a fact nor confirm a known one.

    A small model often answers a fact said as a "no" ("never drinks alcohol") with no
    operation, or with a *skip* that names no known fact, while its restatement of the
    message says the fact plainly.

    >>> skip = MemoryOperation(action="skip", content="Does not drink", category="constraint",
    ...     confidence=0.9)
    >>> added = skip.model_copy(update={"action": "add"})
    >>> _decides_nothing([skip], []), _decides_nothing([added], []), _decides_nothing([], [])
    (True, False, True)
    """
    return all(op.action == "skip" and target_of(op, known) is None for op in operations)


async def _restated(
    user_says: str, text: str, known: Sequence[Item], operations: Sequence[MemoryOperation]
) -> list[MemoryOperation]:
    """The model's restatement of the message as a fact to add, when it is one.

    Kept only when the gate's classifier would extract it at once as a statement of a
    fact (`assistant.extraction.gate.judge`: a restated question or request is not), it is
    in the message's script, and no known fact says it or is said within it (the model
    decided nothing, so consolidation has no target to go on).
    """
    said = user_says.strip()
    fact = MemoryOperation(
        action="add",
        content=said,
        category=operations[0].category if operations else "other",
        confidence=RESTATED_CONFIDENCE,
    )
    if not _could_be_fact(fact, text):
        return []
    for item in known:
        content = str(item.value.get("content", ""))
        if quotes_fact(said, content) or quotes_fact(content, said):
            return []
    if (await gate.judge(said)).decision != "extract":
        return []
    logger.info("Extraction decided nothing; keeping its restatement: %r", said)
    return [fact]


MAX_RESTATED_CHARS = 300
"""A longer restatement is the message copied, not a fact."""


def _could_be_fact(restated: MemoryOperation, text: str) -> bool:
    """Whether the model's restatement of ``text``, as a fact to write, could be one.

    Not empty, not the message copied (`MAX_RESTATED_CHARS`), no blank left in it, and not
    invented (`_invented`).
    """
    content = restated.content
    return (
        bool(content)
        and len(content) <= MAX_RESTATED_CHARS
        and not _unfilled(restated)
        and not _invented(restated, text)
    )


UNFILLED = re.compile(r"<[^<>\n]{1,30}>|＜[^＜＞\n]{1,30}＞")
"""A blank left in a fact's content ("<unknown>", "<city>"): a small model shown a template
fills it in instead of saying what the user said."""


def _invented(operation: MemoryOperation, text: str) -> bool:
    """Whether ``operation`` writes a fact the message cannot have said.

    Either in a script the message does not use at all, or much longer than the message:
    a small model sometimes answers "I work as a teacher." with a page of facts about a
    city, children and a dog, made from the prompt's list of kinds of fact.

    >>> def add(content): return MemoryOperation(
    ...     action="add", content=content, category="other", confidence=0.9)
    >>> _invented(add("住在北京"), "Ich wohne seit letztem Jahr in München")
    True
    >>> _invented(add("Works as a teacher. " * 8), "I work as a teacher.")
    True
    >>> _invented(add("Does not eat coriander (cilantro)"), "不吃香菜")
    False
    """
    if operation.action == "skip":
        return False
    content = operation.content.strip()
    if foreign_script(content, text) or len(content) > _longest_said(text):
        logger.warning("Extraction wrote a fact the message does not say; dropped: %r", operation)
        return True
    return False


def _merges_known(operation: MemoryOperation, known: Sequence[Item], text: str) -> bool:
    """Whether an update or supersede adds to its fact only the words of other known facts.

    Asked "Posso fazer um bolo de amendoim para a Lily?" with "Daughter Lily is allergic to
    peanuts" and "Lives in Munich" known, Qwen2.5-Coder-1.5B updated the allergy to "Lily is
    allergic to peanuts and lives in Munich.": two known facts run together, nothing the
    message says. Words are compared as recall indexes them (stems, English stop words
    aside); Chinese, Japanese and Korean are not compared.

    >>> from datetime import UTC, datetime
    >>> now = datetime.now(UTC)
    >>> known = [Item(value={"content": text}, key=str(n), namespace=("f",), created_at=now,
    ...     updated_at=now) for n, text in enumerate(["Daughter Lily is allergic to peanuts",
    ...     "Lives in Munich"])]
    >>> merged = MemoryOperation(action="update", content="Lily is allergic to peanuts and "
    ...     "lives in Munich.", category="constraint", confidence=0.9, target=1)
    >>> _merges_known(merged, known, "Posso fazer um bolo de amendoim para a Lily?")
    True
    >>> _merges_known(merged, known, "Lily and I live in Munich now.")
    False
    """
    target = target_of(operation, known)
    if operation.action not in ("update", "supersede") or target is None:
        return False
    if CJK_LETTER.search(operation.content) or CJK_LETTER.search(text):
        return False
    new = set(tokenize(operation.content)) - set(tokenize(str(target.value.get("content", ""))))
    others = {
        word
        for item in known
        if item is not target
        for word in tokenize(str(item.value.get("content", "")))
    }
    if not new or not new <= others or new & set(tokenize(text)):
        return False
    logger.warning("Extraction ran known facts together; dropped: %r", operation)
    return True


def _rescued(
    operations: Sequence[MemoryOperation], known: Sequence[Item], text: str
) -> list[MemoryOperation]:
    """``operations``, each too long for its message without the known facts it copies.

    Told "我女儿莉莉对花生过敏。" with "I am a nurse in Hangzhou, China, and I have been
    working there for five years." known, Qwen2.5-Coder-1.5B wrote the update "I am a nurse
    in Hangzhou, China, and I have been working there for five years. My daughter莉莉对花生过敏。":
    too long for its message to have said (`_invented`), so it was dropped, and the allergy
    with it. Taken out word for word (a known fact of `MIN_COPIED_CHARS` or more, whole), the
    known fact stays as it was, and what is left is the fact the message says, kept once
    however many operations copy. An update of the very fact it copied becomes an add (its
    "merged" fact was the known one and the new one side by side); any other operation keeps
    its action and target (a supersede still replaces its fact with what is left).

    >>> from datetime import UTC, datetime
    >>> now = datetime.now(UTC)
    >>> nurse = "I am a nurse in Hangzhou, China, and I have been working there for five years."
    >>> known = [Item(value={"content": nurse}, key="1", namespace=("f",), created_at=now,
    ...     updated_at=now)]
    >>> merged = MemoryOperation(action="update", content=f"{nurse} My daughter莉莉对花生过敏。",
    ...     category="constraint", confidence=1.0, target=1)
    >>> said = "我女儿莉莉对花生过敏。"
    >>> [(op.action, op.content, op.target) for op in _rescued([merged], known, said)]
    [('add', 'My daughter莉莉对花生过敏', None)]
    """
    known_texts = {str(item.value.get("content", "")) for item in known}
    copyable = sorted((fact for fact in known_texts if len(fact) >= MIN_COPIED_CHARS), key=len)
    rescued: list[MemoryOperation] = []
    for operation in operations:
        content = operation.content.strip()
        if operation.action != "skip" and len(content) > _longest_said(text):
            copied = [fact for fact in reversed(copyable) if fact in content]  # longest first
            for fact in copied:
                content = content.replace(fact, " ")
            content = " ".join(content.split()).strip(" ,;:.。，；：")
            if copied and content:
                if any(content == other.content for other in rescued):
                    continue
                target = target_of(operation, known)
                merged = target is not None and str(target.value.get("content", "")) in copied
                changes: dict[str, Any] = {"content": content}
                if operation.action == "update" and merged:
                    changes |= {"action": "add", "target": None}
                operation = operation.model_copy(update=changes)
        rescued.append(operation)
    return rescued


MIN_COPIED_CHARS = 12
"""A known fact shorter than this ("Lily", "Has a cat") is not taken out of a new one: its
words may be the new fact's own."""


def _longest_said(text: str) -> int:
    """The longest fact a message of ``text`` can have said (`INVENTED_LENGTH`)."""
    return INVENTED_LENGTH * len(text.strip()) + 60


INVENTED_LENGTH = 3
"""A fact longer than this many times its message (and 60 characters) was not said in it;
three leaves room for a Chinese message written as an English fact."""


def _unfilled(operation: MemoryOperation) -> bool:
    """Whether ``operation`` is a template with blanks instead of a fact.

    >>> def add(content): return MemoryOperation(
    ...     action="add", content=content, category="location", confidence=0.9)
    >>> _unfilled(add("Lives in <city>")), _unfilled(add("Lives in Porto"))
    (True, False)
    """
    if operation.content and UNFILLED.search(operation.content):
        logger.warning("Extraction left a placeholder in a fact; dropped: %r", operation.content)
        return True
    return False


def numbered(known: Sequence[Item]) -> str:
    """The ``known`` facts one a line, numbered from 1, as data: what a prompt's targets name."""
    return "\n".join(
        f"{number}. {as_data(str(item.value.get('content', '')), one_line=True)}"
        for number, item in enumerate(known, 1)
    )


def outcome(report: ConsolidationReport) -> tuple[str, str]:
    """``kept`` or ``nothing``, and what the extraction did in a few words.

    >>> outcome(ConsolidationReport(added=["a", "b"], confirmed=["c"]))
    ('kept', 'added 2, already known 1')
    >>> outcome(ConsolidationReport(confirmed=["c"]))
    ('nothing', 'already known 1')
    >>> outcome(ConsolidationReport())
    ('nothing', 'no durable fact found')
    """
    parts = [
        f"{label} {len(keys)}"
        for label, keys in (
            ("added", report.added),
            ("updated", report.updated),
            ("superseded", report.superseded),
            ("already known", report.confirmed),
        )
        if keys
    ]
    changed = report.added or report.updated or report.superseded
    return ("kept" if changed else "nothing"), ", ".join(parts) or "no durable fact found"


def extraction_timeout(context: Context) -> float:
    """Seconds one extraction may take: the context's, or twice the model's request timeout.

    >>> extraction_timeout(Context(extraction_timeout_s=45))
    45
    """
    return context.extraction_timeout_s or 2 * get_model_settings().timeout_s


def failure(error: BaseException, context: Context) -> str:
    """Why the extraction failed, for the user to read.

    >>> failure(TimeoutError(), Context(extraction_timeout_s=30))
    'the model did not answer within 30 s'
    >>> failure(RuntimeError("The model provider rejected it"), Context())
    'The model provider rejected it'
    """
    if isinstance(error, TimeoutError):
        return f"the model did not answer within {extraction_timeout(context):g} s"
    return (str(error) or type(error).__name__)[:MAX_REASON_CHARS]


def _count(context: Context, error: BaseException | None) -> None:
    """Count the extraction's outcome for the provider, so repeated failures show."""
    try:
        model = models.get_chat_model(context.model)
    except Exception:  # no model configured: the reply reports that already
        return
    providers.record_extraction(model, error)


async def record(
    scope: RunScope, said: Said, outcome: str, reason: str, *, facts: list[str] | None = None
) -> None:
    """Add a message's outcome to the user's record of what was heard; never fails a turn."""
    try:
        await scope.memory.note_heard(
            thread_id=said.thread_id or scope.thread_id or "",
            message_id=said.id,
            text=said.text,
            outcome=outcome,
            reason=reason,
            facts=facts,
        )
    except Exception:
        logger.exception("Could not record what memory made of this turn")


# --------------------------------------------------------------------------- holding


async def unheard(scope: RunScope, messages: Sequence[AnyMessage]) -> list[Said]:
    """The user messages before the latest that never got a reply and were never extracted.

    A run interrupted by the user's next message (``multitask_strategy="interrupt"``) or
    cut off before `remember` recorded anything leaves its message with no outcome; the
    next turn extracts it with the new one. Only the messages since the last reply are
    read.
    """
    start = len(messages) - 1
    while start > 0 and isinstance(messages[start - 1], HumanMessage):
        start -= 1
    waiting = [m for m in messages[start:-1] if isinstance(m, HumanMessage) and m.id]
    if not waiting or not scope.thread_id:
        return []
    recorded = await scope.memory.heard_in(scope.thread_id)
    before = messages[start - 1] if start > 0 else None
    context = " ".join(before.text.split())[-300:] if isinstance(before, AIMessage) else ""
    first_turn = sum(isinstance(m, HumanMessage) for m in messages[:start])
    return [
        Said(
            id=message.id or "",
            text=message.text,
            thread_id=scope.thread_id,
            said_at=_now(),
            context=context if index == 0 else "",
            turn=first_turn + index,
        )
        for index, message in enumerate(waiting)
        if message.id not in recorded
    ]


async def held(scope: RunScope, *, other_threads: bool = False) -> list[Said]:
    """This thread's held messages (or every other thread's), oldest first."""
    if other_threads:
        records = await scope.memory.held(other_than=scope.thread_id or "")
    elif scope.thread_id:
        records = await scope.memory.held(thread_id=scope.thread_id)
    else:
        return []
    return [Said.from_held(record) for record in records]


def _now() -> str:
    return datetime.now(UTC).isoformat()


def waited(batch: Sequence[Said]) -> float:
    """Seconds since the oldest of ``batch`` was held (unknown counts as long ago)."""
    try:
        since = datetime.fromisoformat(batch[0].held_at)
    except (ValueError, IndexError):
        return float("inf")
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return (datetime.now(UTC) - since).total_seconds()


async def hold(scope: RunScope, said: Said, held: Sequence[Said]) -> list[Said]:
    """Hold ``said`` beside the thread's ``held`` ones and (re)start the thread's timer.

    Returns the thread's held messages, ``said`` last.
    """
    assert scope.thread_id, "only a message of a thread is held"
    record = await scope.memory.hold(
        thread_id=scope.thread_id,
        message_id=said.id,
        text=said.text,
        context=said.context,
        turn=said.turn,
    )
    batch = [*(other for other in held if other.id != said.id), Said.from_held(record)]
    if len(batch) < HOLD_BATCH:
        _start_timer(scope, max(0.0, scope.context.extraction_hold_s - waited(batch)))
    return batch


async def release_held(scope: RunScope, *, other_threads: bool = False) -> Extraction | None:
    """Extract the held messages of this thread (or of the user's other threads) now.

    One release at a time per user in this process, so turns starting together in several
    threads extract what was held once, not once each.
    """
    lock = _RELEASE_LOCKS.setdefault(scope.user_id, asyncio.Lock())
    async with lock:
        batch = await held(scope, other_threads=other_threads)
        return await extract(scope, batch) if batch else None


_RELEASE_LOCKS: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
"""Each user's release lock, while some release holds it."""


def _start_timer(scope: RunScope, delay: float) -> None:
    """Release the thread's held messages in ``delay`` seconds, unless extracted sooner."""
    hold_timers.start((scope.user_id, scope.thread_id or ""), delay, lambda: release_held(scope))
