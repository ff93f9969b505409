"""Hybrid recall: the fusion itself, what it finds that either half alone misses, and an
index that stays in step with the store however the store is written."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.inference import models
from assistant.inference.models import E5Embeddings
from assistant.memory import FusionWeights, save_memory
from assistant.memory.facts import delete_memory, supersede_memory, update_memory
from assistant.memory.search import freshness, sync, user_index
from assistant.memory.search import index as search_index
from assistant.memory.search.lexical import BM25Index
from assistant.memory.search.ranking import fuse
from assistant.memory.writer import Writer
from assistant.server.persistence.stores import make_store


@pytest.fixture
def store(both_stores: BaseStore, monkeypatch: pytest.MonkeyPatch) -> BaseStore:
    """Every test in this module runs on the in-memory store and on Postgres.

    Every search probes for writes made around the index (in a server, the searches of
    one turn share a probe).
    """
    monkeypatch.setattr(freshness, "PROBE_INTERVAL_S", 0.0)
    return both_stores


USER = "alice"


async def recalled(
    store: BaseStore, query: str, *, limit: int = 10, weights: FusionWeights | None = None
) -> list[str]:
    items = await memory.recall(store, USER, query, limit=limit, weights=weights or FusionWeights())
    return [str(item.value["content"]) for item in items]


# --------------------------------------------------------------------------- the weights


def test_fusion_weights_defaults_are_deliberate() -> None:
    """Changing a weight changes every user's recall: do it on purpose, with the bench."""
    assert dataclasses.asdict(FusionWeights()) == {
        "rrf_k": 10,
        "vector_weight": 0.7,
        "lexical_weight": 1.0,
        "latin_query_offset": 0.006,
        "cjk_query_offset": 0.086,
        "candidates": 50,
        "window_weight": 1.0,
        "next_turn_weight": 0.3,
        "date_weight": 3.0,
        "expand_dates": True,
        "speaker_boost": 1.0,
        "frequent_name_share": 0.1,
        "feedback_weight": 0.3,
        "feedback_memories": 5,
        "feedback_terms": 10,
        "feedback_max_share": 0.1,
    }
    assert memory.WEIGHTS == FusionWeights()


def test_fusion_weights_are_frozen_and_keyword_only() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.WEIGHTS.rrf_k = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        FusionWeights(60)  # type: ignore[misc]


# --------------------------------------------------------------------------- fuse


def test_fuse_gives_the_exact_reciprocal_rank_order() -> None:
    fused = fuse([(1.0, ["a", "b", "c", "d"]), (1.0, ["c", "e"])], limit=10)

    # c is in both rankings; b and e tie at rank 2 and are ordered by key.
    assert [key for key, _ in fused] == ["c", "a", "b", "e", "d"]
    assert dict(fused) == pytest.approx(
        {"c": 1 / 13 + 1 / 11, "a": 1 / 11, "b": 1 / 12, "e": 1 / 12, "d": 1 / 14}
    )


def test_fuse_is_deterministic_and_ties_break_by_key() -> None:
    rankings = [(1.0, ["k3", "k1"]), (1.0, ["k1", "k3"]), (1.0, ["k2"]), (1.0, ["k2"])]
    first = fuse(rankings, limit=3)
    # k1 and k3 both score 1/11 + 1/12; k2 scores 2/11 and wins.
    assert [key for key, _ in first] == ["k2", "k1", "k3"]
    for _ in range(5):
        assert fuse(list(reversed(rankings)), limit=3) == first
    assert fuse(rankings, limit=2) == first[:2]


def test_fuse_applies_the_ranking_weights() -> None:
    rankings = [(2.0, ["a"]), (1.0, ["b"])]
    assert [key for key, _ in fuse(rankings, limit=2)] == ["a", "b"]
    [(_, score)] = fuse([(1.0, ["a"])], limit=1, weights=FusionWeights(rrf_k=0))
    assert score == pytest.approx(1.0)  # 1 / (0 + rank 1)


