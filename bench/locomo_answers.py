"""Answers end to end on LoCoMo's dev split with a real model: the product beside three baselines.

What is measured
    ../shared/data/locomo/locomo-dev.json (LoCoMo, Maharana et al. 2024, CC BY-NC 4.0: read
    from shared/, never copied here). By default a sample sized for a 2-core machine: one
    conversation's first sessions (``--conversations conv-26 --sessions 4``: 76 turns) and
    the questions of categories 1-4 whose evidence lies in them (35); ``--all`` takes
    every conversation, session and question of categories 1-4, for a remote endpoint.

    The sessions go through the product's path as in ``bench/locomo_product.py`` (each
    speaker one user, one thread per session, the other speaker's turns as the assistant's
    replies, virtual time): the gate, holding, then extraction by the real model
    (``decide_operations``' prompt and the provider's structured-output fallbacks on the
    real endpoint) and consolidation into the user's facts. Only the replies while feeding
    are scripted (the other speaker's next turn), so the model's time goes to extraction.

    Each question is then answered, on the same model, by four systems:

    product        asked in a new thread through the graph (recall → respond, the
                   product's prompt, memory and tools) of the user the question names
                   (the first speaker when it names both or neither); its remember step
                   is skipped (a question stores nothing)
    product, short the same, the question followed by :data:`SHORT` (the baselines'
                   length instruction), in a thread of its own
    top-10 turns   plain retrieval: every turn saved as "<speaker> (<date>): <text>"
                   (``save_memory``), the 10 the project's ``recall`` ranks first put in
                   :data:`ANSWER_PROMPT`
    full context   every turn of the sample, by session with its date, in the same
                   prompt, where it fits ``--window`` tokens (8192, the local server's)
    no memory      the same prompt with no memories

Scoring
    F1       LoCoMo's own token F1 (snap-research/locomo ``task_eval/evaluation.py``):
             lowercase, punctuation, commas and the words a, an, the, and removed, Porter
             stems (``snowballstemmer``'s ``porter``; the official code uses NLTK's);
             category 1 (multi-hop) splits the gold answer at commas and averages the best
             match of each part, category 3 keeps the gold answer before its first ";".
    judge    the LLM judge of the mem0 paper (Chhikara et al. 2025, "Mem0: Building
             Production-Ready AI Agents with Scalable Long-Term Memory", its LoCoMo
             evaluation: ``evaluation/metrics/llm_judge.py`` of mem0ai/mem0, Apache-2.0),
             its prompt :data:`JUDGE_PROMPT` verbatim: CORRECT/WRONG, generous matching;
             temperature 0 and JSON mode, as there. The judge is ``BENCH_JUDGE_MODEL`` at
             ``BENCH_JUDGE_BASE_URL`` (``BENCH_JUDGE_API_KEY``) when set, else the model
             that answered; the output names it. A small judge is lenient and noisy: read
             it beside F1.

    The model: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``ASSISTANT_MODEL`` when set, else
    the local Qwen2.5-Coder-1.5B-Instruct (``bench/real_model.py``).

Run::

    python bench/locomo_answers.py [--conversations conv-26] [--sessions 4] [--all]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import string
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import snowballstemmer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from openai import AsyncOpenAI, BadRequestError
from pydantic import BaseModel

import locomo_product
import real_model
from assistant.extraction.gate import Verdict
from assistant.graph import builder
from assistant.inference import models, providers
from assistant.memory import list_memories, recall, save_memory
from assistant.nodes import remember as remember_node
from assistant.run.context import Context
from assistant.run.state import InputState
from assistant.server.persistence.stores import make_store
from function_model import CallInfo
from locomo import CATEGORIES, DATA, Conversation, commonly_measured, read_conversation

SYSTEMS = ("product", "product, short", "top-10 turns", "full context", "no memory")
DEPTH = 10
"""How many turns plain retrieval puts in the prompt."""
ANSWER_TOKENS = 60
"""The baselines' answers are short phrases."""
JUDGE_TOKENS = 160

