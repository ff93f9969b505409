"""Whether a message is about food, with the bundled e5 (`assistant.memory.search.topics`).

The figures on labelled messages in ten languages are `bench/heed.py`'s; these are a few
clear cases, written apart from that set.
"""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from assistant.inference.models import EMBEDDING_DIMS, E5Embeddings
from assistant.memory import about_food
from assistant.memory.search.topics import topic_of


@pytest.fixture(scope="module")
def store() -> InMemoryStore:
    return InMemoryStore(index={"dims": EMBEDDING_DIMS, "embed": E5Embeddings(), "fields": []})


@pytest.mark.parametrize(
    "text",
    [
        "What should I make for breakfast tomorrow?",
        "明天早餐吃什么好？",
        "Was soll ich heute Abend kochen?",
        "Qué cenamos hoy?",
    ],
)
async def test_a_question_about_a_meal_is_about_food(store: InMemoryStore, text: str) -> None:
    assert await about_food(store, text)


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("Where should I go hiking this weekend?", "leisure"),
        ("Plan a trip to Kyoto for me", "travel"),
        ("Should I get a cat?", "pets"),
        ("我们周末去哪儿玩？", "leisure"),
    ],
)
async def test_other_questions_are_about_their_own_subject(
    store: InMemoryStore, text: str, topic: str
) -> None:
    assert await topic_of(store, text) == topic
    assert not await about_food(store, text)


async def test_an_empty_message_is_about_nothing(store: InMemoryStore) -> None:
    assert not await about_food(store, "  ")
