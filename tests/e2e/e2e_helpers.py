"""Helpers for the end-to-end tests: start servers, send turns, read the scripted log.

Everything here talks to `langgraph dev` through langgraph-sdk only. The scripted
model appends one JSON line per model call to ``server.scripted_log_path``; runs from
every test land in the same log, so each test puts a unique marker in its user text
and finds the `respond` call whose ``latest`` field contains it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import httpx2
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, TextContent

import local_model
from assistant.config.constants import MCP_PATH
from devserver import DevServer
from prompt_log import (  # noqa: F401 (re-exported for the e2e modules)
    ScriptedLog,
    block_lines,
    message_tokens,
    prompt_episodes,
    prompt_facts,
    prompt_profile,
    section,
    thread_tokens,
)

ASSISTANT_ID = "assistant"
"""The graph id in the langgraph.json that DevServer writes."""


# --------------------------------------------------------------------------- presets

BUDGET_SETTINGS = "user_id,max_context_tokens,keep_recent_tokens,summary_max_tokens"
"""ASSISTANT_RUN_SETTINGS for auth servers whose tests shrink the budgets to compress sooner
(ordinary users may not change them out of the box)."""

FAIL_MARKER = "FAILNOW"
"""The ``faulty`` preset's model raises for any request whose messages contain this."""

DEV_USERS = ("alice", "bob", "cli-alice", "cli-bob", "ui-alice")
"""The ``dev_tokens`` preset's users: each module that shares it has users of its own."""

DEV_TOKENS = {user: f"tok-{user}" for user in DEV_USERS}
"""The ``dev_tokens`` preset's dev token of each user."""

ADMIN_TOKEN = "e2e-admin-token-for-the-maintenance-jobs-0123456789"
"""The ``dev_tokens`` preset's maintenance token (the retention job runs with it)."""

JWT_SECRET = "e2e-security-secret-0123456789-abcdefghijklmnop"
"""The ``jwt`` preset's ASSISTANT_JWT_SECRET (at least 32 bytes, so PyJWT does not warn)."""

JWT_ADMIN_TOKEN = "e2e-security-admin-token-0123456789"
"""The ``jwt`` preset's maintenance token, as a deployment that runs the retention job
would set one."""

SLOW_MARK = "[slow-reply]"
"""With the ``jwt`` preset, a user message containing this gets a reply that takes seconds
(to catch a run in flight)."""

PROVIDER_KEY = "sk-e2e-secret-987654321"
"""The ``stub_provider`` preset's OPENAI_API_KEY: no error message may show it."""

PROVIDER_MODEL = "stub-default"
"""The ``stub_provider`` preset's ASSISTANT_MODEL, registered on the stub in ``full`` mode."""


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One kind of e2e server: the DevServer options and the environment it starts with.

    Every server starts with none of the shell's provider keys or ``ASSISTANT_*``
    settings (``inherit_settings=False``), so ``env`` is all that configures it.
    """

    purpose: str
    """What the server is, in a line (shown when it fails to start)."""
    scripted: bool = True
    """The scripted model in the model seam; False serves the graph as deployed."""
    auth: bool = False
    """The project's custom auth (`assistant.server.auth`)."""
    storage: Literal["memory", "postgres"] = "memory"
    """The dev runtime's pickles, or Postgres (what ``make dev`` serves)."""
    env: dict[str, str] = field(default_factory=dict)
    """The server's settings."""
    dump_routes: bool = False
    """Write every route the running server answers to ``workdir/routes.json``."""


