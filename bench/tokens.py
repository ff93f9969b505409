"""Prompt tokens per turn over a long conversation: ours vs full history vs LangMem.

What is measured: the prompt of every REPLY call (the call that answers the user: the
system prompt plus the conversation messages), counted with
``assistant.inference.tokens.count_messages_tokens`` (CJK-fair, offline), over the bilingual
1,000-turn conversation of ``bench/conversation.py``, for three variants:

- ``ours``: the assistant graph (recall → respond ∥ remember → compress) with the default
  :class:`~assistant.run.context.Context`;
- ``full``: the same graph with compression off (``max_context_tokens=1_000_000``), so every
  message stays in the prompt (respond's guard never trims);
- ``langmem``: START → LangMem ``SummarizationNode`` (``max_tokens`` = our
  ``max_context_tokens``, ``max_summary_tokens`` = our ``summary_max_tokens``,
  ``token_counter=count_messages_tokens``, ``output_messages_key="summarized_messages"``)
  → respond (the same model on our persona/time system prompt + the summarized messages)
  → END, with an ``InMemorySaver``. It has no long-term memory: it is a short-term peer.

Every model call goes to :class:`RecordingModel`: the one fake chat model
(``examples/function_model.py``) answering by the scripted rules (rule-based, offline), which
records the kind (reply, tool round, extract, summarize), the input tokens and the output
tokens of each call; per turn, the tables use the final reply call (after any
memory-tool rounds). It also answers LangMem's summarisation prompts with the same rules
(``scripted_summary``, capped at ``summary_max_tokens`` as ``model.bind(max_tokens=...)``
would), so both summarisers keep the same lines. Time is virtual (turn n happens 2n minutes
after a fixed start, for the system prompt and the stored facts' timestamps), fact keys are
seeded (recall breaks exact ties by key) and the recall index's wall-time refresh is off, so
repeated runs print the same figures (only the run times vary). The scripted replies
are short (~110 tokens on average, mostly the list of remembered facts); ``--reply-tokens N``
pads each reply to about N tokens to see how real reply lengths change the picture.

Also printed: whether the turn-1 facts (name, city, allergy) and the current city are in the
prompt at the last turn, and where; the checkpoint at the end (messages kept in state and
the serialised size of the latest checkpoint); how often the current user message was
missing from the reply prompt.

Run (takes a few minutes; the e5 embedder runs on every turn of ``ours`` and ``full``)::

    pip install -e '.[bench]'
    python bench/tokens.py
    python bench/tokens.py --turns 300 --variants ours,full --reply-tokens 250
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import re
import threading
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore
from pydantic import BaseModel

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant.extraction import extract as extraction_module
from assistant.graph import builder
from assistant.inference import models
from assistant.inference.tokens import TOKENS_PER_MESSAGE, count_messages_tokens, count_text_tokens
from assistant.memory import facts as facts_module
from assistant.memory import records as records_module
from assistant.memory.search import freshness
from assistant.memory.search import index as index_module
from assistant.nodes import recall as recall_module
from assistant.nodes import respond as respond_module
from assistant.run.context import Context
from assistant.run.prompting import build_system_prompt
from assistant.run.prompts import HEED_NOTE
from assistant.server.persistence.stores import make_store
from conversation import ALLERGY, HOME_CITY, NAME, NEW_CITY, describe, script
from function_model import CallInfo, FunctionChatModel
from scripted import ScriptedRules, scripted_summary

VARIANTS = ("ours", "full", "langmem")
CHECKPOINTS = (10, 100, 300, 1000)
CLOCK_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TURN_SECONDS = 120
"""Virtual time between two user turns (1,000 turns span about 33 hours)."""

LANGMEM_INITIAL = "Create a summary of the conversation above:"
LANGMEM_EXTEND = "Extend this summary by taking into account the new messages above:"
_LANGMEM_EXISTING = re.compile(
    r"This is summary of the conversation so far: (.*)\n\nExtend this summary", re.DOTALL
)

_EN_FILLER = [
    "Here is a step-by-step answer with the details you asked for.",
    "First, check the assumptions, then compare the options side by side.",
    "The main trade-off is time against cost, so pick what matters most to you.",
    "If you want, I can turn this into a checklist or a short table.",
    "A common mistake is to skip the preparation; budget ten minutes for it.",
    "Let me know which option you prefer and I will fill in the rest.",
]
_ZH_FILLER = [
    "下面是详细的步骤说明，供你参考。",
    "首先确认前提条件，然后把几个方案放在一起比较。",
    "主要的取舍在时间和成本之间，看你更看重哪一个。",
    "如果需要，我可以把它整理成清单或者表格。",
    "常见的错误是跳过准备工作，建议预留十分钟。",
    "告诉我你更倾向哪个方案，我再把细节补全。",
]


# --------------------------------------------------------------------------- recording


@dataclass
class Call:
    """One model call."""

    turn: int
    kind: str
    """``reply`` (respond's answer), ``tool`` (a respond call that asked for memory tools),
    ``extract`` or ``summarize``."""
    input_tokens: int
    output_tokens: int
    system_tokens: int = 0
    """Respond calls: tokens of the leading system message (our system prompt)."""
    messages_tokens: int = 0
    """Respond calls: tokens of everything after it (LangMem: its summary message + messages)."""
    current_message: str = "verbatim"
    """Respond calls: the turn's user message is in the prompt ``verbatim``, ``shortened``
    (a user message with the same start), or ``absent``."""
    operations: list[tuple[str, str]] = field(default_factory=list)
    """Extract calls: the (action, content) pairs the model returned."""
    tools: list[str] = field(default_factory=list)
    """Tool calls: the names of the tools called."""
    tool_results: list[str] = field(default_factory=list)
    """Respond calls: what forget/correct tools answered earlier in this turn."""
    prompt: str = ""
    """Extract calls: the prompt's text (it holds the messages extracted)."""


class Recorder:
    """What the model saw; shared by the model and its ``bind_tools`` copies."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.turn = 0
        """The turn being run; set by the driver before each graph invocation."""
        self.current_text = ""
        """The user message of the turn being run."""
        self.last_prompt: list[BaseMessage] = []
        """The latest reply prompt."""
        self.summarized_ids: set[str] = set()
        """Ids of the messages LangMem's summariser was actually shown."""
        self.texts: dict[int, str] = {}
        """The user message of each turn."""

    def start_turn(self, number: int, text: str) -> None:
        """Calls from now on belong to turn ``number``, whose user message is ``text``."""
        self.turn, self.current_text = number, text
        self.texts[number] = text

    def replies(self) -> dict[int, Call]:
        """The final reply call of each turn (after any tool rounds)."""
        return {call.turn: call for call in self.calls if call.kind == "reply"}

    def respond_calls(self) -> list[Call]:
        """Every respond call: replies and tool rounds."""
        return [call for call in self.calls if call.kind in ("reply", "tool")]


@dataclass
class BenchRules:
    """The scripted rules, recording each call's figures; also answers LangMem's summaries.

    The function of :class:`RecordingModel`.
    """

    recorder: Recorder = field(default_factory=Recorder)
    summary_tokens: int = 600
    """Cap on LangMem summaries (ours pass their own cap in the prompt)."""
    reply_tokens: int = 0
    """Pad replies to about this many tokens (0: the scripted reply as it is)."""
    rules: ScriptedRules = field(default_factory=ScriptedRules)

    def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage | BaseModel:
        if info.schema is not None:
            return self._extract(messages, info.schema, self.rules(messages, info))
        last = messages[-1].text if messages else ""
        if last.startswith(LANGMEM_INITIAL) or LANGMEM_EXTEND in last:
            answer = AIMessage(self._langmem_summary(messages))
            kind = "summarize"
        else:
            reply = self.rules(messages, info)
            assert isinstance(reply, AIMessage)
            answer = reply
            first = messages[0].text if messages else ""
            kind = "summarize" if "<new_messages>" in first else "reply"
        recorder = self.recorder
        call = Call(
            turn=recorder.turn,
            kind=kind,
            input_tokens=count_messages_tokens(messages),
            output_tokens=0,
        )
        if kind == "reply":
            if answer.tool_calls:
                call.kind = "tool"
                call.tools = [tool_call["name"] for tool_call in answer.tool_calls]
            else:
                answer = AIMessage(self._pad(answer.text, recorder.current_text))
                recorder.last_prompt = list(messages)
            head = messages[:1] if isinstance(messages[0], SystemMessage) else []
            call.system_tokens = count_messages_tokens(head)
            call.messages_tokens = call.input_tokens - call.system_tokens
            call.current_message = _current_message(messages, recorder.current_text)
            call.tool_results = _edit_results(messages)
        call.output_tokens = count_messages_tokens([answer]) - TOKENS_PER_MESSAGE
        recorder.calls.append(call)
        return answer

    def _extract(
        self, messages: list[BaseMessage], schema: type[BaseModel], answer: Any
    ) -> BaseModel:
        result = schema.model_validate(answer)
        operations = getattr(result, "operations", [])
        self.recorder.calls.append(
            Call(
                turn=self.recorder.turn,
                kind="extract",
                input_tokens=count_messages_tokens(messages),
                output_tokens=count_text_tokens(result.model_dump_json()),
                operations=[(op.action, op.content) for op in operations],
                prompt=messages[0].text if messages else "",
            )
        )
        return result

    def _langmem_summary(self, messages: list[BaseMessage]) -> str:
        existing = _LANGMEM_EXISTING.search(messages[-1].text)
        shown = [message for message in messages[:-1] if not isinstance(message, SystemMessage)]
        self.recorder.summarized_ids.update(message.id for message in shown if message.id)
        transcript = "\n".join(
            f"{'User' if isinstance(message, HumanMessage) else 'Assistant'}: {message.text}"
            for message in shown
        )
        return scripted_summary(
            existing.group(1) if existing else "", transcript, max_tokens=self.summary_tokens
        )

    def _pad(self, text: str, latest: str) -> str:
        if self.reply_tokens <= 0:
            return text
        filler = _ZH_FILLER if re.search("[\u4e00-\u9fff]", latest) else _EN_FILLER
        index = self.recorder.turn
        while count_text_tokens(text) < self.reply_tokens:
            text += ("" if filler is _ZH_FILLER else " ") + filler[index % len(filler)]
            index += 1
        return text


class RecordingModel(FunctionChatModel):
    """The one fake chat model (examples/function_model.py) answering by :class:`BenchRules`."""

    def __init__(self, *, reply_tokens: int = 0) -> None:
        super().__init__(function=BenchRules(reply_tokens=reply_tokens))

    @property
    def rules(self) -> BenchRules:
        assert isinstance(self.function, BenchRules)
        return self.function

    @property
    def recorder(self) -> Recorder:
        """Every call's figures (:class:`Call`), and the turn being run."""
        return self.rules.recorder


def _edit_results(messages: Sequence[BaseMessage]) -> list[str]:
    """What forget_memory / correct_memory answered since the latest user message."""
    results: list[str] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage) and message.name in ("forget_memory", "correct_memory"):
            results.insert(0, message.text)
    return results


