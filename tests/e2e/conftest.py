"""End-to-end fixtures: real `langgraph dev` servers on loopback, reached through langgraph-sdk.

Servers come from the named presets of ``e2e_helpers.PRESETS``. Each shared preset has a
session fixture below (``server``, ``quiet_server``, ``faulty_server``, ``dev_tokens_server``,
``jwt_server``, ``make_dev_server``, ``provider_server``): its server starts once a session,
at first use, and every module and every xdist worker that asks for it uses it. A test that
must own its server (a restart, a crash, a setting of its own) starts one from a preset with
``own_server``.

Under pytest-xdist (``make test`` runs ``-n 6 --dist loadgroup``) a test goes to an xdist
group only where it must share a worker (see ``pytest_collection_modifyitems``); everything
else is spread over the workers.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.nodeid import coerce_node_id
from e2e_helpers import ScriptedLog, Servers, StartServer, connect
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer
from local_model import LocalModel
from stub_openai import StubOpenAI

E2E_DIR = Path(__file__).resolve().parent

EXCLUSIVE = {
    "quiet_server": "quiet",
    "faulty_server": "faulty",
    "jwt_server": "jwt",
    "make_dev_server": "make_dev",
    "provider_server": "stub_provider",
    "stub_openai": "stub_provider",
}
"""Fixtures of presets that one worker uses alone, and the xdist group of their tests.

Their tests read the whole model log, keep module-wide state (the attack tables), or
drive the stub provider that lives in the worker's own process."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put e2e tests in xdist groups (``--dist loadgroup``) where they must share a worker.

    A test that uses an exclusive preset goes to that preset's group; one that uses a
    module-scoped fixture (a seeded conversation, a browser) to its module's group, so
    the fixture is set up once. Every other test goes wherever a worker is free.
    """
    for item in items:
        if not item.path.is_relative_to(E2E_DIR):
            continue
        used = getattr(item, "fixturenames", ())
        groups = sorted({EXCLUSIVE[name] for name in used if name in EXCLUSIVE})
        if not groups:
            definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
            if any(defs and defs[-1].scope == "module" for defs in definitions.values()):
                groups = [item.path.stem]
        for group in groups:
            item.add_marker(pytest.mark.xdist_group(group))
        if groups and os.environ.get("PYTEST_XDIST_WORKER") and hasattr(item, "_id"):
            # pytest-xdist 3.8 tells the scheduler a test's group by renaming it to
            # ``nodeid@group`` through ``item._nodeid``, which pytest 9 no longer reads
            # (the id lives in ``item._id``): rename it where pytest 9 looks.
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(groups)}")


# --------------------------------------------------------------------------- the factory


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """The session's server factory; at the end it signs off the shared servers it used."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    basetemp = tmp_path_factory.getbasetemp()
    root = (basetemp.parent if worker else basetemp) / "servers"  # one for all workers
    factory = Servers(root, worker or "main")
    try:
        yield factory
    finally:
        factory.sign_off()


@pytest.fixture
def own_server(servers: Servers, tmp_path: Path) -> Iterator[StartServer]:
    """``own_server(preset, workdir=None, **changes)``: a server of the test's own.

    It starts in ``workdir`` (a fresh folder in the test's temp directory by default) and
    is stopped after the test, unless the test stopped or killed it first.
    """
    started: list[DevServer] = []

    def start(preset: str, workdir: Path | None = None, **changes: Any) -> DevServer:
        folder = workdir or tmp_path / f"{preset}-{len(started)}"
        dev = servers.start(preset, folder, **changes)
        started.append(dev)
        return dev

    yield start
    for dev in started:
        dev.stop()  # a no-op for a server the test already stopped


# --------------------------------------------------------------------------- shared servers


@pytest.fixture(scope="session")
def server(servers: Servers) -> DevServer:
    """The ``scripted`` preset: the scripted model, no auth (``context.user_id`` is the user)."""
    return servers.shared("scripted")


@pytest.fixture(scope="session")
async def client(server: DevServer) -> AsyncIterator[LangGraphClient]:
    """A langgraph-sdk client for the ``scripted`` server."""
    async with connect(server) as sdk:
        yield sdk


@pytest.fixture(scope="session")
def scripted_log(server: DevServer) -> ScriptedLog:
    """The ``scripted`` server's model log (every module's runs land in it)."""
    return ScriptedLog(server.scripted_log_path)


@pytest.fixture(scope="session")
def quiet_server(servers: Servers) -> DevServer:
    """The ``quiet`` preset: like ``scripted``, but only its xdist group's tests use it."""
    return servers.shared("quiet")


@pytest.fixture(scope="session")
def faulty_server(servers: Servers) -> DevServer:
    """The ``faulty`` preset: the scripted model fails requests that contain FAIL_MARKER."""
    return servers.shared("faulty")


@pytest.fixture(scope="session")
def dev_tokens_server(servers: Servers) -> DevServer:
    """The ``dev_tokens`` preset: auth with ``DEV_TOKENS`` and ``ADMIN_TOKEN``."""
    return servers.shared("dev_tokens")


@pytest.fixture(scope="session")
def jwt_server(servers: Servers) -> DevServer:
    """The ``jwt`` preset: auth with JWTs signed with ``JWT_SECRET``, and ``JWT_ADMIN_TOKEN``."""
    return servers.shared("jwt")


@pytest.fixture(scope="session")
def make_dev_server(servers: Servers) -> DevServer:
    """The ``make_dev`` preset: auth on, nothing configured (one user, no token)."""
    return servers.shared("make_dev")


@pytest.fixture(scope="session")
def stub_openai() -> Iterator[StubOpenAI]:
    """The stub OpenAI-compatible provider the ``stub_provider`` server talks to.

    Tests register the models they use on it (``PROVIDER_MODEL`` is the server's default).
    """
    stub = StubOpenAI().start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture(scope="session")
def provider_server(servers: Servers, stub_openai: StubOpenAI) -> DevServer:
    """The ``stub_provider`` preset: the real chat model client against ``stub_openai``."""
    return servers.shared("stub_provider", env={"OPENAI_BASE_URL": stub_openai.base_url})


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    """The real local model (examples/local_model.py), fetched and built on first use."""
    import local_model

    log = tmp_path_factory.mktemp("local-model") / "llama-server.log"
    model = local_model.start(log=log)
    try:
        yield model
    finally:
        model.stop()


@pytest.fixture(scope="session")
def real_server(servers: Servers, local_model_server: LocalModel) -> DevServer:
    """The ``local_model`` preset: the graph as deployed, on Postgres, on the local model."""
    return servers.shared("local_model", env=local_model_server.env())
