"""The memory tools through a real `langgraph dev`: forget in Chinese, correct in English.

One scripted server without auth serves this module; each test has its own user, who
tells the assistant a few facts and then asks it to forget or correct one. Everything
goes through langgraph-sdk, and the audit trail through the server's ``/memory/audit``
route (which takes ``?user_id=`` when no auth is configured).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer

pytestmark = pytest.mark.e2e

ASSISTANT_ID = "assistant"
"""The graph id in the langgraph.json that DevServer writes."""


@pytest.fixture(scope="module")
def tools_server(server: DevServer) -> DevServer:
    """The suite's shared scripted server without auth."""
    return server


@pytest.fixture(scope="module")
async def sdk(tools_server: DevServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=tools_server.url, api_key=None)
    try:
        yield client
    finally:
        await client.aclose()


def new_user(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def say(
    server: DevServer, sdk: LangGraphClient, thread_id: str, user_id: str, text: str
) -> dict[str, Any]:
    """One user turn; returns the thread's final values (the run must succeed)."""
    result = await sdk.runs.wait(
        thread_id,
        ASSISTANT_ID,
        input={"messages": [{"role": "user", "content": text}]},
        context={"user_id": user_id},
        raise_error=False,
    )
    assert isinstance(result, dict) and "__error__" not in result, (
        f"run failed: {result!r}\nserver log:\n{server.log_tail()}"
    )
    return result


async def facts(sdk: LangGraphClient, user_id: str) -> dict[str, dict[str, Any]]:
    """The user's stored facts, current and superseded, as ``{key: value}``."""
    response = await sdk.store.search_items(["user_facts", user_id], limit=100)
    return {str(item["key"]): dict(item["value"]) for item in response["items"]}


def current(stored: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(value["content"] for value in stored.values() if value["status"] == "current")


def tool_names(values: dict[str, Any]) -> list[str]:
    """The tools called in the latest turn of a thread, in order."""
    messages = values["messages"]
    start = max(i for i, message in enumerate(messages) if message["type"] == "human")
    return [
        call["name"]
        for message in messages[start + 1 :]
        if message["type"] == "ai"
        for call in message.get("tool_calls") or []
    ]


async def audit_trail(server: DevServer, user_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        response = await http.get("/memory/audit", params={"user_id": user_id})
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()["audit"]
    return entries


async def test_forget_in_chinese_deletes_the_fact_and_the_audit_route_shows_it(
    tools_server: DevServer, sdk: LangGraphClient
) -> None:
    user = new_user("xiaoming")
    thread = str((await sdk.threads.create())["thread_id"])
    await say(tools_server, sdk, thread, user, "我住在杭州，我的狗叫旺财。")
    assert current(await facts(sdk, user)) == ["住在杭州", "狗叫旺财"]
    [home] = [
        key for key, value in (await facts(sdk, user)).items() if value["content"] == "住在杭州"
    ]

    values = await say(tools_server, sdk, thread, user, "忘掉我住在杭州这件事")

    assert tool_names(values) == ["search_memory", "forget_memory"]
    assert "住在杭州" in values["messages"][-1]["content"]  # the reply says what was forgotten
    assert values["metrics"]["extraction"] == "skipped"
    assert current(await facts(sdk, user)) == ["狗叫旺财"]
    assert home not in await facts(sdk, user)
    [entry] = await audit_trail(tools_server, user)
    assert entry["action"] == "forget"
    assert (entry["fact_key"], entry["content"]) == (home, "住在杭州")
    assert (entry["actor"], entry["via"], entry["thread_id"]) == (user, "chat", thread)
    assert await audit_trail(tools_server, new_user("stranger")) == []


async def test_correct_in_english_leaves_one_current_fact_with_history(
    tools_server: DevServer, sdk: LangGraphClient
) -> None:
    user = new_user("alice")
    thread = str((await sdk.threads.create())["thread_id"])
    await say(tools_server, sdk, thread, user, "My dog is called Bella and I live in Hangzhou.")
    before = await facts(sdk, user)
    [bella] = [key for key, value in before.items() if value["content"] == "Dog is Bella"]

    values = await say(tools_server, sdk, thread, user, "Actually my dog is called Max")

    assert tool_names(values) == ["search_memory", "correct_memory"]
    assert "Dog is Max" in values["messages"][-1]["content"]
    after = await facts(sdk, user)
    assert current(after) == ["Dog is Max", "Lives in Hangzhou"]
    [max_key] = [key for key, value in after.items() if value["content"] == "Dog is Max"]
    assert after[bella]["status"] == "superseded"
    assert after[bella]["superseded_by"] == max_key
    assert after[bella]["history"][-1]["content"] == "Dog is Bella"
    assert after[max_key]["supersedes"] == bella
    [entry] = await audit_trail(tools_server, user)  # consolidation acted; the tool found it done
    assert (entry["action"], entry["fact_key"], entry["new_fact_key"]) == (
        "supersede",
        bella,
        max_key,
    )
    assert (entry["content"], entry["new_content"]) == ("Dog is Bella", "Dog is Max")
    assert (entry["via"], entry["thread_id"]) == ("chat", thread)
