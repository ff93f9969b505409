"""Bad input and faults end to end: a real `langgraph dev`, the scripted model, no auth.

What a user would notice when a client sends something odd (a blank or huge message, an
image, an unknown role, broken settings, an impossible user id, two messages at once)
or when the model fails: the run either answers sensibly or fails with an error that
names the problem, nothing lands in the wrong place, and the thread keeps working.

Two shared servers that only this module's tests use, one test at a time, since the tests
read the whole model log: ``quiet`` (the scripted model as is) and ``faulty``
(ASSISTANT_SCRIPTED_FAIL_ON=FAILNOW: the model raises for any request whose messages
contain "FAILNOW", which shows exactly which model calls saw which text).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from e2e_helpers import ASSISTANT_ID, FAIL_MARKER, connect, unique
from langgraph_sdk.client import LangGraphClient

from assistant.inference.tokens import (
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NON_TEXT_BLOCK,
    count_text_tokens,
)
from assistant.nodes.respond import EMPTY_MESSAGE_REPLY
from assistant.run.context import Context
from devserver import DevServer
from prompt_log import ScriptedLog

pytestmark = pytest.mark.e2e

IMAGE_BLOCK = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


# --------------------------------------------------------------------------- helpers


@dataclass
class Served:
    """A module's server, its client and its scripted log."""

    server: DevServer
    client: LangGraphClient
    log: ScriptedLog

    async def thread(self) -> str:
        return str((await self.client.threads.create())["thread_id"])

    async def send(
        self, thread_id: str, content: str | list[Any], *, role: str = "user", **context: Any
    ) -> dict[str, Any]:
        """One turn; the run's final values, or ``{"__error__": ...}`` when it failed."""
        result = await self.client.runs.wait(
            thread_id,
            ASSISTANT_ID,
            input={"messages": [{"role": role, "content": content}]},
            context=context,
            raise_error=False,
        )
        assert isinstance(result, dict), f"unexpected run result {result!r}"
        return result

    async def turn(
        self, thread_id: str, content: str | list[Any], **context: Any
    ) -> dict[str, Any]:
        """One turn that must succeed; the thread's final values."""
        result = await self.send(thread_id, content, **context)
        assert "__error__" not in result, (
            f"run failed: {result['__error__']}\nserver log:\n{self.server.log_tail()}"
        )
        return result

    async def messages(self, thread_id: str) -> list[dict[str, Any]]:
        values = (await self.client.threads.get_state(thread_id))["values"]
        return list(values.get("messages", [])) if values else []

    async def facts(self, user_id: str) -> list[str]:
        items = (await self.client.store.search_items(["user_facts", user_id], limit=50))["items"]
        return sorted(str(item["value"]["content"]) for item in items)

    async def namespaces(self) -> list[tuple[str, ...]]:
        listed = await self.client.store.list_namespaces(limit=1000)
        return sorted(tuple(namespace) for namespace in listed["namespaces"])


def prompt_bound(call: dict[str, Any], max_context_tokens: int) -> int:
    """The most a `respond` prompt may hold: the system prompt plus the message budget."""
    return TOKENS_PER_MESSAGE + count_text_tokens(call["system"]) + max_context_tokens


def padded(length: int, *, head: str, tail: str, inserts: dict[int, str] | None = None) -> str:
    """``head`` + filler + ``tail``, exactly ``length`` characters, with ``inserts`` placed
    at the given character offsets. The filler holds no fact and no first-person word."""
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit " * (length // 50 + 2)
    body = list(filler[: length - len(head) - len(tail)])
    text = head + "".join(body) + tail
    for offset, insert in sorted((inserts or {}).items()):
        text = text[:offset] + insert + text[offset + len(insert) :]
    assert len(text) == length
    return text


def summarisation_failures(server: DevServer) -> int:
    """How often `compress` has logged a failed summarisation on ``server``."""
    return server.log_path.read_text(encoding="utf-8").count("Summarisation failed")


@pytest.fixture(scope="module")
async def plain(quiet_server: DevServer) -> AsyncIterator[Served]:
    async with connect(quiet_server) as client:
        yield Served(quiet_server, client, ScriptedLog(quiet_server.scripted_log_path))