ANSWER_PROMPT = """You answer a question about a conversation between {speaker_a} and \
{speaker_b}, using the memories below: turns of their conversation, each with the date of its \
session.

<memories>
{memories}
</memories>

Answer in a short phrase of a few words. For a question about when, give the date or period, \
worked out from the session dates. If the memories do not say, give your best guess.

Question: {question}
Answer:"""
"""The baselines' prompt (the product answers with its own)."""

SHORT = "Answer in a short phrase of a few words."
"""Added to the question for "product, short": what the baselines are told of the answer's
length, asked as a user would ask it, so that F1 compares memories rather than a chat reply's
length with a short phrase's."""

JUDGE_PROMPT = """
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given \
the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other \
user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced \
topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - \
as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The \
generated answer might be much longer or use relative time references (like "last Tuesday" \
or "next month"), but you should be generous with your grading - as long as it refers to \
the same date or time period as the gold answer, it should be counted as CORRECT. Even if \
the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with \
CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation \
script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""
"""The mem0 paper's LoCoMo judge prompt (mem0ai/mem0 ``evaluation/metrics/llm_judge.py``,
``ACCURACY_PROMPT``), line breaks aside."""

TOOL_MARKUP = re.compile(r"<tools?>|</tools?>|<tool_call>|\"name\"\s*:\s*\"\w+\"|search_memory")
"""What a reply carrying a tool call as text looks like."""

# --------------------------------------------------------------------------- LoCoMo's F1

_STEMMER = snowballstemmer.stemmer("porter")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: commas out, lowercase, punctuation out, a/an/the/and out.

    >>> normalize_answer("The Shell, and a necklace!")
    'shell necklace'
    """
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of the stemmed, normalised words.

    >>> f1_score("a shell necklace", "Shell necklace")
    1.0
    >>> round(f1_score("she painted a sunrise", "sunrise"), 3)
    0.5
    >>> f1_score("no idea", "7 May 2023")
    0.0
    """
    predicted = _STEMMER.stemWords(normalize_answer(prediction).split())
    wanted = _STEMMER.stemWords(normalize_answer(gold).split())
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall_ = same / len(predicted), same / len(wanted)
    return 2 * precision * recall_ / (precision + recall_)


def f1_multi(prediction: str, gold: str) -> float:
    """Multi-hop F1: the mean over the gold answer's comma-separated parts of the best F1
    of any of the prediction's parts.

    >>> f1_multi("hiking, painting", "painting, hiking")
    1.0
    >>> f1_multi("painting", "painting, hiking")
    0.5
    """
    predictions = [part.strip() for part in prediction.split(",")]
    golds = [part.strip() for part in gold.split(",")]
    return sum(max(f1_score(p, g) for p in predictions) for g in golds) / len(golds)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """The F1 LoCoMo's evaluation gives a question of ``category``.

    >>> locomo_f1("Psychology", "Psychology; counseling certification", 3)
    1.0
    """
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return f1_multi(prediction, gold)
    return f1_score(prediction, gold)


def judge_label(reply: str) -> bool | None:
    """The judge's verdict: True for CORRECT, False for WRONG, None when it gave neither.

    >>> judge_label('{"label": "CORRECT"}')
    True
    >>> judge_label('The answer names another city. WRONG')
    False
    >>> judge_label("I cannot tell.")
    """
    found = re.search(r'"label"\s*:\s*"(CORRECT|WRONG)"', reply, re.IGNORECASE)
    if found:
        return found.group(1).upper() == "CORRECT"
    words = re.findall(r"\b(CORRECT|WRONG)\b", reply)
    return words[-1] == "CORRECT" if words else None


def has_tool_markup(reply: str) -> bool:
    """Whether a reply carries a tool call written as text.

    >>> has_tool_markup('<tools>{"name": "search_memory", "arguments": {}}</tools>')
    True
    >>> has_tool_markup("Caroline researched adoption agencies.")
    False
    """
    return bool(TOOL_MARKUP.search(reply))


# --------------------------------------------------------------------------- the sample


def sample(conversation: Conversation, sessions: int) -> Conversation:
    """The conversation's first ``sessions`` sessions (all: 0), and the questions whose
    every evidence turn lies in them."""
    if sessions <= 0:
        return conversation

    def kept(dia_id: str) -> bool:
        return int(dia_id.split(":")[0].removeprefix("D")) <= sessions

    turns = [turn for turn in conversation.turns if kept(turn.dia_id)]
    questions = [q for q in conversation.questions if all(kept(e) for e in q.evidence)]
    return conversation._replace(turns=turns, questions=questions)


def transcript(conversation: Conversation) -> str:
    """Every turn, by session, each session headed by its date (the full-context memory).

    >>> from locomo import Turn, session_time
    >>> day = session_time("1:56 pm on 8 May, 2023")
    >>> turns = [Turn("D1:1", "Ana", "Hi!", day), Turn("D1:2", "Ben", "Hello.", day)]
    >>> print(transcript(Conversation("c", "Ana", turns, [], Counter())))
    Session 1 (8 May 2023):
    Ana: Hi!
    Ben: Hello.
    """
    lines: list[str] = []
    session = ""
    for turn in conversation.turns:
        name = turn.dia_id.split(":")[0]
        if name != session:
            session, day = name, turn.said_at
            header = f"Session {name.removeprefix('D')} ({day.day} {day:%B} {day.year}):"
            lines.append(("\n" if lines else "") + header)
        lines.append(f"{turn.speaker}: {turn.text}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the model


@dataclass
class Counts:
    """What feeding did."""

    extraction_calls: int = 0
    extraction_failures: int = 0
    seconds: list[float] = field(default_factory=list)
    progress: bool = False
    """Print each extraction call's time (stderr)."""


