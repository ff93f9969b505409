"""The graph end to end in process: the real nodes, store and checkpointer; a scripted model."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.inference import providers
from assistant.inference.tokens import (
    count_message_tokens,
    count_messages_tokens,
    count_text_tokens,
)
from assistant.memory import InvalidUserIdError, recall, save_memory
from assistant.memory.facts import supersede_memory
from assistant.memory.held import hold_message
from assistant.memory.writer import Writer
from assistant.nodes.recall import WHOLE_MEMORY_FACTS
from assistant.nodes.requests import (
    FORGOT_EVERYTHING,
    FORGOT_PART,
    NOTHING_MATCHED,
    NOTHING_TO_FORGET,
    MemoryRequest,
)
from assistant.nodes.respond import EMPTY_MESSAGE_REPLY, UNSAID_REPLY, without_repeated_lines
from assistant.nodes.respond import PLAINLY as RESPOND_PLAINLY
from assistant.run import prompts
from assistant.run.context import Context
from helpers import (
    adds_json,
    between,
    config,
    current_facts,
    op,
    operations_json,
    quick_timeout,
    stored_facts,
    system_prompt,
)

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel, UseModel
    from function_model import CallInfo

Graph = CompiledStateGraph[Any, Any, Any, Any]


# --------------------------------------------------------------------------- helpers


def question(n: int, length: int = 80) -> str:
    """A user question of exactly ``length`` characters that holds no fact about the user.

    It has no first-person words and ends with "?", so `remember` skips it.
    """
    head = f"Topic {n}: "
    tail = " what else?"
    body = ("lorem ipsum dolor sit amet " * (length // 10 + 1))[: length - len(head) - len(tail)]
    text = head + body + tail
    assert len(text) == length
    return text


def answer(n: int, length: int = 80) -> str:
    return (f"Answer {n}: " + "consectetur adipiscing elit " * (length // 10 + 1))[:length]


def auto_replies(
    summaries: Iterator[str] | None = None,
    facts: Callable[[str], str] | None = None,
    answer_length: Callable[[int], int] = lambda n: 80,
) -> Iterator[Callable[[list[BaseMessage]], str]]:
    """An endless script that answers each kind of call by looking at its prompt."""
    counter = itertools.count(1)
    summary_counter = itertools.count(1)

    def reply(messages: list[BaseMessage]) -> str:
        first = messages[0].text
        if "<existing_summary>" in first:
            if summaries is not None:
                return next(summaries)
            return f"Summary {next(summary_counter)}: the user asked about several topics."
        if "<user_message>" in first:
            return facts(between(first, "user_message")) if facts else operations_json()
        n = next(counter)
        return answer(n, answer_length(n))

    return itertools.repeat(reply)


async def state_messages(graph: Graph, thread_id: str = "thread-1") -> list[BaseMessage]:
    snapshot = await graph.aget_state(config(thread_id))
    return list(snapshot.values.get("messages", []))


# --------------------------------------------------------------------------- respond


async def test_system_prompt_has_persona_time_and_recalled_facts(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Likes green tea", category="preference")
    await save_memory(store, "default-user", "Lives in Hangzhou", category="location")
    await save_memory(store, "default-user", "Works as a nurse", category="identity")
    # A question: the gate skips it, or holds it, or the model finds nothing in it.
    model = patch_model(["Try Longjing from West Lake."], structured=[operations_json()])

    state = await chat("Which green tea is the most famous?")

    assert state["messages"][-1].text == "Try Longjing from West Lake."
    assert len(model.sent("respond")) == 1
    system = system_prompt(model)
    assert system.startswith(prompts.PERSONA)
    assert re.search(r"Current time: \d{4}-\d{2}-\d{2} \d{2}:\d{2} \(\w+", system)
    facts = between(system, "user_facts").splitlines()
    assert facts[0] == "- Likes green tea"  # the most relevant first
    assert sorted(facts) == ["- Likes green tea", "- Lives in Hangzhou", "- Works as a nurse"]
    assert between(system, "user_profile").strip() == ""  # nothing pinned yet
    assert system.index("</user_profile>") < system.index("<user_facts>")
    assert "<past_conversations>" not in system  # no other thread was compressed
    assert "<summary>" not in system  # no summary yet
    # The model saw the system prompt, then the user's message.
    assert [type(m) for m in model.sent()[0]] == [SystemMessage, HumanMessage]


async def test_a_question_about_when_shows_the_day_each_fact_was_said(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Lives in Porto", category="location", pinned=True)
    await save_memory(store, "default-user", "Started a pottery class", category="project")
    today = datetime.now(UTC).date().isoformat()
    model = patch_model(["Today.", "Porto.", "今天。"], structured=[operations_json()] * 3)

    await chat("When did I start the pottery class?")
    system = system_prompt(model)
    assert f"- Started a pottery class (said {today})" in between(system, "user_facts")
    assert f"- Lives in Porto (said {today})" in between(system, "user_profile")

    await chat("Where do I live?")  # no date asked for: none shown
    assert "(said " not in system_prompt(model)

    await chat("我什么时候开始上陶艺课的？")
    assert f"(said {today})" in system_prompt(model)


async def test_a_question_about_when_shows_the_days_a_facts_words_name(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Went to a support group yesterday", category="other")
    await save_memory(store, "default-user", "上周六去爬山了", category="other")
    today = datetime.now(UTC).date()
    yesterday = (today - timedelta(days=1)).isoformat()
    model = patch_model(["Yesterday.", "上周六。"], structured=[operations_json()] * 2)

    await chat("When did I go to the support group?")
    facts = between(system_prompt(model), "user_facts")
    said = f"(said {today.isoformat()}; the day it means: {yesterday})"
    assert f"- Went to a support group yesterday {said}" in facts

    await chat("我什么时候去爬山的？")
    line = next(f for f in between(system_prompt(model), "user_facts").splitlines() if "爬山" in f)
    assert line.startswith(f"- 上周六去爬山了 (said {today.isoformat()}; the day it means: 20")


SEVEN_FACTS = [
    "Has a dog called Rex",
    "Works as a carpenter",
    "Plays chess on Sundays",
    "Allergic to peanuts",
    "Drives a blue van",
    "Grows tomatoes on the balcony",
    "Supports Celtic",
]


async def test_a_small_memory_goes_into_the_prompt_whole(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    for fact in SEVEN_FACTS:
        await save_memory(store, "default-user", fact, category="other")
    model = patch_model(["Sure.", "Sure."])

    await chat("Any idea for a quick snack?", context=Context(recall_limit=2))
    assert sorted(between(system_prompt(model), "user_facts").splitlines()) == sorted(
        f"- {fact}" for fact in SEVEN_FACTS
    )

    # Past the budget, the limit holds again.
    await chat(
        "Any idea for a quick snack?", context=Context(recall_limit=2, whole_memory_tokens=20)
    )
    assert len(between(system_prompt(model), "user_facts").splitlines()) == 2


async def test_the_whole_memory_counts_the_facts_the_profile_does_not_show(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    # The recall runs beside the profile's read, asking room for every pinned fact: what
    # decides "whole" is still how many facts the profile does not show.
    await save_memory(store, "default-user", "Lives in Porto", category="location", pinned=True)
    await save_memory(
        store, "default-user", "Allergic to peanuts", category="constraint", pinned=True
    )
    hobbies = [f"Collects {thing}" for thing in ("stamps", "coins", "shells", "maps", "keys")]
    hobbies += [f"Plays {game}" for game in ("chess", "go", "bridge", "poker", "darts", "pool")]
    assert len(hobbies) == WHOLE_MEMORY_FACTS - 1
    for fact in hobbies:
        await save_memory(store, "default-user", fact, category="other")
    model = patch_model(["Sure.", "Sure."])
    context = Context(recall_limit=2, whole_memory_tokens=10_000)

    await chat("Any idea for a quick snack?", context=context)
    assert sorted(between(system_prompt(model), "user_facts").splitlines()) == sorted(
        f"- {fact}" for fact in hobbies
    )

    # One more besides the profile: the recall limit holds again.
    await save_memory(store, "default-user", "Plays table tennis", category="other")
    await chat("Any idea for a quick snack?", context=context)
    assert len(between(system_prompt(model), "user_facts").splitlines()) == 2


async def test_a_model_that_misuses_its_tools_forgets_by_one_structured_question(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    said = "My daughter Lily is allergic to peanuts."
    lily = op("add", "Daughter Lily is allergic to peanuts", "constraint")
    forget = json.dumps({"action": "forget", "facts": [1]})
    model = patch_model(
        ["Noted.", "Done.", "You're welcome."], structured=[operations_json(lily), forget]
    )
    providers.profile_for(model).misuses_tools = True
    try:
        await chat(said)
        await chat("Please forget what I told you about Lily's allergy.")  # the gate skips it
        await chat("Thanks!")
    finally:
        providers.forget_providers()
    replies = [c for c in model.calls if c.info.node == "respond" and c.info.schema is None]
    assert [call.info.tools for call in replies] == [[], [], []]  # no tools, ever
    asked = [call for call in model.calls if call.info.schema is MemoryRequest]
    assert (
        len(asked) == 1 and "1. Daughter Lily is allergic to peanuts" in asked[0].messages[0].text
    )
    assert await current_facts(store, "default-user") == []  # forgotten, as the tool would
    changes = [between(system_prompt(model, n), "memory_changes").strip() for n in (1,)]
    assert changes == ["- Forgot: Daughter Lily is allergic to peanuts"]
    assert "memory tools" not in system_prompt(model, 0)  # no line about tools it lacks
    assert "<memory_changes>" not in system_prompt(model, 2)


@pytest.mark.parametrize(
    ("replies", "answer", "tools_kept"),
    [
        # Talks about its tools instead of calling them: found to misuse them, this turn.
        (
            ["Use `forget_memory` for that.", "Sure.", "I've forgotten that you play the cello."],
            "I've forgotten that you play the cello.",
            False,
        ),
        # Qwen2.5-Coder in the real-model tier, tools offered: "Sure, I'll forget that", no call.
        (
            ["Sure, I'll forget that.", "Done: I no longer remember that you play the cello."],
            "Done: I no longer remember that you play the cello.",
            True,
        ),
    ],
)
async def test_a_forget_answered_in_words_is_carried_out_in_the_same_turn(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    replies: list[str],
    answer: str,
    tools_kept: bool,
) -> None:
    await save_memory(store, "default-user", "Plays the cello", category="preference")
    forget = json.dumps({"action": "forget", "facts": [1]})
    model = patch_model(replies, structured=[forget])
    try:
        state = await chat("Please forget that I play the cello.")  # the gate skips it
        assert providers.offers_tools(model) is tools_kept
    finally:
        providers.forget_providers()
    assert state["messages"][-1].text == answer
    assert await current_facts(store, "default-user") == []
    assert "- Forgot: Plays the cello" in between(system_prompt(model), "memory_changes")


@pytest.mark.parametrize(
    ("asked", "chosen", "left"),
    [
        # Qwen2.5-Coder-1.5B through make dev: nothing about a cat is remembered, yet it chose
        # every fact it was shown, and both were deleted.
        ("Oublie que j'ai un chat, s'il te plaît.", [1, 2], 3),
        # Of the facts chosen, only the one the message names goes.
        ("Oublie que j'habite à Lyon.", [1, 2], 2),
        ("忘掉我住在哪里", [3], 2),
    ],
)
async def test_a_forget_takes_only_facts_the_message_names(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    asked: str,
    chosen: list[int],
    left: int,
) -> None:
    for fact in ("Camille habite à Lyon depuis 2019", "Végétarienne, jamais de viande", "住在杭州"):
        await save_memory(store, "default-user", fact, category="location")
    forget = json.dumps({"action": "forget", "facts": chosen})
    model = patch_model(["Done."], structured=[forget, operations_json()])
    providers.profile_for(model).misuses_tools = True
    try:
        await chat(asked)
    finally:
        providers.forget_providers()
    kept = await current_facts(store, "default-user")
    assert len(kept) == left, kept
    assert ("Camille habite à Lyon depuis 2019" in kept) == ("Lyon" not in asked), kept
    changes = between(system_prompt(model), "memory_changes")
    assert (left == 3) == (NOTHING_MATCHED in changes), changes


@pytest.mark.parametrize(
    ("asked", "replies", "misuses"),
    [
        # Qwen2.5-Coder-1.5B: "Esquece tudo" named no fact, so nothing went, and it said it forgot.
        ("Esquece tudo o que sabes sobre mim.", ["Pronto, esqueci tudo."], True),
        ("请忘掉关于我的一切。", ["好的。"], True),
        # Tools offered and answered in words only: carried out after the reply, answered again.
        (
            "Forget everything you know about me, please.",
            ["Sure, I'll forget everything.", "Done: I remember nothing about you now."],
            False,
        ),
    ],
)
async def test_a_request_to_forget_everything_forgets_every_fact(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    asked: str,
    replies: list[str],
    misuses: bool,
) -> None:
    user = "default-user"
    for fact in ("Daughter Lily is allergic to peanuts", "住在杭州"):
        await save_memory(store, user, fact, category="constraint")
    moved = await save_memory(store, user, "Lives in Lyon", category="location")
    await supersede_memory(
        Writer(store=store, user_id=user), moved, "Lives in Porto", action="supersede"
    )
    await hold_message(
        store,
        user,
        thread_id="thread-1",
        message_id="m1",
        text="I also have a cat, Miau.",
        at=datetime.now(UTC).isoformat(),
    )
    # Were the held message extracted, this answer would bring the cat back after the forget.
    model = patch_model(
        replies, structured=[adds_json(("Has a cat named Miau", "relationship", 0.9))]
    )
    providers.profile_for(model).misuses_tools = misuses
    try:
        state = await chat(asked)
    finally:
        providers.forget_providers()
    assert await memory.UserMemory(store, user).facts(include_superseded=True) == []
    assert await memory.UserMemory(store, user).held() == []  # nothing left to bring them back
    assert not [call for call in model.calls if call.info.schema]  # no choice, no extraction
    changes = between(system_prompt(model), "memory_changes").strip()
    assert changes == FORGOT_EVERYTHING.format(count=3)
    assert state["messages"][-1].text == replies[-1]
    audit = await memory.UserMemory(store, user).audit()
    assert len([entry for entry in audit if entry.get("action") == "forget"]) >= 3, audit


@pytest.mark.parametrize(
    ("replies", "answer"),
    [
        # Qwen2.5-Coder-1.5B, every fact gone: "I'm sorry, but I can't assist with that request."
        (
            ["I'm sorry, but I can't assist with that request.", "Done: I forgot everything."],
            "Done: I forgot everything.",
        ),
        (
            ["Sorry, I can't help with that."] * 2,
            "I forgot everything I remembered about you (1 fact).",
        ),
    ],
)
async def test_a_refusal_after_a_memory_change_still_tells_what_was_done(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, replies: list[str], answer: str
) -> None:
    await save_memory(store, "default-user", "Plays the cello", category="preference")
    model = patch_model(replies, structured=[operations_json()])
    providers.profile_for(model).misuses_tools = True
    try:
        state = await chat("Forget everything you know about me, please.")
    finally:
        providers.forget_providers()
    assert state["messages"][-1].text == answer
    assert prompts.DONE_AGAIN.strip() in system_prompt(model, 1)


async def test_forgetting_everything_that_fails_part_way_says_what_went(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for fact in ("Plays the cello", "Lives in Porto"):
        await save_memory(store, "default-user", fact, category="other")
    forget = memory.UserMemory.forget
    calls: list[str] = []

    async def failing(self: memory.UserMemory, key: str, **kwargs: Any) -> Any:
        calls.append(key)
        if len(calls) > 1:
            raise OSError("the database went away")
        return await forget(self, key, **kwargs)

    monkeypatch.setattr(memory.UserMemory, "forget", failing)
    model = patch_model(["Feito."], structured=[operations_json()])
    providers.profile_for(model).misuses_tools = True
    try:
        await chat("Esquece tudo o que sabes sobre mim.")
    finally:
        providers.forget_providers()
    assert len(await current_facts(store, "default-user")) == 1
    changes = between(system_prompt(model), "memory_changes").strip()
    assert changes == FORGOT_PART.format(count=1)


async def test_a_request_to_forget_everything_with_nothing_known_says_so(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(["Não sei nada sobre ti."], structured=[operations_json()])
    providers.profile_for(model).misuses_tools = True
    try:
        await chat("Esquece tudo o que sabes sobre mim!")
    finally:
        providers.forget_providers()
    assert between(system_prompt(model), "memory_changes").strip() == NOTHING_TO_FORGET


async def test_a_reminder_not_to_forget_asks_no_forget_question(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Allergic to peanuts", category="constraint")
    model = patch_model(["I'll keep it in mind."], structured=[operations_json()])
    await chat("Don't forget that I'm allergic to peanuts when you suggest recipes.")
    assert not [call for call in model.calls if call.info.schema is MemoryRequest]
    assert await current_facts(store, "default-user") != []


@pytest.mark.parametrize(
    "asked",
    [
        # Qwen2.5-Coder-1.5B through make dev MODEL=local answered this with the question
        # itself, then with "I can't share information about your personal life".
        "O que você sabe sobre mim?",
        "what do you actually remember about me??",
        "你都记得我什么？",
        "Was weißt du eigentlich über mich?",
    ],
)
async def test_a_question_of_what_is_known_lists_the_facts_under_it(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, asked: str
) -> None:
    await save_memory(store, "default-user", "Lives in Coimbra, Portugal", category="location")
    await save_memory(store, "default-user", "Has a cat named Miau", category="relationship")
    model = patch_model(["You live in Coimbra and have a cat, Miau."])
    providers.profile_for(model).misuses_tools = True
    try:
        await chat(asked)
    finally:
        providers.forget_providers()
    # No structured forget question: the message asks nothing a tool would do.
    assert not [call for call in model.calls if call.info.schema is MemoryRequest]
    [prompt] = [c.messages for c in model.calls if c.info.node == "respond"]
    head, _, note = prompt[-1].text.partition("\n\n(What you remember about me: ")
    assert head == asked
    assert sorted(note.removesuffix(".)").split("; ")) == [
        "Has a cat named Miau",
        "Lives in Coimbra, Portugal",
    ]
    assert await current_facts(store, "default-user") != []


@pytest.mark.parametrize(
    ("replies", "answer"),
    [
        # Qwen2.5-Coder-1.5B, the note under the message notwithstanding: asked again, told.
        (
            ["Eu sou um assistente de inteligência artificial.", "Você mora em Coimbra."],
            "Você mora em Coimbra.",
        ),
        # Evasive twice ("¿Qué sabes de mí?"): the facts are the answer.
        (
            ["No tengo información.", "Soy un asistente de inteligencia artificial."],
            "- Lives in Coimbra, Portugal",
        ),
        # Asked back: no answer either.
        (["Cosa sai di me?", "Cosa sai di te?"], "- Lives in Coimbra, Portugal"),
        # Right, in words the facts do not use: the answer stays, the facts after it.
        (
            ["Moras numa cidade universitária.", "Vives numa cidade portuguesa."],
            "Vives numa cidade portuguesa.\n\n- Lives in Coimbra, Portugal",
        ),
    ],
)
async def test_a_reply_that_says_nothing_known_is_asked_again_then_the_facts_are_the_answer(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    replies: list[str],
    answer: str,
) -> None:
    await save_memory(store, "default-user", "Lives in Coimbra, Portugal", category="location")
    model = patch_model(replies)
    state = await chat("¿Qué sabes de mí?")
    assert state["messages"][-1].text == answer
    first, again = [c.messages for c in model.calls if c.info.node == "respond"]
    assert again[:-1] == first
    assert again[-1].type == "system"
    assert again[-1].text == prompts.KNOWN_AGAIN_NOTE.format(facts="Lives in Coimbra, Portugal")


async def test_a_question_of_what_is_known_keeps_the_constraint_note(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Allergic to peanuts", category="constraint")
    model = patch_model(["You are allergic to peanuts, so no."], structured=[operations_json()])
    await chat("What do you know about me? And is this peanut snack ok?")
    [prompt] = [c.messages for c in model.calls if c.info.node == "respond"]
    assert prompt[-1].text.endswith(
        "(What you remember about me: Allergic to peanuts.)\n\n(Remember: Allergic to peanuts.)"
    )


@pytest.mark.parametrize(
    "asked",
    [
        # Quoted: someone else's question, not the user's.
        "Write a short story where a robot asks: what do you know about me?",
        # Forget everything: the facts shown are about to go.
        "Esquece tudo o que você sabe sobre mim.",
    ],
)
async def test_a_question_of_what_is_known_that_is_not_the_users_own_gets_no_note(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, asked: str
) -> None:
    await save_memory(store, "default-user", "Plays the cello", category="preference")
    model = patch_model(["Okay."], structured=[json.dumps({"action": "none"}), operations_json()])
    await chat(asked)
    prompts_sent = [c.messages for c in model.calls if c.info.node == "respond"]
    assert all("(What you remember about me:" not in p[-1].text for p in prompts_sent)


async def test_a_question_of_what_is_known_with_nothing_remembered_says_so(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["I don't know anything about you yet."])
    await chat("What do you remember about me?")
    [prompt] = [c.messages for c in model.calls if c.info.node == "respond"]
    assert prompt[-1].text.endswith("\n\n(You remember nothing about me yet.)")


async def test_a_question_of_what_is_known_that_also_asks_to_forget_still_forgets(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Plays the cello", category="preference")
    forget = json.dumps({"action": "forget", "facts": [1]})
    model = patch_model(["Done."], structured=[forget, operations_json()])
    providers.profile_for(model).misuses_tools = True
    try:
        await chat("What do you know about me? And please forget that I play the cello.")
    finally:
        providers.forget_providers()
    assert await current_facts(store, "default-user") == []
    assert "- Forgot: Plays the cello" in between(system_prompt(model), "memory_changes")


async def test_a_reply_that_writes_out_the_prompts_blocks_is_asked_for_again(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Works as a nurse in Hangzhou", category="identity")
    echoed = "<user_profile>\n<job>nurse</job>\n</user_profile>"
    model = patch_model(
        [echoed, "Five years as a nurse is a lot, well done!"], structured=[operations_json()]
    )
    state = await chat("我在杭州的一家医院当护士，已经五年了。")
    assert state["messages"][-1].text == "Five years as a nurse is a lot, well done!"
    first, second = system_prompt(model, 0), system_prompt(model, 1)
    assert second.startswith(first) and second.endswith(RESPOND_PLAINLY)  # the prefix is reused

    # Echoed twice: the user reads the words, never the tags.
    patch_model(
        [echoed, "<user_facts>\n- Works as a nurse\n</user_facts>\nGood night!"],
        structured=[operations_json()],
    )
    state = await chat("Good night")
    assert state["messages"][-1].text == "- Works as a nurse\nGood night!"


@pytest.mark.parametrize(
    "leaked",
    [
        # Qwen2.5-Coder's reply to a Chinese fact: made-up fact tags and a tool written out.
        '<fact id="1">护士</fact>\n<function name="search_memory">\n'
        '<parameter name="query">护士</parameter>\n</function>',
        "I can check with search_memory if you want: just say the word.",
        # Its replies to the same fact in CI: JSON lines and the tool node's errors, and a
        # tool's schema after lines of made-up questions.
        '{"id": "1", "query": "allergy to peanuts", "score": 1}\n{"name": "Lily", '
        '"allergy": "peanuts"}\n query: Field required\nPlease fix the error and try again.',
        'Your name\npeanuts\nwhat do you remember about your job?\n"arguments": '
        '{"properties": {"query": {"type": "string"}}, "required": ["query"]}',
    ],
)
async def test_a_reply_that_writes_out_tags_or_tools_is_asked_for_again(
    patch_model: PatchModel, chat: Chat, leaked: str
) -> None:
    model = patch_model([leaked, "辛苦了！五年护士很不容易。"], structured=[operations_json()])
    # Found to misuse its tools already: its replies come without them, and unchecked there.
    providers.profile_for(model).misuses_tools = True
    try:
        state = await chat("我在杭州的一家医院当护士，已经五年了。")
    finally:
        providers.forget_providers()
    assert state["messages"][-1].text == "辛苦了！五年护士很不容易。"


async def test_a_reply_that_only_says_the_message_again_is_asked_for_again(
    patch_model: PatchModel, chat: Chat
) -> None:
    # The local model, asked in a new thread what it knows, answered with the question.
    asked = "O que você sabe sobre mim?"
    model = patch_model([f" {asked}", "Sei que você mora em Coimbra."])
    state = await chat(asked)
    assert state["messages"][-1].text == "Sei que você mora em Coimbra."
    assert system_prompt(model, 1).endswith(RESPOND_PLAINLY)


async def test_json_asked_for_and_fenced_is_a_reply_and_json_twice_is_taken_out(
    patch_model: PatchModel, chat: Chat
) -> None:
    fenced = 'Here it is:\n```json\n{"name": "web", "port": 80}\n```'
    patch_model([fenced], structured=[operations_json()])
    state = await chat("Show me a JSON config for a web service on port 80.")
    assert state["messages"][-1].text == fenced
    # Written bare twice: the user reads the words around it, never the data.
    leaked = '{"name": "Lily", "allergy": "peanuts"}\nNoted, I will keep it in mind.'
    patch_model([leaked, leaked], structured=[operations_json()])
    state = await chat("My daughter Lily is allergic to peanuts.")
    assert state["messages"][-1].text == "Noted, I will keep it in mind."


async def test_a_reply_that_says_one_line_over_and_over_keeps_it_once(
    patch_model: PatchModel, chat: Chat
) -> None:
    # Qwen2.5-Coder-1.5B in the real-model tier (run 38), until its token cap.
    looped = "\n\n".join(
        [
            "Claro:",
            "1. Misture o açúcar.",
            *(f"{n}. Coloque o chocolate em cima." for n in range(2, 40)),
        ]
    )
    patch_model([looped], structured=[operations_json()])
    state = await chat("Como faço um bolo de chocolate?")
    assert state["messages"][-1].text == (
        "Claro:\n\n1. Misture o açúcar.\n\n2. Coloque o chocolate em cima."
    )


async def test_an_empty_reply_is_asked_for_again_then_becomes_a_request_to_say_it_again(
    patch_model: PatchModel, chat: Chat
) -> None:
    # Asked again without tools (the provider's check), then once more: "" each time.
    model = patch_model(["", "", ""], structured=[operations_json()])
    try:
        state = await chat("我在杭州的一家医院当护士，已经五年了。")
    finally:
        providers.forget_providers()
    assert state["messages"][-1].text == UNSAID_REPLY
    last = [c.messages for c in model.calls if c.info.node == "respond"][-1]
    assert last[0].text.endswith(prompts.EMPTY_AGAIN)


async def test_an_empty_reply_asked_for_again_gets_the_answer(
    patch_model: PatchModel, chat: Chat
) -> None:
    # Qwen2.5-Coder-1.5B through make dev MODEL=local answered this with nothing.
    answer = "Que fofo! Há quanto tempo tens o Miau?"
    model = patch_model(["", answer], structured=[operations_json()])
    providers.profile_for(model).misuses_tools = True  # no tools: no reask by the provider
    try:
        state = await chat("Tenho um gato que se chama Miau.")
    finally:
        providers.forget_providers()
    assert state["messages"][-1].text == answer
    first, again = [c.messages for c in model.calls if c.info.node == "respond"]
    assert again[0].text == first[0].text + prompts.EMPTY_AGAIN
    assert again[1:] == first[1:]


async def test_recall_limit_and_custom_persona(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    for fact in ["Likes green tea", "Lives in Hangzhou", "Works as a nurse"]:
        await save_memory(store, "default-user", fact)
    model = patch_model(["Sure."])

    await chat(
        "Which green tea should be tried first?",
        context=Context(
            recall_limit=1, whole_memory_tokens=0, system_prompt="You are Jeeves, a butler."
        ),
    )

    system = system_prompt(model)
    assert system.startswith("You are Jeeves, a butler.")
    assert prompts.PERSONA not in system
    assert between(system, "user_facts") == "- Likes green tea"


async def test_no_facts_means_an_empty_facts_block(patch_model: PatchModel, chat: Chat) -> None:
    model = patch_model(["Hello!"])
    await chat("Hello there, how are things?")
    assert between(system_prompt(model), "user_facts").strip() == ""


async def test_summary_rides_in_the_system_prompt_not_as_a_message(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    summary = "The user is planning a trip to Kyoto in May with a budget of 2000 USD."
    await graph.aupdate_state(config(), {"summary": summary}, as_node="compress")
    model = patch_model(["Book early for May."])

    await chat("Any advice on the trip?")

    system = system_prompt(model)
    assert between(system, "summary") == summary
    assert system.index("</user_facts>") < system.index("<summary>")
    for message in model.sent("respond")[0][1:]:
        assert "Kyoto" not in message.text
    assert all("Kyoto" not in m.text for m in await state_messages(graph))


async def test_the_reply_is_added_to_the_thread(patch_model: PatchModel, chat: Chat) -> None:
    reply = AIMessage(content="Nice to meet you.", id="reply-1")
    patch_model([reply, "And hello again."])
    state = await chat("Hello there, how are things?")
    assert [m.id for m in state["messages"] if isinstance(m, AIMessage)] == ["reply-1"]
    state = await chat("Hello once more, anything new?")
    assert [m.text for m in state["messages"]] == [
        "Hello there, how are things?",
        "Nice to meet you.",
        "Hello once more, anything new?",
        "And hello again.",
    ]


async def test_the_model_sees_the_earlier_turns_of_the_thread(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["First answer.", "Second answer."])
    await chat("First question, what time is it?")
    await chat("Second question, what day is it?")
    assert [m.text for m in model.sent("respond")[1][1:]] == [
        "First question, what time is it?",
        "First answer.",
        "Second question, what day is it?",
    ]


async def test_threads_do_not_share_messages_but_share_facts(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(
        ["Hangzhou is lovely.", "Try Louwailou in Hangzhou."],
        structured=[adds_json(("Lives in Hangzhou", "location", 0.95))],
    )
    await chat("I live in Hangzhou", thread_id="thread-a")
    await chat("Good restaurants in Hangzhou?", thread_id="thread-b")

    second = model.sent("respond")[1]
    assert [m.text for m in second[1:]] == ["Good restaurants in Hangzhou?"]
    # A location is profile material: it rides in <user_profile>, not among the facts.
    assert between(second[0].text, "user_profile") == "- Lives in Hangzhou"
    assert between(second[0].text, "user_facts").strip() == ""


# --------------------------------------------------------------------------- remember


async def test_only_the_latest_user_turn_is_read(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(
        [
            "Green tea is great! By the way, you live in Reykjavik and fly gliders.",
            "A cat named Mochi, how sweet.",
        ],
        structured=[
            adds_json(("Likes green tea", "preference", 0.9)),
            adds_json(("Has a cat named Mochi", "relationship", 0.9)),
        ],
    )
    await chat("I really like green tea.")
    await chat("My cat is called Mochi.")

    first, second = model.prompts("remember")
    assert between(first, "user_message") == "I really like green tea."
    assert between(second, "user_message") == "My cat is called Mochi."
    for prompt in (first, second):
        assert "Reykjavik" not in prompt  # assistant text never reaches the extractor
    assert "I really like green tea." not in second  # nor do earlier user turns
    assert between(first, "known_facts") == "(none)"
    assert between(second, "known_facts") == "1. Likes green tea"  # numbered, for `target`
    assert await stored_facts(store, "default-user") == [
        "Has a cat named Mochi",
        "Likes green tea",
    ]


async def test_stored_fact_records_where_it_was_learned(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(["Noted."], structured=[adds_json(("Loves hiking in the Alps", "nonsense", 0.8))])
    state = await chat("I love hiking in the Alps", thread_id="thread-9")

    [item] = await store.asearch(("user_facts", "default-user"))
    assert item.value["content"] == "Loves hiking in the Alps"
    assert item.value["category"] == "other"  # unknown categories are not trusted
    assert item.value["confidence"] == 0.8
    assert item.value["thread_id"] == "thread-9"
    assert item.value["message_id"] == state["messages"][0].id
    assert item.value["status"] == "current"
    assert item.value["pinned"] is False  # "other" is not profile material by default
    assert item.value["mentions"] == 1
    assert item.value["history"] == []


async def test_a_fact_keeps_when_it_was_said_and_what_it_answered(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    # What recall reads beside the words (issue 21): the question a fragment answers, the
    # turn, the time. A question worded like the assistant's then finds the fragment.
    patch_model(
        ["What is your cat called?", "Cute!", "Mochi, of course."],
        structured=[operations_json(), adds_json(("Mochi, a tabby", "relationship", 0.9))],
    )
    await chat("I finally adopted a cat!", thread_id="thread-cat")
    before = datetime.now(UTC)
    await chat("Mochi, a tabby", thread_id="thread-cat")

    [item] = await store.asearch(("user_facts", "default-user"))
    for other in ("Has a dog named Rex", "Works as a nurse", "Likes green tea"):
        await save_memory(store, "default-user", other)
    assert item.value["context"] == "What is your cat called?"
    assert item.value["turn"] == 1  # the thread's second user message
    assert datetime.fromisoformat(item.value["said_at"]) >= before
    [found] = await recall(store, "default-user", "what is my cat called?", limit=1)
    assert found.key == item.key


async def test_chinese_facts_stay_chinese(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(
        ["好的，记住了。"], structured=[adds_json(("对花生过敏", "constraint", 0.9))]
    )
    await chat("我对花生过敏")
    assert between(model.prompts("remember")[0], "user_message") == "我对花生过敏"
    assert await stored_facts(store, "default-user") == ["对花生过敏"]


async def test_a_known_fact_is_not_stored_twice(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Lives in Hangzhou.")
    model = patch_model(
        ["Still in Hangzhou, got it."],
        structured=[
            adds_json(
                ("lives in hangzhou", "location", 0.9),
                ("Has a cat", "relationship", 0.9),
                ("Has a cat.", "relationship", 0.9),
            )
        ],
    )
    await chat("I live in Hangzhou, with my cat")

    assert "1. Lives in Hangzhou." in between(model.prompts("remember")[0], "known_facts")
    assert await stored_facts(store, "default-user") == ["Has a cat", "Lives in Hangzhou."]
    [known] = [
        i for i in await store.asearch(("user_facts", "default-user")) if "Hang" in str(i.value)
    ]
    assert known.value["mentions"] == 2  # the repeat counts as a confirmation


async def test_facts_below_the_confidence_floor_are_dropped(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(
        ["Okay."],
        structured=[
            adds_json(
                ("Might be moving to Chengdu", "decision", 0.4),
                ("Works as a nurse", "identity", 0.95),
            )
        ],
    )
    await chat("I work as a nurse and maybe I'll move", context=Context(min_fact_confidence=0.7))
    assert await stored_facts(store, "default-user") == ["Works as a nurse"]


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("extractor is down"),
        "this is not JSON",
        '{"operations": [{"content": "x"}]}',  # no action, category or confidence
        operations_json(op("delete", "Has a dog named Rex")),  # not an action we know
    ],
    ids=["raises", "not-json", "missing-fields", "unknown-action"],
)
async def test_a_failing_extractor_keeps_the_reply_and_stores_nothing(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    failure: Exception | str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    patch_model(["Glad to hear it."], structured=[failure])
    state = await chat("I just adopted a dog named Rex")
    assert state["messages"][-1].text == "Glad to hear it."
    assert await stored_facts(store, "default-user") == []
    assert "Remembering this turn failed" in caplog.text
    assert state["metrics"]["extraction"] == "failed"


async def test_a_slow_extractor_is_abandoned_without_failing_the_turn(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(
        ["Congratulations!"],
        structured=[adds_json(("Got married", "identity", 0.9))],
        structured_gate=asyncio.Event(),  # never set: the extractor never answers
    )
    state = await chat("I got married last week", context=quick_timeout())
    assert state["messages"][-1].text == "Congratulations!"
    assert state["metrics"]["extraction"] == "failed"
    assert await stored_facts(store, "default-user") == []


async def test_the_reply_does_not_wait_for_extraction(
    patch_model: PatchModel, graph: Graph
) -> None:
    gate = asyncio.Event()  # extraction answers once the reply is in
    patch_model(
        ["Congratulations!"],
        structured=[adds_json(("Got married", "identity", 0.9))],
        structured_gate=gate,
    )

    async def run() -> list[str]:
        order: list[str] = []
        async for update in graph.astream(
            {"messages": [HumanMessage("I got married last week")]},
            config(),
            context=Context(),
            stream_mode="updates",
        ):
            order.extend(update)
            if "respond" in update:
                gate.set()
        return order

    order = await asyncio.wait_for(run(), timeout=30)  # a reply that waited would never come
    assert order.index("respond") < order.index("remember")


@pytest.mark.parametrize("text", ["thanks!", "ok", "Hello", "What's the capital of France?"])
async def test_trivial_turns_make_no_extraction_call(
    patch_model: PatchModel, chat: Chat, text: str
) -> None:
    model = patch_model(["You're welcome."], structured=[])
    await chat(text)
    assert model.prompts("remember") == []
    assert len(model.calls) == 1


async def test_a_huge_message_is_shortened_for_the_extractor(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["That is a lot."], structured=[operations_json()])
    text = "I live in Hangzhou. " + "blah " * 40_000 + "I have a cat."
    await chat(text)
    user_message = between(model.prompts("remember")[0], "user_message")
    assert user_message.startswith("I live in Hangzhou.")
    assert user_message.endswith("I have a cat.")
    assert count_text_tokens(user_message) <= 2000


def restated(user_says: str, *operations: dict[str, Any]) -> str:
    """An extraction answer with its restatement of the message."""
    return json.dumps({"user_says": user_says, "operations": list(operations)})


@pytest.mark.parametrize(
    ("said", "answer", "kept"),
    [
        # No operation, but the restatement states the fact: kept.
        (
            "Kein Alkohol für mich bitte, bin seit 2017 trocken",
            "Trinkt seit 2017 keinen Alkohol.",
            True,
        ),
        # A skip that names no known fact counts as no decision.
        ("お酒は一切飲みません", "お酒は一切飲まない。", True),
        # A restated question or request is not a fact.
        (
            "Is there free wifi at Heathrow T5?",
            "The user asks whether Heathrow T5 has wifi?",
            False,
        ),
        ("Tell me a joke", "The user wants a joke.", False),
        # Not in the message's script: invented.
        ("Ich trinke nie Alkohol", "不喝酒。", False),
    ],
)
async def test_a_fact_the_model_restates_but_decides_nothing_about_is_kept_once(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, said: str, answer: str, kept: bool
) -> None:
    skip = op("skip", answer, "constraint")
    patch_model(
        ["Noted."], structured=[restated(answer, skip) if "お酒" in said else restated(answer)]
    )
    await chat(said, context=Context(extraction_hold_s=0))
    facts = await current_facts(store, "default-user")
    assert facts == ([answer] if kept else [])


async def test_an_update_that_runs_known_facts_together_is_dropped(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    # Qwen2.5-Coder-1.5B in a user check, asked whether a peanut cake is fine for Lily.
    allergy, city = "Daughter Lily is allergic to peanuts", "Lives in Munich"
    await save_memory(store, "default-user", allergy, category="constraint")
    await save_memory(store, "default-user", city, category="location")
    merged = "Lily is allergic to peanuts and lives in Munich."
    patch_model(
        ["Não, a Lily é alérgica a amendoim."],
        structured=[restated(merged, op("update", merged, "constraint", 0.9, target=1))],
    )
    await chat("Posso fazer um bolo de amendoim para a Lily?", context=Context(extraction_hold_s=0))
    assert sorted(await current_facts(store, "default-user")) == sorted([allergy, city])


async def test_a_known_fact_copied_into_a_new_one_is_taken_out_and_both_are_kept(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    # Qwen2.5-Coder-1.5B in a user check: the update was too long for its message and was
    # dropped, and the daughter's allergy was lost.
    nurse = "I am a nurse in Hangzhou, China, and I have been working there for five years."
    await save_memory(store, "default-user", nurse, category="identity")
    merged = f"{nurse} My daughter莉莉对花生过敏。"
    patch_model(
        ["记住了。"],
        structured=[restated(merged, op("update", merged, "constraint", 1.0, target=1))],
    )
    await chat("我女儿莉莉对花生过敏。", context=Context(extraction_hold_s=0))
    assert sorted(await current_facts(store, "default-user")) == sorted(
        [nurse, "My daughter莉莉对花生过敏"]
    )


@pytest.mark.parametrize(
    ("said", "answer", "operations", "kept"),
    [
        # Only the place: the restatement, which says the user lives there, is the fact.
        (
            "Ich wohne seit letztem Jahr in München, die Stadt gefällt mir sehr.",
            "Ich wohne seit letztem Jahr in München, die Stadt gefällt mir sehr.",
            [op("add", "München, Germany", "location")],
            ["Ich wohne seit letztem Jahr in München, die Stadt gefällt mir sehr."],
        ),
        # A fact that says what it is about stays as written.
        (
            "moved 2 lyon in march!!",
            "I moved to Lyon in March.",
            [op("add", "Lives in Lyon", "location")],
            ["Lives in Lyon"],
        ),
        # Two facts: the restatement says both, so neither takes it.
        (
            "I'm Ana, from Porto",
            "I am Ana and I am from Porto.",
            [op("add", "Ana", "identity"), op("add", "Porto", "location")],
            ["Ana", "Porto"],
        ),
        # A restatement that does not name the fact's place is not its wording.
        (
            "Wir wohnen jetzt in Graz",
            "The user lives somewhere new.",
            [op("add", "Graz", "location")],
            ["Graz"],
        ),
        # Qwen2.5-Coder-1.5B on the heard dev split: birch pollen became pineapples.
        (
            "аллергия на пыльцу березы, весной вообще ад",
            "I have an allergy to pineapples and I don't eat them in the spring.",
            [op("update", "I have an allergy to pineapples.", "constraint")],
            ["аллергия на пыльцу березы, весной вообще ад"],
        ),
        # No operation: the restatement, translated, gives way to the message too.
        (
            "soy el único contador de la oficina",
            "I am the only counter at the office.",
            [],
            ["soy el único contador de la oficina"],
        ),
        # A fact that shares a word with its message stays as written, in any language.
        (
            "不吃香菜，一点都不行",
            "不吃香菜。",
            [op("add", "Does not eat 香菜 (coriander)", "constraint")],
            ["Does not eat 香菜 (coriander)"],
        ),
        # Two facts: which words are whose is unknown, so both stay as written.
        (
            "Меня зовут Оля, живу в Казани",
            "My name is Olya and I live in Kazan.",
            [op("add", "Name is Olya", "identity"), op("add", "Lives in Kazan", "location")],
            ["Name is Olya", "Lives in Kazan"],
        ),
    ],
)
async def test_a_lone_fact_is_kept_in_words_the_user_said(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    said: str,
    answer: str,
    operations: list[dict[str, Any]],
    kept: list[str],
) -> None:
    patch_model(["Noted."], structured=[restated(answer, *operations)])
    await chat(said, context=Context(extraction_hold_s=0))
    assert sorted(await current_facts(store, "default-user")) == sorted(kept)


async def test_a_constraint_the_message_touches_is_written_under_it_in_the_prompt_only(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(
        store, "default-user", "Daughter Lily is allergic to peanuts", category="constraint"
    )
    await save_memory(store, "default-user", "Lives in München", category="location")
    await save_memory(store, "default-user", "Dog named Toby", category="other")
    model = patch_model(
        ["Better not: Lily is allergic.", "In München."],
        structured=[operations_json(), operations_json()],
    )

    asked = "Posso fazer um bolo de amendoim para o lanche da Lily amanhã?"
    state = await chat(asked)
    await chat("In which city do I live?")

    first, second = [c.messages for c in model.calls if c.info.node == "respond"]
    assert isinstance(first[-1], HumanMessage)
    assert first[-1].text == f"{asked}\n\n(Remember: Daughter Lily is allergic to peanuts.)"
    # Only the prompt: the thread keeps the message as the user wrote it, and a strict chat
    # template (a system message only first) is never handed a second one.
    assert state["messages"][0].text == asked
    assert not any(isinstance(message, SystemMessage) for message in first[1:]), first
    assert second[-1].text == "In which city do I live?"


async def test_every_constraint_is_noted_under_a_message_about_food(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A breakfast question ranks a peanut allergy low among the facts, yet it bears on it."""
    from assistant import memory
    from assistant.nodes import recall as recall_node

    await save_memory(
        store, "default-user", "Daughter Lily is allergic to peanuts", category="constraint"
    )
    await save_memory(store, "default-user", "Lives in München", category="location")
    model = patch_model(["Oat porridge with berries.", "Try the Isar trail."])
    asked: list[str] = []

    async def about_food(store: object, text: str) -> bool:
        asked.append(text)
        return "breakfast" in text

    monkeypatch.setattr(memory, "about_food", about_food)
    # Only the food rule here: the test store's embeddings rank facts by no meaning.
    monkeypatch.setattr(recall_node, "HEED_RANK", 0)
    await chat("What should I make for breakfast tomorrow?")
    await chat("Where should I go hiking this weekend?")

    food, hiking = [c.messages[-1].text for c in model.calls if c.info.node == "respond"]
    assert food.endswith("\n\n(Remember: Daughter Lily is allergic to peanuts.)")
    assert hiking == "Where should I go hiking this weekend?"
    assert asked == [
        "What should I make for breakfast tomorrow?",
        "Where should I go hiking this weekend?",
    ]


