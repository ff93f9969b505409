"""How memory changes over time, end to end through `langgraph dev` and langgraph-sdk.

A compressed thread becomes a past conversation that the user's next thread recalls
(and nobody else's does), a move supersedes the old home instead of piling up next
to it, and what memory did each turn is readable from the thread's state.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from e2e_helpers import (
    ScriptedLog,
    current_facts,
    new_thread,
    prompt_episodes,
    prompt_facts,
    prompt_profile,
    run_turn,
    stored_episodes,
    stored_items,
    thread_values,
    unique,
)
from langgraph_sdk.client import LangGraphClient

from assistant.inference.tokens import count_text_tokens
from devserver import DevServer

pytestmark = pytest.mark.e2e

SMALL_BUDGET = {"max_context_tokens": 120, "keep_recent_tokens": 50, "summary_max_tokens": 80}
"""Budgets so small that two or three turns are enough to compress a thread."""


# --------------------------------------------------------------------------- 7. episodes

TRIP_BUDGET = {"max_context_tokens": 400, "keep_recent_tokens": 150, "summary_max_tokens": 150}
TRIP_DECISION = "I've decided to fly into Osaka in April, with a budget of 2000 dollars"
_TRIP_TURNS = [
    f"{TRIP_DECISION} for the whole Japan trip, flights and hotels included.",
    "For the Japan trip I would like three nights in Kyoto and two nights in Osaka, plus a "
    "day trip to Nara to see the deer park and the big wooden temple in the morning.",
    "We agreed to take the Haruka airport train and buy a seven day rail pass instead of "
    "renting a car, because driving in the cities sounds stressful and parking is expensive.",
    "Please remind me to compare ryokan prices near Gion, and to check the cherry blossom "
    "forecast for late March and early April before we book anything that cannot be refunded.",
    "Let's keep one free day at the end for shopping in Shinsaibashi and for eating street "
    "food in Dotonbori, since the flight home leaves in the evening from Kansai airport.",
    "One more thing: the hotel in Osaka should be close to Namba station, because the flight "
    "lands late at night and I do not want to carry the luggage through crowded streets.",
    "Could you also list a few rainy day plans for Kyoto, like museums or covered markets, in "
    "case the weather is bad during the three nights we spend there in the middle of April?",
    "Finally, remind me that the travel insurance and the rail pass vouchers must be bought "
    "at least two weeks before departure, and that my passport needs to be renewed first.",
    "On the last evening in Osaka we would like a quiet dinner with a view of the river, "
    "somewhere that takes reservations online and does not need a long wait at the door.",
    "And for the first morning in Kyoto, suggest a short walking route that starts at the "
    "station, passes a couple of small temples and ends somewhere good for a coffee break.",
    "Remind me as well to download offline maps of Osaka and Kyoto, and to get a prepaid "
    "transport card at the airport so that we do not need to buy single tickets every time.",
    "Last question for today: what is a polite way to ask a ryokan to serve dinner a bit "
    "later than usual, since we will probably arrive after a long day of walking around?",
]
"""A trip planned over twelve turns: the decision first, then details (30-50 words each).

