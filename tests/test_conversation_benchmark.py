"""The conversation recall benchmark's data: deterministic, labelled, split, and as documented."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_conversations", DATA / "make_conversations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    loaded: dict[str, object] = json.loads((DATA / "conversations.json").read_text("utf-8"))
    return loaded


def test_the_committed_file_is_what_the_generator_writes() -> None:
    make = generator()
    assert make.render(make.generate()) == (DATA / "conversations.json").read_text("utf-8")


def test_every_question_is_labelled_with_turns_of_its_own_conversation(data: dict) -> None:
    conversations = data["conversations"]
    questions = [q for c in conversations for q in c["questions"]]
    assert len(questions) >= 1000
    assert {c["lang"] for c in conversations} == {"en", "zh"}
    assert Counter(q["category"] for q in questions).keys() == {
        "single-hop",
        "multi-hop",
        "temporal",
        "open-domain",
        "paraphrase",
    }
    for conversation in conversations:
        turns = {turn["id"] for turn in conversation["turns"]}
        for question in conversation["questions"]:
            assert question["evidence"] and set(question["evidence"]) <= turns
        sessions = sorted({turn["date"] for turn in conversation["turns"]})
        assert len(sessions) == 18  # one date per session, each later than the last


def test_dev_and_test_share_no_conversation(data: dict) -> None:
    splits = Counter(c["split"] for c in data["conversations"])
    assert splits == {"dev": 12, "test": 12}
    by_lang = Counter((c["split"], c["lang"]) for c in data["conversations"])
    assert set(by_lang.values()) == {6}