def _current_message(messages: Sequence[BaseMessage], text: str) -> str:
    """Whether the reply's prompt holds the turn's message; a heeded constraint's note
    written under it (`assistant.nodes.respond.with_heed_note`) leaves it verbatim."""
    humans = [message.text for message in messages if isinstance(message, HumanMessage)]
    noted = text + HEED_NOTE.split("{", 1)[0]
    if any(human == text or human.startswith(noted) for human in humans):
        return "verbatim"
    if any(human[:80] == text[:80] for human in humans):
        return "shortened"
    return "absent"


class VirtualClock:
    """Deterministic time: turn n happens at :data:`CLOCK_START` + n × :data:`TURN_SECONDS`.

    Each reading adds a microsecond, so facts stored in one turn keep their order.
    """

    def __init__(self) -> None:
        self.turn = 0
        self._ticks = 0
        self._lock = threading.Lock()

    def read(self) -> datetime:
        with self._lock:
            self._ticks += 1
            ticks = self._ticks
        return CLOCK_START + timedelta(seconds=self.turn * TURN_SECONDS, microseconds=ticks)


CLOCK = VirtualClock()


class _VirtualDatetime(datetime):
    """Stands in for ``datetime`` in the modules that read the clock; ``now()`` is virtual."""

    @classmethod
    def now(cls, tz: Any = None) -> _VirtualDatetime:  # type: ignore[override]
        moment = CLOCK.read()
        return cls.combine(moment.date(), moment.timetz())

    def astimezone(self, tz: Any = None) -> _VirtualDatetime:  # type: ignore[override]
        return self if tz is None else super().astimezone(tz)  # type: ignore[return-value]


