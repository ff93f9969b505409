"""Recall on LoCoMo's dev split through the product's path: the facts the graph itself stores.

``bench/locomo.py`` saves every turn of a conversation as a memory. The product does not:
``remember`` stores what extraction makes of the messages the gate lets through, and
``compress`` stores episode summaries. This benchmark feeds LoCoMo's conversations through
the real graph and asks the questions of those stores.

How the conversations go through the graph
    ../shared/data/locomo/locomo-dev.json (LoCoMo, CC BY-NC 4.0: read from shared/, never
    copied here). Each of a conversation's two speakers is one product user (its own
    ``Context.user_id``), with one thread per LoCoMo session, sessions in order. The
    speaker's turns are that user's messages, sent one per graph invocation (recall →
    respond ∥ remember → compress, ``InMemorySaver`` and ``make_store()``). The other
    speaker plays the assistant: the chat model's reply to a message is the other speaker's
    next turn, and when the other speaker opens a session, that opening turn goes into the
    thread as an ``AIMessage`` before the user's first message. So a fact's ``context`` (the
    assistant's words just before the message) is the other speaker's turn, as in a chat
    where the assistant asked.

    The model is scripted (``FunctionChatModel``, offline): replies as above; extraction is
    an echo (each user message it is sent becomes one fact, word for word, found in the
    prompt's ``<user_message>``, as ``EchoExtractor`` in tests/e2e/test_heard_e2e.py), so
    the store holds exactly what the gate let through, with the product's metadata
    (``said_at``, ``context``, ``turn``, ``thread_id``; the product writes no ``speaker``);
    the summariser keeps the user's own lines (``scripted_summary`` of examples/scripted.py).
    Everything else is the product: the gate, holding, consolidation, compression and
    episodes, with the default ``Context``. A LoCoMo session is short next to
    ``max_context_tokens``, so ``compress`` (and with it an episode) is rare; the retention
    job that turns idle threads into episodes runs against a server and is not run here.

    Time is virtual: a session's turn n is said at the session's date
    (``session_N_date_time``) + (n - 1) × 30 s, which every module that reads the clock
    sees (said_at, created_at, held messages, episodes). The server's timer for held
    messages runs on that clock: ``extraction_hold_s`` after the oldest was held, before the
    next message or at the session's end (the real wall-clock timer is off). The questions
    are asked a minute after the last session's last turn.

    The two users of a conversation, and the rows, run at once (as users of one server
    do), each on its own clock (a ``ContextVar``), so the machine's cores are used.

Rows
    product, gate on        the product's path as shipped
    every turn extracted    the gate always says "extract" (nothing skipped or held)
    ... , named facts       the echo writes "<speaker>: <message>" instead of the bare
                            message, a rough stand-in for a real extraction model's
                            third-person facts that name the user (the words stay the
                            speaker's own)

Scoring (questions of categories 1-4, as ``bench/locomo.py``; 5, adversarial, left out)
    Each question is asked with ``assistant.memory.recall(store, user, question, limit=10,
    now=...)`` of the user it names; a question that names both speakers or neither asks both, their
    lists merged by rank (first of each, then second of each, ...).

    evidence hit@10   one of the 10 recalled facts came from one of the question's evidence
                      turns (each fact is traced back to the turns it was extracted from)
    answer found@10   one of the 10 recalled facts holds the gold answer: lowercased and
                      without punctuation, the answer is in the fact, or all its content
                      words (stop words left out) are among the fact's words
    + episodes        answer found among the 10 facts and the ``Context.episode_limit``
                      episodes ``recall_episodes`` returns (what the reply's prompt gets)
    ceilings          evidence stored: an evidence turn is among the asked users' facts at
                      all (the other speaker's turns never are); answer stored: some stored
                      fact of theirs holds the answer

    Temporal answers are mostly dates ("7 May 2023") while the facts say "yesterday": the
    product's prompt shows a fact without its date, so those rarely match lexically.

Run (offline; the dev split's three rows take 7-10 minutes on a 2-core machine, about 9.5
minutes of CPU, nearly all of it feeding the conversations; ``--rows gate,all`` is cheaper)::

    python bench/locomo_product.py [--limit-conversations N] [--rows gate,all,named,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, NamedTuple, Self
from unittest import mock

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, SearchItem
from pydantic import BaseModel

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant.extraction import extract
from assistant.extraction.gate import Verdict
from assistant.graph import builder
from assistant.inference import models
from assistant.memory import (
    MAX_FACT_CHARS,
    list_episodes,
    list_memories,
    normalize_fact,
    recall,
    recall_episodes,
)
from assistant.memory import records as records_module
from assistant.memory.search import freshness
from assistant.memory.search import index as index_module
from assistant.nodes import recall as recall_node
from assistant.nodes import remember as remember_node
from assistant.nodes import respond as respond_node
from assistant.run.context import Context
from assistant.run.scope import RunScope
from assistant.run.state import InputState
from assistant.server.persistence.stores import make_store
from function_model import CallInfo, FunctionChatModel
from locomo import (
    CATEGORIES,
    DATA,
    Conversation,
    Question,
    Turn,
    load_samples,
    read_conversation,
)
from peers import NetworkGuard
from scripted import scripted_summary

DEPTH = 10
"""How many facts each question recalls."""
TURN_SECONDS = 30
"""Virtual time between two turns of a session (either speaker's)."""
ASKED_AFTER = timedelta(minutes=1)
"""The questions are asked this long after the last session's last turn."""
STOP_WORDS = frozenset(
    """a about above after again all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours
    yourself yourselves s t""".split()
)
"""English stop words, left out of a gold answer's content words."""

# --------------------------------------------------------------------------- the script


class Message(NamedTuple):
    """One user message: a speaker's turn, when it is said, and the other speaker's answer."""

    turn: Turn
    at: datetime
    reply: str
    """The other speaker's next turn(s) of the session, the assistant's reply ("" if none)."""


class Session(NamedTuple):
    """One LoCoMo session of one speaker: one thread."""

    thread_id: str
    opening: str
    """The other speaker's turn(s) before the speaker's first, put in the thread first."""
    messages: list[Message]


def speakers(conversation: Conversation) -> tuple[str, str]:
    """The conversation's two speakers, ``speaker_a`` first."""
    others = [turn.speaker for turn in conversation.turns if turn.speaker != conversation.speaker_a]
    return conversation.speaker_a, others[0] if others else ""


def user_id(conversation: Conversation, speaker: str) -> str:
    """The product user a speaker is.

    >>> user_id(Conversation("conv-26", "Caroline", [], [], Counter()), "Caroline")
    'conv-26-caroline'
    """
    return re.sub(r"[^\w-]+", "-", f"{conversation.user_id}-{speaker}").lower()


def sessions_of(conversation: Conversation, speaker: str) -> list[Session]:
    """``speaker``'s side of the conversation, one :class:`Session` per LoCoMo session."""
    by_session: dict[str, list[Turn]] = defaultdict(list)
    for turn in conversation.turns:
        by_session[turn.dia_id.split(":")[0]].append(turn)
    sessions: list[Session] = []
    for name, turns in by_session.items():
        own = [index for index, turn in enumerate(turns) if turn.speaker == speaker]
        if not own:
            continue
        messages = [
            Message(
                turns[index],
                turns[index].said_at + timedelta(seconds=TURN_SECONDS * index),
                _other_side(turns[index + 1 :], speaker),
            )
            for index in own
        ]
        thread = f"{user_id(conversation, speaker)}-{name.lower()}"
        sessions.append(Session(thread, _other_side(turns, speaker), messages))
    return sessions


def _other_side(turns: Sequence[Turn], speaker: str) -> str:
    """The other speaker's turns at the start of ``turns``, up to ``speaker``'s next one."""
    said: list[str] = []
    for turn in turns:
        if turn.speaker == speaker:
            break
        said.append(turn.text)
    return "\n".join(said)


# --------------------------------------------------------------------------- the model


@dataclass
class EchoExtractor:
    """Extraction's stand-in: each user message it is sent is stored as one fact, verbatim.

    The driver announces each message before the turn (:meth:`expect`); the extraction
    prompt's ``<user_message>`` holds the messages of one call separated by blank lines
    (angle brackets escaped), and each is matched to the oldest announced message with
    that text.
    """

    speaker: str
    named: bool = False
    """Write "<speaker>: <message>" instead of the bare message."""
    dia_ids: dict[str, set[str]] = field(default_factory=dict)
    """Normalised fact text -> the turns it was extracted from."""
    batches: list[int] = field(default_factory=list)
    """How many messages each extraction call held."""
    unmatched: int = 0
    """Messages in a prompt that were never announced (should stay 0)."""
    _waiting: dict[str, list[str]] = field(default_factory=dict)

    def expect(self, turn: Turn) -> None:
        self._waiting.setdefault(turn.text.strip(), []).append(turn.dia_id)

    def fact(self, text: str) -> str:
        return (f"{self.speaker}: {text}" if self.named else text)[:MAX_FACT_CHARS]

    def operations(self, prompt: str) -> dict[str, Any]:
        """The ``MemoryOperations`` answer: one ``add`` per message of the call."""
        operations: list[dict[str, Any]] = []
        shown = _section(prompt, "user_message").replace("&lt;", "<").replace("&gt;", ">")
        texts = self.messages_in(shown)  # the prompt shows them as data (prompting.as_data)
        for text in texts:
            waiting = self._waiting.get(text)
            if not waiting:
                self.unmatched += 1
                continue
            content = self.fact(text)
            self.dia_ids.setdefault(normalize_fact(content), set()).add(waiting.pop(0))
            operations.append(
                {"action": "add", "content": content, "category": "other", "confidence": 0.9}
            )
        self.batches.append(len(texts))
        return {"operations": operations}

    def messages_in(self, joined: str) -> list[str]:
        """The messages of ``joined`` (joined by blank lines, which a message may hold too):
        at each point the longest run of blank-line-separated parts that is an announced
        message, else one part.
        """
        parts, texts, start = joined.split("\n\n"), [], 0
        while start < len(parts):
            end = next(
                (
                    end
                    for end in range(len(parts), start, -1)
                    if self._waiting.get("\n\n".join(parts[start:end]).strip())
                ),
                start + 1,
            )
            text = "\n\n".join(parts[start:end]).strip()
            if text:
                texts.append(text)
            start = end
        return texts

    def sent(self) -> set[str]:
        """The turns that reached extraction."""
        return {dia_id for dia_ids in self.dia_ids.values() for dia_id in dia_ids}


@dataclass
class OtherSpeaker:
    """The scripted model of one user's run: the function of its ``FunctionChatModel``.

    Replies with :attr:`reply` (set by the driver before each turn), extracts with the
    :class:`EchoExtractor` and summarises with ``scripted_summary``.
    """

    extractor: EchoExtractor
    summary_tokens: int
    reply: str = ""

    async def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage | BaseModel:
        prompt = messages[0].text if messages else ""
        if info.schema is not None:
            return info.schema.model_validate(self.extractor.operations(prompt))
        if info.node == "compress":
            existing = _section(prompt, "existing_summary")
            transcript = _section(prompt, "new_messages")
            return AIMessage(scripted_summary(existing, transcript, max_tokens=self.summary_tokens))
        return AIMessage(self.reply)


def _section(prompt: str, tag: str) -> str:
    """The text between ``<tag>`` and ``</tag>`` of a prompt ("" when absent).

    >>> _section("x <user_message>\\nhi\\n</user_message>", "user_message")
    'hi'
    """
    found = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", prompt, re.DOTALL)
    return found.group(1) if found else ""


# --------------------------------------------------------------------------- the seams


@dataclass
class UserRun:
    """One user's run as the patched seams see it: its time, its model, its gate.

    It lives in a ``ContextVar`` (:data:`_RUN`), which every node of the user's graph runs
    inherit, so several users (and rows) run at once, each on its own clock.
    """

    side: OtherSpeaker
    gate: bool
    """False: every message is extracted (the gate's verdict is always ``extract``)."""
    moment: datetime
    verdicts: Counter[str] = field(default_factory=Counter)
    """The gate's verdicts: extract, hold, skip."""
    _ticks: int = 0

    def set_time(self, moment: datetime) -> None:
        self.moment, self._ticks = moment, 0

    def read_time(self) -> datetime:
        """The virtual time; each reading adds a microsecond, so writes keep their order."""
        self._ticks += 1
        return self.moment + timedelta(microseconds=self._ticks)


_RUN: ContextVar[UserRun] = ContextVar("locomo_product_run")


def _run() -> UserRun:
    try:
        return _RUN.get()
    except LookupError:
        raise RuntimeError("the product was run outside a benchmark user's run (feed)") from None


class _VirtualDatetime(datetime):
    """Stands in for ``datetime`` in the modules that read the clock; ``now()`` is virtual."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> Self:
        moment = _run().read_time()
        return cls.combine(moment.date(), moment.timetz())

    def astimezone(self, tz: tzinfo | None = None) -> Self:
        return self if tz is None else super().astimezone(tz)


CLOCK_MODULES = (remember_node, recall_node, respond_node, extract, records_module, index_module)
"""The modules whose ``datetime.now()`` is the virtual clock (``records.now_iso`` serves
the other memory modules)."""


async def _answer(messages: list[BaseMessage], info: CallInfo) -> AIMessage | BaseModel:
    return await _run().side(messages, info)


@contextlib.contextmanager
def product_patches() -> Iterator[None]:
    """For the duration, in each user's run (:class:`UserRun`): the model seam answers with
    its :class:`OtherSpeaker`; the time is its clock; the gate's verdicts are counted (and
    with ``gate=False`` every message is extracted). The held messages' wall-clock timer is
    off (the driver runs it on the virtual clock, :func:`release_due`), and so is the recall
    index's wall-clock refresh (every write goes through this process: it would only make
    results depend on machine speed).
    """
    model = FunctionChatModel(function=_answer, keep_calls=False)
    gate = remember_node._judge

    async def judge(text: str) -> Verdict:
        run = _run()
        verdict = await gate(text) if run.gate else EVERY_TURN
        run.verdicts[verdict.decision] += 1
        return verdict

    with contextlib.ExitStack() as stack:
        patch = stack.enter_context
        patch(mock.patch.object(models, "get_chat_model", lambda model_name="": model))
        patch(mock.patch.object(remember_node, "_judge", judge))
        patch(mock.patch.object(extract, "_start_timer", lambda scope, delay: None))
        patch(mock.patch.object(freshness, "MAX_AGE_S", float("inf")))
        for module in CLOCK_MODULES:
            patch(mock.patch.object(module, "datetime", _VirtualDatetime))
        yield


EVERY_TURN = Verdict(decision="extract", reason="benchmark: every turn extracted")
"""The gate's verdict in the "every turn extracted" rows."""


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Row:
    """One way of running the product over the conversations."""

    name: str
    gate: bool
    named: bool