COUNTS = Counts()


class RealExtraction(locomo_product.OtherSpeaker):
    """``locomo_product``'s other speaker, whose extraction calls go to the real model."""

    async def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage | BaseModel:
        if info.schema is None:
            return await super().__call__(messages, info)
        started = time.perf_counter()
        COUNTS.extraction_calls += 1
        try:
            return await providers.ainvoke_structured(
                _REAL_CHAT_MODEL(), info.schema, messages, {"run_name": "remember"}
            )
        except Exception:
            COUNTS.extraction_failures += 1
            raise
        finally:
            COUNTS.seconds.append(time.perf_counter() - started)
            if COUNTS.progress:
                print(
                    f"  extraction {COUNTS.extraction_calls}: {COUNTS.seconds[-1]:.0f} s",
                    file=sys.stderr,
                )


_REAL_CHAT_MODEL = models.get_chat_model
"""The product's model seam as configured (the endpoint), saved before any patch."""

QUESTION = Verdict(decision="skip", reason="benchmark: a question stores nothing")


@contextlib.contextmanager
def patched(asking: bool) -> Iterator[None]:
    """The product's benchmark patches (``locomo_product.product_patches``: virtual time,
    the held messages' timer), with the real model: for extraction while feeding, for
    everything while asking (when ``remember`` is skipped)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(locomo_product, "OtherSpeaker", RealExtraction))
        stack.enter_context(locomo_product.product_patches())
        if asking:
            stack.enter_context(mock.patch.object(models, "get_chat_model", _REAL_CHAT_MODEL))

            async def skip(text: str) -> Verdict:
                return QUESTION

            stack.enter_context(mock.patch.object(remember_node, "_judge", skip))
        yield


@dataclass
class Client:
    """An OpenAI-compatible endpoint for the baselines or the judge."""

    model: str
    base_url: str
    api_key: str

    def open(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=self.base_url or None, api_key=self.api_key or "not-needed", timeout=600
        )


async def complete(
    client: AsyncOpenAI, model: str, prompt: str, max_tokens: int, *, json_mode: bool = False
) -> str:
    """The model's answer to ``prompt`` at temperature 0 (in JSON mode, as mem0's judge
    asks, when ``json_mode``; without it where the endpoint refuses JSON mode)."""
    extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
    try:
        reply = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            temperature=0,
            max_tokens=max_tokens,
            **extra,
        )
    except BadRequestError:
        if not json_mode:
            raise
        return await complete(client, model, prompt, max_tokens)
    return reply.choices[0].message.content or ""


# --------------------------------------------------------------------------- running


@dataclass
class Answer:
    """One system's answer to one question, scored."""

    system: str
    category: int
    question: str
    gold: str
    text: str
    f1: float = 0.0
    correct: bool | None = None
    seconds: float = 0.0
    failed: str = ""
    """Why the answer could not be had (then it is empty, and wrong)."""


