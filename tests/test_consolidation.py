"""Consolidation: what the model's add / update / supersede / skip decisions do to the store.

Each case is checked directly through `UserMemory.apply` and, where a user
would see it, through the graph with the recording model (answering the extraction
call either with fixed JSON or with the scripted rule-based extractor).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.memory import (
    ConsolidationReport,
    MemoryOperation,
    UserMemory,
    get_memory,
    list_memories,
    save_memory,
)
from function_model import FunctionChatModel
from helpers import (
    between,
    current_facts,
    fact_items,
    lines,
    op,
    operations_json,
    stored_facts,
    system_prompt,
)


@pytest.fixture
def store(both_stores: BaseStore) -> BaseStore:
    """Every test in this module runs on the in-memory store and on Postgres."""
    return both_stores


if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

USER = "default-user"


def ops(*operations: dict[str, Any]) -> list[MemoryOperation]:
    return [MemoryOperation(**operation) for operation in operations]


async def known(store: InMemoryStore, *keys: str) -> list[Item]:
    """The facts shown to the model, in the order given (target 1 is the first key)."""
    items = [await get_memory(store, USER, key) for key in keys]
    assert all(item is not None for item in items)
    return [item for item in items if item is not None]


async def apply(
    store: InMemoryStore,
    operations: list[MemoryOperation],
    shown: list[Item],
    *,
    min_confidence: float = 0.6,
) -> ConsolidationReport:
    return await UserMemory(store, USER).apply(
        operations,
        shown,
        min_confidence=min_confidence,
        thread_id="thread-7",
        message_id="msg-7",
    )


async def value(store: InMemoryStore, key: str) -> dict[str, Any]:
    item = await get_memory(store, USER, key)
    assert item is not None
    return dict(item.value)


# --------------------------------------------------------------------------- add


async def test_add_stores_a_new_current_fact_with_its_source(store: InMemoryStore) -> None:
    report = await apply(store, ops(op("add", "Works as a nurse", "identity", 0.85)), [])

    [key] = report.added
    assert report.updated == report.superseded == report.confirmed == []
    stored = await value(store, key)
    assert stored["content"] == "Works as a nurse"
    assert stored["category"] == "identity"
    assert stored["confidence"] == 0.85
    assert stored["status"] == "current"
    assert stored["thread_id"] == "thread-7"
    assert stored["message_id"] == "msg-7"
    assert stored["mentions"] == 1
    assert stored["lang"] == "en"


@pytest.mark.parametrize(
    ("category", "profile", "pinned"),
    [
        ("identity", None, True),
        ("location", None, True),
        ("constraint", None, True),
        ("preference", None, False),
        ("other", None, False),
        ("preference", True, True),  # "prefers short answers" shapes every reply
        ("location", False, False),  # the model's word wins over the category default
    ],
)
async def test_profile_flag_and_category_defaults_decide_pinning(
    store: InMemoryStore, category: str, profile: bool | None, pinned: bool
) -> None:
    report = await apply(store, ops(op("add", "Some fact", category, profile=profile)), [])
    assert (await value(store, report.added[0]))["pinned"] is pinned


async def test_an_unknown_category_is_stored_as_other(store: InMemoryStore) -> None:
    report = await apply(store, ops(op("add", "Collects stamps", " Hobby ")), [])
    assert (await value(store, report.added[0]))["category"] == "other"


async def test_a_chinese_fact_is_stored_in_chinese(store: InMemoryStore) -> None:
    report = await apply(store, ops(op("add", "对花生过敏", "constraint")), [])
    stored = await value(store, report.added[0])
    assert stored["content"] == "对花生过敏"
    assert stored["lang"] == "zh"


# --------------------------------------------------------------------------- update


async def test_update_rewords_in_place_and_keeps_the_old_wording(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Likes green tea", category="preference", confidence=0.9)
    shown = await known(store, key)

    report = await apply(
        store,
        ops(op("update", "Likes Longjing green tea best", "preference", 0.7, target=1)),
        shown,
    )

    assert report.updated == [key]
    assert report.added == report.superseded == []
    assert await stored_facts(store, USER) == ["Likes Longjing green tea best"]  # same item
    stored = await value(store, key)
    assert stored["content"] == "Likes Longjing green tea best"
    assert stored["status"] == "current"
    assert stored["confidence"] == 0.9  # a rewording never lowers confidence
    [entry] = stored["history"]
    assert entry["event"] == "updated"
    assert entry["content"] == "Likes green tea"
    assert entry["thread_id"] == "thread-7"
    assert datetime.fromisoformat(entry["at"]) >= datetime.fromisoformat(stored["created_at"])


async def test_rewording_a_pinned_preference_keeps_it_in_the_profile(
    store: InMemoryStore,
) -> None:
    report = await apply(
        store, ops(op("add", "Prefers short answers", "preference", profile=True)), []
    )
    [key] = report.added
    assert [item.key for item in await memory.UserMemory(store, USER).profile()] == [key]

    await apply(
        store,
        ops(op("update", "Prefers short answers in bullet points", "preference", target=1)),
        await known(store, key),
    )

    assert [item.value["content"] for item in await memory.UserMemory(store, USER).profile()] == [
        "Prefers short answers in bullet points"
    ]


# --------------------------------------------------------------------------- supersede


async def test_supersede_replaces_the_fact_and_keeps_the_old_one_as_history(
    store: InMemoryStore,
) -> None:
    old_key = await save_memory(
        store, USER, "Lives in Hangzhou", category="location", pinned=True, thread_id="thread-1"
    )
    shown = await known(store, old_key)

    report = await apply(
        store, ops(op("supersede", "Lives in Chengdu", "location", target=1)), shown
    )

    [new_key] = report.added
    assert report.superseded == [old_key]
    old, new = await value(store, old_key), await value(store, new_key)
    assert old["status"] == "superseded"
    assert old["superseded_by"] == new_key
    assert old["valid_until"] is not None
    assert old["pinned"] is False
    assert old["content"] == "Lives in Hangzhou"  # kept for audit, not rewritten
    [entry] = old["history"]
    assert entry["event"] == "superseded"
    assert entry["content"] == "Lives in Hangzhou"
    assert entry["thread_id"] == "thread-7"
    assert new["status"] == "current"
    assert new["supersedes"] == old_key
    assert new["pinned"] is True  # takes the old fact's place in the profile
    assert new["thread_id"] == "thread-7"
    assert new["message_id"] == "msg-7"
    current = [item.value["content"] for item in await list_memories(store, USER)]
    assert current == ["Lives in Chengdu"]
    everything = await list_memories(store, USER, include_superseded=True)
    assert sorted(item.key for item in everything) == sorted([old_key, new_key])


async def test_moving_city_through_the_graph_leaves_one_current_location(
    rule_based_model: FunctionChatModel, chat: Chat, store: InMemoryStore
) -> None:
    await chat("I live in Hangzhou", thread_id="thread-a")
    await chat("I moved from Hangzhou to Chengdu", thread_id="thread-b")

    assert between(rule_based_model.prompts("remember")[1], "known_facts") == "1. Lives in Hangzhou"
    old, new = await fact_items(store, USER)
    assert old.value["content"] == "Lives in Hangzhou"
    assert new.value["content"] == "Lives in Chengdu"
    assert old.value["status"] == "superseded"
    assert old.value["superseded_by"] == new.key
    assert old.value["valid_until"] is not None
    [entry] = old.value["history"]
    assert (entry["event"], entry["content"], entry["thread_id"]) == (
        "superseded",
        "Lives in Hangzhou",
        "thread-b",
    )
    assert new.value["supersedes"] == old.key
    assert new.value["thread_id"] == "thread-b"
    current = [i for i in await fact_items(store, USER) if i.value["status"] == "current"]
    assert [i.value["content"] for i in current if i.value["category"] == "location"] == [
        "Lives in Chengdu"
    ]


# --------------------------------------------------------------------------- skip


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("I live in Lisbon with my partner.", "I live in Porto with my partner."),
        ("住在杭州", "住在成都"),
    ],
)
async def test_an_update_that_replaces_the_place_is_a_supersede(
    store: InMemoryStore, before: str, after: str
) -> None:
    # A small model "refines" the old city into the new one; the old stays as history.
    old_key = await save_memory(store, USER, before, category="location")
    report = await apply(
        store, ops(op("update", after, "location", target=1)), await known(store, old_key)
    )
    assert report.updated == [] and report.superseded == [old_key]
    assert await current_facts(store, USER) == [after]
    assert (await value(store, old_key))["status"] == "superseded"


async def test_skip_stores_nothing_and_counts_the_mention(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(
        store,
        ops(op("skip", "Lives in Hangzhou", "location", target=1)),
        [*await known(store, key)],
    )
    assert report.confirmed == [key]
    assert report.added == []
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]
    stored = await value(store, key)
    assert stored["mentions"] == 2
    assert "confirmed_at" in stored


async def test_skip_with_profile_true_pins_the_known_fact(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Prefers answers in Chinese", category="preference")
    await apply(
        store,
        ops(op("skip", "Prefers answers in Chinese", target=1, profile=True)),
        await known(store, key),
    )
    assert [item.key for item in await memory.UserMemory(store, USER).profile()] == [key]


async def test_a_repeated_statement_through_the_graph_is_stored_once(
    rule_based_model: FunctionChatModel, chat: Chat, store: InMemoryStore
) -> None:
    await chat("I live in Hangzhou", thread_id="thread-a")
    state = await chat("I live in Hangzhou, as I said", thread_id="thread-b")

    [item] = await fact_items(store, USER)
    assert item.value["content"] == "Lives in Hangzhou"
    assert item.value["mentions"] == 2
    assert state["metrics"]["confirmed"] == [item.key]
    assert state["metrics"]["added"] == []


async def test_a_cross_language_duplicate_is_skipped(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location", pinned=True)
    model = patch_model(
        ["好的。"], structured=[operations_json(op("skip", "住在杭州", "location", target=1))]
    )

    await chat("我住在杭州")

    # The model was shown the English fact, numbered, next to the Chinese message.
    assert between(model.prompts("remember")[0], "known_facts") == "1. Lives in Hangzhou"
    assert between(model.prompts("remember")[0], "user_message") == "我住在杭州"
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]  # nothing new stored
    assert (await value(store, key))["mentions"] == 2


@pytest.mark.parametrize("action", ["update", "supersede"])
async def test_a_change_of_a_fact_it_shares_no_word_with_is_an_add(
    store: InMemoryStore, action: str
) -> None:
    # Qwen2.5-Coder's answer to a Chinese job fact, given the daughter's allergy to change.
    allergy = "My daughter Lily is allergic to peanuts"
    key = await save_memory(store, USER, allergy, category="constraint")
    nurse = "I am a nurse at a hospital in Hangzhou"
    report = await apply(
        store, ops(op(action, nurse, "identity", target=1)), await known(store, key)
    )
    assert report.updated == report.superseded == [] and len(report.added) == 1
    assert await current_facts(store, USER) == sorted([allergy, nurse])


@pytest.mark.parametrize(
    "wording", ["lives in hangzhou", "Lives in Hangzhou.", "LIVES IN  HANGZHOU!"]
)
async def test_an_add_that_normalises_to_a_known_fact_becomes_a_skip(
    store: InMemoryStore, wording: str
) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(store, ops(op("add", wording, "location")), await known(store, key))
    assert report.added == []
    assert report.confirmed == [key]
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]
    assert (await value(store, key))["mentions"] == 2


@pytest.mark.parametrize(
    ("said_again", "confirmed"),
    [
        ("family: I'm looking into adoption agencies for my future kids", True),
        ("Familie: I'm looking into adoption agencies for my future kids.", True),
        ("家人：I'm looking into adoption agencies for my future kids", True),
        ("Daughter: allergic to peanuts", False),  # short: maybe the daughter's own fact
    ],
)
async def test_a_known_fact_said_again_under_a_label_is_a_skip(
    store: InMemoryStore, said_again: str, confirmed: bool
) -> None:
    long = await save_memory(
        store, USER, "I'm looking into adoption agencies for my future kids.", category="decision"
    )
    short = await save_memory(store, USER, "Allergic to peanuts", category="constraint")
    report = await apply(
        store, ops(op("add", said_again, "other")), await known(store, long, short)
    )
    assert (report.confirmed == [long]) is confirmed
    assert (report.added != []) is not confirmed
    assert len(await stored_facts(store, USER)) == 2 + (not confirmed)


async def test_an_update_or_supersede_that_repeats_a_known_fact_changes_nothing(
    store: InMemoryStore,
) -> None:
    first = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    second = await save_memory(store, USER, "Likes green tea", category="preference")
    shown = await known(store, first, second)

    report = await apply(
        store,
        ops(
            op("supersede", "lives in Hangzhou", "location", target=1),
            op("update", "Likes green tea.", "preference", target=2),
        ),
        shown,
    )

    assert report.confirmed == [first, second]
    assert report.added == report.updated == report.superseded == []
    assert await stored_facts(store, USER) == ["Likes green tea", "Lives in Hangzhou"]
    assert (await value(store, first))["status"] == "current"
    assert (await value(store, second))["history"] == []


# --------------------------------------------------------------------------- a confused model


@pytest.mark.parametrize("target", [None, 0, 2, 99, -1])
@pytest.mark.parametrize("action", ["update", "supersede"])
async def test_update_or_supersede_of_an_unknown_target_becomes_an_add(
    store: InMemoryStore, action: str, target: int | None
) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(
        store,
        ops(op(action, "Has a cat named Mochi", "relationship", target=target)),
        await known(store, key),
    )
    assert report.updated == report.superseded == []
    assert len(report.added) == 1
    assert await current_facts(store, USER) == ["Has a cat named Mochi", "Lives in Hangzhou"]
    untouched = await value(store, key)
    assert untouched["status"] == "current"
    assert untouched["history"] == []


@pytest.mark.parametrize(
    ("action", "snacks"),
    [
        # Qwen2.5-Coder-1.5B, asked "Can you suggest some snacks for Lily's school trip?"
        ("update", "Lily's school trip snacks could include apple slices and carrot sticks."),
        ("supersede", "Lily's school trip snacks could include apple slices and carrot sticks."),
        ("supersede", "Daughter Lily is allergic to eggs"),  # another allergy: both hold
    ],
)
async def test_an_allergy_is_changed_only_by_a_fact_about_the_allergy(
    store: InMemoryStore, action: str, snacks: str
) -> None:
    allergy = "Daughter Lily is allergic to peanuts"
    key = await save_memory(store, USER, allergy, category="constraint")
    report = await apply(
        store, ops(op(action, snacks, "constraint", target=1)), await known(store, key)
    )
    assert report.updated == report.superseded == []
    assert sorted(await current_facts(store, USER)) == sorted([allergy, snacks])
    # What is said about the allergy still changes it.
    outgrown = "Lily is no longer allergic to peanuts"
    report = await apply(
        store, ops(op("supersede", outgrown, "constraint", target=1)), await known(store, key)
    )
    assert report.superseded == [key]
    assert allergy not in await current_facts(store, USER)


@pytest.mark.parametrize(
    ("allergy", "change", "changed"),
    [
        # "maní" is the Spanish peanut: a change that names peanuts in English keeps it.
        ("Daughter Lily es alérgica al maní", "Lily is no longer allergic to peanuts", True),
        ("Daughter Lily is allergic to peanuts", "Lily ya no es alérgica a los maníes", True),
        # "manicure" and "Maniok" begin like "mani" but name no peanut.
        ("Daughter Lily is allergic to peanuts", "Daughter Lily has a manicure allergy", False),
        ("Daughter Lily is allergic to peanuts", "Lily ist allergisch gegen Maniok", False),
    ],
)
async def test_an_allergy_to_peanuts_is_read_as_mani_in_spanish_only(
    store: InMemoryStore, allergy: str, change: str, changed: bool
) -> None:
    key = await save_memory(store, USER, allergy, category="constraint")
    report = await apply(
        store, ops(op("supersede", change, "constraint", target=1)), await known(store, key)
    )
    assert report.superseded == ([key] if changed else [])
    assert (allergy in await current_facts(store, USER)) is not changed


@pytest.mark.parametrize("target", [None, 0, 2, 99])
async def test_a_skip_of_an_unknown_target_is_ignored(
    store: InMemoryStore, target: int | None
) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(
        store, ops(op("skip", "Has a cat named Mochi", target=target)), await known(store, key)
    )
    assert report == ConsolidationReport()
    assert await stored_facts(store, USER) == ["Lives in Hangzhou"]
    assert (await value(store, key))["mentions"] == 1


async def test_operations_below_the_confidence_floor_are_dropped(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(
        store,
        ops(
            op("add", "Might move to Chengdu", "decision", 0.4),
            op("supersede", "Lives in Chengdu", "location", 0.5, target=1),
            op("update", "Lives in Hangzhou near West Lake", "location", 0.69, target=1),
            op("skip", "Lives in Hangzhou", "location", 0.1, target=1),
            op("add", "Works as a nurse", "identity", 0.7),
        ),
        await known(store, key),
        min_confidence=0.7,
    )
    assert report.updated == report.superseded == report.confirmed == []
    assert await stored_facts(store, USER) == ["Lives in Hangzhou", "Works as a nurse"]
    assert (await value(store, key))["mentions"] == 1


@pytest.mark.parametrize("content", ["", "   ", "x" * 501])
async def test_empty_or_oversized_content_is_dropped(store: InMemoryStore, content: str) -> None:
    report = await apply(store, ops(op("add", content)), [])
    assert report == ConsolidationReport()
    assert await stored_facts(store, USER) == []


async def test_the_same_fact_twice_in_one_message_is_stored_once(store: InMemoryStore) -> None:
    report = await apply(
        store,
        ops(
            op("add", "Has a cat", "relationship"),
            op("add", "Has a cat.", "relationship"),
            op("add", "has a CAT", "relationship"),
        ),
        [],
    )
    assert len(report.added) == 1
    assert await stored_facts(store, USER) == ["Has a cat"]


async def test_one_change_per_known_fact_per_turn(store: InMemoryStore) -> None:
    key = await save_memory(store, USER, "Lives in Hangzhou", category="location")
    report = await apply(
        store,
        ops(
            op("supersede", "Lives in Chengdu", "location", target=1),
            op("update", "Lives in Hangzhou near West Lake", "location", target=1),
            op("supersede", "Lives in Beijing", "location", target=1),
        ),
        await known(store, key),
    )
    assert report.superseded == [key]
    assert report.updated == []
    assert await current_facts(store, USER) == ["Lives in Chengdu"]


async def test_the_same_fact_twice_through_the_graph_is_stored_once(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    patch_model(
        ["Noted."],
        structured=[
            operations_json(
                op("add", "Has a dog named Rex", "relationship"),
                op("add", "has a dog named Rex.", "relationship"),
            )
        ],
    )
    state = await chat("I have a dog named Rex. Yes, my dog is named Rex!")
    assert await stored_facts(store, USER) == ["Has a dog named Rex"]
    assert len(state["metrics"]["added"]) == 1


async def test_an_update_through_the_graph_keeps_the_key_and_the_history(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    model = patch_model(
        ["Nice.", "Noted."],
        structured=[
            operations_json(op("add", "Likes green tea", "preference")),
            operations_json(op("update", "Likes Longjing green tea best", "preference", target=1)),
        ],
    )
    await chat("I like green tea", thread_id="thread-a")
    [before] = await fact_items(store, USER)
    state = await chat("Longjing is my favourite green tea", thread_id="thread-b")

    assert between(model.prompts("remember")[1], "known_facts") == "1. Likes green tea"
    [after] = await fact_items(store, USER)
    assert after.key == before.key
    assert after.value["content"] == "Likes Longjing green tea best"
    assert [(h["event"], h["content"], h["thread_id"]) for h in after.value["history"]] == [
        ("updated", "Likes green tea", "thread-b")
    ]
    assert state["metrics"]["updated"] == [after.key]


# --------------------------------------------------------------------------- superseded facts


async def test_superseded_facts_are_never_recalled(store: InMemoryStore) -> None:
    old = await save_memory(store, USER, "Lives in Hangzhou", category="location", pinned=True)
    await save_memory(store, USER, "Likes Hangzhou food", category="preference")
    await apply(
        store,
        ops(op("supersede", "Lives in Chengdu", "location", target=1)),
        await known(store, old),
    )

    for query in ["Lives in Hangzhou", "Hangzhou", "where do I live?", ""]:
        found = await memory.recall(store, USER, query, limit=10)
        assert old not in [item.key for item in found], query
        assert sorted(item.value["content"] for item in found) == [
            "Likes Hangzhou food",
            "Lives in Chengdu",
        ]
    assert [item.value["content"] for item in await memory.UserMemory(store, USER).profile()] == [
        "Lives in Chengdu"
    ]
    current = [item.value["content"] for item in await memory.UserMemory(store, USER).facts()]
    assert "Lives in Hangzhou" not in current


async def test_superseded_facts_never_reach_the_prompt(
    rule_based_model: FunctionChatModel, chat: Chat, store: InMemoryStore
) -> None:
    await chat("I live in Hangzhou", thread_id="thread-a")
    await chat("I moved from Hangzhou to Chengdu", thread_id="thread-a")
    for thread in ("thread-a", "thread-b"):
        await chat("Is Hangzhou nice this time of year?", thread_id=thread)
        system = system_prompt(rule_based_model)
        assert lines(system, "user_profile") == ["Lives in Chengdu"]
        assert "Hangzhou" not in between(system, "user_facts")
    # Nor the extractor's list of known facts, so it cannot be superseded twice.
    await chat("I used to enjoy Hangzhou tea houses", thread_id="thread-b")
    assert between(rule_based_model.prompts("remember")[-1], "known_facts") == "1. Lives in Chengdu"


# --------------------------------------------------------------------------- the plan


def _known(*contents: str) -> list[Item]:
    stamp = datetime(2026, 1, 1)
    return [
        Item(value={"content": c}, key=f"k{n}", namespace=(), created_at=stamp, updated_at=stamp)
        for n, c in enumerate(contents, 1)
    ]


def _op(action: str, content: str, target: int | None = None, confidence: float = 0.9) -> Any:
    return MemoryOperation.model_validate(
        {
            "action": action,
            "content": content,
            "category": "other",
            "confidence": confidence,
            "target": target,
        }
    )


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        # too unsure, empty or oversized: dropped
        ([_op("add", "Likes tea", confidence=0.1), _op("add", "  ")], []),
        ([_op("add", "x" * 501)], []),
        # the same fact twice in one message: written once
        ([_op("add", "Likes tea"), _op("add", "likes tea.")], [("add", "Likes tea", None)]),
        # a known fact word for word: confirmed, whatever the model said
        ([_op("add", "lives in hangzhou")], [("skip", "lives in hangzhou", "k1")]),
        # an update or supersede of a fact that does not exist: an add
        ([_op("supersede", "Lives in Chengdu", target=9)], [("add", "Lives in Chengdu", None)]),
        ([_op("update", "Works as a nurse", target=0)], [("add", "Works as a nurse", None)]),
        # a skip of nothing does nothing
        ([_op("skip", "Likes tea")], []),
        # each known fact changes at most once per turn
        (
            [_op("supersede", "Lives in Chengdu", 1), _op("update", "Lives in Xi'an", 1)],
            [("supersede", "Lives in Chengdu", "k1")],
        ),
    ],
)
def test_the_plan_keeps_a_confused_model_from_damaging_facts(
    operations: list[MemoryOperation], expected: list[tuple[str, str, str | None]]
) -> None:
    steps = memory.consolidate.plan(operations, _known("Lives in Hangzhou"), min_confidence=0.5)
    assert [(s.action, s.content, s.target and s.target.key) for s in steps] == expected