ROWS = {
    "gate": Row("product, gate on", gate=True, named=False),
    "all": Row("every turn extracted", gate=False, named=False),
    "named": Row("product, gate on, named facts", gate=True, named=True),
    "all-named": Row("every turn extracted, named facts", gate=False, named=True),
}


@dataclass
class Stored:
    """What one row's run left in one conversation's store."""

    store: BaseStore
    users: dict[str, str]
    """speaker -> user id."""
    extractors: dict[str, EchoExtractor]
    """user id -> its extractor (which turn each fact came from)."""
    asked_at: datetime
    """When the questions are asked: a minute after the last turn."""
    messages: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """The gate's verdicts: extract, hold, skip."""


async def feed(
    conversation: Conversation,
    row: Row,
    *,
    store: BaseStore | None = None,
    context: Context | None = None,
) -> Stored:
    """Run both speakers' sides of ``conversation`` through the graph (at once), as ``row``
    says; call it inside :func:`product_patches`."""
    store = store if store is not None else make_store()
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    base = context or Context()
    last = conversation.turns[-1]
    last_at = last.said_at + timedelta(seconds=TURN_SECONDS * (int(last.dia_id.split(":")[1]) - 1))
    stored = Stored(store, {}, {}, last_at + ASKED_AFTER)

    async def talk(speaker: str) -> None:
        user = user_id(conversation, speaker)
        extractor = EchoExtractor(speaker, named=row.named)
        stored.users[speaker], stored.extractors[user] = user, extractor
        side = OtherSpeaker(extractor, summary_tokens=base.summary_max_tokens)
        run = UserRun(side, gate=row.gate, moment=conversation.turns[0].said_at)
        _RUN.set(run)  # in this task's context only
        context = dataclasses.replace(base, user_id=user)
        for session in sessions_of(conversation, speaker):
            config: RunnableConfig = {"configurable": {"thread_id": session.thread_id}}
            scope = RunScope(
                user_id=user, thread_id=session.thread_id, store=store, context=context
            )
            for number, message in enumerate(session.messages):
                await release_due(scope, until=message.at)
                run.set_time(message.at)
                side.reply = message.reply
                extractor.expect(message.turn)
                said: list[AnyMessage] = [HumanMessage(message.turn.text, id=message.turn.dia_id)]
                if number == 0 and session.opening:
                    said.insert(0, AIMessage(session.opening, id=f"{session.thread_id}-opening"))
                await graph.ainvoke(InputState(messages=said), config, context=context)
                stored.messages += 1
            await release_due(scope, until=None)
        stored.verdicts.update(run.verdicts)

    await asyncio.gather(*(talk(speaker) for speaker in speakers(conversation)))
    return stored


