"""The profile: pinned facts that ride in every prompt, within their token budget."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.inference.tokens import count_text_tokens
from assistant.memory import save_memory
from assistant.memory.facts import confirm_memory
from assistant.memory.writer import Writer
from assistant.run.context import Context
from function_model import FunctionChatModel
from helpers import between, lines, system_prompt


@pytest.fixture
def store(both_stores: BaseStore) -> BaseStore:
    """Every test in this module runs on the in-memory store and on Postgres."""
    return both_stores


if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

USER = "default-user"


async def pin(store: InMemoryStore, content: str, category: str) -> str:
    return await save_memory(store, USER, content, category=category, pinned=True)


async def test_the_profile_is_in_every_prompt_of_every_thread(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await pin(store, "Allergic to peanuts", "constraint")
    await pin(store, "Name is Alice", "identity")
    await save_memory(store, USER, "Likes green tea", category="preference")
    model = patch_model(itertools.repeat("Sure."))

    turns = [
        ("thread-a", "What's a good film tonight?"),
        ("thread-a", "Any tips for learning the violin?"),
        ("thread-a", "How tall is Mount Fuji?"),
        ("thread-b", "Which green tea should be tried first?"),
    ]
    for thread, text in turns:
        await chat(text, thread_id=thread)

    assert len(model.sent("respond")) == len(turns)
    for index in range(len(turns)):
        system = system_prompt(model, index)
        # Identity first, then hard constraints, whatever the query is about.
        assert lines(system, "user_profile") == ["Name is Alice", "Allergic to peanuts"]
        assert "Name is Alice" not in between(system, "user_facts")  # never shown twice
        assert "Allergic to peanuts" not in between(system, "user_facts")
    assert lines(system_prompt(model), "user_facts") == ["Likes green tea"]


async def test_profile_facts_do_not_use_up_the_recall_limit(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await pin(store, "Lives in Hangzhou", "location")
    for fact in ["Likes Hangzhou food", "Visits Hangzhou parks", "Likes green tea"]:
        await save_memory(store, USER, fact)
    model = patch_model(["Sure."])

    await chat(
        "Good restaurants in Hangzhou?", context=Context(recall_limit=2, whole_memory_tokens=0)
    )

    system = system_prompt(model)
    assert lines(system, "user_profile") == ["Lives in Hangzhou"]
    facts = lines(system, "user_facts")
    assert len(facts) == 2
    assert "Lives in Hangzhou" not in facts


@pytest.mark.parametrize(
    ("budget", "kept"),
    [
        (0, []),
        (5, []),  # "Name is Alice" costs 4 tokens + 2 for its line
        (6, ["Name is Alice"]),
        (12, ["Name is Alice"]),
        (13, ["Name is Alice", "Lives in Hangzhou"]),
        (200, ["Name is Alice", "Lives in Hangzhou", "Prefers short answers"]),
    ],
)
async def test_the_profile_fits_its_budget_keeping_the_most_important_facts(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore, budget: int, kept: list[str]
) -> None:
    # Saved least important first, so age cannot explain the order.
    await pin(store, "Prefers short answers", "preference")
    await pin(store, "Lives in Hangzhou", "location")
    await pin(store, "Name is Alice", "identity")
    model = patch_model(["Sure."])

    state = await chat("What's a good film tonight?", context=Context(profile_tokens=budget))

    system = system_prompt(model)
    assert count_text_tokens(between(system, "user_profile")) <= budget
    assert lines(system, "user_profile") == kept
    assert [fact["content"] for fact in state["profile"]] == kept


async def test_the_budget_counts_chinese_characters_one_token_each(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await pin(store, "名字是小明", "identity")  # 5 tokens, not 2
    await pin(store, "对花生过敏", "constraint")
    model = patch_model(["好的。"])

    await chat("今晚看什么电影好？", context=Context(profile_tokens=10))

    block = between(system_prompt(model), "user_profile")
    assert block == "- 名字是小明"
    assert count_text_tokens(block) <= 10


async def test_the_more_often_repeated_fact_wins_within_a_category(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await pin(store, "Name is Alice", "identity")
    nickname = await pin(store, "Goes by Ali", "identity")
    await confirm_memory(Writer(store=store, user_id=USER), nickname)
    model = patch_model(["Sure."])

    await chat("What's a good film tonight?", context=Context(profile_tokens=5))

    assert lines(system_prompt(model), "user_profile") == ["Goes by Ali"]


async def test_the_profile_follows_a_move(
    rule_based_model: FunctionChatModel, chat: Chat, store: InMemoryStore
) -> None:
    await chat("I live in Hangzhou", thread_id="thread-a")
    await chat("What's good to eat tonight?", thread_id="thread-a")
    assert lines(system_prompt(rule_based_model), "user_profile") == ["Lives in Hangzhou"]

    await chat("I moved from Hangzhou to Chengdu", thread_id="thread-a")
    for thread in ("thread-a", "thread-b"):
        await chat("What's good to eat tonight?", thread_id=thread)
        system = system_prompt(rule_based_model)
        assert lines(system, "user_profile") == ["Lives in Chengdu"]
        assert "Hangzhou" not in system.split("<user_profile>", 1)[1]
