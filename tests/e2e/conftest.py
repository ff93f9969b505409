"""End-to-end fixtures: a real `langgraph dev` on loopback, reached only through langgraph-sdk.

``server`` is shared by the session and serves the graph with the scripted model in
the model seam; ``scripted_log`` reads that model's call log. Tests that need a server
of their own (restart, no model) start it with ``start_dev_server``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import ScriptedLog, StartServer, start_server
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The shared scripted server, started once from its own temp working directory."""
    dev = start_server(tmp_path_factory.mktemp("server"), scripted=True)
    try:
        yield dev
    finally:
        dev.stop()


@pytest.fixture(scope="session")
async def client(server: DevServer) -> AsyncIterator[LangGraphClient]:
    """A langgraph-sdk client for the shared server (``api_key=None``: no keys from env)."""
    sdk = get_client(url=server.url, api_key=None)
    try:
        yield sdk
    finally:
        await sdk.aclose()


@pytest.fixture(scope="session")
def scripted_log(server: DevServer) -> ScriptedLog:
    """The shared server's scripted-model log."""
    return ScriptedLog(server.scripted_log_path)


@pytest.fixture
def start_dev_server() -> Iterator[StartServer]:
    """``start_dev_server(workdir, **options)``: a DevServer that is stopped after the test."""
    started: list[DevServer] = []

    def start(workdir: Path, **options: Any) -> DevServer:
        dev = start_server(workdir, **options)
        started.append(dev)
        return dev

    yield start
    for dev in started:
        dev.stop()  # a no-op for a server the test already stopped