@pytest.fixture(scope="module")
async def faulty(faulty_server: DevServer) -> AsyncIterator[Served]:
    async with connect(faulty_server) as client:
        yield Served(faulty_server, client, ScriptedLog(faulty_server.scripted_log_path))


# --------------------------------------------------------------------------- blank messages


@pytest.mark.parametrize("blank", ["", "   \n\t  "], ids=["empty", "whitespace-only"])
async def test_a_blank_message_gets_a_polite_reply_without_a_model_call(
    plain: Served, blank: str
) -> None:
    user, thread = unique("blank"), await plain.thread()
    await plain.turn(thread, "Hi, my name is Nora.", user_id=user)
    before = await plain.messages(thread)

    mark = plain.log.mark()
    values = await plain.turn(thread, blank, user_id=user)

    assert plain.log.since(mark) == [], "a blank message needs no model call"
    messages = values["messages"]
    assert [m["id"] for m in messages[:2]] == [m["id"] for m in before]
    assert [(m["type"], m["content"]) for m in messages[2:]] == [
        ("human", blank),
        ("ai", EMPTY_MESSAGE_REPLY),
    ]
    assert values["metrics"]["extraction"] == "skipped"
    assert await plain.facts(user) == ["Name is Nora"]
    # The thread goes on normally, and the model sees the whole conversation.
    values = await plain.turn(thread, "I live in Bergen.", user_id=user)
    assert len(values["messages"]) == 6
    assert values["messages"][-1]["content"].startswith("[scripted]")
    assert plain.log.since(mark, "respond")[-1]["messages"] == 5
    assert await plain.facts(user) == ["Lives in Bergen", "Name is Nora"]


@pytest.mark.parametrize("run_input", [{}, {"messages": []}], ids=["no-key", "empty-list"])
async def test_a_run_without_a_user_message_adds_no_reply(
    plain: Served, run_input: dict[str, Any]
) -> None:
    user, thread = unique("nomessage"), await plain.thread()
    await plain.turn(thread, "Hi, my name is Nora.", user_id=user)
    before = await plain.messages(thread)
    mark = plain.log.mark()

    result = await plain.client.runs.wait(
        thread, ASSISTANT_ID, input=run_input, context={"user_id": user}, raise_error=False
    )

    assert isinstance(result, dict)
    if "__error__" not in result:
        assert plain.log.since(mark, "respond") == [], "no user message, no model call"
    assert [m["id"] for m in await plain.messages(thread)] == [m["id"] for m in before]


# --------------------------------------------------------------------------- a huge message

HUGE = 200_000