async def release_due(scope: RunScope, *, until: datetime | None) -> None:
    """The server's timer: extract the thread's held messages once the oldest waited
    ``extraction_hold_s``, if that is before ``until`` (None: whenever it is)."""
    held = await extract.held(scope)
    if not held:
        return
    due = datetime.fromisoformat(held[0].held_at) + timedelta(
        seconds=scope.context.extraction_hold_s
    )
    if until is None or due <= until:
        _run().set_time(due)
        await extract.release_held(scope)


# --------------------------------------------------------------------------- asking


class Recalled(NamedTuple):
    """One recalled fact: its text and the turns it came from."""

    content: str
    dia_ids: frozenset[str]


def asked_speakers(question: str, names: Sequence[str]) -> list[str]:
    """The speakers a question is about: the one it names, else all of them.

    >>> asked_speakers("When did Caroline go to the LGBTQ support group?", ["Caroline", "Mel"])
    ['Caroline']
    >>> asked_speakers("What do Jon and Gina both like?", ["Jon", "Gina"])
    ['Jon', 'Gina']
    >>> asked_speakers("What did John buy?", ["Jon", "Gina"])
    ['Jon', 'Gina']
    """
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", question, re.IGNORECASE)]
    return named if len(named) == 1 else list(names)


def merge_by_rank(lists: Sequence[Sequence[Any]], limit: int) -> list[Any]:
    """First of each list, then second of each, ..., without repeats, at most ``limit``.

    >>> merge_by_rank([["a1", "a2", "a3"], ["b1"]], 3)
    ['a1', 'b1', 'a2']
    """
    merged: list[Any] = []
    for rank in range(max((len(found) for found in lists), default=0)):
        for found in lists:
            if rank < len(found) and found[rank] not in merged:
                merged.append(found[rank])
    return merged[:limit]