class _SeededUuid:
    """Stands in for the ``uuid`` module in ``assistant.memory.facts``: seeded fact keys.

    Recall breaks exact score ties by fact key, so random keys made the order of tied facts
    (and everything downstream) change from run to run.
    """

    def __init__(self, seed: str) -> None:
        self._random = random.Random(seed)

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._random.getrandbits(128), version=4)

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)


CLOCK_MODULES = (respond_module, recall_module, records_module, index_module, extraction_module)
"""The modules whose ``datetime.now()`` the bench replaces with the virtual clock."""


@contextlib.contextmanager
def bench_patches(model: RecordingModel) -> Iterator[None]:
    """For the duration: every node uses ``model``; the clock is virtual; fact keys are
    seeded; no timed index refresh.

    The recall index refreshes itself in the background when older than ``MAX_AGE_S`` of
    wall time (to pick up writes by other processes); here every write goes through
    ``assistant.memory``, so that refresh only made results depend on machine speed.
    """
    saved_model, saved_age = models.get_chat_model, freshness.MAX_AGE_S
    saved_uuid = facts_module.uuid
    saved_clocks = [module.datetime for module in CLOCK_MODULES]
    models.get_chat_model = lambda model_name="": model  # type: ignore[assignment]
    freshness.MAX_AGE_S = float("inf")
    facts_module.uuid = _SeededUuid("bench-fact-keys")  # type: ignore[assignment]
    for module in CLOCK_MODULES:
        module.datetime = _VirtualDatetime  # type: ignore[attr-defined]
    try:
        yield
    finally:
        models.get_chat_model, freshness.MAX_AGE_S = saved_model, saved_age
        facts_module.uuid = saved_uuid
        for module, saved in zip(CLOCK_MODULES, saved_clocks, strict=True):
            module.datetime = saved  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- running


