"""The server process's garbage collector is tuned once, on the server only, unless turned off."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from assistant import process
from assistant.settings import DEFAULT_GC_THRESHOLD, get_process_settings


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Restore the collector (thresholds, frozen objects) and the once-only flag afterwards."""
    thresholds = gc.get_threshold()
    monkeypatch.setattr(process, "_tuned", False)
    monkeypatch.delenv("ASSISTANT_GC_THRESHOLD", raising=False)
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_outside_the_server_nothing_changes(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANGSERVE_GRAPHS", raising=False)
    before = gc.get_threshold()
    assert process.tune_server_process() is False
    assert gc.get_threshold() == before


def test_on_the_server_the_collector_is_tuned_once(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGSERVE_GRAPHS", '{"assistant": "graph.py:graph"}')
    _, older, oldest = gc.get_threshold()
    assert process.tune_server_process() is True
    assert gc.get_threshold() == (DEFAULT_GC_THRESHOLD, older, oldest)
    assert gc.get_freeze_count() > 0
    assert process.tune_server_process() is False  # once per process


def test_off_keeps_pythons_collector(collector: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSERVE_GRAPHS", '{"assistant": "graph.py:graph"}')
    monkeypatch.setenv("ASSISTANT_GC_THRESHOLD", "off")
    before = gc.get_threshold()
    assert process.tune_server_process() is False
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.mark.parametrize("value", ["soon", "0", "-5"])
def test_a_bad_threshold_names_the_variable_and_the_value(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_GC_THRESHOLD", value)
    with pytest.raises(ValueError, match=rf"ASSISTANT_GC_THRESHOLD .*{value}"):
        get_process_settings()


def test_a_threshold_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_GC_THRESHOLD", "2000")
    assert get_process_settings().gc_threshold == 2000