With these budgets the thread compresses at about turns 6 and 10, so its episode is
saved, then refreshed; the last two turns are margin."""


async def test_a_compressed_thread_is_recalled_as_a_past_conversation_by_the_same_user_only(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    user_id = unique("traveller")
    marker = unique("trip")
    trip = await new_thread(client)
    summaries: list[str] = []
    started_at = ""
    for number, text in enumerate(_TRIP_TURNS, start=1):
        tagged = f"{text} ({marker} {number})"
        await run_turn(server, client, trip, tagged, user_id=user_id, **TRIP_BUDGET)
        call = scripted_log.respond_call(f"({marker} {number})")
        # The thread's own episode is never offered back to it as a past conversation.
        assert prompt_episodes(call["system"]) is None, call["system"]
        values = await thread_values(client, trip)
        started_at = started_at or values["started_at"]
        assert values["started_at"] == started_at, "a thread starts once"
        summary = values.get("summary", "")
        episodes = await stored_episodes(client, user_id)
        if not summary:
            assert episodes == {}, f"turn {number}: an episode before any compression"
            continue
        if not summaries or summaries[-1] != summary:
            summaries.append(summary)
        # Each compression saves the running summary as the thread's one episode.
        assert list(episodes) == [trip], episodes
        episode = episodes[trip]
        assert episode["content"] == summary and episode["thread_id"] == trip, episode
        assert episode["started_at"] == started_at, episode
        assert started_at <= episode["ended_at"] == episode["updated_at"], episode
    assert len(summaries) >= 2, f"expected the episode to be refreshed; summaries: {summaries}"
    assert TRIP_DECISION in summaries[-1], summaries[-1]
    episode = (await stored_episodes(client, user_id))[trip]

    # The same user's new thread recalls the trip conversation.
    ask = unique("ask")
    thread = await new_thread(client)
    values = await run_turn(
        server,
        client,
        thread,
        f"What did we decide about the Japan trip? ({ask})",
        user_id=user_id,
    )
    call = scripted_log.respond_call(ask)
    past = prompt_episodes(call["system"])
    assert past is not None, call["system"]
    assert TRIP_DECISION in past, past
    span = f'<conversation from="{episode["started_at"][:10]}" to="{episode["ended_at"][:10]}">'

    assert past.startswith(span), past
    assert call["messages"] == 1, "a new thread must not carry other threads' messages"
    assert values["episodes"] == [
        {
            "thread_id": trip,
            "content": episode["content"],
            "started_at": episode["started_at"],
            "ended_at": episode["ended_at"],
        }
    ]
    assert values["metrics"]["episode_thread_ids"] == [trip]
    reply = values["messages"][-1]["content"]
    assert "I also recall 1 earlier conversation(s)." in reply, reply
    # Asking did not start an episode of its own (the new thread never compressed).
    assert list(await stored_episodes(client, user_id)) == [trip]

    # Another user asking the same thing in a new thread gets no past conversation.
    stranger = unique("stranger")
    nosy = unique("nosy")
    values = await run_turn(
        server,
        client,
        await new_thread(client),
        f"What did we decide about the Japan trip? ({nosy})",
        user_id=stranger,
    )
    system = scripted_log.respond_call(nosy)["system"]
    assert prompt_episodes(system) is None, system
    for leaked in ("Osaka", "2000 dollars", "Kyoto"):
        assert leaked not in system, system
    assert values["episodes"] == [] and values["metrics"]["episode_thread_ids"] == []
    assert "earlier conversation" not in values["messages"][-1]["content"]
    assert await stored_episodes(client, stranger) == {}


async def test_one_past_conversation_is_one_entry_whatever_its_summary_says(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    user_id = unique("tagged")
    marker = unique("tagged")
    thread = await new_thread(client)
    for number, text in enumerate(
        (
            "Hi, my name is Alice and I live in Hangzhou.",
            "Could you suggest a few quiet tea houses near West Lake for Saturday afternoon?",
            "Which of them would still be open after the evening rain starts, do you think?",
        ),
        start=1,
    ):  # user lines that start with a tag, like the long-thread test's "[… turn 01] …"
        await run_turn(
            server, client, thread, f"[{marker} {number}] {text}", user_id=user_id, **SMALL_BUDGET
        )
    assert list(await stored_episodes(client, user_id)) == [thread]

    ask = unique("ask")
    values = await run_turn(
        server,
        client,
        await new_thread(client),
        f"What did we talk about? ({ask})",
        user_id=user_id,
    )
    assert [episode["thread_id"] for episode in values["episodes"]] == [thread]
    past = prompt_episodes(scripted_log.respond_call(ask)["system"])
    assert past is not None
    # One episode, one entry: every line of the block but the first belongs to it.
    entries = [line for line in past.splitlines() if line.startswith("<conversation ")]
    assert len(entries) == 1, past
    reply = values["messages"][-1]["content"]
    assert "I also recall 1 earlier conversation(s)." in reply, reply


# --------------------------------------------------------------------------- 8. supersede


@pytest.mark.parametrize(
    ("said", "moved", "old_fact", "new_fact", "question"),
    [
        pytest.param(
            "I live in Hangzhou.",
            "I moved from Hangzhou to Chengdu.",
            "Lives in Hangzhou",
            "Lives in Chengdu",
            "Where should I go for a walk this weekend?",
            id="english",
        ),
        pytest.param(
            "我住在杭州。",
            "我搬到了成都。",
            "住在杭州",
            "住在成都",
            "周末去哪里散步好？",
            id="chinese",
        ),
    ],
)
async def test_moving_supersedes_the_old_home_and_keeps_it_as_history(
    said: str,
    moved: str,
    old_fact: str,
    new_fact: str,
    question: str,
    server: DevServer,
    client: LangGraphClient,
    scripted_log: ScriptedLog,
) -> None:
    user_id = unique("mover")
    old_city = old_fact.removeprefix("Lives in ").removeprefix("住在")

    first = await new_thread(client)
    values = await run_turn(server, client, first, said, user_id=user_id, extraction_hold_s=0)
    [(old_key, old)] = (await current_facts(client, user_id)).items()
    assert old["content"] == old_fact and old["category"] == "location" and old["pinned"]
    assert values["metrics"]["added"] == [old_key]

    # Saying it again, in another thread, is a confirmation, not a second fact.
    again = await new_thread(client)
    values = await run_turn(server, client, again, said, user_id=user_id, extraction_hold_s=0)
    metrics = values["metrics"]
    assert metrics["extraction"] == "nothing" and metrics["confirmed"] == [old_key], metrics
    assert metrics["added"] == [] and metrics["superseded"] == [], metrics
    facts = await stored_items(client, ["user_facts", user_id])
    assert list(facts) == [old_key] and facts[old_key]["mentions"] == 2, facts

    moving = await new_thread(client)
    # extracted in its own turn (holding off), so that this turn's metrics show the supersede
    values = await run_turn(server, client, moving, moved, user_id=user_id, extraction_hold_s=0)
    facts = await stored_items(client, ["user_facts", user_id])
    current = {key: value for key, value in facts.items() if value["status"] == "current"}
    [(new_key, new)] = current.items()
    assert new["content"] == new_fact, facts
    assert new["category"] == "location" and new["pinned"], new
    assert new["supersedes"] == old_key and new["thread_id"] == moving, new
    assert set(facts) == {old_key, new_key}, "the old home is kept, not deleted"
    old = facts[old_key]
    assert old["content"] == old_fact and old["status"] == "superseded", old
    assert old["superseded_by"] == new_key and old["valid_until"], old
    assert not old["pinned"], "a superseded fact leaves the profile"
    event = old["history"][-1]
    assert event["event"] == "superseded" and event["content"] == old_fact, old["history"]
    assert event["thread_id"] == moving and event["by"] == new_key, event
    metrics = values["metrics"]
    assert metrics["superseded"] == [old_key] and metrics["added"] == [new_key], metrics

    # A third thread knows the new home only.
    marker = unique("walk")
    values = await run_turn(
        server, client, await new_thread(client), f"{question} ({marker})", user_id=user_id
    )
    system = scripted_log.respond_call(marker)["system"]
    assert prompt_profile(system) == [new_fact], system
    assert prompt_facts(system) == [], system
    assert old_city not in system, system
    assert [fact["content"] for fact in values["profile"]] == [new_fact]
    assert values["metrics"]["profile_fact_ids"] == [new_key]
    assert old_city not in values["messages"][-1]["content"]


# --------------------------------------------------------------------------- 8b. forget


async def test_forgetting_a_fact_leaves_no_word_of_it_in_anything_memory_keeps(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    """The console's Forget on the current home takes the old home with it, and their words
    leave the audit trail, what memory heard and every other namespace of the user."""
    user_id = unique("forgetter")
    thread = await new_thread(client)
    for said in ("I live in Hangzhou.", "I moved from Hangzhou to Chengdu. I like green tea."):
        await run_turn(server, client, thread, said, user_id=user_id, extraction_hold_s=0)
    [chengdu] = [
        key
        for key, value in (await current_facts(client, user_id)).items()
        if value["content"] == "Lives in Chengdu"
    ]

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.delete(
            f"/memory/facts/{chengdu}",
            params={"user_id": user_id},
            headers={"x-assistant-client": "console"},
        )
    assert response.status_code == 200, response.text
    forgotten = response.json()
    assert forgotten["forgotten"]["content"] == "[forgotten]"
    assert (forgotten["forgotten"]["via"], forgotten["forgotten"]["client"]) == ("api", "console")
    assert forgotten["erased"]["versions"] == 2, forgotten  # Chengdu and the Hangzhou before it

    kept: dict[str, Any] = {}
    for namespace in (await client.store.list_namespaces(limit=1000))["namespaces"]:
        if user_id in namespace:
            kept["/".join(namespace)] = await stored_items(client, list(namespace))
    text = json.dumps(kept, ensure_ascii=False)
    assert "Hangzhou" not in text and "Chengdu" not in text, kept
    assert {"user_facts", "user_audit", "memory_heard"} <= {name.split("/")[0] for name in kept}
    assert [f["content"] for f in (await current_facts(client, user_id)).values()] == [
        "Likes green tea"
    ]
    trail = kept[f"user_audit/{user_id}"].values()
    audit = [entry for entry in trail if entry["action"] != "add"]  # every addition is audited
    assert sorted(entry["action"] for entry in audit) == ["forget", "supersede"]
    assert all(entry["forgotten"] for entry in audit), audit
    added = sorted(entry["content"] for entry in trail if entry["action"] == "add")
    assert added == ["Likes green tea", "[forgotten]", "[forgotten]"], trail

    marker = unique("where")
    await run_turn(
        server, client, await new_thread(client), f"Where do I live? ({marker})", user_id=user_id
    )
    system = scripted_log.respond_call(marker)["system"]
    assert "Chengdu" not in system and "Hangzhou" not in system, system


# --------------------------------------------------------------------------- 9. metrics


async def test_each_turns_memory_metrics_are_in_the_thread_state(
    server: DevServer, client: LangGraphClient, scripted_log: ScriptedLog
) -> None:
    user_id = unique("metrics")
    marker = unique("metrics")
    thread = await new_thread(client)
    turns: list[tuple[str, set[str]]] = [  # (text, the extraction outcomes it may have)
        (f"({marker} 1) My name is Alice and I live in Hangzhou.", {"kept"}),
        (f"({marker} 2) What's the capital of France?", {"skipped"}),
        # a repeat: the gate may send it (the model finds it known) or not (the gate scores
        # the message with its random marker, near the line)
        (f"({marker} 3) I live in Hangzhou, as I said before.", {"nothing", "skipped"}),
        (f"({marker} 4) I really like green tea with jasmine flowers.", {"kept"}),
        # a question about a fact just said: the gate sends about a quarter of non-facts
        # (26.8% on its test split), so the model may be asked and find nothing
        (f"({marker} 5) Which teas go well with jasmine flowers?", {"skipped", "nothing"}),
    ]
    previous_ids: set[str] = set()
    compressed_turns: list[int] = []
    added_keys: list[str] = []
    for number, (text, extraction) in enumerate(turns, start=1):
        values = await run_turn(
            server, client, thread, text, user_id=user_id, extraction_hold_s=0, **SMALL_BUDGET
        )
        state = await thread_values(client, thread)
        metrics: dict[str, Any] = state["metrics"]
        assert metrics == values["metrics"], "the run's result and the thread state differ"
        where = f"turn {number}: {metrics}"
        human = [m for m in state["messages"] if m["type"] == "human"][-1]
        assert human["content"] == text, where
        assert metrics["message_id"] == human["id"], where

        # extraction, and the keys it wrote: they exist in the store with these contents.
        assert metrics["extraction"] in extraction, where
        facts = await current_facts(client, user_id)
        if metrics["extraction"] == "skipped":
            for field in ("added", "updated", "superseded", "confirmed"):
                assert not metrics.get(field), where  # nothing carried over from before
        for key in metrics.get("added", []):
            assert key in facts and facts[key]["message_id"] == human["id"], where
        added_keys += metrics.get("added", [])

        # compressed is true exactly on the turns that folded messages away.
        ids = {m["id"] for m in state["messages"]}
        folded = bool(previous_ids - ids)
        assert metrics["compressed"] is folded, where
        if folded:
            compressed_turns.append(number)
            assert state["summary"], where
            assert (await stored_episodes(client, user_id))[thread]["content"] == state["summary"]
        previous_ids = ids

        # What recall put in the prompt, and what the prompt cost.
        call = scripted_log.respond_call(f"({marker} {number})")
        assert metrics["prompt_tokens"] == call["prompt_tokens"], where
        assert metrics["profile_fact_ids"] == [fact["id"] for fact in state["profile"]], where
        assert metrics["recalled_fact_ids"] == [fact["id"] for fact in state["recalled"]], where
        assert metrics["episode_thread_ids"] == [], where
        shown = [*state["profile"], *state["recalled"]]
        assert metrics["memory_tokens"] == sum(count_text_tokens(f["content"]) for f in shown)
        assert prompt_profile(call["system"]) == [fact["content"] for fact in state["profile"]]
        assert prompt_facts(call["system"]) == [fact["content"] for fact in state["recalled"]]
        assert {fact["id"] for fact in shown} <= set(facts), where

        if number == 1:
            assert sorted(facts[key]["content"] for key in metrics["added"]) == [
                "Lives in Hangzhou",
                "Name is Alice",
            ], where
            assert metrics["profile_fact_ids"] == [], "turn 1 recalls before it remembers"
        if number == 3:
            [lives] = [key for key, fact in facts.items() if fact["content"] == "Lives in Hangzhou"]
            if metrics["extraction"] == "nothing":
                assert metrics["confirmed"] == [lives] and metrics["added"] == [], where
            assert lives in metrics["profile_fact_ids"], where
        if number == 4:
            assert [facts[key]["content"] for key in metrics["added"]] == [
                "Likes green tea with jasmine flowers"
            ], where
        if number == 5:
            assert metrics["recalled_fact_ids"] == [
                key for key in added_keys if facts[key]["content"].startswith("Likes")
            ], where

    assert sorted(added_keys) == sorted(await current_facts(client, user_id)), added_keys
    assert compressed_turns and 1 not in compressed_turns, compressed_turns
