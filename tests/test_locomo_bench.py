"""bench/locomo.py reads LoCoMo-shaped data and scores hits as documented (no LoCoMo data here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from assistant.memory import user_facts_namespace
from helpers import bench_module

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-t1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! How was your weekend?"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "We camped at the lake with the kids."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Lovely! I adopted a greyhound."},
        ],
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My violin recital is on Friday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Good luck! I'll bring the greyhound."},
        ],
    },
    "qa": [
        {"question": "Where did Ben go camping?", "evidence": ["D1:2"], "category": 4},
        {"question": "What pet did Ana get?", "evidence": ["D1:3; D2:2"], "category": 1},
        {"question": "When is Ben's recital?", "evidence": ["D2:1", "D", "D9:9"], "category": 2},
        {"question": "Would Ana like cats?", "evidence": [], "category": 3},
        {"question": "What did Ben paint?", "evidence": ["D1:2"], "category": 5},
    ],
}


@pytest.fixture(scope="module")
def locomo() -> Iterator[ModuleType]:
    with bench_module("locomo") as module:
        yield module


def test_questions_are_read_with_their_evidence_and_the_left_out_ones_counted(
    locomo: ModuleType,
) -> None:
    conversation = locomo.read_conversation(SAMPLE)
    assert [turn.dia_id for turn in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conversation.turns[3].said_at.date().isoformat() == "2023-06-19"
    assert [(q.category, sorted(q.evidence)) for q in conversation.questions] == [
        (4, ["D1:2"]),
        (1, ["D1:3", "D2:2"]),  # "D1:3; D2:2" is two ids
        (2, ["D2:1"]),  # "D" and the unknown "D9:9" are dropped
    ]
    assert conversation.skipped == {
        "category 5": 1,
        "with no evidence turn": 1,
        "evidence ids ignored (unknown or malformed)": 2,
    }


def test_a_hit_is_any_evidence_turn_in_the_top_k(locomo: ModuleType) -> None:
    questions = locomo.read_conversation(SAMPLE).questions
    filler = [f"D7:{n}" for n in range(1, 10)]
    ranked = [
        [*filler[:5], "D1:2"],  # single-hop: 6th, so a hit at 10, not at 5
        ["D2:2", *filler],  # multi-hop: one of its two evidence turns, 1st
        filler,  # temporal: its evidence is nowhere
    ]
    scores = locomo.recall_at(questions, ranked)
    assert scores["single-hop@5"] == 0.0 and scores["single-hop@10"] == 1.0
    assert scores["multi-hop@5"] == scores["multi-hop@10"] == 1.0
    assert scores["temporal@5"] == scores["temporal@10"] == 0.0
    assert scores["all@5"] == pytest.approx(1 / 3) and scores["all@10"] == pytest.approx(2 / 3)
    assert scores["open-domain@10"] != scores["open-domain@10"]  # no question: nan, not 0


def test_turn_metadata_keeps_context_within_a_session(locomo: ModuleType) -> None:
    conversation = locomo.read_conversation(SAMPLE)
    assert locomo.turn_metadata(conversation, 1) == {
        "speaker": "Ben",
        "role": "other",
        "said_at": "2023-05-08",
        "context": "Hi Ben! How was your weekend?",
        "thread_id": "D1",
        "turn": 2,
    }
    first_of_session_2 = locomo.turn_metadata(conversation, 3)
    assert first_of_session_2["context"] == "" and first_of_session_2["turn"] == 1


async def test_only_the_stemmed_bm25_finds_camped_for_camping(locomo: ModuleType) -> None:
    pytest.importorskip("snowballstemmer")
    import snowballstemmer

    conversation = locomo.read_conversation(SAMPLE)
    question = conversation.questions[0]
    plain = locomo.BM25("bm25", locomo.words)
    stemmed = locomo.BM25("stem", locomo.stemmed_words(snowballstemmer.stemmer("porter")))
    for system in (plain, stemmed):
        await system.ingest(conversation)
    assert "D1:2" not in await plain.search(conversation, question)
    assert (await stemmed.search(conversation, question))[0] == "D1:2"


async def test_ours_maps_recalled_memories_back_to_their_turns(
    locomo: ModuleType, store: BaseStore
) -> None:
    conversation = locomo.read_conversation(SAMPLE)
    ours = locomo.Ours("ours", metadata=True, store=store)
    await ours.ingest(conversation)
    found = await ours.search(conversation, conversation.questions[2])  # Ben's violin recital
    assert found[0] == "D2:1"
    assert sorted(found) == sorted(turn.dia_id for turn in conversation.turns)
    assert len(ours.ms) == 1


async def test_a_missing_data_file_is_one_line_and_no_error(
    locomo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await locomo.main(locomo.parse_args(["--data", str(tmp_path / "absent.json")]))
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "not found" in out


async def test_turns_as_commonly_measured_carry_speaker_and_date_in_their_text(
    locomo: ModuleType, store: BaseStore
) -> None:
    conversation = locomo.read_conversation(SAMPLE)
    assert locomo.commonly_measured(conversation, 3) == (
        "Ben (19 June, 2023): My violin recital is on Friday."
    )
    ours = locomo.Ours("ours", metadata=False, text=locomo.commonly_measured, store=store)
    await ours.ingest(conversation)
    [key] = [key for key, dia_id in ours.dia_ids.items() if dia_id == "D2:1"]
    item = await store.aget(user_facts_namespace("conv-t1"), key)
    assert item is not None
    assert item.value["content"] == "Ben (19 June, 2023): My violin recital is on Friday."
    assert "speaker" not in item.value  # no metadata: the text is all there is
    bm25 = locomo.BM25("bm25", locomo.words, text=locomo.commonly_measured)
    await bm25.ingest(conversation)
    question = locomo.Question("What did Ben say in June?", 4, frozenset({"D2:1"}))
    assert (await bm25.search(conversation, question))[0] == "D2:1"  # "june" is in its text


def test_the_ablation_flips_each_feature_from_what_src_has(
    locomo: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assistant.memory import WEIGHTS
    from assistant.memory.search import lexical

    on = locomo.Feature("speaker boost", {"speaker_boost": 0.0}, {"speaker_boost": 1.0})
    off = locomo.Feature("wide ranks", {"rrf_k": 10}, {"rrf_k": 60})
    assert WEIGHTS.speaker_boost and WEIGHTS.rrf_k == 10
    assert locomo.toggled(on) == ("speaker boost off (speaker_boost=0.0)", {"speaker_boost": 0.0})
    assert locomo.toggled(off) == ("wide ranks on (rrf_k=60)", {"rrf_k": 60})

    change = {"assistant.memory.search.lexical.CONTEXT_WEIGHT": 0.0, "rrf_k": 60}
    before = lexical.CONTEXT_WEIGHT
    with locomo.settings(change) as weights:
        assert lexical.CONTEXT_WEIGHT == 0.0  # read while indexing: patched meanwhile
        assert weights.rrf_k == 60 and weights.vector_weight == WEIGHTS.vector_weight
    assert lexical.CONTEXT_WEIGHT == before