async def test_a_user_without_constraints_is_never_asked_about_food(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assistant import memory

    await save_memory(store, "default-user", "Lives in München", category="location")
    patch_model(["Oat porridge."])

    async def about_food(store: object, text: str) -> bool:
        raise AssertionError("no constraint to note: the message is not classified")

    monkeypatch.setattr(memory, "about_food", about_food)
    state = await chat("What should I make for breakfast tomorrow?")
    assert state["messages"][-1].text == "Oat porridge."


@pytest.mark.parametrize(
    ("said", "content", "category"),
    [
        (
            "My daughter Lily is allergic to peanuts, so we never keep them at home.",
            "We never keep peanuts at home because Lily is allergic to them.",
            "relationship",
        ),
        ("我女儿对花生过敏。", "女儿对花生过敏", "other"),
        (
            "Meine Tochter Lily ist allergisch gegen Erdnüsse.",
            "Tochter Lily: Erdnussallergie",
            "preference",
        ),
        # "alérgica" is read once folded: the accent does not hide the allergy.
        ("Mi hija Lily es alérgica al maní.", "Hija Lily: alérgica al maní", "relationship"),
    ],
)
async def test_an_allergy_filed_under_another_category_is_kept_and_heeded_as_a_constraint(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    said: str,
    content: str,
    category: str,
) -> None:
    # Qwen2.5-Coder-1.5B filed the tier's allergy so, and the peanut-cake question got a recipe.
    model = patch_model(
        ["Noted.", "Better not."],
        structured=[
            operations_json(op("add", content, category, profile=False)),
            operations_json(),
        ],
    )

    await chat(said)
    await chat("Posso fazer um bolo de amendoim para o lanche da Lily amanhã?", thread_id="t2")

    [stored] = await store.asearch(("user_facts", "default-user"))
    assert (stored.value["content"], stored.value["category"]) == (content, "constraint")
    asked = [c.messages for c in model.calls if c.info.node == "respond"][-1]
    assert asked[-1].text.endswith(f"(Remember: {content.rstrip('.')}.)")


async def test_a_constraint_note_under_an_image_message_is_a_text_block(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Allergic to peanuts", category="constraint")
    model = patch_model(["No peanuts, then."], structured=[operations_json()])
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}

    await chat(HumanMessage([{"type": "text", "text": "Is this peanut snack ok?"}, image]))

    prompt = next(c.messages for c in model.calls if c.info.node == "respond")
    assert prompt[-1].content[:2] == [{"type": "text", "text": "Is this peanut snack ok?"}, image]
    assert prompt[-1].content[2] == {"type": "text", "text": "(Remember: Allergic to peanuts.)"}


async def test_a_bare_refusal_of_a_request_against_a_constraint_is_asked_for_its_reason(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Lily is allergic to peanuts", category="constraint")
    model = patch_model(
        [
            "Sorry, but I can't assist with that.",
            "Lily is allergic to peanuts, so no peanut cake. A banana cake instead?",
            "I'm sorry, but I can't assist with that.",
            "I'm sorry, I can't help with that.",
        ],
        structured=[operations_json(), operations_json()],
    )

    told = await chat("Posso fazer um bolo de amendoim para a Lily?")
    refused_again = await chat("E biscoitos de amendoim?")

    assert told["messages"][-1].text.startswith("Lily is allergic to peanuts")
    replies = [c.messages for c in model.calls if c.info.node == "respond"]
    asked_why = replies[1]
    assert asked_why[:-2] == replies[0]
    assert asked_why[-2].text == "Sorry, but I can't assist with that."
    assert asked_why[-1].text == prompts.REASON_NOTE
    # A second bare refusal is no better: the first stays, and only one AI message is added.
    assert refused_again["messages"][-1].text == "I'm sorry, but I can't assist with that."
    assert len(refused_again["messages"]) == 4


SNACKS_WITH_PEANUTS = "Snacks for Lily:\n1. Apple slices\n2. Peanut-butter trail mix"
"""Qwen2.5-Coder-1.5B's list under "(Remember: Lily is allergic to peanuts.)" (docs/testing.md)."""


@pytest.mark.parametrize(
    ("replies", "answer"),
    [
        (
            [SNACKS_WITH_PEANUTS, "Snacks for Lily:\n1. Apple slices\n2. Sunflower-seed bars"],
            "Snacks for Lily:\n1. Apple slices\n2. Sunflower-seed bars",
        ),
        # Asked again, still peanuts: the user reads the allergy under the list.
        (
            [SNACKS_WITH_PEANUTS, "Try peanut cookies."],
            "Try peanut cookies.\n\n⚠️ Lily is allergic to peanuts",
        ),
        ([SNACKS_WITH_PEANUTS, ""], f"{SNACKS_WITH_PEANUTS}\n\n⚠️ Lily is allergic to peanuts"),
    ],
)
async def test_a_reply_that_suggests_a_heeded_allergen_is_asked_for_again(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, replies: list[str], answer: str
) -> None:
    await save_memory(store, "default-user", "Lily is allergic to peanuts", category="constraint")
    model = patch_model(replies, structured=[operations_json()])

    state = await chat("Snack ideas for Lily's school trip?")

    assert state["messages"][-1].text == answer
    assert len(state["messages"]) == 2  # one reply, whatever was asked on the way
    asked_again = system_prompt(model, 1)
    assert asked_again.endswith(
        prompts.UNHEEDED_NOTE.format(constraints="Lily is allergic to peanuts")
    )


async def test_a_reply_that_sets_the_allergen_apart_is_left_alone(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "莉莉对花生过敏", category="constraint")
    model = patch_model(
        ["Peanut-free granola bars, or 苹果片。花生酱不行，因为莉莉过敏。"],
        structured=[operations_json()],
    )
    await chat("给莉莉准备什么零食？")
    assert len([c for c in model.calls if c.info.node == "respond"]) == 1


@pytest.mark.parametrize(
    ("allergy", "reply", "asked_again"),
    [
        # English's "mani" (a manicure) is not Spanish's "maní" (a peanut).
        ("Lily is allergic to peanuts", "A mani-pedi at the spa, then apple slices.", False),
        ("Lily is allergic to peanuts", "Treat her to a mani pedi, or a manicure.", False),
        ("Lily is allergic to peanuts", "Lavati le mani, poi affetta le mele.", False),  # hands
        ("Lily es alérgica al maní", "Many snacks work: apple slices, carrots.", False),
        # The Spanish peanut, accented or not, told in English or in Spanish.
        ("Lily is allergic to peanuts", "Galletas de maní y rodajas de manzana.", True),
        ("Lily is allergic to peanuts", "Unos manis tostados con pasas.", True),
        ("Lily es alérgica al maní", "Try peanut-butter trail mix.", True),
    ],
)
async def test_a_reply_is_read_for_mani_only_where_it_is_the_spanish_peanut(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    allergy: str,
    reply: str,
    asked_again: bool,
) -> None:
    await save_memory(store, "default-user", allergy, category="constraint")
    model = patch_model([reply, "Apple slices."], structured=[operations_json()])
    await chat("Something for Lily this afternoon?")
    calls = len([c for c in model.calls if c.info.node == "respond"])
    assert calls == (2 if asked_again else 1)


async def test_a_refusal_stays_when_asking_for_its_reason_fails(
    use_model: UseModel, chat: Chat, store: InMemoryStore
) -> None:
    def flaky(messages: list[BaseMessage], info: CallInfo) -> str:
        if info.schema:
            return operations_json()
        if messages[-1].text == prompts.REASON_NOTE:
            raise TimeoutError("the second call timed out")
        return "Sorry, but I can't assist with that."

    await save_memory(store, "default-user", "Lily is allergic to peanuts", category="constraint")
    use_model(flaky)

    state = await chat("A peanut cake for Lily tomorrow?")

    assert state["messages"][-1].text == "Sorry, but I can't assist with that."


async def test_a_bare_refusal_without_a_constraint_in_play_is_left_alone(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["Sorry, but I can't assist with that."], structured=[operations_json()])

    state = await chat("How do I pick a lock?")

    assert state["messages"][-1].text == "Sorry, but I can't assist with that."
    assert len([c for c in model.calls if c.info.node == "respond"]) == 1


async def test_a_restatement_of_a_known_fact_is_not_stored_again(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Never drinks alcohol", category="constraint")
    patch_model(["Noted."], structured=[restated("Never drinks alcohol, sober since 2017.")])
    await chat("No alcohol for me please, sober since 2017", context=Context(extraction_hold_s=0))
    facts = await current_facts(store, "default-user")
    assert facts == ["Never drinks alcohol"]


@pytest.mark.parametrize(
    ("said", "skipped", "current"),
    [
        # Qwen2.5-Coder's answer to a move: the new city written into a skip of the old.
        (
            "Big news: we moved to Porto last week, so I don't live in Lisbon anymore.",
            "I live in Porto with my partner.",
            ["I live in Porto with my partner."],
        ),
        ("上个月我们搬到成都了", "住在成都", ["住在成都"]),
        # The known fact said again, in other words or another language: still a skip.
        ("Yes, Lisbon, like I told you", "Lives in Lisbon, with partner", None),
        ("我住在里斯本", "住在里斯本", None),
    ],
)
async def test_a_skip_that_names_a_new_place_the_user_said_supersedes_its_target(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    said: str,
    skipped: str,
    current: list[str] | None,
) -> None:
    known = (
        "住在里斯本" if "里斯本" in said or "成都" in said else "I live in Lisbon with my partner."
    )
    await save_memory(store, "default-user", known, category="location")
    skip = op("skip", skipped, "location", target=1)
    patch_model(["Noted."], structured=[restated(said, skip)])
    await chat(said, context=Context(extraction_hold_s=0))
    assert await current_facts(store, "default-user") == (current or [known])
    assert await stored_facts(store, "default-user") == sorted({known, *(current or [])})


@pytest.mark.parametrize(
    ("answer", "current"),
    [
        ({"still_true": False, "now": "Lives in Porto"}, ["Lives in Porto"]),
        ({"still_true": True, "now": ""}, None),
        # "No longer true" with nothing new said: the known fact stands.
        ({"still_true": False, "now": "I live in Lisbon with my partner"}, None),
    ],
)
async def test_a_skip_of_a_fact_the_message_names_more_than_is_asked_about_once_more(
    patch_model: PatchModel,
    chat: Chat,
    store: InMemoryStore,
    answer: dict[str, Any],
    current: list[str] | None,
) -> None:
    known = "I live in Lisbon with my partner."
    said = "Big news: we moved to Porto last week, so I don't live in Lisbon anymore."
    await save_memory(store, "default-user", known, category="location")
    skip = op("skip", known, "location", target=1)
    model = patch_model(["Noted."], structured=[restated(said, skip), json.dumps(answer)])
    await chat(said, context=Context(extraction_hold_s=0))
    asked = model.prompts("remember")[1]
    assert between(asked, "known_facts") == f"1. {known}"
    assert between(asked, "user_message") == said
    assert await current_facts(store, "default-user") == (current or [known])
    assert await stored_facts(store, "default-user") == sorted({known, *(current or [])})


async def test_a_skip_of_a_fact_said_again_asks_nothing_more(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Lives in Lisbon", category="location")
    model = patch_model(
        ["Noted."], structured=[restated("", op("skip", "Lives in Lisbon", target=1))]
    )
    await chat("I live in lisbon, remember?", context=Context(extraction_hold_s=0))
    assert len(model.prompts("remember")) == 1


# --------------------------------------------------------------------------- compress

SMALL = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=60)
"""48 tokens per turn (two 80-character messages): compress after turn 5, keep 2 turns."""


async def test_compress_folds_the_oldest_messages_into_the_summary(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    summaries = iter(["Summary one: topics 1 to 3.", "Summary two: topics 1 to 6."])
    model = patch_model(auto_replies(summaries))
    assert count_messages_tokens([HumanMessage(question(1)), AIMessage(answer(1))]) == 48

    all_ids: list[str] = []
    for turn in range(1, 6):
        state = await chat(question(turn), context=SMALL)
        all_ids += [m.id for m in state["messages"][-2:]]
        if turn < 5:
            assert "summary" not in state
            assert len(state["messages"]) == 2 * turn

    # Turn 5 went over 200 tokens: the 3 oldest turns were folded, the last 2 kept.
    kept = await state_messages(graph)
    assert [m.id for m in kept] == all_ids[6:]
    assert isinstance(kept[0], HumanMessage)
    assert kept[0].text == question(4)
    assert count_messages_tokens(kept) <= SMALL.keep_recent_tokens
    snapshot = await graph.aget_state(config())
    assert snapshot.values["summary"] == "Summary one: topics 1 to 3."

    [first_prompt] = model.prompts("compress")
    assert between(first_prompt, "existing_summary") == "(none yet)"
    folded = between(first_prompt, "new_messages")
    assert folded.splitlines() == [
        line
        for turn in (1, 2, 3)
        for line in (f"User: {question(turn)}", f"Assistant: {answer(turn)}")
    ]
    assert question(4) not in folded

    # The summary reaches the model on the next turn.
    await chat(question(6), context=SMALL)
    assert between(system_prompt(model), "summary") == "Summary one: topics 1 to 3."

    for turn in (7, 8):
        await chat(question(turn), context=SMALL)
    assert len(model.prompts("compress")) == 2
    second_prompt = model.prompts("compress")[1]
    assert between(second_prompt, "existing_summary") == "Summary one: topics 1 to 3."
    assert question(4) in between(second_prompt, "new_messages")
    assert question(1) not in second_prompt
    snapshot = await graph.aget_state(config())
    assert snapshot.values["summary"] == "Summary two: topics 1 to 6."
    assert [m.text for m in snapshot.values["messages"]][::2] == [question(7), question(8)]


async def test_a_long_summary_is_capped(patch_model: PatchModel, chat: Chat, graph: Graph) -> None:
    patch_model(auto_replies(itertools.repeat("The user said many things. " * 200)))
    for turn in range(1, 6):
        await chat(question(turn), context=SMALL)
    summary = (await graph.aget_state(config())).values["summary"]
    assert summary.startswith("The user said many things.")
    assert count_text_tokens(summary) <= SMALL.summary_max_tokens


def tool_history() -> list[BaseMessage]:
    """Two turns in which the assistant used tools; the first is big."""
    return [
        HumanMessage("Find flights to Kyoto in May? " + "details " * 60),
        AIMessage(
            "",
            tool_calls=[{"id": "call-1", "name": "search_flights", "args": {"to": "KIX"}}],
        ),
        ToolMessage("Flight options: " + "NH123 08:00 " * 40, tool_call_id="call-1"),
        AIMessage("Here are some flights."),
        HumanMessage("And hotels near the station?"),
        AIMessage(
            "",
            tool_calls=[
                {"id": "call-2a", "name": "search_hotels", "args": {"near": "Kyoto Station"}},
                {"id": "call-2b", "name": "get_prices", "args": {"month": "May"}},
            ],
        ),
        ToolMessage("Hotel Granvia, Daiwa Roynet", tool_call_id="call-2a"),
        ToolMessage("From 120 USD a night", tool_call_id="call-2b"),
        AIMessage("Hotel Granvia is right at the station."),
    ]


def assert_tool_pairs_intact(messages: list[BaseMessage]) -> None:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert results <= calls, f"orphan tool results: {results - calls}"
    assert calls <= results, f"tool calls without results: {calls - results}"


async def test_compress_never_separates_tool_calls_from_their_results(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    context = Context(max_context_tokens=300, keep_recent_tokens=200, summary_max_tokens=60)
    await graph.aupdate_state(config(), {"messages": tool_history()}, as_node="compress")
    seeded = await state_messages(graph)
    assert count_messages_tokens(seeded) > context.max_context_tokens
    model = patch_model(
        ["Anything else for the trip.", "Trip to Kyoto: flights found."],
        structured=[operations_json()],
    )

    await chat("Thanks, that is all.", context=context)

    kept = await state_messages(graph)
    assert isinstance(kept[0], HumanMessage)
    assert kept[0].text == "And hotels near the station?"
    assert [m.id for m in kept[:5]] == [m.id for m in seeded[4:]]  # second tool turn kept whole
    assert_tool_pairs_intact(kept)
    folded = between(model.prompts("compress")[0], "new_messages")
    assert "Assistant: [called tools: search_flights]" in folded
    assert "Tool: Flight options:" in folded
    # The prompt the model answered from was also well formed.
    assert_tool_pairs_intact(model.sent("respond")[0][1:])


async def test_a_failing_summariser_removes_nothing(
    patch_model: PatchModel, chat: Chat, graph: Graph, caplog: pytest.LogCaptureFixture
) -> None:
    history: list[BaseMessage] = []
    for turn in range(1, 6):
        history += [HumanMessage(question(turn)), AIMessage(answer(turn))]
    await graph.aupdate_state(
        config(), {"messages": history, "summary": "Earlier: topic zero."}, as_node="compress"
    )
    patch_model(["Answer six.", RuntimeError("summariser is down"), "Answer seven.", "Fixed."])

    state = await chat(question(6), context=SMALL)

    assert state["messages"][-1].text == "Answer six."
    assert len(state["messages"]) == 12
    assert state["summary"] == "Earlier: topic zero."
    assert "Summarisation failed" in caplog.text

    # The next turn tries again and succeeds.
    state = await chat(question(7), context=SMALL)
    assert state["summary"] == "Fixed."
    assert isinstance(state["messages"][0], HumanMessage)
    assert count_messages_tokens(state["messages"]) <= SMALL.keep_recent_tokens


async def test_an_empty_summary_removes_nothing(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    history: list[BaseMessage] = []
    for turn in range(1, 6):
        history += [HumanMessage(question(turn)), AIMessage(answer(turn))]
    await graph.aupdate_state(config(), {"messages": history}, as_node="compress")
    patch_model(["Answer six.", "   "])
    state = await chat(question(6), context=SMALL)
    assert len(state["messages"]) == 12
    assert "summary" not in state


async def seed_turns(graph: Graph, count: int, summary: str = "") -> list[BaseMessage]:
    """``count`` 48-token turns in the thread, and ``summary`` as its running summary."""
    history: list[BaseMessage] = []
    for turn in range(1, count + 1):
        history += [HumanMessage(question(turn)), AIMessage(answer(turn))]
    values: dict[str, Any] = {"messages": history}
    if summary:
        values["summary"] = summary
    await graph.aupdate_state(config(), values, as_node="compress")
    return await state_messages(graph)


async def test_the_running_summary_counts_against_the_budget(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    # 3 turns (144 tokens) and the new one (31) fit in 200; with a 50-token summary they don't.
    summary = "Earlier: " + "rivers and lakes, " * 12
    assert count_text_tokens(summary) > 200 - 175
    await seed_turns(graph, 3, summary)
    model = patch_model(["Answer four.", "Rivers, lakes and seas."])

    state = await chat(question(4), context=SMALL)

    assert len(model.prompts("compress")) == 1
    assert between(model.prompts("compress")[0], "existing_summary") == summary.strip()
    assert state["summary"] == "Rivers, lakes and seas."
    assert [m.text for m in state["messages"]] == [
        question(3),
        answer(3),
        question(4),
        "Answer four.",
    ]
    working = count_messages_tokens(state["messages"]) + count_text_tokens(state["summary"])
    assert working <= SMALL.max_context_tokens


async def test_the_memory_the_prompt_shows_counts_against_the_budget(
    patch_model: PatchModel, chat: Chat, graph: Graph, store: InMemoryStore
) -> None:
    # 3 turns (144 tokens) and the new one (31) fit in 200; with a profile fact of more
    # than 25 tokens beside them they don't.
    fact = "Never eats sesame, peanuts, walnuts, cashews, almonds, pecans, hazelnuts or pistachios"
    fact += " in any dish, sauce or dessert"
    assert count_text_tokens(fact) > 200 - 175
    await save_memory(store, "default-user", fact, category="constraint")
    await seed_turns(graph, 3)
    model = patch_model(["Answer four.", "Rivers, lakes and seas."], structured=[operations_json()])

    state = await chat(question(4), context=SMALL)

    assert len(model.prompts("compress")) == 1
    assert state["summary"] == "Rivers, lakes and seas."
    shown = count_text_tokens(fact)
    working = count_messages_tokens(state["messages"]) + count_text_tokens(state["summary"])
    assert working + shown <= SMALL.max_context_tokens


async def test_messages_and_summary_within_budget_are_left_alone(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    await seed_turns(graph, 3, "Earlier: rivers.")
    model = patch_model(["Answer four."])
    state = await chat(question(4), context=SMALL)
    assert model.prompts("compress") == []
    assert len(state["messages"]) == 8


async def test_the_kept_messages_leave_room_for_a_summary_at_its_cap(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    # keep_recent_tokens 150 would keep 3 turns (141 tokens), but a 100-token summary
    # leaves 100 for them: 2 turns are kept.
    context = Context(max_context_tokens=200, keep_recent_tokens=150, summary_max_tokens=100)
    await seed_turns(graph, 5)
    patch_model(["Answer six.", "Rivers, lakes and seas. " * 30])

    state = await chat(question(6), context=context)

    assert [m.text for m in state["messages"]] == [
        question(5),
        answer(5),
        question(6),
        "Answer six.",
    ]
    assert count_text_tokens(state["summary"]) <= context.summary_max_tokens
    working = count_messages_tokens(state["messages"]) + count_text_tokens(state["summary"])
    assert working <= context.max_context_tokens


async def test_a_summary_cap_over_the_budget_still_keeps_the_latest_exchange(
    patch_model: PatchModel, chat: Chat, graph: Graph
) -> None:
    context = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=400)
    await seed_turns(graph, 5)
    patch_model(["Answer six.", "Rivers, lakes and seas."])
    state = await chat(question(6), context=context)
    assert [m.text for m in state["messages"]] == [question(6), "Answer six."]
    assert state["summary"] == "Rivers, lakes and seas."


# --------------------------------------------------------------------------- identity


async def test_an_invalid_user_id_fails_the_run(patch_model: PatchModel, chat: Chat) -> None:
    patch_model(["unused"], structured=[])
    with pytest.raises(InvalidUserIdError, match="a.b"):
        await chat("I live in Hangzhou", context=Context(user_id="a.b"))


async def test_the_authenticated_user_wins_over_context(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "alice", "Likes green tea")
    await save_memory(store, "bob", "Likes black coffee")
    model = patch_model(["Noted."], structured=[adds_json(("Lives in Hangzhou", "location", 0.9))])

    await chat(
        "I live in Hangzhou and like tea",
        context=Context(user_id="bob"),
        configurable={"langgraph_auth_user_id": "alice"},
    )

    assert await stored_facts(store, "alice") == ["Likes green tea", "Lives in Hangzhou"]
    assert await stored_facts(store, "bob") == ["Likes black coffee"]
    facts = between(system_prompt(model), "user_facts")
    assert "Likes green tea" in facts
    assert "coffee" not in facts
    assert "coffee" not in between(system_prompt(model), "user_profile")
    assert "coffee" not in between(model.prompts("remember")[0], "known_facts")


async def test_an_invalid_authenticated_id_is_not_replaced_by_context(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(["unused"], structured=[])
    with pytest.raises(InvalidUserIdError, match="langgraph-admin"):
        await chat(
            "I live in Hangzhou",
            context=Context(user_id="bob"),
            configurable={"langgraph_auth_user_id": "langgraph-admin"},
        )
    assert await stored_facts(store, "bob") == []


async def test_users_do_not_see_each_other(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(
        ["Hi Alice.", "Hi Bob."],
        structured=[adds_json(("Is allergic to peanuts", "constraint", 0.95))],
    )
    await chat("I'm allergic to peanuts", context=Context(user_id="alice"), thread_id="a")
    await chat("Any snack with peanuts?", context=Context(user_id="bob"), thread_id="b")
    assert await stored_facts(store, "bob") == []
    assert "peanuts" not in between(system_prompt(model), "user_facts")


# --------------------------------------------------------------------------- bounded prompt


async def test_the_prompt_stays_within_budget_over_a_long_conversation(
    patch_model: PatchModel, chat: Chat, graph: Graph, store: InMemoryStore
) -> None:
    context = Context(
        max_context_tokens=400, keep_recent_tokens=150, summary_max_tokens=80, recall_limit=3
    )
    lengths = [20, 200, 600, 90, 3000, 40]
    replies = auto_replies(
        facts=lambda text: adds_json((f"Mentioned {len(text)} characters", "other", 0.9)),
        answer_length=lambda n: lengths[(n + 2) % len(lengths)] * 2,
    )
    model = patch_model(replies)

    most_messages = 0
    for turn in range(40):
        length = lengths[turn % len(lengths)]
        if turn % 5 == 0:
            text = ("我住在杭州，喜欢喝龙井茶。" * (length // 10 + 1))[:length]
        elif turn % 3 == 0:
            text = ("I have a cat and I like tea. " * (length // 20 + 1))[:length]
        else:
            text = question(turn, max(length, 20))
        state = await chat(text, context=context)
        messages = state["messages"]
        most_messages = max(most_messages, len(messages))
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        last_turn = messages[last_human:]
        assert count_messages_tokens(messages) <= max(
            context.max_context_tokens, count_messages_tokens(last_turn)
        )
        assert isinstance(messages[0], HumanMessage)
        assert count_text_tokens(state.get("summary", "")) <= context.summary_max_tokens

    assert len(model.sent("respond")) == 40
    for call in model.sent("respond"):
        assert count_messages_tokens(call[1:]) <= context.max_context_tokens
        assert isinstance(call[1], HumanMessage)
    assert most_messages <= 20
    assert len(model.prompts("compress")) >= 10
    assert "<summary>" in system_prompt(model)
    assert len(await stored_facts(store, "default-user")) > 0


async def test_one_huge_message_is_shortened_in_the_prompt(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["That is long."], structured=[operations_json()])
    text = "START " + "我住在杭州。" * 50_000 + " END"
    await chat(text, context=Context(max_context_tokens=1000, keep_recent_tokens=500))
    [sent] = model.sent("respond")[0][1:]
    assert count_message_tokens(sent) <= 1000
    assert sent.text.startswith("START")
    assert sent.text.endswith("END")


# --------------------------------------------------------------------------- odd input


@pytest.mark.parametrize(
    "content",
    ["", "   \n\t", [], [{"type": "text", "text": "  "}]],
    ids=["empty", "whitespace", "no-blocks", "blank-text-block"],
)
async def test_an_empty_message_gets_a_polite_reply_without_a_model_call(
    patch_model: PatchModel, chat: Chat, content: str | list[Any]
) -> None:
    model = patch_model([], structured=[])
    state = await chat(content)
    assert state["messages"][-1].text == EMPTY_MESSAGE_REPLY
    assert model.calls == []


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
    ],
    ids=["openai-image_url", "standard-image"],
)
async def test_an_image_only_message_is_answered(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, block: dict[str, Any]
) -> None:
    await save_memory(store, "default-user", "Has a cat named Mochi")
    model = patch_model(["What a cute cat!"], structured=[])
    state = await chat([block])
    assert state["messages"][-1].text == "What a cute cat!"
    [call] = model.sent()
    assert call[-1].content == [block]
    assert model.prompts("remember") == []


# --------------------------------------------------------------------------- faults


async def test_a_store_error_while_saving_a_fact_keeps_the_reply(
    patch_model: PatchModel, graph: Graph, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def embedding_service_down(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service is down")

    # Searches still work; writing a fact (which embeds it) fails.
    monkeypatch.setattr(store.embeddings, "aembed_documents", embedding_service_down)
    patch_model(["Hangzhou is lovely."], structured=[adds_json(("Lives in Hangzhou", "x", 0.9))])
    await graph.ainvoke(
        {"messages": [HumanMessage("I live in Hangzhou")]}, config(), context=Context()
    )
    assert [m.text for m in await state_messages(graph)] == [
        "I live in Hangzhou",
        "Hangzhou is lovely.",
    ]


async def test_a_huge_message_in_content_blocks_is_shortened_in_the_prompt(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model(["That is long."], structured=[operations_json()])
    text = "START " + "lorem ipsum " * 10_000 + " END"
    await chat(
        [{"type": "text", "text": text}],
        context=Context(max_context_tokens=1000, keep_recent_tokens=500),
    )
    assert count_messages_tokens(model.sent("respond")[0][1:]) <= 1000


LOOPING_LIST = (
    "Para Lily na escola, você pode levar:\n\n- Lápis\n- Caneta\n- Chave de porta\n"
    + ("- Chave de garrafa\n- Chave de frigobar\n" * 14)
    + "- Chave "
)
"""Qwen2.5-Coder-1.5B's reply to "Que lanches posso levar para a Lily na escola?", up to its cap."""


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        (
            LOOPING_LIST,
            "Para Lily na escola, você pode levar:\n\n- Lápis\n- Caneta\n- Chave de porta\n"
            "- Chave de garrafa\n- Chave de frigobar",
        ),
        ("1. Stir.\n2. Wait.\n3. Stir.\n4. Wait.\n5. Serve.", None),  # twice is a recipe
        ("Alpha\nBeta\nGamma\n" * 3 + "Gam", "Alpha\nBeta\nGamma"),
        ("Ab\nBc\n" * 10 + "De", "Ab\nBc\nDe"),
        ("Tabata:\n20 s burpees\n10 s rest\n" + "20 s burpees\n10 s rest\n" * 7, None),
        # A workout's rounds, a dosing schedule: said three times, then more follows.
        ("Round:\n20 s burpees\n10 s rest\n" + "20 s burpees\n10 s rest\n" * 2 + "Cool down", None),
        ("Morning: 1 pill\nEvening: 1 pill\n" * 3 + "Then stop.", None),
        ("- tea\n- coffee\n- tea with milk\n- coffee with milk", None),
    ],
)
def test_lines_said_by_turns_over_and_over_are_kept_once(reply: str, kept: str | None) -> None:
    assert without_repeated_lines(reply) == (reply if kept is None else kept)
