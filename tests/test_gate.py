"""The extraction gate: which user messages reach the extraction call at all.

The gate's figures on labelled data are in ``bench/gate.py``; these tests pin its rules and
check the shipped classifier on a few messages of each kind the last gate dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from assistant.extraction import gate
from assistant.extraction.gate import CLASSIFIER, Classifier, Neighbours, judge, screen


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("👍", "no words"),
        ("?!…", "no words"),
        ("   ", "no words"),
        ("Thanks!!", "an acknowledgement"),
        ("ok thanks 🙏", "an acknowledgement"),
        ("谢谢！", "an acknowledgement"),
        ("Gracias", "an acknowledgement"),
        ("спасибо)", "an acknowledgement"),
        ("ありがとうございます。", "an acknowledgement"),
        ("Please forget that I live in Hangzhou.", "only about memory: the memory tools answer it"),
        ("What do you remember about me?", "only about memory: the memory tools answer it"),
        ("忘掉我住在杭州这件事。", "only about memory: the memory tools answer it"),
    ],
)
def test_signals_that_hold_in_any_language_skip_a_message(text: str, reason: str) -> None:
    verdict = screen(text)
    assert verdict is not None and not verdict.send and verdict.reason == reason


@pytest.mark.parametrize(
    "text",
    [
        # a fact beside a memory question
        "Allergic to shellfish, fyi. Do you remember my address?",
        "Thanks! Also, I'm vegan now.",  # an acknowledgement with more after it
        "Remove nuts from the meal plan, I'm allergic.",  # a request to edit, not memory
        "ok so my husband's name is Tom",
        "Ich bin Vegetarier.",
    ],
)
def test_a_message_with_more_than_a_signal_is_left_to_the_classifier(text: str) -> None:
    assert screen(text) is None


def _fixed(score: float, hold: float = 0.2, extract: float = 0.6) -> Classifier:
    """A classifier that scores every vector ``score`` (a zero-weight logistic regression)."""
    return Classifier(
        weights=(0.0,) * 384,
        bias=math.log(score / (1 - score)),
        hold_threshold=hold,
        extract_threshold=extract,
        about={},
    )


@pytest.mark.parametrize(
    ("score", "decision", "reason"),
    [
        (0.1, "skip", "no fact likely"),
        (0.3, "hold", "might state a fact: held for a batch"),
        (0.7, "extract", "may state a fact"),
    ],
)
async def test_the_classifier_decides_what_the_signals_leave(
    score: float, decision: str, reason: str
) -> None:
    verdict = await judge("Find me a gym near work.", classifier=_fixed(score))
    assert (verdict.decision, verdict.reason) == (decision, reason)
    assert verdict.score == pytest.approx(score)
    assert verdict.send is (decision != "skip")


SCORES: dict[tuple[float, ...], float] = {}
"""The scores of ``ByText`` below, by vector."""


async def test_a_fact_before_a_request_is_scored_on_its_own_sentence() -> None:
    # The best statement sentence counts, so a request after a fact cannot hide it.
    class ByText(Classifier):
        def score(self, vector: Sequence[float]) -> float:
            return SCORES.get(tuple(vector), 0.05)

    embed = gate.models.E5Embeddings()
    whole = "I work night shifts at a hospital. Can you suggest a quick lunch?"
    fact = "I work night shifts at a hospital."
    SCORES.clear()
    SCORES[tuple(await embed.aembed_query(fact))] = 0.9
    classifier = ByText(weights=(), bias=0.0, hold_threshold=0.2, extract_threshold=0.6, about={})
    assert (await judge(whole, classifier=classifier)).decision == "extract"
    assert (await judge("Can you suggest a quick lunch?", classifier=classifier)).decision == (
        "skip"
    )


async def test_quoted_material_is_not_read_as_the_users_own_words() -> None:
    pasted = 'Translate into French: "My brother lives in Paris and works at a bank."'
    alone = await gate.fact_score(pasted)
    own = await gate.fact_score("My brother lives in Paris and works at a bank.")
    assert alone < own


async def test_a_message_longer_than_the_classifier_reads_is_sent() -> None:
    text = "Here is my whole story. " * 100
    verdict = await judge(text, classifier=_fixed(0.01))
    assert verdict.decision == "extract" and verdict.score is None


async def test_signals_are_read_before_the_classifier() -> None:
    verdict = await judge("thanks!", classifier=_fixed(0.99))
    assert (verdict.decision, verdict.reason) == ("skip", "an acknowledgement")


@pytest.mark.parametrize(
    "text",
    [
        # the kinds of message the rule-based gate dropped (issue 19), written anew here
        "Allergic to shellfish, fyi.",
        "Pescatarian these days.",
        "Husband's name is Tom.",
        "Moved to Lisbon in March.",
        "对猫毛过敏。",
        "在字节做产品经理。",
        "家里养了一条柯基。",
        "Trabajo como enfermera en Sevilla.",
        "Ich bin Vegetarier.",
        "娘が二人います。",
        "Я не ем мясо.",
        "Find me a gym near work, work being Canary Wharf.",
    ],
)
async def test_the_shipped_classifier_sends_facts_in_any_phrasing(text: str) -> None:
    verdict = await judge(text)
    assert verdict.send, (text, verdict)


@pytest.mark.parametrize(
    "text",
    [
        "What's the capital of Australia?",
        "¿Qué hora es en Tokio?",
        "Wie spät ist es in New York?",
        "给我讲个笑话吧",
    ],
)
async def test_the_shipped_classifier_skips_plain_questions(text: str) -> None:
    verdict = await judge(text)
    assert not verdict.send, (text, verdict)


def test_the_nearest_labelled_messages_vote_nearer_ones_more() -> None:
    neighbours = Neighbours(
        vectors=np.asarray([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32),
        facts=np.asarray([1.0, 0.0, 0.0], dtype=np.float32),
        k=2,
        sharpness=0.0,
    )
    # the two nearest of (1, 0.1) are the first two, with even votes at sharpness 0
    assert neighbours.share([1.0, 0.1]) == pytest.approx(0.5)
    sharp = replace(neighbours, sharpness=50.0)
    assert sharp.share([1.0, 0.1]) > 0.99  # the nearest one decides
    assert sharp.share([0.1, 1.0]) == pytest.approx(0.0)  # no fact among (0, 1) and (.8, .6)
    # the classifier's score is the mean of the regression (here 0.5) and the vote
    classifier = replace(_fixed(0.5), weights=(0.0, 0.0), neighbours=sharp)
    assert classifier.score([1.0, 0.1]) == pytest.approx(0.75, abs=0.01)


def test_the_shipped_classifier_reads_e5_vectors_and_says_how_it_was_made() -> None:
    assert len(CLASSIFIER.weights) == 384  # multilingual-e5-small
    assert CLASSIFIER.neighbours is not None
    assert CLASSIFIER.neighbours.vectors.shape[1] == 384
    assert len(CLASSIFIER.neighbours.vectors) == len(CLASSIFIER.neighbours.facts) > 3000
    # set for recall: skipping only well below an even chance, extracting at once above it
    assert 0.0 < CLASSIFIER.hold_threshold < 0.5 < CLASSIFIER.extract_threshold < 1.0
    assert "languages" in CLASSIFIER.about["trained_on"]


async def test_a_failing_embedder_is_not_the_gates_to_hide(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: object, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder down")

    monkeypatch.setattr(gate.models.E5Embeddings, "aembed_queries", broken)
    with pytest.raises(RuntimeError):
        await judge("Moved to Lisbon in March.")