async def ask(stored: Stored, question: str, speakers_asked: Sequence[str]) -> list[Recalled]:
    """The question's top :data:`DEPTH` facts, as the public ``recall`` returns them."""
    lists: list[list[Recalled]] = []
    for speaker in speakers_asked:
        user = stored.users[speaker]
        items = await recall(stored.store, user, question, limit=DEPTH, now=stored.asked_at)
        lists.append([_recalled(stored.extractors[user], item) for item in items])
    return merge_by_rank(lists, DEPTH)


async def ask_episodes(stored: Stored, question: str, speakers_asked: Sequence[str]) -> list[str]:
    """The episodes ``recall`` puts beside the facts (``Context.episode_limit`` of them)."""
    limit = Context().episode_limit
    lists = [
        [
            str(item.value.get("content", ""))
            for item in await recall_episodes(
                stored.store, stored.users[speaker], question, limit=limit, now=stored.asked_at
            )
        ]
        for speaker in speakers_asked
    ]
    return merge_by_rank(lists, limit)


def _recalled(extractor: EchoExtractor, item: SearchItem) -> Recalled:
    content = str(item.value.get("content", ""))
    return Recalled(content, frozenset(extractor.dia_ids.get(normalize_fact(content), ())))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def answer_found(answer: str, texts: Sequence[str]) -> bool:
    """Whether one of ``texts`` holds the gold ``answer`` (case and punctuation aside): the
    whole answer, or all its content words.

    >>> answer_found("Adoption agencies", ["I've been researching adoption agencies!"])
    True
    >>> answer_found("the week before 1 January 2023", ["I joined a group last week"])
    False
    >>> answer_found("Psychology, counseling", ["I'd study counseling or psychology"])
    True
    """
    wanted = " ".join(_words(answer))
    needed = {word for word in _words(answer) if word not in STOP_WORDS}
    for text in texts:
        have = _words(text)
        if wanted and f" {wanted} " in f" {' '.join(have)} ":
            return True
        if needed and needed <= set(have):
            return True
    return False