def test_fuse_boosts_the_speaker_asked_about() -> None:
    rankings = [(1.0, ["a", "b", "c"])]
    fused = fuse(rankings, limit=3, weights=FusionWeights(rrf_k=0), favoured={"c"})
    assert [key for key, _ in fused] == ["a", "c", "b"]
    assert dict(fused)["c"] == pytest.approx(1 / 3 * 2)  # x (1 + speaker_boost)


async def test_the_same_query_twice_gives_the_same_results(store: InMemoryStore) -> None:
    for fact in [
        "Likes green tea",
        "Lives in Hangzhou",
        "Has a cat named Mochi",
        "Likes oolong tea",
    ]:
        await save_memory(store, USER, fact)
    first = await memory.recall(store, USER, "which tea do I like?", limit=4)
    second = await memory.recall(store, USER, "which tea do I like?", limit=4)
    assert [item.key for item in first] == [item.key for item in second]
    assert [item.score for item in first] == pytest.approx([item.score for item in second])


# --------------------------------------------------------------------------- hybrid vs either half

HYBRID_FACTS = [
    "Locker code is 7319",
    "Works at the city library on weekends",
    "Drives a red bicycle",
    "Goes to the gym on Fridays",
    "Likes green tea",
    "Wife is called Mei",
    "Allergic to peanuts",
    "Plays the violin",
]
HYBRID_QUERY = "my workplace and 7319"
BY_KEYWORD = "Locker code is 7319"  # a rare number the test embedder does not rank high
BY_MEANING = "Works at the city library on weekends"  # shares no search term with the query


async def test_hybrid_recall_finds_what_either_half_alone_misses(store: InMemoryStore) -> None:
    for fact in HYBRID_FACTS:
        await save_memory(store, USER, fact)

    vector_only = await recalled(
        store, HYBRID_QUERY, limit=2, weights=FusionWeights(lexical_weight=0.0)
    )
    keyword = BM25Index()
    for number, fact in enumerate(HYBRID_FACTS):
        keyword.add(str(number), fact)
    keyword_only = [HYBRID_FACTS[int(key)] for key, _ in keyword.search(HYBRID_QUERY, limit=2)]
    hybrid = await recalled(store, HYBRID_QUERY, limit=2)

    assert BY_KEYWORD not in vector_only
    assert BY_MEANING in vector_only
    assert keyword_only == [BY_KEYWORD]  # nothing else shares a term with the query
    assert sorted(hybrid) == sorted([BY_KEYWORD, BY_MEANING])


# --------------------------------------------------------------------------- real embedder

CROSS_LANGUAGE_FACTS = [
    "Lives in Hangzhou",
    "Allergic to peanuts",
    "Works as a nurse",
    "喜欢喝绿茶",
    "养了一只叫旺财的狗",
    "对青霉素过敏",
]


# --------------------------------------------------------------------------- conversations

MONDAY = datetime(2026, 3, 9, 20, 0, tzinfo=UTC)
TURNS = [
    # (speaker, role, said on, text)
    ("Melanie", "other", "2026-02-16", "Hi Caroline! How was your week?"),
    ("Caroline", "user", "2026-02-16", "I went hiking at Bear Mountain yesterday."),
    ("Melanie", "other", "2026-02-16", "I went hiking at Eagle Peak on Saturday too."),
    ("Melanie", "other", "2026-02-16", "Oh, and the view from the top was amazing."),
    ("Caroline", "user", "2026-03-09", "We adopted a puppy two days ago!"),
    ("Melanie", "other", "2026-03-09", "Do you want to grab coffee next Saturday?"),
    ("Melanie", "other", "2026-03-09", "Saturdays are my lazy days."),
    ("Melanie", "other", "2026-03-02", "Good night, Caroline!"),
]


async def save_turns(store: BaseStore) -> None:
    previous = ""
    for number, (speaker, role, day, text) in enumerate(TURNS):
        await save_memory(
            store,
            USER,
            text,
            speaker=speaker,
            role=role,
            said_at=day,
            context=previous,
            thread_id=f"session-{day}",
            turn=number,
        )
        previous = text