async def test_a_200k_character_message_is_capped_for_every_model_call(plain: Served) -> None:
    user, thread, marker = unique("huge"), await plain.thread(), unique("huge")
    # A fact at the start, one in the middle, one at the end: the extractor is given the
    # start and the end of a huge message, so the middle one must not be found.
    text = padded(
        HUGE,
        head=f"[{marker}] My name is Zed. ",
        tail=" I like green tea.",
        inserts={HUGE // 2: " I live in Narnia. "},
    )
    budget = Context().max_context_tokens
    # The scripted summariser keeps whole lines: a summary budget that holds the start of
    # the huge message as the transcript shows it (about 500 tokens).
    summary_budget = {"summary_max_tokens": 600}

    mark = plain.log.mark()
    values = await plain.turn(thread, text, user_id=user, **summary_budget)

    assert values["messages"][-1]["content"].startswith("[scripted]")
    # The thread keeps the whole message; only what the model is sent is shortened.
    stored = (await plain.messages(thread))[0]["content"]
    assert stored == text
    (respond,) = plain.log.since(mark, "respond")
    assert marker in respond["latest"] and respond["messages"] == 1
    assert respond["prompt_tokens"] <= prompt_bound(respond, budget), respond["prompt_tokens"]
    assert respond["prompt_tokens"] > budget // 2, "the message was cut far more than needed"
    (extract,) = plain.log.since(mark, "extract")
    assert extract["operations"] == [["add", "Name is Zed"], ["add", "Likes green tea"]]
    assert await plain.facts(user) == ["Likes green tea", "Name is Zed"]

    # The next turn folds the huge message into the summary: the summariser is given a
    # capped transcript too, and the huge message leaves the thread.
    mark = plain.log.mark()
    values = await plain.turn(
        thread, "Thanks, that is all for now.", user_id=user, **summary_budget
    )
    (summarize,) = plain.log.since(mark, "summarize")
    summary = summarize["summary"]
    assert summary.startswith(f"- [{marker}] My name is Zed."), summary[:200]
    assert "Narnia" not in summary
    assert count_text_tokens(summary) <= summary_budget["summary_max_tokens"]
    assert values["summary"] == summary
    assert [m["content"] for m in values["messages"]][0] == "Thanks, that is all for now."
    assert len(values["messages"]) == 2
    (respond,) = plain.log.since(mark, "respond")
    assert respond["prompt_tokens"] <= prompt_bound(respond, budget)


# --------------------------------------------------------------------------- images


async def test_an_image_next_to_text_reaches_the_model_and_the_text_is_remembered(
    plain: Served,
) -> None:
    user, thread, marker = unique("image"), await plain.thread(), unique("image")
    text = f"[{marker}] What is in this picture? I live in Oslo."
    content = [{"type": "text", "text": text}, IMAGE_BLOCK]

    mark = plain.log.mark()
    values = await plain.turn(thread, content, user_id=user)

    assert values["messages"][0]["content"] == content, "the image block is kept in the thread"
    assert values["messages"][-1]["content"].startswith("[scripted]")
    (respond,) = plain.log.since(mark, "respond")
    # The image block was sent to the model with the text (it costs a fixed 85 tokens).
    assert respond["latest"] == text
    assert respond["prompt_tokens"] == (
        2 * TOKENS_PER_MESSAGE
        + count_text_tokens(respond["system"])
        + count_text_tokens(text)
        + TOKENS_PER_NON_TEXT_BLOCK
    )
    assert await plain.facts(user) == ["Lives in Oslo"]


async def test_an_image_only_message_is_answered_not_treated_as_empty(plain: Served) -> None:
    user, thread = unique("image"), await plain.thread()

    mark = plain.log.mark()
    values = await plain.turn(thread, [IMAGE_BLOCK], user_id=user)

    reply = values["messages"][-1]["content"]
    assert reply.startswith("[scripted]") and reply != EMPTY_MESSAGE_REPLY
    assert [entry["kind"] for entry in plain.log.since(mark)] == ["respond"], (
        "a text-free message has nothing to extract"
    )
    (respond,) = plain.log.since(mark, "respond")
    assert respond["prompt_tokens"] == (
        2 * TOKENS_PER_MESSAGE + count_text_tokens(respond["system"]) + TOKENS_PER_NON_TEXT_BLOCK
    )
    assert values["metrics"]["extraction"] == "skipped"
    assert await plain.facts(user) == []


# --------------------------------------------------------------------------- unknown role


async def test_an_unknown_role_fails_the_run_cleanly_and_the_thread_stays_usable(
    plain: Served,
) -> None:
    user, thread = unique("wizard"), await plain.thread()
    mark = plain.log.mark()
    # The server accepts the run (it does not validate messages up front); the run then
    # fails while the input is turned into messages, with an error naming the role.
    result = await plain.send(thread, "hi", role="wizard", user_id=user)

    error = result.get("__error__")
    assert error is not None, f"expected a run error, got {result!r}"
    assert error["error"] == "ValueError", error
    assert "Unexpected message type: 'wizard'" in error["message"], error
    assert plain.log.since(mark) == []
    (run,) = await plain.client.runs.list(thread)
    assert run["status"] == "error"
    # Until the next run, reading the thread's state answers 400 with the same message:
    # the failed input is still the pending write of the thread's latest checkpoint
    # (langgraph-api renders it). Either that or a state without the message is fine.
    try:
        assert await plain.messages(thread) == []
    except httpx.HTTPStatusError as refusal:
        assert refusal.response.status_code == 400
        assert "wizard" in refusal.response.text

    values = await plain.turn(thread, "Hello again, I like tea.", user_id=user)
    assert [m["type"] for m in values["messages"]] == ["human", "ai"]
    assert values["messages"][0]["content"] == "Hello again, I like tea."
    assert [m["type"] for m in await plain.messages(thread)] == ["human", "ai"]


# --------------------------------------------------------------------------- bad context


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"max_context_tokens": "lots"}, "Context.max_context_tokens must be an integer between"),
        ({"keep_recent_tokens": 5000}, "Context.keep_recent_tokens must be smaller"),
        ({"recall_limit": -1}, "Context.recall_limit must be an integer between 0 and 50, got -1"),
    ],
    ids=["max_context_tokens=lots", "keep_recent>max", "recall_limit=-1"],
)
async def test_malformed_context_fails_the_run_naming_the_field(
    plain: Served, context: dict[str, Any], named: str
) -> None:
    user, thread = unique("context"), await plain.thread()
    mark = plain.log.mark()

    result = await plain.send(
        thread, "My name is Ada and I live in Turin.", user_id=user, **context
    )

    error = result.get("__error__")
    assert error is not None, f"expected a run error, got {result!r}"
    assert error["error"] == "ValueError" and named in error["message"], error
    value = next(iter(context.values()))
    assert repr(value) in error["message"] or str(value) in error["message"], error
    assert plain.log.since(mark) == []
    assert await plain.facts(user) == []
    # The settings are checked before the graph starts, so the thread holds nothing.
    assert await plain.messages(thread) == []

    values = await plain.turn(thread, "My name is Ada and I live in Turin.", user_id=user)
    assert [m["type"] for m in values["messages"]] == ["human", "ai"]
    assert await plain.facts(user) == ["Lives in Turin", "Name is Ada"]