async def feed(conversation: Conversation) -> locomo_product.Stored:
    """The sessions through the product's path (the gate, extraction by the real model)."""
    with patched(asking=False):
        return await locomo_product.feed(conversation, locomo_product.ROWS["gate"])


async def ask_product(
    stored: locomo_product.Stored,
    conversation: Conversation,
    question: str,
    number: int,
    *,
    short: bool = False,
) -> str:
    """The question in a new thread of the user it names, through the graph; call it
    inside ``patched(asking=True)``."""
    names = list(locomo_product.speakers(conversation))
    speaker = locomo_product.asked_speakers(question, names)[0]
    user = stored.users[speaker]
    graph = builder.compile(checkpointer=InMemorySaver(), store=stored.store)
    thread = f"{user}-question-{number}{'-short' if short else ''}"
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    asked = f"{question} {SHORT}" if short else question
    result = await graph.ainvoke(
        InputState(messages=[HumanMessage(asked)]), config, context=Context(user_id=user)
    )
    last = result["messages"][-1]
    return last.text if isinstance(last, AIMessage) else str(last.content)


def prompt_for(conversation: Conversation, memories: str, question: str) -> str:
    names = locomo_product.speakers(conversation)
    return ANSWER_PROMPT.format(
        speaker_a=names[0], speaker_b=names[1], memories=memories or "(none)", question=question
    )


def estimated_tokens(text: str) -> int:
    """A generous estimate of a prompt's tokens (English: about 4 characters a token)."""
    return len(text) // 3


async def answer_all(
    conversation: Conversation,
    stored: locomo_product.Stored,
    answerer: Client,
    judge: Client,
    *,
    window: int,
    concurrency: int,
    progress: bool,
    deadline: float,
) -> list[Answer]:
    """Every system's answer to every question of ``conversation``, judged: question by
    question, so a run cut short by its time budget has scored every system on the same
    questions (none is started after ``deadline``, a ``time.perf_counter()``)."""
    raw = make_store()
    for index in range(len(conversation.turns)):
        await save_memory(raw, conversation.user_id, commonly_measured(conversation, index))
    full = transcript(conversation)
    fits = estimated_tokens(prompt_for(conversation, full, "")) + ANSWER_TOKENS + 200 <= window
    client, judging = answerer.open(), judge.open()
    gate = asyncio.Semaphore(concurrency)
    answers: list[Answer] = []

    async def answer_one(system: str, number: int) -> str:
        question = conversation.questions[number].text
        if system.startswith("product"):
            short = system == "product, short"
            return await ask_product(stored, conversation, question, number, short=short)
        memories = full if system == "full context" else ""
        if system == "top-10 turns":
            items = await recall(raw, conversation.user_id, question, limit=DEPTH)
            memories = "\n".join(str(item.value["content"]) for item in items)
        prompt = prompt_for(conversation, memories, question)
        return await complete(client, answerer.model, prompt, ANSWER_TOKENS)

    async def one(number: int) -> None:
        question = conversation.questions[number]
        gold = str(GOLD[(conversation.user_id, question.text)])
        async with gate:
            if time.perf_counter() > deadline:
                return
            # this question's clock: the virtual time the questions are asked at
            locomo_product._RUN.set(
                locomo_product.UserRun(
                    RealExtraction(locomo_product.EchoExtractor(""), summary_tokens=0),
                    gate=False,
                    moment=stored.asked_at,
                )
            )
            for system in SYSTEMS:
                if system == "full context" and not fits:
                    continue
                started, failed = time.perf_counter(), ""
                try:
                    text = await answer_one(system, number)
                except Exception as error:  # a failed answer is a wrong one, and counted
                    text, failed = "", f"{type(error).__name__}: {error}"[:200]
                answer = Answer(system, question.category, question.text, gold, text.strip())
                answer.seconds, answer.failed = time.perf_counter() - started, failed
                answer.f1 = locomo_f1(answer.text, gold, question.category)
                await judge_one(judging, judge.model, answer)
                answers.append(answer)
                if progress:
                    print(
                        f"  q{number} {system}: {answer.seconds:.0f} s {answer.correct} "
                        f"{answer.text[:60]!r}",
                        file=sys.stderr,
                        flush=True,
                    )

    with patched(asking=True):
        await asyncio.gather(*(one(n) for n in range(len(conversation.questions))))
    return answers


