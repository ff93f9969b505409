"""Whether a message is about food, with the bundled e5 (`assistant.memory.search.topics`).

The figures on labelled messages in ten languages are `bench/heed.py`'s; these are a few
clear cases, written apart from that set.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.memory import InMemoryStore

from assistant.inference.models import EMBEDDING_DIMS, E5Embeddings
from assistant.memory import about_food
from assistant.memory.search.topics import TOPICS, topic_of


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


class _SlowEmbeddings(DeterministicFakeEmbedding):
    """Hashed vectors, slow enough that callers overlap; counts the texts, can fail once."""

    texts: list[str] = []
    fail_first: bool = False

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        await asyncio.sleep(0.05)
        if self.fail_first:
            self.fail_first = False
            raise RuntimeError("embedder down")
        return self.embed_documents(texts)


def _store_with(embeddings: _SlowEmbeddings) -> InMemoryStore:
    return InMemoryStore(index={"dims": embeddings.size, "embed": embeddings, "fields": []})


async def test_users_asking_at_once_embed_the_topics_once() -> None:
    embeddings = _SlowEmbeddings(size=16, texts=[])
    store = _store_with(embeddings)
    messages = [f"message {n} about dinner" for n in range(20)]
    topics = await asyncio.gather(*(topic_of(store, text) for text in messages))
    assert all(topic in TOPICS for topic in topics)
    await topic_of(store, "and one more")
    assert sorted(embeddings.texts) == sorted(TOPICS.values())


async def test_a_caller_that_gives_up_leaves_the_topics_to_the_others() -> None:
    embeddings = _SlowEmbeddings(size=16, texts=[])
    store = _store_with(embeddings)
    leaving = asyncio.ensure_future(topic_of(store, "first"))
    staying = asyncio.ensure_future(topic_of(store, "second"))
    await asyncio.sleep(0.01)
    leaving.cancel()
    assert await staying in TOPICS
    assert len(embeddings.texts) == len(TOPICS)


async def test_topics_that_failed_to_embed_are_embedded_again() -> None:
    embeddings = _SlowEmbeddings(size=16, texts=[], fail_first=True)
    store = _store_with(embeddings)
    with pytest.raises(RuntimeError, match="embedder down"):
        await topic_of(store, "first")
    assert await topic_of(store, "second") in TOPICS
    assert len(embeddings.texts) == 2 * len(TOPICS)