async def test_a_question_naming_a_day_finds_what_happened_that_day(store: InMemoryStore) -> None:
    await save_turns(store)
    question = "What did I do last Saturday?"
    items = await memory.recall(store, USER, question, limit=1, now=MONDAY)
    assert [item.value["content"] for item in items] == ["We adopted a puppy two days ago!"]
    assert items[0].value["speaker"] == "Caroline"  # the metadata stays on the item
    assert items[0].value["said_at"] == "2026-03-09"

    undated = FusionWeights(expand_dates=False)
    items = await memory.recall(store, USER, question, limit=1, now=MONDAY, weights=undated)
    assert [item.value["content"] for item in items] != ["We adopted a puppy two days ago!"]


async def test_the_speaker_asked_about_comes_first(store: InMemoryStore) -> None:
    await save_turns(store)
    found = await recalled(store, "Where did Melanie go hiking?", limit=2)
    assert found[0] == "I went hiking at Eagle Peak on Saturday too."
    found = await recalled(store, "Where did Caroline go hiking?", limit=2)
    assert found[0] == "I went hiking at Bear Mountain yesterday."
    found = await recalled(store, "Where did I go hiking?", limit=1)  # "I" is the user
    assert found == ["I went hiking at Bear Mountain yesterday."]


SMALL_TALK = [f"Wow Joanna, that sounds great! Tell me more about day {n}." for n in range(12)]
HOBBIES = "Besides writing, I love reading and hiking."


async def test_a_name_most_memories_hold_leaves_a_text_only_question(store: InMemoryStore) -> None:
    for text in [*SMALL_TALK, HOBBIES]:  # no speaker metadata: the text is all there is
        await save_memory(store, USER, text)
    question = "What does Joanna love doing?"
    assert (await recalled(store, question, limit=1)) == [HOBBIES]


async def test_a_name_few_memories_hold_stays_in_the_question(store: InMemoryStore) -> None:
    facts = ["Emily is my sister", "Emily lives in Leeds", *[f"Likes dish {n}" for n in range(20)]]
    for text in facts:
        await save_memory(store, USER, text)
    assert set(await recalled(store, "Where is Emily based?", limit=2)) == set(facts[:2])


async def test_keyword_feedback_finds_what_the_best_hit_talks_about(store: InMemoryStore) -> None:
    """RM3: the best hit's words ("downtown", "bakery") join the question's; words most
    memories hold ("watched", "film") never do."""
    studio = "My studio is downtown, right next to the old bakery. We watched a film there."
    rent = "Rents downtown near the old bakery went up again."
    for text in [studio, rent, *[f"We watched film number {n}." for n in range(30)]]:
        await save_memory(store, USER, text)
    keywords_only = FusionWeights(vector_weight=0.0, date_weight=0.0)  # others score 0
    for weight, expected in ((0.3, [studio, rent]), (0.0, [studio])):
        weights = dataclasses.replace(keywords_only, feedback_weight=weight)
        items = await memory.recall(store, USER, "Where is the studio?", limit=10, weights=weights)
        assert [item.value["content"] for item in items if item.score] == expected
    common_too = dataclasses.replace(keywords_only, feedback_max_share=1.0)
    items = await memory.recall(store, USER, "Where is the studio?", limit=10, weights=common_too)
    assert len([item for item in items if item.score]) == 10  # every film, through "watched"


@pytest.fixture(scope="module")
async def e5_store() -> BaseStore:
    """The production store (bundled multilingual-e5) holding one user's mixed-language facts."""
    with pytest.MonkeyPatch.context() as env:  # module scope: runs before the autouse cleanup
        env.delenv("ASSISTANT_EMBEDDINGS_MODEL", raising=False)
        models.get_embeddings.cache_clear()
        store = make_store()
    assert isinstance(getattr(store, "embeddings", None), E5Embeddings)
    for fact in CROSS_LANGUAGE_FACTS:
        await save_memory(store, USER, fact)
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("我住在哪个城市？", ["Lives in Hangzhou"]),
        ("what pet do I have?", ["养了一只叫旺财的狗"]),
        ("我是做什么工作的？", ["Works as a nurse"]),
        ("what do I like to drink?", ["喜欢喝绿茶"]),
        ("do I have any allergies?", ["Allergic to peanuts", "对青霉素过敏"]),
        ("我对什么过敏？", ["对青霉素过敏", "Allergic to peanuts"]),
    ],
)
async def test_recall_works_across_languages_with_the_real_embedder(
    e5_store: BaseStore, query: str, expected: list[str]
) -> None:
    top_two = await recalled(e5_store, query, limit=2)
    assert set(expected) <= set(top_two), top_two


