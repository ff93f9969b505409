"""Context rejects settings that cannot work together."""

from __future__ import annotations

import pytest

from assistant.run import prompts
from assistant.run.context import Context


def test_defaults_are_valid() -> None:
    context = Context()
    assert context.user_id == "default-user"
    assert context.system_prompt == prompts.PERSONA
    assert 0 < context.keep_recent_tokens < context.max_context_tokens
    assert 0 <= context.recall_limit <= 50


def test_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Context("alice")  # type: ignore[misc]


@pytest.mark.parametrize("keep", [3000, 5000])
def test_keep_recent_must_be_below_the_context_budget(keep: int) -> None:
    with pytest.raises(ValueError, match="keep_recent_tokens") as caught:
        Context(max_context_tokens=3000, keep_recent_tokens=keep)
    assert str(keep) in str(caught.value)


@pytest.mark.parametrize(
    "field", ["max_context_tokens", "keep_recent_tokens", "summary_max_tokens"]
)
@pytest.mark.parametrize("value", [0, -1, -500])
def test_budgets_must_be_positive(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field) as caught:
        Context(**{field: value})  # type: ignore[arg-type]
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize("limit", [0, 1, 50])
def test_recall_limit_in_range(limit: int) -> None:
    assert Context(recall_limit=limit).recall_limit == limit


@pytest.mark.parametrize("limit", [-1, 51, 1000])
def test_recall_limit_out_of_range(limit: int) -> None:
    with pytest.raises(ValueError, match="recall_limit"):
        Context(recall_limit=limit)


@pytest.mark.parametrize("confidence", [-0.1, 1.5])
def test_min_fact_confidence_out_of_range(confidence: float) -> None:
    with pytest.raises(ValueError, match="min_fact_confidence"):
        Context(min_fact_confidence=confidence)


def test_memory_budget_defaults() -> None:
    context = Context()
    assert (context.profile_tokens, context.episode_limit, context.episode_tokens) == (200, 2, 300)


@pytest.mark.parametrize("field", ["profile_tokens", "episode_limit", "episode_tokens"])
def test_memory_budgets_may_be_zero(field: str) -> None:
    assert getattr(Context(**{field: 0}), field) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["profile_tokens", "episode_limit", "episode_tokens"])
@pytest.mark.parametrize("value", [-1, 1.5, "3", None])
def test_memory_budgets_must_be_non_negative_integers(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field) as caught:
        Context(**{field: value})  # type: ignore[arg-type]
    assert repr(value) in str(caught.value)
    assert "an integer between 0" in str(caught.value)