async def judge_one(client: AsyncOpenAI, model: str, answer: Answer) -> None:
    """The judge's verdict on ``answer`` (a failed answer is wrong)."""
    if answer.failed:
        answer.correct = False
        return
    prompt = JUDGE_PROMPT.format(
        question=answer.question, gold_answer=answer.gold, generated_answer=answer.text
    )
    try:
        reply = await complete(client, model, prompt, JUDGE_TOKENS, json_mode=True)
    except Exception:  # counted with the unreadable verdicts
        return
    answer.correct = judge_label(reply)


GOLD: dict[tuple[str, str], str] = {}
"""(conversation, question) -> the gold answer."""


# --------------------------------------------------------------------------- reporting


def cell(answers: Sequence[Answer]) -> str:
    """``judge accuracy / mean F1``, over ``answers`` ("-" for none).

    >>> cell([Answer("s", 4, "q", "g", "a", f1=0.5, correct=True),
    ...       Answer("s", 4, "q", "g", "b", f1=0.0, correct=False)])
    '0.500 / 0.250'
    """
    if not answers:
        return "-"
    judged = sum(bool(a.correct) for a in answers) / len(answers)
    return f"{judged:.3f} / {sum(a.f1 for a in answers) / len(answers):.3f}"


def table(answers: Sequence[Answer], questions: Sequence[Any]) -> str:
    groups: list[tuple[str, set[int]]] = [("all", set(CATEGORIES))]
    groups += [(name, {category}) for category, name in CATEGORIES.items()]
    head = [
        "system",
        *(f"{g} ({sum(q.category in kept for q in questions)})" for g, kept in groups),
    ]
    lines = [[*head, "answered", "failed"]]
    for system in SYSTEMS:
        mine = [a for a in answers if a.system == system]
        cells = [cell([a for a in mine if a.category in kept]) for _, kept in groups]
        lines.append([system, *cells, str(len(mine)), str(sum(bool(a.failed) for a in mine))])
    return locomo_product.markdown(lines)


