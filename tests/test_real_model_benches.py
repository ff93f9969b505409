"""bench/extraction.py and bench/locomo_answers.py score as documented (no model, no data)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import bench_module
from test_locomo_bench import SAMPLE


@pytest.fixture(scope="module")
def extraction() -> Iterator[ModuleType]:
    with bench_module("extraction") as module:
        yield module


@pytest.fixture(scope="module")
def answers() -> Iterator[ModuleType]:
    with bench_module("locomo"), bench_module("locomo_answers") as module:
        yield module


# --------------------------------------------------------------------------- extraction


def test_the_default_sample_is_fixed_labelled_and_spans_ten_languages(
    extraction: ModuleType,
) -> None:
    messages = extraction.load()
    chosen = extraction.sample(messages, extraction.LANGUAGES, 6, 3)
    assert chosen == extraction.sample(list(reversed(messages)), extraction.LANGUAGES, 6, 3)
    assert len({m["lang"] for m in chosen}) == len(extraction.LANGUAGES) >= 10
    assert sum(m["fact"] for m in chosen) == 60 and len(chosen) == 90
    assert extraction.unlabelled(chosen) == []
    for m in chosen:
        if m["fact"]:
            assert m["subject"] == "user" or m["subject_words"], m["id"]
            assert m["categories"], m["id"]


def test_a_fact_is_kept_when_one_word_of_every_group_is_in_a_stored_fact(
    extraction: ModuleType,
) -> None:
    groups = [["peanut", "花生"], ["daughter", "女儿"]]
    assert extraction.has_keywords("女儿对花生过敏", groups)
    assert extraction.has_keywords("Daughter is allergic to PEANUTS", groups)
    assert not extraction.has_keywords("Allergic to peanuts", groups)
    assert not extraction.has_keywords("anything", [])


def test_a_fact_about_someone_else_stored_as_the_users_has_the_wrong_subject(
    extraction: ModuleType,
) -> None:
    message = {
        "id": "x",
        "lang": "en",
        "fact": True,
        "text": "my daughter is allergic to peanuts",
        "keywords": [["peanut"]],
        "subject": "daughter",
        "subject_words": ["daughter"],
        "categories": ["relationship"],
    }
    wrong = extraction.Outcome(message, facts=[("Allergic to peanuts", "constraint")])
    right = extraction.Outcome(message, facts=[("Daughter is allergic to peanuts", "relationship")])
    assert wrong.kept and not wrong.right_subject and not wrong.right_category
    assert right.kept and right.right_subject and right.right_category
    advice = extraction.Outcome(message, facts=[("Should carry an EpiPen for peanuts", "other")])
    assert advice.advice and not advice.right_subject


def test_the_table_counts_facts_kept_and_non_facts_stored_per_language(
    extraction: ModuleType,
) -> None:
    fact = {"id": "f", "lang": "en", "fact": True, "keywords": [["bristol"]], "subject": "user"}
    other = {"id": "o", "lang": "en", "fact": False}
    outcomes = [
        extraction.Outcome(fact, facts=[("Lives in Bristol", "location")]),
        extraction.Outcome(other, facts=[("Is hungry", "other")]),
        extraction.Outcome(other),
    ]
    rows = extraction.table(outcomes, ["en"]).splitlines()
    assert rows[2].split(" | ")[1].strip() == "100% (1/1)"
    assert rows[2].split(" | ")[5].strip() == "50% (1/2)"
    assert "non-facts stored 50.0% (≤ 5%: MISSED)" in extraction.goals(outcomes)
    assert "100.0% (≥ 90%: met)" in extraction.goals(outcomes)
    assert "non-facts stored: none run" in extraction.goals(outcomes[:1])  # not "0%: met"


# --------------------------------------------------------------------------- LoCoMo answers


def test_locomo_f1_follows_the_official_normalisation_and_categories(answers: ModuleType) -> None:
    assert answers.normalize_answer("The Shell, and a necklace!") == "shell necklace"
    assert answers.f1_score("A shell necklace.", "shell necklace") == 1.0
    assert answers.f1_score("painted sunrises", "painting a sunrise") == 1.0  # Porter stems
    assert answers.f1_score("", "anything") == 0.0
    assert answers.locomo_f1("painting", "painting, hiking", 1) == 0.5
    assert answers.locomo_f1("painting", "painting, hiking", 4) == pytest.approx(2 / 3)
    assert answers.locomo_f1("psychology", "Psychology; counseling", 3) == 1.0


def test_the_judges_verdict_is_read_from_json_or_its_last_word(answers: ModuleType) -> None:
    assert answers.judge_label('Same topic.\n{"label": "CORRECT"}') is True
    assert answers.judge_label('{"label":"wrong"}') is False
    assert answers.judge_label("It says Paris, not Rome: WRONG") is False
    assert answers.judge_label("no verdict") is None
    assert "{question}" in answers.JUDGE_PROMPT and "{generated_answer}" in answers.JUDGE_PROMPT


def test_the_sample_keeps_the_first_sessions_and_the_questions_they_answer(
    answers: ModuleType,
) -> None:
    conversation = answers.read_conversation(SAMPLE)
    first = answers.sample(conversation, 1)
    assert [t.dia_id for t in first.turns] == ["D1:1", "D1:2", "D1:3"]
    assert [q.text for q in first.questions] == ["Where did Ben go camping?"]  # D1:3 and D2:2
    assert answers.sample(conversation, 0) == conversation
    assert answers.transcript(first).splitlines()[0] == "Session 1 (8 May 2023):"


def test_replies_that_carry_tool_calls_as_text_are_counted(answers: ModuleType) -> None:
    assert answers.has_tool_markup('{"name": "search_memory", "arguments": {"query": "x"}}')
    assert not answers.has_tool_markup("She went camping at the lake.")


def test_a_run_cut_short_has_scored_every_language_alike(extraction: ModuleType) -> None:
    chosen = extraction.sample(extraction.load(), ["en", "zh", "es"], 2, 1)
    order = [m["lang"] for m in extraction.interleaved(chosen)]
    assert order == ["en", "zh", "es"] * 3
    assert sorted(m["id"] for m in extraction.interleaved(chosen)) == sorted(
        m["id"] for m in chosen
    )
