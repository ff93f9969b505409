"""bench/locomo_product.py runs a conversation through the graph and scores it as documented.

A small two-person conversation written here (no LoCoMo data): each speaker is a user, the
other speaker plays the assistant, facts carry the session's date and the other speaker's
words, and questions are scored by evidence turn and by the answer's words.
"""

from __future__ import annotations

import doctest
from collections.abc import Callable, Iterator
from datetime import datetime
from types import ModuleType
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from assistant.memory import list_memories, normalize_fact
from helpers import bench_module

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-t1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ben", "dia_id": "D1:1", "text": "Hi Ana! What did you do this weekend?"},
            {
                "speaker": "Ana",
                "dia_id": "D1:2",
                "text": "I adopted a greyhound called Pixel from the shelter.",
            },
            {
                "speaker": "Ben",
                "dia_id": "D1:3",
                "text": "Amazing! We camped at the lake.\n\n[shares a photo of a tent]",
            },
            {"speaker": "Ana", "dia_id": "D1:4", "text": "Thanks!"},
        ],
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "My pottery class starts next Tuesday <3"},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "My violin recital is on Friday."},
        ],
    },
    "qa": [
        {
            "question": "What is the name of Ana's greyhound?",
            "answer": "Pixel",
            "evidence": ["D1:2"],
            "category": 4,
        },
        {
            "question": "When did Ana adopt a greyhound?",
            "answer": "7 May 2023",
            "evidence": ["D1:2"],
            "category": 2,
        },
        {
            "question": "What instrument does Ana's friend play?",
            "answer": "violin",
            "evidence": ["D2:2"],
            "category": 3,
        },
        {
            "question": "What are Ana and Ben looking forward to?",
            "answer": "A violin recital",
            "evidence": ["D2:1", "D2:2"],
            "category": 1,
        },
        {"question": "What did Ben paint?", "answer": "x", "evidence": ["D1:3"], "category": 5},
    ],
}


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with bench_module("locomo_product") as module:
        yield module


async def facts_by_turn(stored: Any, speaker: str) -> dict[str, dict[str, Any]]:
    """The speaker's stored facts, by the turn each was extracted from."""
    user = stored.users[speaker]
    dia_ids = stored.extractors[user].dia_ids
    return {
        dia_id: item.value
        for item in await list_memories(stored.store, user)
        for dia_id in dia_ids[normalize_fact(item.value["content"])]
    }


async def run(bench: ModuleType, row: str, store: InMemoryStore) -> Any:
    with bench.product_patches():
        return await bench.feed(bench.read_conversation(SAMPLE), bench.ROWS[row], store=store)


def test_the_doctests_pass(bench: ModuleType) -> None:
    assert doctest.testmod(bench).failed == 0


def test_each_speaker_is_a_user_whose_sessions_are_threads_and_the_other_speaker_answers(
    bench: ModuleType,
) -> None:
    conversation = bench.read_conversation(SAMPLE)
    sessions = bench.sessions_of(conversation, "Ana")
    assert [s.thread_id for s in sessions] == ["conv-t1-ana-d1", "conv-t1-ana-d2"]
    assert sessions[0].opening == "Hi Ana! What did you do this weekend?"
    assert sessions[1].opening == ""
    first, thanks = sessions[0].messages
    assert first.turn.dia_id == "D1:2"
    assert first.reply == "Amazing! We camped at the lake.\n\n[shares a photo of a tent]"
    assert first.at.isoformat() == "2023-05-08T13:56:30+00:00"  # the session's 2nd turn
    assert (thanks.turn.dia_id, thanks.reply) == ("D1:4", "")
    assert sessions[1].messages[0].reply == "My violin recital is on Friday."
    assert [m.turn.dia_id for s in bench.sessions_of(conversation, "Ben") for m in s.messages] == [
        "D1:1",
        "D1:3",
        "D2:2",
    ]