# --------------------------------------------------------------------------- bad user ids


@pytest.mark.parametrize("user_id", ["", "a.b", "langgraph-x", "has space"])
async def test_an_invalid_user_id_fails_the_run_naming_it_and_stores_nothing(
    plain: Served, user_id: str
) -> None:
    thread = await plain.thread()
    namespaces = await plain.namespaces()
    mark = plain.log.mark()

    result = await plain.send(thread, "Hi, my name is Eve and I live in Riga.", user_id=user_id)

    error = result.get("__error__")
    assert error is not None, f"expected a run error, got {result!r}"
    assert error["error"] == "InvalidUserIdError", error
    assert f"Invalid user_id={user_id!r}" in error["message"], error
    assert plain.log.since(mark) == [], "no model call before the id is checked"
    assert await plain.namespaces() == namespaces, "nothing may be stored anywhere"
    # `recall` refuses the id, so the user's message stays in the thread unanswered.
    assert [m["content"] for m in await plain.messages(thread)] == [
        "Hi, my name is Eve and I live in Riga."
    ]

    good = unique("eve")
    values = await plain.turn(thread, "Hello again.", user_id=good)
    assert values["messages"][-1]["content"].startswith("[scripted]")
    assert [m["type"] for m in values["messages"]] == ["human", "human", "ai"]


# --------------------------------------------------------------------------- double texting


async def test_two_runs_sent_at_once_both_complete_in_order(plain: Served) -> None:
    """Double texting with the default strategy: the second run waits for the first.

    ``runs.create``/``runs.wait`` default to ``multitask_strategy="enqueue"`` on this
    server, so the two turns run one after the other, each answering its own message.
    """
    user, thread, marker = unique("double"), await plain.thread(), unique("double")
    first, second = f"[{marker}] first: I like chess.", f"[{marker}] second: I am a nurse."

    results = await asyncio.gather(
        # Holding off: what the gate is unsure about is extracted in its own turn.
        plain.send(thread, first, user_id=user, extraction_hold_s=0),
        plain.send(thread, second, user_id=user, extraction_hold_s=0),
    )

    for result in results:
        assert "__error__" not in result, result
    messages = await plain.messages(thread)
    assert [m["type"] for m in messages] == ["human", "ai", "human", "ai"], messages
    assert {messages[0]["content"], messages[2]["content"]} == {first, second}
    assert len({m["id"] for m in messages}) == 4, "no message twice"
    # Each reply answered the turn before it: the later run saw the earlier turn.
    seen = {
        entry["latest"]: entry["messages"]
        for entry in plain.log.entries()
        if entry["kind"] == "respond" and marker in entry["latest"]
    }
    assert seen == {messages[0]["content"]: 1, messages[2]["content"]: 3}, seen
    assert await plain.facts(user) == ["Is a nurse", "Likes chess"]


