"""Helpers for the end-to-end tests: start servers, send turns, read the scripted log.

Everything here talks to `langgraph dev` through langgraph-sdk only. The scripted
model appends one JSON line per model call to ``server.scripted_log_path``; runs from
every test land in the same log, so each test puts a unique marker in its user text
and finds the `respond` call whose ``latest`` field contains it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from devserver import PROVIDER_ENV, DevServer
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

PROVIDER_ENV_VARS = PROVIDER_ENV
"""Removed from every e2e server's environment, whatever the developer's shell exports.

DevServer strips them only when ``scripted``; a server started with ``scripted=False``
inherits them all."""


# --------------------------------------------------------------------------- servers


def start_server(workdir: Path, **options: Any) -> DevServer:
    """Start a DevServer in ``workdir`` with no provider settings in its environment."""
    server = DevServer(workdir=workdir, **options)
    with pytest.MonkeyPatch.context() as env:
        for name in PROVIDER_ENV_VARS:
            env.delenv(name, raising=False)
        server.start()  # the process copies the environment here, at Popen
    return server


BUDGET_SETTINGS = "user_id,max_context_tokens,keep_recent_tokens,summary_max_tokens"
"""ASSISTANT_RUN_SETTINGS for auth servers whose tests shrink the budgets to compress sooner
(ordinary users may not change them out of the box)."""

StartServer = Callable[..., DevServer]
"""The ``start_dev_server`` fixture: ``start(workdir, **DevServer options) -> DevServer``."""


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