PRESETS: dict[str, Preset] = {
    "scripted": Preset(
        purpose="the scripted model, no auth: the run context's user_id picks the user",
    ),
    "quiet": Preset(
        purpose="the same as `scripted`, for tests that read its whole model log: one "
        "worker's tests use it, one at a time",
    ),
    "faulty": Preset(
        purpose=f"the scripted model, no auth, failing any request that contains {FAIL_MARKER}",
        env={"ASSISTANT_SCRIPTED_FAIL_ON": FAIL_MARKER},
    ),
    "dev_tokens": Preset(
        purpose="custom auth with a dev token per user and a maintenance token",
        auth=True,
        env={
            "ASSISTANT_DEV_TOKENS": ",".join(f"{t}={user}" for user, t in DEV_TOKENS.items()),
            "ASSISTANT_ADMIN_TOKEN": ADMIN_TOKEN,
            "ASSISTANT_RUN_SETTINGS": BUDGET_SETTINGS,
        },
    ),
    "jwt": Preset(
        purpose="custom auth with HS256 JWTs and a maintenance token, as deployed",
        auth=True,
        env={
            "ASSISTANT_JWT_SECRET": JWT_SECRET,
            "ASSISTANT_ADMIN_TOKEN": JWT_ADMIN_TOKEN,
            "ASSISTANT_SCRIPTED_SLOW_ON": SLOW_MARK,
        },
        dump_routes=True,
    ),
    "make_dev": Preset(
        purpose="custom auth with nothing configured: `make dev`'s single user, no token",
        auth=True,
        dump_routes=True,
    ),
    "stub_provider": Preset(
        purpose="the graph as deployed, its chat model the stub OpenAI server (OPENAI_BASE_URL)",
        scripted=False,
        env={
            "OPENAI_API_KEY": PROVIDER_KEY,
            "ASSISTANT_MODEL": PROVIDER_MODEL,
            "ASSISTANT_MODEL_MAX_RETRIES": "0",
            "ASSISTANT_MODEL_TIMEOUT_S": "2",
            # Each test picks its "provider" by context.model.
            "ASSISTANT_RUN_SETTINGS": "user_id,model",
        },
    ),
    "no_model": Preset(
        purpose="the graph as deployed with no chat model configured",
        scripted=False,
    ),
    "local_model": Preset(
        purpose="the graph as deployed on `make dev`'s storage, its chat model the real local "
        "model (examples/local_model.py); OPENAI_BASE_URL is the running llama-server's",
        scripted=False,
        storage="postgres",
        env={
            "ASSISTANT_MODEL": local_model.MODEL_NAME,
            "ASSISTANT_MODEL_TIMEOUT_S": str(local_model.TIMEOUT_S),
            "ASSISTANT_MODEL_TEMPERATURE": "0",  # replies as deterministic as the model allows
            "ASSISTANT_RUN_SETTINGS": "user_id,max_context_tokens,keep_recent_tokens,"
            "extraction_hold_s",
        },
    ),
    "durable": Preset(
        purpose="the scripted model, no auth, everything in Postgres (`make dev`'s storage)",
        storage="postgres",
    ),
}
"""Every kind of server the e2e tests use, by name (see the ``servers`` fixture)."""


class Servers:
    """Starts servers from :data:`PRESETS`: a shared one once a session, or a test's own.

    Under pytest-xdist, the workers share a shared server too. The first process that asks
    for it starts it and leaves its address in ``root`` (a folder every worker sees); the
    others connect to it. Each process that used it signs off when its session ends, and
    the last one stops it. A test that must own its server (restart, crash, a setting of
    its own) calls :meth:`start` and stops it itself.
    """

    def __init__(self, root: Path, process: str) -> None:
        self.root = root
        self.process = process
        self._shared: dict[str, DevServer] = {}
        root.mkdir(parents=True, exist_ok=True)

    def shared(self, name: str, **changes: Any) -> DevServer:
        """The session's server of preset ``name``, started at the first call.

        ``changes`` apply only when this call starts it: pass them from one fixture only.
        """
        if name in self._shared:
            return self._shared[name]
        users = self.root / f"{name}.users"
        with _locked(self.root / f"{name}.lock"):
            state = self.root / f"{name}.json"
            if state.exists():
                address = json.loads(state.read_text(encoding="utf-8"))
                server = DevServer(
                    workdir=Path(address["workdir"]),
                    port=address["port"],
                    scripted=address["scripted"],
                )
            else:
                workdir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))
                server = self.start(name, workdir, **changes)
                assert server.process is not None
                address = {
                    "workdir": str(workdir),
                    "port": server.port,
                    "scripted": server.scripted,
                    "pid": server.process.pid,
                }
                state.write_text(json.dumps(address), encoding="utf-8")
            users.mkdir(exist_ok=True)
            (users / self.process).touch()
        self._shared[name] = server
        return server

    def start(self, name: str, workdir: Path, **changes: Any) -> DevServer:
        """Start a new server of preset ``name`` in ``workdir`` and wait until it answers.

        ``changes`` are DevServer options over the preset's; an ``env`` is merged into the
        preset's (a None value removes a variable).
        """
        try:
            preset = PRESETS[name]
        except KeyError:
            raise ValueError(
                f"unknown server preset {name!r}; expected one of {list(PRESETS)}"
            ) from None
        env: dict[str, str | None] = {**preset.env, **changes.pop("env", {})}
        if preset.dump_routes:
            env["ASSISTANT_ROUTES_DUMP"] = str(workdir / "routes.json")
        options: dict[str, Any] = {
            "scripted": preset.scripted,
            "auth": preset.auth,
            "storage": preset.storage,
            **changes,
        }
        server = DevServer(workdir=workdir, env=env, inherit_settings=False, **options)
        with (self.root / "starts.log").open("a", encoding="utf-8") as starts:
            starts.write(f"{name} {self.process} {workdir}\n")
        try:
            return server.start()
        except Exception as error:
            raise RuntimeError(f"the {name!r} server ({preset.purpose}) did not start") from error

    def sign_off(self) -> None:
        """This process is done with the shared servers: stop those nobody else uses."""
        for name, server in self._shared.items():
            users = self.root / f"{name}.users"
            with _locked(self.root / f"{name}.lock"):
                (users / self.process).unlink(missing_ok=True)
                if any(users.iterdir()):
                    # Another worker still uses it: leave it running, and keep this
                    # process's handle on it (its process, its log) until exit.
                    _LEFT_RUNNING.append(server)
                    continue
                state = self.root / f"{name}.json"
                address = json.loads(state.read_text(encoding="utf-8"))
                state.unlink()
                if server.process is not None:
                    server.stop()  # this process started it
                else:
                    _stop_process_group(int(address["pid"]))
        self._shared.clear()


