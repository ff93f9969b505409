"""A memory read with the turns around it: its window vector and the next turn of its thread.

Memories that say where they were said (``thread_id`` and an integer ``turn``) are linked
to the next turn of their thread; a memory with a ``context`` is also embedded together
with it. These tests pin what each link does, and that the vectors kept in the store
follow the texts they were made from.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import numpy as np
import pytest
from langgraph.store.base import BaseStore, Item

from assistant import memory
from assistant.memory import FusionWeights, facts, save_memory
from assistant.memory.search import freshness, lexical, user_index
from assistant.memory.search.ranking import vector_scores, with_next_turns
from assistant.memory.search.user_index import TURN_FACTS_LINKED, UserIndex
from assistant.memory.search.vectors import WINDOW_CONTEXT_CHARS, embedded_texts
from assistant.memory.writer import Writer

USER = "alice"
NOW = datetime(2026, 3, 9, tzinfo=UTC)


@pytest.fixture
def store(both_stores: BaseStore, monkeypatch: pytest.MonkeyPatch) -> BaseStore:
    """Every test that takes a store runs on the in-memory store and on Postgres."""
    monkeypatch.setattr(freshness, "PROBE_INTERVAL_S", 0.0)
    return both_stores


def turn(key: str, content: str, *, thread: str = "t", number: int | None = None) -> Item:
    value: dict[str, object] = {"content": content, "thread_id": thread}
    if number is not None:
        value["turn"] = number
    return Item(
        value=value, key=key, namespace=("user_facts", USER), created_at=NOW, updated_at=NOW
    )


def terms(index: UserIndex, key: str) -> dict[str, float]:
    return index.lexical.term_counts(key)


# --------------------------------------------------------------------------- next turn's words


def test_a_turn_holds_the_words_of_the_next_turn_of_its_thread() -> None:
    index = UserIndex(dims=2)
    index.upsert(turn("a", "Take a look at this.", number=3), [1.0, 0.0])
    assert "sunris" not in terms(index, "a")

    index.upsert(turn("b", "What a beautiful sunrise!", number=4), [0.0, 1.0])
    assert terms(index, "a")["sunris"] == lexical.NEXT_TURN_WEIGHT
    assert terms(index, "b")["sunris"] == 1.0
    assert "look" not in terms(index, "b")  # the turn before comes from ``context`` alone

    index.remove("b")
    assert "sunris" not in terms(index, "a")


def test_turns_of_other_threads_or_not_next_are_not_linked() -> None:
    index = UserIndex(dims=2)
    index.upsert(turn("a", "Take a look at this.", number=3), [1.0, 0.0])
    index.upsert(turn("other thread", "A sunrise!", thread="u", number=4), [0.0, 1.0])
    index.upsert(turn("two later", "Another sunrise!", number=5), [0.0, 1.0])
    index.upsert(turn("no turn", "A third sunrise!"), [0.0, 1.0])
    assert "sunris" not in terms(index, "a")
    assert index.next_turn_keys("a") == set()


def test_a_turn_with_too_many_facts_is_not_linked() -> None:
    """A bulk import that gives every fact one turn must not re-index them all per write."""
    index = UserIndex(dims=2)
    index.upsert(turn("before", "Take a look at this.", number=0), [1.0, 0.0])
    for n in range(TURN_FACTS_LINKED):
        index.upsert(turn(f"fact {n}", f"Sunrise number {n}", number=1), [0.0, 1.0])
    assert len(index.next_turn_keys("before")) == TURN_FACTS_LINKED
    index.upsert(turn("one more", "One sunrise too many", number=1), [0.0, 1.0])
    assert index.next_turn_keys("before") == set()
    assert index.previous_turn_keys("one more") == set()


async def test_a_turn_is_found_by_the_words_of_its_reply(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = "Take a look at this."
    for thread, reply in (("s1", "What a beautiful sunrise painting!"), ("s2", "Nice car!")):
        await save_memory(store, USER, shared, thread_id=thread, turn=0)
        await save_memory(store, USER, reply, thread_id=thread, turn=1, context=shared)
    keywords_only = FusionWeights(vector_weight=0.0, date_weight=0.0, feedback_weight=0.0)
    # (a memory no ranking found scores 0: left out below)

    found = await memory.recall(store, USER, "sunrise painting", limit=5, weights=keywords_only)
    assert [(i.value["thread_id"], i.value["content"]) for i in found if i.score] == [
        ("s1", "What a beautiful sunrise painting!"),
        ("s1", shared),
    ]

    monkeypatch.setattr(lexical, "NEXT_TURN_WEIGHT", 0.0)
    user_index._REGISTRIES.clear()  # indexed again without the next turn's words
    found = await memory.recall(store, USER, "sunrise painting", limit=5, weights=keywords_only)
    assert [i.value["content"] for i in found if i.score] == ["What a beautiful sunrise painting!"]


# --------------------------------------------------------------------------- next turn's similarity


def test_a_turn_gains_a_share_of_its_next_turns_similarity() -> None:
    index = UserIndex(dims=2)
    index.upsert(turn("question", "Take a look at this.", number=0), [1.0, 0.0])
    index.upsert(turn("reply", "What a sunrise!", number=1), [0.0, 1.0])
    index.upsert(turn("alone", "Unrelated.", thread="u", number=0), [1.0, 0.0])
    scores = np.array([0.2, 0.9, 0.1], dtype=np.float32)  # by row: question, reply, alone

    adjusted = with_next_turns(index, scores, FusionWeights(next_turn_weight=0.5))

    # question: its own 0.2 plus half of its reply's 0.9 above the lowest score, 0.1
    assert adjusted.tolist() == pytest.approx([0.2 + 0.5 * (0.9 - 0.1), 0.9, 0.1])
    assert with_next_turns(index, scores, FusionWeights(next_turn_weight=0.0)) is scores


def test_the_next_turn_counts_its_best_fact() -> None:
    index = UserIndex(dims=2)
    index.upsert(turn("question", "How was the trip?", number=0), [1.0, 0.0])
    index.upsert(turn("fact 1", "Went to Tampa", number=1), [0.0, 1.0])
    index.upsert(turn("fact 2", "Took the turtles", number=1), [0.0, 1.0])
    scores = np.array([0.0, 0.4, 0.8], dtype=np.float32)
    adjusted = with_next_turns(index, scores, FusionWeights(next_turn_weight=1.0))
    assert adjusted[index.rows["question"]] == pytest.approx(0.8)


# --------------------------------------------------------------------------- window vectors


def test_a_memory_with_context_is_embedded_twice() -> None:
    assert embedded_texts({"content": "Biscuit.", "context": "  "}) == ["Biscuit."]
    long_context = "x" * 1000 + " What did you name the puppy?"
    window = embedded_texts({"content": "Biscuit.", "context": long_context})[1]
    assert window.endswith("What did you name the puppy?\nBiscuit.")
    assert len(window) == WINDOW_CONTEXT_CHARS + len("\nBiscuit.")


async def test_the_window_vector_is_kept_and_follows_the_context(store: BaseStore) -> None:
    key = await save_memory(store, USER, "Biscuit.", context="What did you name the puppy?")
    assert await store.aget(("memory_vectors", "user_facts", USER), key) is not None
    await memory.recall(store, USER, "puppy", limit=1)
    index = user_index.registry(store).users[("user_facts", USER)]
    held = index.vector_of(key)
    assert held.shape[0] == 2 and not np.allclose(held[0], held[1])

    user_index._REGISTRIES.clear()  # a fresh process reads both vectors back
    await memory.recall(store, USER, "puppy", limit=1)
    index = user_index.registry(store).users[("user_facts", USER)]
    assert np.allclose(index.vector_of(key), held, atol=1e-6)

    value = (await store.aget(("user_facts", USER), key)).value  # type: ignore[union-attr]
    await store.aput(("user_facts", USER), key, {**value, "context": "And the cat's name?"})
    user_index._REGISTRIES.clear()
    await memory.recall(store, USER, "cat", limit=1)
    index = user_index.registry(store).users[("user_facts", USER)]
    again = index.vector_of(key)
    assert np.allclose(again[0], held[0], atol=1e-6)  # same text, same vector
    assert not np.allclose(again[1], held[1], atol=1e-6)  # another context, another window


async def test_the_window_counts_beside_the_text(store: BaseStore) -> None:
    """The same text after different turns: only the window tells them apart."""
    puppy = await save_memory(store, USER, "Biscuit.", context="What did you name the puppy?")
    cookie = await save_memory(store, USER, "Biscuit.", context="Which cookie do you want?")
    question = "What did you name the puppy?"
    found = await memory.recall(store, USER, question, limit=2)
    assert [item.key for item in found] == [puppy, cookie]

    index = user_index.registry(store).users[("user_facts", USER)]
    query = await store.embeddings.aembed_query(question)  # type: ignore[attr-defined]
    for weights, puppy_first in ((FusionWeights(), True), (FusionWeights(window_weight=0), False)):
        scores = vector_scores(index, query, query_cjk=False, weights=weights)
        gap = scores[index.rows[puppy]] - scores[index.rows[cookie]]
        assert gap > 0.1 if puppy_first else gap == pytest.approx(0.0, abs=1e-6)


async def test_a_turns_write_leaves_the_window_to_the_next_search(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write returns with the text's vector; the next search waits for the window."""
    await memory.recall(store, USER, "warm the index", limit=1)
    embeddings = store.embeddings  # type: ignore[attr-defined]
    original = embeddings.aembed_documents
    window_embedded = asyncio.Event()

    async def held(texts: list[str]) -> list[list[float]]:
        if any("\n" in text for text in texts):  # a window: context, then the text
            await window_embedded.wait()
        return list(await original(texts))

    monkeypatch.setattr(embeddings, "aembed_documents", held)
    writer = Writer(store=store, user_id=USER)
    key = await facts.save_memory(writer, "Biscuit.", context="What did you name the puppy?")
    index = user_index.registry(store).users[("user_facts", USER)]
    assert key in index.pending and not index.windowed[index.rows[key]]
    assert await store.aget(("memory_vectors", "user_facts", USER), key) is None

    search = asyncio.create_task(memory.recall(store, USER, "puppy", limit=1))
    window_embedded.set()
    assert [item.key for item in await search] == [key]
    assert index.windowed[index.rows[key]] and key not in index.pending
    assert await store.aget(("memory_vectors", "user_facts", USER), key) is not None