async def test_every_turn_is_stored_with_its_session_date_and_the_other_speakers_words(
    bench: ModuleType, new_store: Callable[[], InMemoryStore]
) -> None:
    stored = await run(bench, "all", new_store())
    ana, ben = await facts_by_turn(stored, "Ana"), await facts_by_turn(stored, "Ben")
    assert sorted(ana) == ["D1:2", "D1:4", "D2:1"] and sorted(ben) == ["D1:1", "D1:3", "D2:2"]
    assert ana["D1:2"]["content"] == "I adopted a greyhound called Pixel from the shelter."
    said = {dia_id: datetime.fromisoformat(fact["said_at"]) for dia_id, fact in ana.items()}
    assert said["D1:2"].date().isoformat() == "2023-05-08"
    assert said["D1:2"].strftime("%H:%M:%S") == "13:56:30"
    assert said["D2:1"].date().isoformat() == "2023-06-19"
    assert ana["D2:1"]["created_at"].startswith("2023-06-19")
    assert ana["D1:2"]["context"] == "Hi Ana! What did you do this weekend?"
    assert ana["D1:4"]["context"] == "Amazing! We camped at the lake. [shares a photo of a tent]"
    assert ben["D1:3"]["content"].startswith("Amazing!")  # one fact, blank line and all
    assert "context" not in ana["D2:1"]  # Ana opens session 2: nothing came before
    assert ana["D2:1"]["thread_id"] == "conv-t1-ana-d2"
    assert ana["D2:1"]["content"] == "My pottery class starts next Tuesday <3"
    assert stored.verdicts == {"extract": 6} and stored.messages == 6


async def test_the_gate_skips_an_acknowledgement_and_its_verdicts_are_counted(
    bench: ModuleType, new_store: Callable[[], InMemoryStore]
) -> None:
    stored = await run(bench, "gate", new_store())
    ana = await facts_by_turn(stored, "Ana")
    assert "D1:4" not in ana  # "Thanks!"
    assert "D1:2" in ana
    assert ana["D1:2"]["said_at"].startswith("2023-05-08")  # held or not, said that day
    assert stored.verdicts["skip"] >= 1 and sum(stored.verdicts.values()) == 6


async def test_questions_are_scored_by_evidence_and_by_the_answer_in_the_asked_users_facts(
    bench: ModuleType, new_store: Callable[[], InMemoryStore]
) -> None:
    stored = await run(bench, "all", new_store())
    conversation = bench.read_conversation(SAMPLE)
    scored = await bench.score(stored, conversation, bench.gold_answers(SAMPLE))
    name, when, friend, both = scored
    assert (name.hit, name.found, name.evidence_stored) == (True, True, True)
    assert (when.hit, when.found, when.answer_stored) == (True, False, False)  # "yesterday"
    # Names only Ana, so only Ana's facts are asked: Ben's turn is not among them.
    assert (friend.hit, friend.found, friend.evidence_stored) == (False, False, False)
    assert (both.hit, both.found) == (True, True)  # both asked: Ben's fact says it
    assert [s.category for s in scored] == [4, 2, 3, 1]  # category 5 is left out


def test_an_answer_is_found_by_its_content_words_or_as_a_whole(bench: ModuleType) -> None:
    found = bench.answer_found
    assert found("The lake", ["We camped at the LAKE!"])
    assert found("Psychology, counseling certification", ["counseling certification in psychology"])
    assert not found("Psychology, counseling certification", ["a psychology degree", "counseling"])
    assert found("2022", ["I painted it in 2022."]) and not found("2022", ["in 20221"])
    assert not found("7 May 2023", ["I went yesterday"])


def test_the_echo_extractor_stores_each_message_of_a_batch_once(bench: ModuleType) -> None:
    conversation = bench.read_conversation(SAMPLE)
    turns = {turn.dia_id: turn for turn in conversation.turns}
    echo = bench.EchoExtractor("Ben", named=True)
    echo.expect(turns["D1:1"])
    echo.expect(turns["D1:3"])
    batch = f"{turns['D1:1'].text}\n\n{turns['D1:3'].text}"
    answer = echo.operations(
        f"<known_facts>\n(none)\n</known_facts>\n<user_message>\n{batch}\n</user_message>"
    )
    assert [op["content"] for op in answer["operations"]] == [
        "Ben: Hi Ana! What did you do this weekend?",
        "Ben: Amazing! We camped at the lake.\n\n[shares a photo of a tent]",
    ]
    assert echo.sent() == {"D1:1", "D1:3"} and echo.batches == [2] and echo.unmatched == 0
    echo.expect(turns["D2:1"])  # "... Tuesday <3", shown to the model as data: "&lt;3"
    shown = "<user_message>\nMy pottery class starts next Tuesday &lt;3\n</user_message>"
    assert echo.operations(shown)["operations"][0]["content"] == "Ben: " + turns["D2:1"].text
    assert echo.operations("<user_message>\nnever announced\n</user_message>") == {"operations": []}
    assert echo.unmatched == 1