_LEFT_RUNNING: list[DevServer] = []
"""Shared servers this process started and another still uses (the last user stops them)."""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (between processes) for the block."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, waiting for its parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _stop_process_group(pid: int, timeout_s: float = 30.0) -> None:
    """Stop a server another process started, as DevServer.stop does: SIGINT, then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not _running(pid):
            return


StartServer = Callable[..., DevServer]
"""The ``own_server`` fixture: ``own_server(preset, workdir, **changes) -> DevServer``."""


def connect(server: DevServer, token: str | None = None) -> LangGraphClient:
    """A langgraph-sdk client for ``server``, as the user of ``token`` (or with no header).

    ``api_key=None``: it sends no key from the environment.
    """
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    return get_client(url=server.url, api_key=None, headers=headers)


@asynccontextmanager
async def mcp_session(
    server: DevServer,
    token: str | None = None,
    *,
    client: str = "e2e-agent",
    headers: dict[str, str] | None = None,
    user_id: str | None = None,
    handshake: bool = True,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the server's ``/memory/mcp``, through the SDK's client.

    ``client`` is the ``clientInfo.name`` it gives; ``user_id`` is sent as ``?user_id=``
    (what a server without auth goes by). ``handshake=False`` speaks protocol 2026-07-28
    (``server/discover``, no ``initialize``, no session: the name goes with each request).
    """
    sent = {"Authorization": f"Bearer {token}"} if token is not None else {}
    sent.update(headers or {})
    query = f"?user_id={user_id}" if user_id else ""
    async with (
        httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        streamable_http_client(f"{server.url}{MCP_PATH}{query}", http_client=http) as streams,
        ClientSession(*streams, client_info=Implementation(name=client, version="1.0")) as session,
    ):
        if handshake:
            await session.initialize()
        else:
            await session.discover()
        yield session


def tool_text(result: CallToolResult) -> str:
    """The text a tool call answered (what the client's model reads)."""
    return "\n".join(part.text for part in result.content if isinstance(part, TextContent))


def cli_env(url: str, token: str | None = None) -> dict[str, str]:
    """The `assistant` CLI's environment: this server, this token (or none), no colour,
    wide tables."""
    env = {k: v for k, v in os.environ.items() if k not in ("ASSISTANT_URL", "ASSISTANT_TOKEN")}
    env.update(ASSISTANT_URL=url, NO_COLOR="1", COLUMNS="200", PYTHONIOENCODING="utf-8")
    if token is not None:
        env["ASSISTANT_TOKEN"] = token
    return env


# --------------------------------------------------------------------------- runs


def unique(prefix: str) -> str:
    """A fresh id such as ``alice-3f2a9c1b``, for user ids and markers no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def user_message(text: str) -> dict[str, Any]:
    """The run input for one user turn."""
    return {"messages": [{"role": "user", "content": text}]}


async def new_thread(sdk: LangGraphClient) -> str:
    """Create an empty thread and return its id."""
    thread = await sdk.threads.create()
    return str(thread["thread_id"])


async def run_turn(
    server: DevServer, sdk: LangGraphClient, thread_id: str, text: str, **context: Any
) -> dict[str, Any]:
    """Send one user turn, wait for the run, and return the thread's final values.

    ``context`` is the run context: ``user_id`` and any budgets. A failed run fails the
    test with the run's error and the end of the server log.
    """
    result = await sdk.runs.wait(
        thread_id, ASSISTANT_ID, input=user_message(text), context=context, raise_error=False
    )
    assert isinstance(result, dict), f"unexpected run result {result!r}"
    assert "__error__" not in result, (
        f"run failed: {result['__error__']}\nserver log:\n{server.log_tail()}"
    )
    return result


async def stored_items(sdk: LangGraphClient, namespace: list[str]) -> dict[str, dict[str, Any]]:
    """Every stored item in ``namespace`` as ``{key: value}``, through the HTTP store API."""
    response = await sdk.store.search_items(namespace, limit=100)
    items = response["items"]
    assert len(items) < 100, f"more than 99 items in {namespace}; raise the limit"
    return {str(item["key"]): dict(item["value"]) for item in items}


async def stored_facts(sdk: LangGraphClient, user_id: str) -> list[dict[str, Any]]:
    """Every stored fact value in ``("user_facts", user_id)``, current and superseded."""
    return list((await stored_items(sdk, ["user_facts", user_id])).values())


async def current_facts(sdk: LangGraphClient, user_id: str) -> dict[str, dict[str, Any]]:
    """The user's current (not superseded) facts, as ``{key: value}``."""
    items = await stored_items(sdk, ["user_facts", user_id])
    return {key: value for key, value in items.items() if value.get("status") == "current"}