async def test_the_cross_language_offset_lifts_facts_in_the_other_language(
    e5_store: BaseStore,
) -> None:
    query = "我是做什么工作的？"  # "what is my job?"; the answer is stored in English
    assert (await recalled(e5_store, query, limit=1)) == ["Works as a nurse"]
    same_language_bias = await recalled(
        e5_store, query, limit=2, weights=FusionWeights(latin_query_offset=0, cjk_query_offset=0)
    )
    assert "Works as a nurse" not in same_language_bias


# --------------------------------------------------------------------------- index coherence


async def test_a_raw_store_write_is_seen_once_the_revision_changes(store: InMemoryStore) -> None:
    await save_memory(store, USER, "Lives in Hangzhou")
    assert await recalled(store, "dog") == ["Lives in Hangzhou"]  # the index is built

    await store.aput(("user_facts", USER), "raw", {"content": "Has a dog named Rex"})
    # Another process writing through assistant.memory records a new revision token.
    await store.aput(("memory_index", USER), "user_facts", {"revision": "written-elsewhere"})

    assert await recalled(store, "dog named Rex") == ["Has a dog named Rex", "Lives in Hangzhou"]


async def test_a_raw_store_write_is_seen_after_a_memory_layer_write(store: InMemoryStore) -> None:
    await save_memory(store, USER, "Lives in Hangzhou")
    await recalled(store, "dog")
    await store.aput(("user_facts", USER), "raw", {"content": "Has a dog named Rex"})

    await save_memory(store, USER, "Likes green tea")

    assert "Has a dog named Rex" in await recalled(store, "dog named Rex")


async def test_a_raw_store_write_is_recalled_on_the_next_search(store: BaseStore) -> None:
    """A fact written around the memory layer (the store HTTP API, another tool)."""
    await save_memory(store, USER, "Lives in Hangzhou")
    assert await recalled(store, "dog") == ["Lives in Hangzhou"]
    await store.aput(("user_facts", USER), "raw", {"content": "Has a dog named Rex"})

    assert await recalled(store, "dog named Rex") == ["Has a dog named Rex", "Lives in Hangzhou"]

    await store.aput(("user_facts", USER), "raw", {"content": "Has a cat named Tom"})
    assert (await recalled(store, "cat named Tom"))[:1] == ["Has a cat named Tom"]
    assert "Has a dog named Rex" not in await recalled(store, "dog named Rex")


async def test_many_raw_writes_at_once_are_all_recalled(store: BaseStore) -> None:
    await save_memory(store, USER, "Lives in Hangzhou")
    await recalled(store, "anything")
    for number in range(sync.PROBE_SIZE * 3):
        await store.aput(("user_facts", USER), f"raw-{number}", {"content": f"Raw note {number}"})

    found = await memory.recall(store, USER, "Raw note", limit=100)
    assert len([item for item in found if item.key.startswith("raw-")]) == 48


