"""Importing the graph does no work; the server's start-up work runs from one hook, in order.

The check that the server really runs the hook is ``tests/e2e/test_startup_e2e.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from assistant.server import startup, webapp

PROBE = """
import gc, json, logging, os, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
os.umask(0o022)
from langgraph.store.memory import InMemoryStore
insert = InMemoryStore._insertinmem_store
threshold = gc.get_threshold()

def state():
    umask = os.umask(0o022)
    os.umask(umask)
    return {
        "umask": umask,
        "threshold": gc.get_threshold() != threshold,
        "frozen": gc.get_freeze_count() > 0,
        "store_patched": InMemoryStore._insertinmem_store is not insert,
    }

import assistant.graph
imported = state()
sys.stderr.write("--- start_server ---\\n")
from assistant.server.startup import start_server
start_server()
print(json.dumps({"imported": imported, "started": state()}))
"""


def _probe(tmp_path: Path) -> tuple[dict[str, dict[str, object]], str, str]:
    """Import the graph, then call the hook, in a fresh process that believes it is the server.

    Returns the process's state after each, and what it logged before and after the hook.
    """
    (tmp_path / ".langgraph_api").mkdir(mode=0o755)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "LANGGRAPH_"))},
        "LANGSERVE_GRAPHS": '{"assistant": "graph.py:graph"}',
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    before, _, after = done.stderr.partition("--- start_server ---\n")
    return json.loads(done.stdout.splitlines()[-1]), before, after


def test_importing_the_graph_does_no_start_up_work_and_the_hook_does_it_all(
    tmp_path: Path,
) -> None:
    states, imported_log, started_log = _probe(tmp_path)
    assert states["imported"] == {
        "umask": 0o022,
        "threshold": False,
        "frozen": False,
        "store_patched": False,
    }
    for line in ("No custom auth is configured", "Garbage collector", "private"):
        assert line not in imported_log
        assert line in started_log
    assert states["started"] == {
        "umask": 0o077,
        "threshold": True,
        "frozen": True,
        "store_patched": True,
    }
    assert (tmp_path / ".langgraph_api").stat().st_mode & 0o777 == 0o700


def test_the_hook_runs_each_step_in_order_tuning_last(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    for name in (
        "warn_if_unauthenticated",
        "patch_inmemory_store",
        "keep_server_files_private",
        "limit_numeric_threads",
        "tune_server_process",
    ):
        monkeypatch.setattr(startup, name, lambda name=name: ran.append(name))
    monkeypatch.setattr(startup, "log_settings", lambda: ran.append("log_settings"))
    startup.start_server()
    assert ran == [
        "warn_if_unauthenticated",
        "log_settings",
        "patch_inmemory_store",
        "keep_server_files_private",
        "limit_numeric_threads",
        "tune_server_process",
    ]


async def test_the_apps_lifespan_starts_the_server_before_anything_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    @asynccontextmanager
    async def sessions() -> AsyncIterator[None]:
        ran.append("mcp sessions")
        yield

    monkeypatch.setattr(webapp, "start_server", lambda: ran.append("start_server"))
    monkeypatch.setattr(webapp.memory_mcp, "run", sessions)
    async with webapp.lifespan(webapp.app):
        assert ran == ["start_server", "mcp sessions"]