async def stored_episodes(sdk: LangGraphClient, user_id: str) -> dict[str, dict[str, Any]]:
    """The user's saved episodes in ``("user_episodes", user_id)``, as ``{thread_id: value}``."""
    return await stored_items(sdk, ["user_episodes", user_id])


async def thread_values(sdk: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The thread's current state values, as ``threads.get_state`` returns them."""
    values = (await sdk.threads.get_state(thread_id))["values"]
    assert isinstance(values, dict), f"unexpected state values {values!r}"
    return values


# --------------------------------------------------------------------------- attacks


@dataclass(frozen=True)
class Outcome:
    """One attack, what should happen, and what the server did."""

    attack: str
    expected: str
    observed: str
    held: bool


def response_detail(response: httpx.Response) -> str:
    """The ``detail`` of an error response, or the start of its text."""
    try:
        body = response.json()
    except Exception:  # a streamed response that was never read, or not JSON
        try:
            return response.text.strip()[:120]
        except Exception:
            return ""
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return str(detail).replace("\n", " ")[:120]


@dataclass
class AttackLog:
    """The attacks a module tried and their outcomes, printed as a table at the end."""

    title: str
    outcomes: list[Outcome] = field(default_factory=list)

    def record(self, attack: str, expected: str, observed: str, held: bool) -> None:
        """Record an attack's outcome, then fail the test unless the defence held."""
        self.outcomes.append(Outcome(attack, expected, observed, held))
        assert held, f"{attack}: expected {expected}; observed {observed}"

    async def expect_refused(
        self, attack: str, call: Awaitable[Any], status: int, detail: str = ""
    ) -> str:
        """Await ``call``; it must fail with HTTP ``status`` and a detail containing ``detail``."""
        expected = f"HTTP {status}" + (f" ({detail})" if detail else "")
        try:
            result = await call
        except httpx.HTTPStatusError as error:
            observed_status = error.response.status_code
            observed_detail = response_detail(error.response)
            held = observed_status == status and detail in observed_detail
            self.record(attack, expected, f"HTTP {observed_status}: {observed_detail}", held)
            return observed_detail
        self.record(attack, expected, f"accepted: {str(result)[:100]}", False)
        raise AssertionError("unreachable")

    def table(self) -> str:
        """The outcomes, one line each: ``#. verdict | attack | expected | observed``."""
        lines = []
        for number, outcome in enumerate(self.outcomes, 1):
            verdict = "held" if outcome.held else "BREACHED"
            observed = outcome.observed
            if outcome.held and len(observed) > 90:  # a breach is shown in full
                observed = observed[:87] + "..."
            lines.append(
                f"{number:>3}. {verdict} | {outcome.attack} | {outcome.expected} | {observed}"
            )
        held = sum(outcome.held for outcome in self.outcomes)
        total = len(self.outcomes)
        head = f"{self.title}: {total} tried, {held} held, {total - held} breached"
        return "\n".join([head, "  #. verdict | attack | expected | observed", *lines])


def print_past_capture(pytestconfig: pytest.Config, text: str) -> None:
    """Print ``text`` even though pytest captures output."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    if capture is None:
        print(text)
        return
    with capture.global_and_fixture_disabled():
        print("\n" + text, flush=True)


def route_list(path: Path) -> list[tuple[str, str]]:
    """``(method, path)`` of every route a server dumped (``ASSISTANT_ROUTES_DUMP``)."""
    routes = json.loads(path.read_text(encoding="utf-8"))
    return sorted({(method, route["path"]) for route in routes for method in route["methods"]})


def concrete(path: str) -> str:
    """A route's path with every ``{parameter}`` filled with a fresh UUID (or a word)."""
    return re.sub(
        r"\{([^}:]+)(?::[^}]+)?\}",
        lambda m: "x" if m.group(1) == "path" else str(uuid.uuid4()),
        path,
    )
