"""The recall index's freshness: what a search does first, and how each outcome moves it.

The state machine is pure (no store, no clock of its own), so every path is a line here;
``tests/test_recall.py`` checks the same protocol end to end against both stores.
"""

from __future__ import annotations

import pytest

from assistant.memory.search.freshness import MAX_AGE_S, PROBE_INTERVAL_S, Freshness, State, Step


def ready(revision: str | None = "r1", *, at: float = 100.0) -> Freshness:
    fresh = Freshness()
    fresh.listed_now(revision=revision, now=at)
    fresh.checked(at)
    return fresh


def test_a_new_index_lists_first_and_has_nothing_to_search() -> None:
    fresh = Freshness()
    assert fresh.state is State.EMPTY and not fresh.searchable
    assert fresh.step(token=None, now=0.0) is Step.LIST
    assert fresh.step(token="r1", now=0.0) is Step.LIST


def test_a_ready_index_is_trusted_until_the_probe_interval_passes() -> None:
    fresh = ready()
    assert fresh.trusted(100.0 + PROBE_INTERVAL_S / 2)
    assert not fresh.trusted(100.0 + PROBE_INTERVAL_S)
    assert not ready(revision=None).trusted(100.0)  # the store had no token: read it each time


def test_a_ready_index_in_step_probes_once_per_interval() -> None:
    fresh = ready()
    assert fresh.step(token="r1", now=100.0 + PROBE_INTERVAL_S / 2) is Step.SERVE
    assert fresh.step(token="r1", now=100.0 + PROBE_INTERVAL_S) is Step.PROBE


def test_another_writers_token_makes_a_search_list_again() -> None:
    assert ready().step(token="r2", now=100.0) is Step.LIST


def test_an_old_listing_is_refreshed_only_when_ready() -> None:
    fresh = ready()
    assert not fresh.refresh_due(100.0 + MAX_AGE_S)
    assert fresh.refresh_due(100.0 + MAX_AGE_S + 1)
    fresh.build_started()
    assert not fresh.refresh_due(100.0 + MAX_AGE_S + 1)


def test_a_first_build_in_the_background_leaves_searches_to_the_store() -> None:
    fresh = Freshness()
    fresh.build_started()
    assert fresh.state is State.BUILDING and not fresh.searchable
    assert fresh.step(token="r1", now=0.0) is Step.WAIT
    fresh.listed_now(revision="r1", now=1.0)
    assert fresh.state is State.READY and fresh.step(token="r1", now=1.0) is Step.SERVE


def test_a_refresh_serves_the_old_listing_meanwhile() -> None:
    fresh = ready()
    fresh.build_started()
    assert fresh.state is State.REFRESHING and fresh.searchable
    assert not fresh.trusted(100.0)  # the token is read while a listing runs
    assert fresh.step(token="r1", now=100.0) is Step.SERVE
    assert fresh.step(token="r2", now=100.0) is Step.WAIT  # the listing will catch up


@pytest.mark.parametrize(
    ("before", "after"), [(State.EMPTY, State.BUILDING), (State.READY, State.REFRESHING)]
)
def test_a_failed_build_is_listed_again_on_demand(before: State, after: State) -> None:
    fresh = Freshness() if before is State.EMPTY else ready()
    fresh.build_started()
    assert fresh.state is after
    fresh.build_failed()
    assert fresh.state is (State.EMPTY if before is State.EMPTY else State.STALE)
    assert fresh.step(token="r1", now=200.0) is Step.LIST


def test_an_own_write_in_step_is_taken_in_place() -> None:
    fresh = ready()
    assert fresh.written(before="r1", after="r2")
    assert fresh.state is State.READY and fresh.revision == "r2"
    assert fresh.step(token="r2", now=100.0) is Step.SERVE


def test_an_own_write_after_another_writers_makes_the_index_stale() -> None:
    fresh = ready()
    assert not fresh.written(before="someone else's", after="r3")
    assert fresh.state is State.STALE and fresh.revision is None
    assert fresh.searchable and not fresh.trusted(100.0)
    assert fresh.step(token="r3", now=100.0) is Step.LIST


def test_a_write_during_a_first_build_is_left_to_the_build() -> None:
    fresh = Freshness()
    fresh.build_started()
    assert not fresh.written(before=None, after="r1")
    assert fresh.state is State.BUILDING
