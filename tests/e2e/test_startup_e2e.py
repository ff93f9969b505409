"""A real `langgraph dev` runs the start-up hook once, after loading the graph, before serving.

Importing the graph does no start-up work (``tests/test_startup.py``); the server runs
`assistant.server.startup.start_server` from the lifespan of the project's ``http.app``. Its log
shows each step between the graph's import and "Application started up", and what the
steps did holds: the dev runtime's folder is private, and the first run works.
"""

from __future__ import annotations

import pytest
from e2e_helpers import StartServer, connect, new_thread, run_turn

pytestmark = pytest.mark.e2e

HOOK_LINES = (
    "No custom auth is configured",  # warn_if_unauthenticated: this server runs without auth
    "Assistant settings:",  # banner.log_settings
    "Files the server creates are private",  # keep_server_files_private
    "Garbage collector:",  # tune_server_process, last
)
"""What each step of the hook logs, in the order the steps run."""


def _position(log: str, text: str) -> int:
    assert log.count(text) == 1, f"{text!r} is logged {log.count(text)} times, not once"
    return log.index(text)


async def test_the_server_runs_the_hook_once_after_the_graph_and_before_serving(
    own_server: StartServer,
) -> None:
    server = own_server("scripted")
    async with connect(server) as sdk:
        thread_id = await new_thread(sdk)
        await run_turn(server, sdk, thread_id, "Hi, I live in Lisbon.")
    log = server.log_path.read_text(encoding="utf-8", errors="replace")
    graph_loaded = log.index("Importing graph")
    steps = [_position(log, line) for line in HOOK_LINES]
    started = log.index("Application started up")
    assert [graph_loaded, *steps, started] == sorted([graph_loaded, *steps, started]), log
    assert (server.workdir / ".langgraph_api").stat().st_mode & 0o777 == 0o700