async def test_a_second_run_with_the_reject_strategy_gets_a_409(plain: Served) -> None:
    """``multitask_strategy="reject"`` refuses a run while the thread is busy (HTTP 409)."""
    user, thread = unique("reject"), await plain.thread()
    first = await plain.client.runs.create(
        thread,
        ASSISTANT_ID,
        input={"messages": [{"role": "user", "content": "first message"}]},
        context={"user_id": user},
    )

    with pytest.raises(httpx.HTTPStatusError) as refusal:
        await plain.client.runs.create(
            thread,
            ASSISTANT_ID,
            input={"messages": [{"role": "user", "content": "second message"}]},
            context={"user_id": user},
            multitask_strategy="reject",
        )

    assert refusal.value.response.status_code == 409
    assert "Thread is already running a task" in refusal.value.response.text
    result = await plain.client.runs.join(thread, first["run_id"])
    assert isinstance(result, dict) and "__error__" not in result, result
    messages = await plain.messages(thread)
    assert [(m["type"], m["content"][:14]) for m in messages] == [
        ("human", "first message"),
        ("ai", "[scripted] Got"),
    ]
    assert len(await plain.client.runs.list(thread)) == 1


# --------------------------------------------------------------------------- model faults


async def test_a_failing_model_errors_the_run_cleanly_and_stores_nothing(faulty: Served) -> None:
    user, thread = unique("fault"), await faulty.thread()
    text = f"Hi, my name is Zed and I live in Oslo. {FAIL_MARKER}"
    mark = faulty.log.mark()

    result = await faulty.send(thread, text, user_id=user)

    error = result.get("__error__")
    assert error is not None, f"expected a run error, got {result!r}"
    assert error["error"] == "RuntimeError", error
    assert f"scripted failure: request contains '{FAIL_MARKER}'" in error["message"], error
    (run,) = await faulty.client.runs.list(thread)
    assert run["status"] == "error"
    # Neither the reply nor the extraction got an answer, so nothing was stored.
    assert faulty.log.since(mark) == []
    assert await faulty.facts(user) == []
    # The checkpoint keeps the user's message, so the turn is not lost.
    assert [(m["type"], m["content"]) for m in await faulty.messages(thread)] == [("human", text)]
    # The server and the user's memory still work.
    other = await faulty.thread()
    values = await faulty.turn(other, "Hi, my name is Zed.", user_id=user)
    assert values["messages"][-1]["content"].startswith("[scripted]")
    assert await faulty.facts(user) == ["Name is Zed"]


async def test_the_next_turn_after_a_failed_reply_works(faulty: Served) -> None:
    user, thread = unique("fault"), await faulty.thread()
    failed = await faulty.send(thread, f"Please answer this: {FAIL_MARKER}", user_id=user)
    assert "__error__" in failed

    mark = faulty.log.mark()

    result = await faulty.send(thread, "Hello again, I like green tea.", user_id=user)

    # Regression (fixed in 712dcb4): the unanswered message used to be sent again with
    # every later turn, so one message the model cannot take failed the thread for good.
    assert "__error__" not in result, f"the next turn failed too: {result['__error__']}"
    assert result["messages"][-1]["content"].startswith("[scripted]")
    (respond,) = faulty.log.since(mark, "respond")
    assert respond["messages"] == 1, "the unanswered message is left out of the prompt"
    # ... but the thread keeps it.
    assert [m["type"] for m in result["messages"]] == ["human", "human", "ai"]
    assert FAIL_MARKER in result["messages"][0]["content"]
    assert await faulty.facts(user) == ["Likes green tea"]


