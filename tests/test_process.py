"""The server process is tuned once, on the server only: its garbage collector (unless turned
off) and the modes of the files it creates."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.config.constants import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE
from assistant.config.settings import DEFAULT_GC_THRESHOLD, get_process_settings
from assistant.server import process


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


@pytest.fixture
def umask(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Restore the process's umask and the once-only flag afterwards."""
    monkeypatch.setattr(process, "_private", False)
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_on_the_server_files_it_creates_are_private(
    umask: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    runtime = tmp_path / ".langgraph_api"
    runtime.mkdir(mode=0o755)
    written = runtime / ".langgraph_ops.pckl"
    written.write_bytes(b"threads and their messages")
    written.chmod(0o644)
    monkeypatch.setenv("LANGSERVE_GRAPHS", '{"assistant": "graph.py:graph"}')
    assert process.keep_server_files_private() is True
    assert runtime.stat().st_mode & 0o777 == PRIVATE_DIR_MODE == 0o700
    assert written.stat().st_mode & 0o777 == PRIVATE_FILE_MODE == 0o600
    saved = runtime / "store.pckl.tmp"  # how the dev runtime saves: a new file, then renamed
    with open(saved, "wb") as file:
        file.write(b"facts")
    (tmp_path / "new-folder").mkdir()
    assert saved.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "new-folder").stat().st_mode & 0o777 == 0o700
    assert process.keep_server_files_private() is False  # once per process


def test_outside_the_server_the_umask_is_left_alone(
    umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANGSERVE_GRAPHS", raising=False)
    assert process.keep_server_files_private() is False
    assert os.umask(0o022) == 0o022


THREADS_PROBE = """
import json
import numpy
from threadpoolctl import threadpool_info
from assistant.inference.e5 import limit_numeric_threads
limit = limit_numeric_threads()
print(json.dumps({"limit": limit, "blas": [i["num_threads"] for i in threadpool_info()
    if i["user_api"] == "blas"]}))
"""


def _numeric_threads(value: str | None) -> dict[str, object]:
    """What a fresh process's BLAS runs on after the limit, with the variable at ``value``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "OPENBLAS_"))}
    env.pop("OMP_NUM_THREADS", None)
    if value is not None:
        env["ASSISTANT_NUMERIC_THREADS"] = value
    done = subprocess.run(
        [sys.executable, "-c", THREADS_PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_numeric_threads_are_limited_to_one_by_default() -> None:
    assert _numeric_threads(None) == {"limit": 1, "blas": [1]}


def test_numeric_threads_can_be_set_or_left_to_the_library() -> None:
    assert _numeric_threads("2") == {"limit": 2, "blas": [2]}
    left = _numeric_threads("off")
    assert left["limit"] is None and left["blas"] == [os.cpu_count()]


@pytest.mark.parametrize("value", ["many", "0"])
def test_a_bad_thread_limit_names_the_variable_and_the_value(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_NUMERIC_THREADS", value)
    with pytest.raises(ValueError, match=rf"ASSISTANT_NUMERIC_THREADS .*{value}"):
        get_process_settings()