async def test_a_fresh_process_embeds_only_the_query(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fact's vector is kept with it, so another replica never embeds it again."""
    facts = sync.COLD_EMBED_LIMIT * 3
    for number in range(facts):
        await save_memory(store, USER, f"Note {number}: topic {number * 7} details")
    user_index._REGISTRIES.clear()  # a new process: no index in memory
    embed = store.embeddings  # type: ignore[attr-defined]
    assert embed is not None
    documents: list[str] = []
    queries: list[str] = []
    original_documents, original_query = embed.aembed_documents, embed.aembed_query

    async def count_documents(texts: list[str]) -> list[list[float]]:
        documents.extend(texts)
        return await original_documents(texts)

    async def count_query(text: str) -> list[float]:
        queries.append(text)
        return await original_query(text)

    monkeypatch.setattr(embed, "aembed_documents", count_documents)
    monkeypatch.setattr(embed, "aembed_query", count_query)

    assert await recalled(store, "topic 343", limit=1) == ["Note 49: topic 343 details"]
    assert documents == []
    assert [query for query in queries if query != "dimension probe"] == ["topic 343"]


async def test_a_kept_vector_of_an_edited_text_is_not_reused(store: BaseStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou")
    value = (await store.aget(("user_facts", USER), key)).value  # type: ignore[union-attr]
    await store.aput(("user_facts", USER), key, {**value, "content": "Has a dog named Rex"})
    user_index._REGISTRIES.clear()

    assert await recalled(store, "dog named Rex", limit=1) == ["Has a dog named Rex"]


async def test_a_fact_out_of_recall_leaves_no_kept_vector(store: BaseStore) -> None:
    """A fact's vector approximates its text: it goes when the fact is deleted or replaced."""
    vectors = ("memory_vectors", "user_facts", USER)
    old = await save_memory(store, USER, "Lives in Hangzhou")
    kept = await save_memory(store, USER, "Has a dog named Rex")
    raw = await save_memory(store, USER, "Likes green tea")
    assert {item.key for item in await store.asearch(vectors)} == {old, kept, raw}

    await recalled(store, "anything")  # the index now holds all three
    new = await supersede_memory(
        Writer(store=store, user_id=USER), old, "Lives in Chengdu", action="supersede"
    )
    await store.adelete(("user_facts", USER), raw)  # behind the memory layer's back
    await store.aput(("memory_index", USER), "user_facts", {"revision": "written-elsewhere"})
    await recalled(store, "anything")  # lists again: raw is gone
    await delete_memory(Writer(store=store, user_id=USER), kept)

    assert {item.key for item in await store.asearch(vectors)} == {new}


async def test_a_stale_index_is_refreshed_in_the_background(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await save_memory(store, USER, "Lives in Hangzhou")
    await recalled(store, "dog")
    await store.aput(("user_facts", USER), "raw", {"content": "Has a dog named Rex"})
    monkeypatch.setattr(freshness, "MAX_AGE_S", 0.0)

    for _ in range(20):
        if "Has a dog named Rex" in await recalled(store, "dog named Rex"):
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("a raw write was never picked up by the age refresh")


async def test_a_fact_deleted_behind_the_index_is_never_returned(store: InMemoryStore) -> None:
    pinned = await save_memory(store, USER, "Lives in Hangzhou", category="location", pinned=True)
    other = await save_memory(store, USER, "Likes Hangzhou tea")
    assert sorted(await recalled(store, "Hangzhou")) == ["Likes Hangzhou tea", "Lives in Hangzhou"]

    await store.adelete(("user_facts", USER), pinned)

    assert await recalled(store, "Lives in Hangzhou") == ["Likes Hangzhou tea"]
    assert await memory.UserMemory(store, USER).profile() == []
    await store.adelete(("user_facts", USER), other)
    assert await recalled(store, "Hangzhou") == []


async def test_a_fact_superseded_behind_the_index_is_never_returned(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location", pinned=True)
    assert await recalled(store, "Hangzhou") == ["Lives in Hangzhou"]
    item = await store.aget(("user_facts", USER), key)
    assert item is not None

    await store.aput(("user_facts", USER), key, {**item.value, "status": "superseded"})

    assert await recalled(store, "Hangzhou") == []
    assert await memory.UserMemory(store, USER).profile() == []


async def test_writes_through_the_memory_layer_are_seen_at_once(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou")
    assert await recalled(store, "Hangzhou") == ["Lives in Hangzhou"]
    await update_memory(Writer(store=store, user_id=USER), key, "Lives in Hangzhou near West Lake")
    assert await recalled(store, "West Lake") == ["Lives in Hangzhou near West Lake"]
    await delete_memory(Writer(store=store, user_id=USER), key)
    assert await recalled(store, "Hangzhou") == []


async def test_two_stores_do_not_share_an_index(new_store: Callable[[], InMemoryStore]) -> None:
    first, second = new_store(), new_store()
    await save_memory(first, USER, "Lives in Hangzhou", category="location", pinned=True)
    assert await recalled(first, "Hangzhou") == ["Lives in Hangzhou"]

    assert await recalled(second, "Hangzhou") == []
    assert await memory.UserMemory(second, USER).profile() == []
    await save_memory(second, USER, "Lives in Chengdu")
    assert await recalled(second, "where") == ["Lives in Chengdu"]
    assert await recalled(first, "where") == ["Lives in Hangzhou"]


async def test_users_do_not_share_an_index(store: InMemoryStore) -> None:
    await save_memory(store, USER, "Lives in Hangzhou")
    await save_memory(store, "bob", "Lives in Chengdu")
    assert await recalled(store, "Chengdu") == ["Lives in Hangzhou"]
    bob = await memory.recall(store, "bob", "Hangzhou", limit=10)
    assert [item.value["content"] for item in bob] == ["Lives in Chengdu"]


# --------------------------------------------------------------------------- removals counted

FACTS = ("user_facts", USER)
on_postgres = pytest.mark.parametrize("both_stores", ["postgres"], indirect=True)
"""The store that counts its removals (`assistant.compat.count_removals`): Postgres."""


async def reconciled(store: BaseStore) -> user_index.UserIndex:
    """The user's index, once its background search for removed facts is done."""
    index = await sync.held_index(store, FACTS)
    assert index is not None
    if index.reconciling is not None:
        await index.reconciling
    return index


def counted_rereads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a search re-reads its hits' keys."""
    calls: list[int] = []
    original = search_index.current_keys

    async def counting(*args: Any) -> set[str] | None:
        calls.append(1)
        return await original(*args)

    monkeypatch.setattr(search_index, "current_keys", counting)
    return calls


async def two_facts_known(store: BaseStore) -> tuple[str, str]:
    """A pinned fact and another, recalled once and their removals then known: their keys."""
    pinned = await save_memory(store, USER, "Lives in Hangzhou", category="location", pinned=True)
    other = await save_memory(store, USER, "Likes Hangzhou tea")
    assert len(await recalled(store, "Hangzhou")) == 2  # not known yet: read back, and looked for
    await reconciled(store)
    return pinned, other


@pytest.mark.postgres
@on_postgres
async def test_once_every_removal_is_known_hits_are_not_read_back(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await two_facts_known(store)
    rereads = counted_rereads(monkeypatch)

    assert sorted(await recalled(store, "Hangzhou")) == ["Likes Hangzhou tea", "Lives in Hangzhou"]
    assert [item.value["content"] for item in await memory.UserMemory(store, USER).profile()] == [
        "Lives in Hangzhou"
    ]
    assert rereads == []


@pytest.mark.postgres
@on_postgres
@pytest.mark.parametrize("how", ["deleted", "superseded", "truncated"])
async def test_a_removal_behind_a_reconciled_index_is_never_returned(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    pinned, _ = await two_facts_known(store)

    if how == "deleted":
        await store.adelete(FACTS, pinned)
    elif how == "superseded":
        item = await store.aget(FACTS, pinned)
        assert item is not None
        await store.aput(FACTS, pinned, {**item.value, "status": "superseded"})
    else:
        async with store.conn.connection() as conn:  # type: ignore[attr-defined]
            await conn.execute("TRUNCATE store, store_vectors")
    left = [] if how == "truncated" else ["Likes Hangzhou tea"]

    assert await recalled(store, "Lives in Hangzhou") == left
    assert await memory.UserMemory(store, USER).profile() == []
    await reconciled(store)  # found and dropped: the next searches read nothing back
    rereads = counted_rereads(monkeypatch)
    assert await recalled(store, "Lives in Hangzhou") == left
    assert rereads == []


@pytest.mark.postgres
@on_postgres
async def test_a_forget_through_the_memory_layer_keeps_every_removal_known(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, gone = await two_facts_known(store)
    rereads = counted_rereads(monkeypatch)
    writer = Writer(store=store, user_id=USER)

    await delete_memory(writer, gone)
    await supersede_memory(writer, old, "Lives in Chengdu", action="supersede", pinned=True)

    assert await recalled(store, "Hangzhou tea") == ["Lives in Chengdu"]
    assert rereads == []
    await store.adelete(FACTS, "never-written")  # removes nothing: counts nothing
    await delete_memory(writer, "never-written")
    assert await recalled(store, "Chengdu") == ["Lives in Chengdu"]
    assert rereads == []


@pytest.mark.postgres
@on_postgres
async def test_values_read_while_removals_are_looked_for_leave_them_unknown(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe or listing that took values read before a removal may have brought it back."""
    await save_memory(store, USER, "Lives in Hangzhou")
    await recalled(store, "Hangzhou")
    index = await reconciled(store)
    index.freshness.removals = None
    original = sync.current_keys

    async def with_a_probe_meanwhile(*args: Any) -> set[str] | None:
        index.freshness.values_read()
        return await original(*args)

    monkeypatch.setattr(sync, "current_keys", with_a_probe_meanwhile)
    sync.reconcile_soon(store, FACTS, index)
    await reconciled(store)

    assert index.freshness.removals is None


# --------------------------------------------------------------------------- a large backlog


async def backlog(store: InMemoryStore) -> None:
    """More unembedded facts than the index embeds inline, one of them superseded.

    Their kept vectors are removed, as for facts written before vectors were kept.
    """
    for number in range(sync.COLD_EMBED_LIMIT + 5):
        await save_memory(store, USER, f"Note {number}: topic {number * 7} details")
    old = await save_memory(store, USER, "Lives in Suzhou", category="location", pinned=True)
    await supersede_memory(
        Writer(store=store, user_id=USER), old, "Lives in Hangzhou", action="supersede", pinned=True
    )
    vectors = ("memory_vectors", "user_facts", USER)
    for item in await store.asearch(vectors, limit=1000):
        await store.adelete(vectors, item.key)
    user_index._REGISTRIES.clear()


async def test_a_large_backlog_is_searched_without_waiting_for_embeddings(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await backlog(store)
    embed = store.embeddings
    assert embed is not None
    gate = asyncio.Event()
    original = embed.aembed_documents

    async def held(texts: list[str]) -> list[list[float]]:
        if any(text.startswith("Note ") for text in texts):  # not the query (Postgres embeds
            await gate.wait()  # search queries with aembed_documents)
        return await original(texts)

    monkeypatch.setattr(embed, "aembed_documents", held)

    # Answered from the store's own search while every embedding is held back.
    found = await asyncio.wait_for(recalled(store, "Lives in Suzhou", limit=3), 60)
    profile = [item.value["content"] for item in await memory.UserMemory(store, USER).profile()]
    gate.set()
    assert found[0] == "Lives in Hangzhou"
    assert "Lives in Suzhou" not in found  # superseded stays out on this path too
    assert profile == ["Lives in Hangzhou"]

    assert await memory.UserMemory(store, USER).warm() == sync.COLD_EMBED_LIMIT + 6
    # Built: keyword search now takes part, so a rare number finds its note first.
    assert (await recalled(store, "topic 343", limit=1)) == ["Note 49: topic 343 details"]


async def test_warm_user_index_builds_the_index_now(store: InMemoryStore) -> None:
    await backlog(store)
    assert await memory.UserMemory(store, USER).warm() == sync.COLD_EMBED_LIMIT + 6
    assert await memory.UserMemory(store, USER).warm() == sync.COLD_EMBED_LIMIT + 6
    assert await memory.UserMemory(store, "nobody").warm() == 0
    assert (await recalled(store, "topic 343", limit=1)) == ["Note 49: topic 343 details"]