async def test_a_failing_extraction_alone_keeps_the_reply(faulty: Served) -> None:
    user, thread, marker = unique("extract"), await faulty.thread(), unique("extract")
    budget = {"max_context_tokens": 200, "keep_recent_tokens": 100}
    # The extractor sees the first and last ~4000 characters of a message; the reply,
    # with this budget, only the first and last ~380. The marker sits in between.
    text = padded(
        20_000,
        head=f"[{marker}] My name is Zed. ",
        tail=" I like green tea.",
        inserts={3000: f" {FAIL_MARKER} "},
    )
    mark = faulty.log.mark()

    values = await faulty.turn(thread, text, user_id=user, **budget)

    assert values["messages"][-1]["content"].startswith("[scripted]")
    assert values["metrics"]["extraction"] == "failed"
    assert [entry["kind"] for entry in faulty.log.since(mark)] == ["respond"]
    assert await faulty.facts(user) == []


async def test_a_failing_summariser_removes_no_message(faulty: Served) -> None:
    """Only the summariser sees the marker: it sits where `respond` cuts a long message
    (its first and last ~580 characters fit the budget) but the summariser reads the
    first and last ~2000; the message ends with a question and holds no first-person
    word, so `remember` skips it."""
    budget = {"max_context_tokens": 300, "keep_recent_tokens": 120, "summary_max_tokens": 100}

    def opening(marker: str, insert: str) -> str:
        # The scripted summariser keeps the first line of each user message, so the first
        # line is short enough to fit summary_max_tokens.
        head = f"[{marker}] Where should this begin?\n"
        return padded(8000, head=head, tail=" what next?", inserts={1200: insert})

    # Control: the same thread without the marker is compressed by its second turn.
    control, marker, control_user = await faulty.thread(), unique("control"), unique("sum")
    await faulty.turn(control, opening(marker, " NOTHING "), user_id=control_user, **budget)
    values = await faulty.turn(control, "Turn 2: I like tea.", user_id=control_user, **budget)
    assert values.get("summary", "").startswith(f"- [{marker}] Where should this begin?")
    assert len(values["messages"]) == 2

    user, thread, marker = unique("sum"), await faulty.thread(), unique("sum")
    first = opening(marker, f" {FAIL_MARKER} ")
    mark = faulty.log.mark()
    failures = summarisation_failures(faulty.server)
    values = await faulty.turn(thread, first, user_id=user, **budget)
    first_id = values["messages"][0]["id"]
    for turn in range(2, 5):
        text = f"Turn {turn}: I like tea number {turn}."
        values = await faulty.turn(thread, text, user_id=user, **budget)
        assert values["messages"][-1]["content"].startswith("[scripted]"), turn
        # Every summarisation failed, so nothing was folded and nothing removed.
        assert len(values["messages"]) == 2 * turn, turn
        assert values["messages"][0]["id"] == first_id
        assert not values.get("summary"), values.get("summary")
        assert values["metrics"].get("compressed") is not True
    assert faulty.log.since(mark, "summarize") == []
    assert len(faulty.log.since(mark, "respond")) == 4
    assert summarisation_failures(faulty.server) == failures + 3, "turns 2-4 each tried"
    episodes = await faulty.client.store.search_items(["user_episodes", user])
    assert episodes["items"] == []


async def test_the_middle_of_a_huge_message_never_reaches_the_model(faulty: Served) -> None:
    """The marker in the middle of a 200,000-character message would fail any model
    call that received it: the reply, the extraction and the next turn's summary all
    succeed, so each of them was given a shortened message."""
    user, thread, marker = unique("middle"), await faulty.thread(), unique("middle")
    text = padded(
        HUGE,
        head=f"[{marker}] My name is Zed. ",
        tail=" I like green tea.",
        inserts={HUGE // 2: f" {FAIL_MARKER} "},
    )
    # A summary budget that holds the message's start as the transcript shows it (the
    # scripted summariser keeps whole lines).
    summary_budget = {"summary_max_tokens": 600}

    values = await faulty.turn(thread, text, user_id=user, **summary_budget)
    assert values["metrics"]["extraction"] == "kept"
    assert await faulty.facts(user) == ["Likes green tea", "Name is Zed"]
    assert (await faulty.messages(thread))[0]["content"] == text

    values = await faulty.turn(thread, "Thanks, that is all.", user_id=user, **summary_budget)
    assert values.get("summary", "").startswith(f"- [{marker}] My name is Zed.")
    assert len(values["messages"]) == 2
