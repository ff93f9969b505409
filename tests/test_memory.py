"""The store layer: where a user's facts live, what a stored fact holds, and recall."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.inference import models
from assistant.inference.models import EMBEDDING_DIMS, E5Embeddings
from assistant.memory import (
    InvalidUserIdError,
    get_memory,
    list_memories,
    recall,
    save_memory,
    user_facts_namespace,
    validate_user_id,
)
from assistant.memory.facts import confirm_memory, delete_memory, supersede_memory, update_memory
from assistant.memory.writer import Writer
from assistant.server.persistence.stores import make_store


@pytest.fixture
def store(both_stores: BaseStore) -> BaseStore:
    """Every test in this module runs on the in-memory store and on Postgres."""
    return both_stores


REPO_ROOT = Path(__file__).resolve().parent.parent


def alice(store: BaseStore, *, thread_id: str | None = None) -> Writer:
    """A change to alice's memory (the facts' own writers take one)."""
    return Writer(store=store, user_id="alice", thread_id=thread_id)


def test_user_facts_namespace() -> None:
    assert user_facts_namespace("alice") == ("user_facts", "alice")
    assert user_facts_namespace("用户-42") == ("user_facts", "用户-42")


@pytest.mark.parametrize(
    "bad",
    ["", "a.b", "langgraph-x", "has space", "tab\there", "x" * 200, None, 123]
    + ["*", "a*", "%", "a/b", "a\\b", "a'b", 'a"b', "a\x00b", "a?b", "a#b", "a&b", "a\u200bb"],
)
def test_invalid_user_ids_are_rejected_and_shown(bad: object) -> None:
    with pytest.raises(InvalidUserIdError) as caught:
        validate_user_id(bad)
    assert repr(bad) in str(caught.value)
    if isinstance(bad, str):
        with pytest.raises(InvalidUserIdError):
            user_facts_namespace(bad)


def test_invalid_user_id_is_a_value_error() -> None:
    assert issubclass(InvalidUserIdError, ValueError)


def test_longest_valid_user_id() -> None:
    assert validate_user_id("x" * 128) == "x" * 128


@pytest.mark.parametrize(
    "good", ["alice", "user_123", "auth0|5f2c", "google-oauth2:1234", "用户-42", "Zoë", "a+b@x"]
)
def test_user_ids_of_identity_providers_are_accepted(good: str) -> None:
    assert validate_user_id(good) == good


async def test_save_memory_stores_the_fact_with_its_metadata(store: InMemoryStore) -> None:
    key = await save_memory(
        store,
        "alice",
        "  Lives in Hangzhou  ",
        category="location",
        thread_id="thread-7",
        message_id="msg-3",
        confidence=0.9,
    )
    assert isinstance(key, str) and key
    item = await store.aget(("user_facts", "alice"), key)
    assert item is not None
    value = item.value
    assert value["content"] == "Lives in Hangzhou"
    assert value["category"] == "location"
    assert value["thread_id"] == "thread-7"
    assert value["message_id"] == "msg-3"
    assert value["confidence"] == 0.9
    created = datetime.fromisoformat(value["created_at"])
    assert created.tzinfo is not None
    assert value["updated_at"] == value["created_at"]


async def test_save_memory_defaults_category_and_sets_its_own_timestamps(
    store: InMemoryStore,
) -> None:
    key = await save_memory(store, "alice", "Likes green tea", created_at="1999-01-01")
    item = await store.aget(("user_facts", "alice"), key)
    assert item is not None
    assert item.value["content"] == "Likes green tea"
    assert item.value["category"] == "other"
    assert item.value["created_at"] != "1999-01-01"


async def test_each_saved_fact_gets_its_own_key(store: InMemoryStore) -> None:
    first = await save_memory(store, "alice", "Likes green tea")
    second = await save_memory(store, "alice", "Likes oolong tea")
    assert first != second
    assert len(await store.asearch(("user_facts", "alice"))) == 2


@pytest.mark.parametrize("content", ["", "   \n"])
async def test_empty_content_raises(store: InMemoryStore, content: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        await save_memory(store, "alice", content)
    assert await store.asearch(("user_facts", "alice")) == []


async def test_overlong_content_raises(store: InMemoryStore) -> None:
    with pytest.raises(ValueError, match="at most"):
        await save_memory(store, "alice", "x" * 501)


async def test_save_memory_rejects_invalid_user(store: InMemoryStore) -> None:
    with pytest.raises(InvalidUserIdError):
        await save_memory(store, "a.b", "Lives in Hangzhou")


async def test_recall_returns_best_first_and_respects_limit(store: InMemoryStore) -> None:
    for fact in [
        "Likes green tea",
        "Lives in Hangzhou",
        "Works as a nurse",
        "Has a cat named Mochi",
        "Is allergic to peanuts",
    ]:
        await save_memory(store, "alice", fact)
    items = await recall(store, "alice", "lives in hangzhou", limit=3)
    assert len(items) == 3
    assert items[0].value["content"] == "Lives in Hangzhou"
    scores = [item.score for item in items]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert len(await recall(store, "alice", "anything", limit=10)) == 5
    assert await recall(store, "alice", "anything", limit=0) == []


async def test_recall_is_isolated_between_users(store: InMemoryStore) -> None:
    await save_memory(store, "alice", "Lives in Hangzhou")
    await save_memory(store, "bob", "Lives in Chengdu")
    alice = await recall(store, "alice", "where does the user live", limit=10)
    bob = await recall(store, "bob", "where does the user live", limit=10)
    assert [item.value["content"] for item in alice] == ["Lives in Hangzhou"]
    assert [item.value["content"] for item in bob] == ["Lives in Chengdu"]
    assert await recall(store, "carol", "where does the user live", limit=10) == []


async def test_recall_with_blank_query_still_lists_facts(store: InMemoryStore) -> None:
    await save_memory(store, "alice", "Lives in Hangzhou")
    items = await recall(store, "alice", "   ", limit=5)
    assert [item.value["content"] for item in items] == ["Lives in Hangzhou"]


async def test_a_new_fact_is_current_unpinned_and_knows_its_language(
    store: InMemoryStore,
) -> None:
    english = await save_memory(store, "alice", "Lives in Hangzhou")
    chinese = await save_memory(store, "alice", "我的猫叫Mochi", status="superseded")
    for key, lang in [(english, "en"), (chinese, "zh")]:
        item = await get_memory(store, "alice", key)
        assert item is not None
        assert item.value["status"] == "current"  # callers cannot save a dead fact
        assert item.value["lang"] == lang
        assert item.value["pinned"] is False
        assert item.value["mentions"] == 1
        assert item.value["history"] == []
        assert item.value["supersedes"] is None
        assert item.value["superseded_by"] is None
        assert item.value["valid_until"] is None


async def test_update_with_the_same_wording_adds_no_history(store: InMemoryStore) -> None:
    key = await save_memory(store, "alice", "Likes green tea")
    value = await update_memory(alice(store), key, "Likes green tea", confidence=0.95)
    assert value["history"] == []
    assert value["confidence"] == 0.95


async def test_a_superseded_fact_cannot_be_updated(store: InMemoryStore) -> None:
    old = await save_memory(store, "alice", "Lives in Hangzhou")
    await supersede_memory(alice(store), old, "Lives in Chengdu", action="supersede")
    with pytest.raises(ValueError, match=old):
        await update_memory(alice(store), old, "Lives in Hangzhou near West Lake")


@pytest.mark.parametrize("change", ["update", "supersede", "confirm"])
async def test_changing_an_unknown_fact_names_it(store: InMemoryStore, change: str) -> None:
    with pytest.raises(KeyError, match="no-such-key") as caught:
        if change == "update":
            await update_memory(alice(store), "no-such-key", "x")
        elif change == "supersede":
            await supersede_memory(alice(store), "no-such-key", "x", action="supersede")
        else:
            await confirm_memory(alice(store), "no-such-key")
    assert "alice" in str(caught.value)
    assert await store.asearch(("user_facts", "alice")) == []


async def test_supersede_keeps_the_category_unless_told(store: InMemoryStore) -> None:
    old = await save_memory(store, "alice", "Lives in Hangzhou", category="location")
    new = await supersede_memory(
        alice(store, thread_id="t2"), old, "Lives in Chengdu", action="supersede"
    )
    item = await get_memory(store, "alice", new)
    assert item is not None
    assert item.value["category"] == "location"
    assert item.value["thread_id"] == "t2"


async def test_delete_memory_removes_the_fact_from_recall(store: InMemoryStore) -> None:
    key = await save_memory(store, "alice", "Lives in Hangzhou")
    assert [item.key for item in await recall(store, "alice", "Hangzhou", limit=5)] == [key]
    assert await delete_memory(alice(store), key) is True
    assert await delete_memory(alice(store), key) is False
    assert await recall(store, "alice", "Hangzhou", limit=5) == []
    assert await get_memory(store, "alice", key) is None


async def test_list_memories_is_oldest_first_and_hides_superseded(store: InMemoryStore) -> None:
    first = await save_memory(store, "alice", "Lives in Hangzhou")
    second = await save_memory(store, "alice", "Likes green tea")
    third = await supersede_memory(alice(store), first, "Lives in Chengdu", action="supersede")
    assert [item.key for item in await list_memories(store, "alice")] == [second, third]
    everything = await list_memories(store, "alice", include_superseded=True)
    assert [item.key for item in everything] == [first, second, third]
    assert await list_memories(store, "bob") == []


def test_make_store_matches_langgraph_json() -> None:
    config = json.loads((REPO_ROOT / "langgraph.json").read_text(encoding="utf-8"))
    index = config["store"]["index"]
    models.get_embeddings.cache_clear()
    try:
        store = make_store()
        assert isinstance(store, InMemoryStore)
        assert store.index_config is not None
        assert store.index_config["dims"] == index["dims"] == EMBEDDING_DIMS
        assert store.index_config["fields"] == index["fields"]
        assert isinstance(store.embeddings, E5Embeddings)
    finally:
        models.get_embeddings.cache_clear()


# --------------------------------------------------------------------------- real embedder


@pytest.fixture(scope="module")
def e5() -> E5Embeddings:
    return E5Embeddings()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


FACTS = ["Lives in Hangzhou", "Likes green tea", "住在杭州", "Has a cat named Mochi"]


def test_e5_returns_normalised_384_dim_vectors(e5: E5Embeddings) -> None:
    documents = e5.embed_documents(FACTS)
    assert len(documents) == len(FACTS)
    assert all(len(vector) == EMBEDDING_DIMS for vector in documents)
    query = e5.embed_query("where does the user live?")
    assert len(query) == EMBEDDING_DIMS
    assert cosine(query, query) == pytest.approx(1.0, abs=1e-3)
    assert e5.embed_documents([]) == []


def test_e5_ranks_the_relevant_fact_first_across_languages(e5: E5Embeddings) -> None:
    documents = dict(zip(FACTS, e5.embed_documents(FACTS), strict=True))

    english = e5.embed_query("where does the user live?")
    scores = {fact: cosine(english, vector) for fact, vector in documents.items()}
    assert max(scores, key=scores.__getitem__) == "Lives in Hangzhou"
    assert scores["住在杭州"] > scores["Likes green tea"]

    chinese = e5.embed_query("用户住在哪里？")
    scores = {fact: cosine(chinese, vector) for fact, vector in documents.items()}
    assert max(scores, key=scores.__getitem__) == "住在杭州"
    assert scores["Lives in Hangzhou"] > scores["Likes green tea"]
    assert scores["Lives in Hangzhou"] > scores["Has a cat named Mochi"]


async def test_production_store_recalls_across_languages(e5: E5Embeddings) -> None:
    store = make_store({"dims": EMBEDDING_DIMS, "embed": e5, "fields": ["content"]})
    for fact in ["Lives in Hangzhou", "Likes green tea", "Has a cat named Mochi"]:
        await save_memory(store, "alice", fact)
    items = await recall(store, "alice", "用户住在哪里？", limit=3)
    assert items[0].value["content"] == "Lives in Hangzhou"