async def main(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    load_before = real_model.load_average()
    COUNTS.progress = args.progress
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    wanted = set(args.conversations.split(",")) if not args.all else None
    conversations = [
        sample(read_conversation(s), 0 if args.all else args.sessions)
        for s in samples
        if wanted is None or s["sample_id"] in wanted
    ]
    if not conversations:
        raise SystemExit(f"no conversation {args.conversations!r} in {args.data}")
    for s in samples:
        for qa in s["qa"]:
            GOLD[(s["sample_id"], str(qa["question"]))] = str(qa.get("answer", ""))
    answers: list[Answer] = []
    facts = messages = 0
    verdicts: Counter[str] = Counter()
    with real_model.serving() as endpoint:
        answerer = Client(endpoint.model, endpoint.base_url, os.environ.get("OPENAI_API_KEY", ""))
        judge = Client(
            os.environ.get("BENCH_JUDGE_MODEL", "") or answerer.model,
            os.environ.get("BENCH_JUDGE_BASE_URL", "") or answerer.base_url,
            os.environ.get("BENCH_JUDGE_API_KEY", "") or answerer.api_key,
        )
        feeding = asking = 0.0
        deadline = started + args.budget_s if args.budget_s else float("inf")
        for conversation in conversations:
            start = time.perf_counter()
            stored = await feed(conversation)
            fed = time.perf_counter()
            messages += stored.messages
            verdicts.update(stored.verdicts)
            for user in stored.users.values():
                facts += len(await list_memories(stored.store, user))
            answers += await answer_all(
                conversation,
                stored,
                answerer,
                judge,
                window=args.window,
                concurrency=args.concurrency,
                progress=args.progress,
                deadline=deadline,
            )
            feeding, asking = feeding + fed - start, asking + time.perf_counter() - fed
    questions = [q for c in conversations for q in c.questions]
    asked = {a.question for a in answers}
    scored = [q for q in questions if q.text in asked]
    turns = sum(len(c.turns) for c in conversations)
    scope = (
        "the whole dev split"
        if args.all
        else f"{', '.join(c.user_id for c in conversations)}, sessions 1-{args.sessions}"
    )
    print(
        f"LoCoMo dev answers end to end: {scope}: {turns} turns, {len(questions)} questions "
        "of categories 1-4 whose evidence lies in them"
    )
    if len(scored) < len(questions):
        print(
            f"time budget ({args.budget_s:g} s) spent: {len(scored)} of {len(questions)} "
            "questions asked and scored, the rest not run"
        )
    print(endpoint.described)
    judged_by = "the same model" if judge.model == answerer.model else judge.model
    print(
        f"judge: {judged_by} with the mem0 paper's LoCoMo judge prompt (CORRECT/WRONG); "
        f"F1: LoCoMo's token F1; {sum(a.correct is None for a in answers)} verdicts unreadable"
    )
    print("cells: judge accuracy / F1")
    print()
    print(table(answers, scored))
    print()
    extraction_p50 = sorted(COUNTS.seconds)[len(COUNTS.seconds) // 2] if COUNTS.seconds else 0
    print(
        f"product's memory: {messages} messages fed, gate extract / hold / skip "
        f"{verdicts['extract']} / {verdicts['hold']} / {verdicts['skip']}, "
        f"{COUNTS.extraction_calls} extraction calls ({COUNTS.extraction_failures} failed, "
        f"p50 {extraction_p50:.0f} s), {facts} facts stored"
    )
    product = [a for a in answers if a.system.startswith("product")]
    print(
        f"product replies with tool markup: {sum(has_tool_markup(a.text) for a in product)} "
        f"of {len(product)}"
    )
    print()
    print(
        f"time: feeding {feeding:.0f} s, answering and judging {asking:.0f} s, total "
        f"{time.perf_counter() - started:.0f} s, {args.concurrency} questions at once; load "
        f"average {load_before} before, {real_model.load_average()} after"
    )
    if args.answers:
        print()
        print("answers (system, category, F1, judge, question -> answer | gold):")
        for a in sorted(answers, key=lambda a: (a.question, SYSTEMS.index(a.system))):
            verdict = {True: "CORRECT", False: "WRONG", None: "?"}[a.correct]
            print(
                f"  {a.system:<14} {a.category} {a.f1:.2f} {verdict:<7} {a.question[:60]!r} -> "
                f"{a.text[:80]!r} | {a.gold!r}"
            )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo JSON (the dev split)")
    parser.add_argument("--conversations", default="conv-26", help="comma-separated sample ids")
    parser.add_argument("--sessions", type=int, default=4, help="the first N sessions of each")
    parser.add_argument(
        "--all", action="store_true", help="every conversation and session (remote endpoint)"
    )
    parser.add_argument(
        "--window", type=int, default=8192, help="the model's context window, in tokens"
    )
    parser.add_argument("--concurrency", type=int, default=2, help="model calls at once")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=0,
        help="ask no question after this many seconds from the start (feeding included)",
    )
    parser.add_argument("--progress", action="store_true", help="print each answer's time (stderr)")
    parser.add_argument("--answers", action="store_true", help="print every answer, scored")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