@dataclass
class RunResult:
    """What one variant did over the conversation."""

    variant: str
    model: RecordingModel
    state: dict[str, Any]
    checkpoint_bytes: int
    seconds: float
    store: BaseStore | None = None
    error: str = ""
    notes: list[str] = field(default_factory=list)


def checkpoint_bytes(saver: InMemorySaver, config: dict[str, Any]) -> int:
    """Serialised size of the thread's latest checkpoint (all channel values)."""
    found = saver.get_tuple(config)  # type: ignore[arg-type]
    if found is None:
        return 0
    values = found.checkpoint["channel_values"]
    return sum(len(saver.serde.dumps_typed(value)[1]) for value in values.values())


async def run_assistant(
    texts: Sequence[str],
    *,
    context: Context,
    model: RecordingModel,
    variant: str = "ours",
    progress: bool = False,
    between_turns: Callable[[BaseStore, str], Awaitable[None]] | None = None,
) -> RunResult:
    """Run ``texts`` as one thread through the assistant graph, one invocation per turn.

    ``between_turns(store, thread_id)``, when given, runs before each turn, on the clock of
    that turn (what the server does between turns: the timers of held messages).
    """
    saver, store = InMemorySaver(), make_store()
    graph = builder.compile(checkpointer=saver, store=store)
    config: dict[str, Any] = {"configurable": {"thread_id": f"bench-{variant}"}}
    started = time.perf_counter()
    with bench_patches(model):
        for number, text in enumerate(texts, 1):
            model.recorder.start_turn(number, text)
            CLOCK.turn = number
            if between_turns is not None:
                await between_turns(store, config["configurable"]["thread_id"])
            await graph.ainvoke(
                {"messages": [HumanMessage(text)]},
                config,  # type: ignore[arg-type]
                context=context,
            )
            _progress(progress, variant, number, len(texts), started)
    state = (await graph.aget_state(config)).values  # type: ignore[arg-type]
    return RunResult(
        variant=variant,
        model=model,
        state=dict(state),
        checkpoint_bytes=checkpoint_bytes(saver, config),
        seconds=time.perf_counter() - started,
        store=store,
    )


class LangMemState(MessagesState):
    """LangMem's documented state: messages, its ``context`` and the summarized messages."""

    context: dict[str, Any]
    summarized_messages: list[AnyMessage]