def evidence_hit(recalled: Sequence[Recalled], evidence: frozenset[str]) -> bool:
    """Whether one of the recalled facts came from an evidence turn."""
    return any(not evidence.isdisjoint(item.dia_ids) for item in recalled)


class Scored(NamedTuple):
    """One question's outcome in one row."""

    category: int
    hit: bool
    found: bool
    found_with_episodes: bool
    evidence_stored: bool
    answer_stored: bool


async def score(
    stored: Stored, conversation: Conversation, answers: dict[str, str]
) -> list[Scored]:
    """Ask every scored question of ``conversation`` and score it."""
    names = list(speakers(conversation))
    facts = {
        user: [
            str(item.value.get("content", "")) for item in await list_memories(stored.store, user)
        ]
        for user in stored.users.values()
    }
    scored: list[Scored] = []
    for question in conversation.questions:
        asked = asked_speakers(question.text, names)
        recalled = await ask(stored, question.text, asked)
        episodes = await ask_episodes(stored, question.text, asked)
        answer = answers[question.text]
        texts = [item.content for item in recalled]
        users = [stored.users[speaker] for speaker in asked]
        sent = set().union(*(stored.extractors[user].sent() for user in users))
        scored.append(
            Scored(
                category=question.category,
                hit=evidence_hit(recalled, question.evidence),
                found=answer_found(answer, texts),
                found_with_episodes=answer_found(answer, texts + episodes),
                evidence_stored=not question.evidence.isdisjoint(sent),
                answer_stored=answer_found(answer, [f for user in users for f in facts[user]]),
            )
        )
    return scored


