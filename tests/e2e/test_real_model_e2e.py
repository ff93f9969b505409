"""The assistant with a real model in the loop: `make dev`'s server on the local model.

The tier `make test-real` runs (and CI after `make test`): the graph as deployed, on
Postgres, its chat model Qwen2.5-Coder-1.5B-Instruct served by llama.cpp
(`examples/local_model.py`), talked to only through langgraph-sdk. Each test is one user's
story told in turns. The model's wording is its own, so the checks read words and shapes:
which facts the store holds, about whom, and what a reply mentions; never exact wording.
A CPU model takes 10-40 s a call, so the timeouts are generous.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from e2e_helpers import (
    connect,
    current_facts,
    new_thread,
    run_turn,
    stored_facts,
    thread_values,
    unique,
)
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer

pytestmark = [pytest.mark.e2e, pytest.mark.real_model, pytest.mark.timeout(1800)]

TOOL_MARKUP = re.compile(
    r"<\s*/?\s*(tools?|tool_calls?|function_calls?)\s*>|\"(name|arguments|parameters)\"\s*:"
    r"|search_memory|forget_memory|correct_memory|MemoryOperations",
    re.IGNORECASE,
)
"""What a reply meant for a person must never carry: tool tags, call JSON, tool names."""

HOLD_NOTHING = {"extraction_hold_s": 0}
"""Every message the gate sends is extracted in its own turn (no batching across turns)."""


@pytest.fixture(scope="module")
async def sdk(real_server: DevServer) -> AsyncIterator[LangGraphClient]:
    async with connect(real_server) as client:
        yield client


async def say(
    server: DevServer, sdk: LangGraphClient, thread_id: str, text: str, **context: Any
) -> str:
    """One user turn; the reply's text, checked to be free of tool markup."""
    values = await run_turn(server, sdk, thread_id, text, **context)
    reply = values["messages"][-1]
    assert reply["type"] == "ai", f"the last message is not a reply: {reply!r}"
    content = reply["content"]
    text_out = (
        content
        if isinstance(content, str)
        else " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    )
    assert text_out.strip(), f"an empty reply to {text!r}"
    assert not TOOL_MARKUP.search(text_out), f"tool markup in the reply to {text!r}: {text_out!r}"
    return text_out


def contents(facts: dict[str, dict[str, Any]] | list[dict[str, Any]]) -> list[str]:
    """The facts' texts, lower-cased."""
    values = facts.values() if isinstance(facts, dict) else facts
    return [str(value.get("content", "")).lower() for value in values]


def having(texts: list[str], *words: str) -> list[str]:
    """The texts that mention any of ``words``."""
    return [text for text in texts if any(word.lower() in text for word in words)]


# --------------------------------------------------------------------------- hearing


STORY = [
    ("My daughter Lily is allergic to peanuts, so we never keep them at home.", ("peanut",)),
    ("我在杭州的一家医院当护士，已经五年了。", ("护士", "nurse")),
    ("Ich wohne seit letztem Jahr in München, die Stadt gefällt mir sehr.", ("münchen", "munich")),
    ("Mi perro se llama Toby, es un golden retriever muy travieso.", ("toby",)),
]
"""One user's facts in four languages, and the words that show each was kept."""


async def test_facts_in_four_languages_reach_memory_about_the_right_person_and_answer_later(
    real_server: DevServer, sdk: LangGraphClient
) -> None:
    user = unique("polyglot")
    thread = await new_thread(sdk)
    for text, _ in STORY:
        await say(real_server, sdk, thread, text, user_id=user, **HOLD_NOTHING)
    kept = contents(await current_facts(sdk, user))
    for text, words in STORY:
        assert having(kept, *words), f"nothing kept from {text!r}; memory holds {kept}"
    # The allergy is the daughter's, not the user's.
    for fact in having(kept, "peanut"):
        assert any(word in fact for word in ("daughter", "lily")), f"whose allergy? {fact!r}"

    # A new thread, questions in other languages: answered from memory.
    other = await new_thread(sdk)
    answer = await say(real_server, sdk, other, "In which city do I live?", user_id=user)
    assert having([answer.lower()], "münchen", "munich"), f"{answer!r}; memory holds {kept}"
    answer = await say(real_server, sdk, other, "Wie heißt mein Hund?", user_id=user)
    assert "toby" in answer.lower(), f"{answer!r}; memory holds {kept}"
    # A hard constraint is respected: a Portuguese question about peanuts for Lily.
    answer = await say(
        real_server,
        sdk,
        other,
        "Posso fazer um bolo de amendoim para o lanche da Lily amanhã?",
        user_id=user,
    )
    lowered = answer.lower()
    heeded = ("alerg", "allerg", "não", "nao", "evit")
    assert any(word in lowered for word in heeded), f"{answer!r}; memory holds {kept}"

    # Asked what it knows, in a thread of its own: it says, rather than "I am an AI".
    answer = await say(
        real_server, sdk, await new_thread(sdk), "O que você sabe sobre mim?", user_id=user
    )
    told = [words for _, words in STORY if having([answer.lower()], *words)]
    assert len(told) >= 2, f"{answer!r}; memory holds {kept}"


async def test_a_move_supersedes_the_old_city(real_server: DevServer, sdk: LangGraphClient) -> None:
    user = unique("mover")
    thread = await new_thread(sdk)
    await say(real_server, sdk, thread, "I live in Lisbon with my partner.", user_id=user)
    await say(
        real_server,
        sdk,
        thread,
        "Big news: we moved to Porto last week, so I don't live in Lisbon anymore.",
        user_id=user,
        **HOLD_NOTHING,
    )
    current = contents(await current_facts(sdk, user))
    assert having(current, "porto"), f"the new city was not kept: {current}"
    stale = [fact for fact in having(current, "lisbon") if "porto" not in fact]
    assert not stale, f"the old city is still current: {stale}"
    history = contents(await stored_facts(sdk, user))
    assert having(history, "lisbon"), f"the old city left no history: {history}"


NOT_FACTS = [
    "What's the weather usually like in Rome in May?",
    "Can you write me a short haiku about autumn leaves?",
    "haha ok thanks, that's great",
    "¿Qué hora es ahora en Tokio?",
    "帮我把这句话翻译成英文：今天天气很好。",
]


async def test_questions_requests_and_small_talk_store_nothing(
    real_server: DevServer, sdk: LangGraphClient
) -> None:
    user = unique("asker")
    thread = await new_thread(sdk)
    for text in NOT_FACTS:
        await say(real_server, sdk, thread, text, user_id=user, **HOLD_NOTHING)
    assert contents(await stored_facts(sdk, user)) == []


async def test_forgetting_by_chat_works(real_server: DevServer, sdk: LangGraphClient) -> None:
    user = unique("forgetter")
    thread = await new_thread(sdk)
    await say(real_server, sdk, thread, "I play the cello in a community orchestra.", user_id=user)
    assert having(contents(await current_facts(sdk, user)), "cello")
    await say(real_server, sdk, thread, "Please forget that I play the cello.", user_id=user)
    left = contents(await current_facts(sdk, user))
    assert not having(left, "cello"), f"still remembered: {left}"
    await say(real_server, sdk, thread, "Moro em Lisboa desde 2020.", user_id=user, **HOLD_NOTHING)
    assert having(contents(await current_facts(sdk, user)), "lisbo")
    other = await new_thread(sdk)
    await say(real_server, sdk, other, "Esquece tudo o que sabes sobre mim.", user_id=user)
    assert await stored_facts(sdk, user) == []


async def test_a_long_threads_summary_keeps_the_facts(
    real_server: DevServer, sdk: LangGraphClient
) -> None:
    user = unique("talker")
    thread = await new_thread(sdk)
    budget = {"max_context_tokens": 150, "keep_recent_tokens": 40, **HOLD_NOTHING}
    for text in [
        "My wife Ana works as an airline pilot; she flies to Tokyo a lot.",
        "I'm planning a surprise dinner for her birthday in March.",
        "Any idea for a dessert that travels well?",
        "Great, and what wine would go with grilled fish?",
    ]:
        await say(real_server, sdk, thread, text, user_id=user, **budget)
    values = await thread_values(sdk, thread)
    assert values.get("summary"), "the thread was never compressed"
    answer = await say(real_server, sdk, thread, "What does my wife do for work?", user_id=user)
    assert "pilot" in answer.lower(), answer