async def run_langmem(
    texts: Sequence[str], *, context: Context, model: RecordingModel, progress: bool = False
) -> RunResult:
    """Run ``texts`` through START → SummarizationNode → respond → END."""
    from langmem.short_term import SummarizationNode

    model.rules.summary_tokens = context.summary_max_tokens
    summarize = SummarizationNode(
        model=model,
        max_tokens=context.max_context_tokens,
        max_summary_tokens=context.summary_max_tokens,
        token_counter=count_messages_tokens,
        output_messages_key="summarized_messages",
    )

    async def respond(state: LangMemState) -> dict[str, Any]:
        system = build_system_prompt(persona=context.system_prompt, now=_VirtualDatetime.now())
        prompt = [SystemMessage(system), *state["summarized_messages"]]
        return {"messages": [await model.ainvoke(prompt)]}

    graph_builder = StateGraph(LangMemState)
    graph_builder.add_node("summarize", summarize)
    graph_builder.add_node("respond", respond)
    graph_builder.add_edge(START, "summarize")
    graph_builder.add_edge("summarize", "respond")
    graph_builder.add_edge("respond", END)
    saver = InMemorySaver()
    graph = graph_builder.compile(checkpointer=saver)
    config: dict[str, Any] = {"configurable": {"thread_id": "bench-langmem"}}
    started = time.perf_counter()
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen, _log_capture() as logged:
        warnings.simplefilter("always")
        for number, text in enumerate(texts, 1):
            model.recorder.start_turn(number, text)
            CLOCK.turn = number
            await graph.ainvoke({"messages": [HumanMessage(text)]}, config)  # type: ignore[arg-type]
            _progress(progress, "langmem", number, len(texts), started)
        caught = sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in seen})
        caught += sorted({f"logged by {name}: {text[:200]}" for name, text in logged})
    state = (await graph.aget_state(config)).values  # type: ignore[arg-type]
    result = RunResult(
        variant="langmem",
        model=model,
        state=dict(state),
        checkpoint_bytes=checkpoint_bytes(saver, config),
        seconds=time.perf_counter() - started,
    )
    result.notes += [f"warning during the run: {line}" for line in caught]
    return result