# --------------------------------------------------------------------------- reporting


@dataclass
class Totals:
    """One row over every conversation."""

    row: Row
    scored: list[Scored] = field(default_factory=list)
    messages: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    calls: int = 0
    facts: int = 0
    episodes: int = 0
    unmatched: int = 0

    async def add(self, stored: Stored, scored: list[Scored]) -> None:
        self.scored += scored
        self.messages += stored.messages
        self.verdicts.update(stored.verdicts)
        for user, extractor in stored.extractors.items():
            self.sent += len(extractor.sent())
            self.calls += len(extractor.batches)
            self.unmatched += extractor.unmatched
            self.facts += len(await list_memories(stored.store, user))
            self.episodes += len(await list_episodes(stored.store, user))


def share(flags: Sequence[bool]) -> str:
    return f"{sum(flags) / len(flags):.3f}" if flags else "-"


def markdown(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    lines = [lines[0], ["-" * width for width in widths], *lines[1:]]
    return "\n".join(
        "| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
        for line in lines
    )


def recall_table(rows: Sequence[Totals]) -> str:
    """Per category: evidence hit@10 / answer found@10; then the episodes and ceilings."""
    groups: list[tuple[str, set[int]]] = [("all", set(CATEGORIES))]
    groups += [(name, {category}) for category, name in CATEGORIES.items()]
    first = rows[0].scored if rows else []
    head = ["row", *(f"{g} ({sum(s.category in kept for s in first)})" for g, kept in groups)]
    lines = [[*head, "found + episodes", "evidence stored", "answer stored"]]
    for totals in rows:
        cells = []
        for _, kept in groups:
            chosen = [s for s in totals.scored if s.category in kept]
            cells.append(f"{share([s.hit for s in chosen])} / {share([s.found for s in chosen])}")
        lines.append(
            [
                totals.row.name,
                *cells,
                share([s.found_with_episodes for s in totals.scored]),
                share([s.evidence_stored for s in totals.scored]),
                share([s.answer_stored for s in totals.scored]),
            ]
        )
    return markdown(lines)


def store_table(rows: Sequence[Totals]) -> str:
    """What reached the store."""
    lines = [
        [
            "row",
            "messages",
            "gate: extract / hold / skip",
            "reached extraction",
            "extraction calls",
            "facts",
            "episodes",
        ]
    ]
    for t in rows:
        v = t.verdicts
        lines.append(
            [
                t.row.name,
                str(t.messages),
                f"{v['extract']} / {v['hold']} / {v['skip']}",
                f"{t.sent} ({t.sent / t.messages:.0%})" if t.messages else "0",
                str(t.calls),
                str(t.facts),
                str(t.episodes),
            ]
        )
    return markdown(lines)


# --------------------------------------------------------------------------- main


def gold_answers(sample: dict[str, Any]) -> dict[str, str]:
    """Question text -> its gold answer, as text."""
    return {str(qa["question"]): str(qa.get("answer", "")) for qa in sample["qa"]}


class _ErrorCount(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0
        self.first = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        self.first = self.first or f"{record.name}: {record.getMessage()}"


async def main(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    samples = load_samples(args.data, args.limit_conversations)
    if samples is None:
        return
    rows = [Totals(ROWS[name]) for name in args.rows.split(",")]
    errors = _ErrorCount()
    logging.getLogger("assistant").addHandler(errors)
    questions: list[Question] = []
    feed_s = ask_s = 0.0
    with NetworkGuard() as guard, product_patches():
        for sample in samples:
            conversation = read_conversation(sample)
            questions += conversation.questions
            answers = gold_answers(sample)
            start = time.perf_counter()
            stores = await asyncio.gather(*(feed(conversation, t.row) for t in rows))
            fed = time.perf_counter()
            for totals, stored in zip(rows, stores, strict=True):
                await totals.add(stored, await score(stored, conversation, answers))
            feed_s, ask_s = feed_s + fed - start, ask_s + time.perf_counter() - fed
            if args.progress:
                print(f"  {conversation.user_id}: fed in {fed - start:.0f} s")
    print(
        f"LoCoMo dev through the product: {len(samples)} conversations, 2 users each "
        f"(one per speaker, one thread per session), {len(questions)} questions scored "
        "(categories 1-4)"
    )
    print("cells: evidence hit@10 / answer found@10 (recall(limit=10) of the users asked)")
    print()
    print(recall_table(rows))
    print()
    print(store_table(rows))
    print()
    unmatched = sum(t.unmatched for t in rows)
    print(
        f"extraction messages not traced to a turn: {unmatched}; errors logged: {errors.count}"
        + (f" (first: {errors.first[:200]})" if errors.first else "")
    )
    elapsed = time.perf_counter() - started
    print(
        f"time: feeding {feed_s:.0f} s (every row and user at once), asking {ask_s:.0f} s, "
        f"total {elapsed:.0f} s; network attempts: {guard.attempts or 'none'}"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo JSON (the dev split)")
    parser.add_argument(
        "--limit-conversations", type=int, default=0, help="only the first N conversations"
    )
    parser.add_argument(
        "--rows",
        default="gate,all,named",
        help=f"comma-separated rows to run, of: {', '.join(ROWS)} (default gate,all,named)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="print each conversation's feeding time"
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.rows.split(",") if name not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; expected some of {list(ROWS)}")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