@contextlib.contextmanager
def _log_capture() -> Iterator[list[tuple[str, str]]]:
    """Collect WARNING+ log records (as (logger, message)) instead of printing them."""
    records: list[tuple[str, str]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append((record.name, record.getMessage()))

    handler, root = Collect(logging.WARNING), logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [handler]
    try:
        yield records
    finally:
        root.handlers = saved


def _progress(enabled: bool, variant: str, number: int, total: int, started: float) -> None:
    if enabled and (number % 100 == 0 or number == total):
        elapsed = time.perf_counter() - started
        print(f"  [{variant}] turn {number}/{total} ({elapsed:.0f}s)", flush=True)


def variant_context(variant: str) -> Context:
    """The Context each variant runs with."""
    if variant == "full":
        return Context(
            max_context_tokens=1_000_000, keep_recent_tokens=999_999, max_prompt_tokens=2_000_000
        )
    return Context()


async def run_variant(
    variant: str,
    texts: Sequence[str],
    *,
    reply_tokens: int,
    progress: bool,
) -> RunResult:
    """Run one variant; a variant that cannot be wired returns with ``error`` set."""
    model = RecordingModel(reply_tokens=reply_tokens)
    context = variant_context(variant)
    try:
        if variant == "langmem":
            return await run_langmem(texts, context=context, model=model, progress=progress)
        return await run_assistant(
            texts, context=context, model=model, variant=variant, progress=progress
        )
    except Exception as error:  # report and go on with the other variants
        return RunResult(
            variant=variant,
            model=model,
            state={},
            checkpoint_bytes=0,
            seconds=0.0,
            error=f"{type(error).__name__}: {error}",
        )


# --------------------------------------------------------------------------- reporting


def where(prompt: Sequence[BaseMessage], needle: str) -> str:
    """Where in a reply prompt ``needle`` appears: which system-prompt block, summary, messages."""
    found: list[str] = []
    for index, message in enumerate(prompt):
        text = message.text
        if needle.lower() not in text.lower():
            continue
        if index == 0 and isinstance(message, SystemMessage):
            for tag, label in (
                ("user_profile", "profile"),
                ("user_facts", "facts"),
                ("past_conversations", "episodes"),
                ("summary", "summary"),
            ):
                block = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
                if block and needle.lower() in block.group(1).lower():
                    found.append(label)
        elif isinstance(message, SystemMessage):
            found.append("summary msg")
        else:
            found.append("msgs")
    labels = list(dict.fromkeys(found))
    return "+".join(labels) if labels else "NO"


def _clip(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def report(results: list[RunResult], turns_run: int, context: Context) -> None:
    """Print the tables and the goal checks."""
    marks = [turn for turn in CHECKPOINTS if turn <= turns_run]
    if turns_run not in marks:
        marks.append(turns_run)
    ok = [result for result in results if not result.error]
    for result in results:
        if result.error:
            print(f"{result.variant}: could not be run: {result.error}")

    for title, attr in (
        ("Reply-call prompt tokens, WHOLE prompt (system prompt + messages)", "input_tokens"),
        (
            "Reply-call prompt tokens, MESSAGES PART (all after our system prompt; "
            "langmem: its summary message + messages)",
            "messages_tokens",
        ),
    ):
        print()
        print(title)
        header = f"{'variant':<9}" + "".join(f"{'t' + str(t):>9}" for t in marks)
        print(header + f"{'max':>10} {'at turn':>8} {'mean':>8}")
        for result in ok:
            replies = result.model.recorder.replies()
            values = [getattr(replies[t], attr) if t in replies else None for t in marks]
            best = max(replies.values(), key=lambda call: getattr(call, attr))
            mean = sum(getattr(call, attr) for call in replies.values()) / len(replies)
            print(
                f"{result.variant:<9}"
                + "".join(f"{_fmt(v):>9}" for v in values)
                + f"{_fmt(getattr(best, attr)):>10} {best.turn:>8} {_fmt(mean):>8}"
            )

    print()
    print(
        f"Facts in the reply prompt at turn {turns_run}: where they are "
        "(profile/facts/summary blocks of our system prompt, LangMem's summary msg, msgs), or NO"
    )
    needles = [
        (f"name ({NAME})", NAME),
        (f"t1 city ({HOME_CITY})", HOME_CITY),
        (f"allergy ({ALLERGY})", "peanut"),
        (f"new city ({NEW_CITY})", NEW_CITY),
    ]
    print(f"{'variant':<9}" + "".join(f"{label:<25}" for label, _ in needles))
    for result in ok:
        prompt = result.model.recorder.last_prompt
        print(f"{result.variant:<9}" + "".join(f"{where(prompt, n):<25}" for _, n in needles))

    print()
    print("State at the end")
    print(f"{'variant':<9}{'msgs in state':>14}{'ckpt bytes':>12}{'summaries':>10}  other")
    for result in ok:
        state = result.state
        other: list[str] = []
        if result.variant == "langmem":
            running = (state.get("context") or {}).get("running_summary")
            other.append(f"summarized_messages {len(state.get('summarized_messages', []))}")
            if running is not None:
                other.append(f"running_summary ids {len(running.summarized_message_ids)}")
                never = running.summarized_message_ids - result.model.recorder.summarized_ids
                other.append(f"marked summarized but never shown to the summariser {len(never)}")
        elif state.get("summary"):
            other.append(f"summary {count_text_tokens(state['summary'])} tokens")
        summaries = sum(1 for c in result.model.recorder.calls if c.kind == "summarize")
        print(
            f"{result.variant:<9}{len(state.get('messages', [])):>14,}"
            f"{result.checkpoint_bytes:>12,}{summaries:>10}  {'; '.join(other)}"
        )

    print()
    print("Reply prompts where the turn's own user message is not there verbatim")
    for result in ok:
        replies = sorted(result.model.recorder.replies().items())
        parts = []
        for status in ("shortened", "absent"):
            hit = [turn for turn, call in replies if call.current_message == status]
            listed = ", ".join(map(str, hit[:12])) + (" ..." if len(hit) > 12 else "")
            parts.append(f"{status} {len(hit)}" + (f" (turns {listed})" if hit else ""))
        print(f"{result.variant:<9}" + "; ".join(parts))

    for result in ok:
        recorder = result.model.recorder
        replies, used = recorder.replies(), dict[int, list[str]]()
        for call in recorder.respond_calls():
            if call.kind == "tool":
                used.setdefault(call.turn, []).extend(call.tools)
        for turn, tools in used.items():
            edits = replies[turn].tool_results if turn in replies else []
            print(
                f"note [{result.variant}]: turn {turn}, user {_clip(recorder.texts[turn])}: "
                f"the model called {', '.join(tools)}"
                + (f" -> {'; '.join(edits)}" if edits else "")
            )
        for note in result.notes:
            print(f"note [{result.variant}]: {note}")
    print("run time: " + ", ".join(f"{r.variant} {r.seconds:.0f}s" for r in ok))

    by_name = {result.variant: result for result in ok}
    print()
    print("Goals")
    if "ours" in by_name and "full" in by_name:
        mark = 300 if turns_run >= 300 else turns_run
        ours = by_name["ours"].model.recorder.replies()
        full = by_name["full"].model.recorder.replies()
        for label, attr in (("whole prompt", "input_tokens"), ("messages part", "messages_tokens")):
            mine, theirs = getattr(ours[mark], attr), getattr(full[mark], attr)
            ratio = mine / theirs
            verdict = "MET" if ratio <= 0.05 else f"MISSED by {100 * ratio - 5:.1f} points"
            print(
                f"- turn {mark}, ours ≤ 5% of full history ({label}): {mine:,} / {theirs:,} "
                f"= {100 * ratio:.1f}% -> {verdict}"
            )
            window = [
                getattr(ours[t], attr) / getattr(full[t], attr)
                for t in range(max(1, mark - 10), min(turns_run, mark + 10) + 1)
                if t in ours and t in full
            ]
            print(
                f"    (ours saws between compressions: over turns {max(1, mark - 10)}-"
                f"{min(turns_run, mark + 10)} the ratio runs {100 * min(window):.1f}%-"
                f"{100 * max(window):.1f}%, mean {100 * sum(window) / len(window):.1f}%)"
            )
    if "ours" in by_name:
        replies = by_name["ours"].model.recorder.replies().values()
        budget = context.max_context_tokens
        top_messages = max(call.messages_tokens for call in replies)
        top_whole = max(call.input_tokens for call in replies)
        verdict = "MET" if top_messages <= budget else f"MISSED by {top_messages - budget:,}"
        print(
            f"- ours, messages part max {top_messages:,} ≤ max_context_tokens {budget:,} "
            f"(the budget Context documents for messages) -> {verdict}"
        )
        systems = [call.system_tokens for call in replies]
        whole = context.max_prompt_tokens
        verdict = "MET" if top_whole <= whole else f"MISSED by {top_whole - whole:,}"
        print(
            f"- ours, whole prompt max {top_whole:,} ≤ max_prompt_tokens {whole:,} -> "
            f"{verdict} (the system prompt ran {min(systems):,}-{max(systems):,} tokens)"
        )
    if "ours" in by_name and "langmem" in by_name:
        means = {
            name: sum(call.input_tokens for call in calls) / len(calls)
            for name in ("ours", "langmem")
            if (calls := list(by_name[name].model.recorder.replies().values()))
        }
        verdict = "MET" if means["ours"] < means["langmem"] else "MISSED"
        print(
            f"- ours, mean whole prompt < LangMem's: {means['ours']:,.0f} vs "
            f"{means['langmem']:,.0f} tokens -> {verdict}"
        )


async def amain(args: argparse.Namespace) -> None:
    conversation = script(args.turns, args.seed)
    texts = [turn.text for turn in conversation]
    print(describe(conversation))
    padding = f"padded to ~{args.reply_tokens} tokens" if args.reply_tokens else "scripted as is"
    print(
        f"reply length: {padding}; "
        f"virtual clock: turn n at {CLOCK_START:%Y-%m-%d %H:%M} UTC + {TURN_SECONDS // 60}n min; "
        "default Context: "
        f"max_prompt_tokens={Context().max_prompt_tokens}, "
        f"max_context_tokens={Context().max_context_tokens}, "
        f"keep_recent_tokens={Context().keep_recent_tokens}, "
        f"summary_max_tokens={Context().summary_max_tokens}"
    )
    results = []
    for variant in args.variants:
        results.append(
            await run_variant(
                variant, texts, reply_tokens=args.reply_tokens, progress=args.progress
            )
        )
    report(results, len(texts), Context())


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Prompt tokens per turn: ours vs full history vs LangMem SummarizationNode."
    )
    parser.add_argument("--turns", type=int, default=1000, help="conversation length (1000)")
    parser.add_argument("--seed", type=int, default=7, help="conversation seed (7)")
    parser.add_argument(
        "--variants",
        type=lambda text: [v.strip() for v in text.split(",") if v.strip()],
        default=list(VARIANTS),
        help="comma-separated subset of ours,full,langmem (all)",
    )
    parser.add_argument(
        "--reply-tokens", type=int, default=0, help="pad replies to ~N tokens (0: as scripted)"
    )
    parser.add_argument("--progress", action="store_true", help="print progress every 100 turns")
    args = parser.parse_args()
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(sorted(unknown))}")
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
