"""The memory tools through a real `langgraph dev`: forget in Chinese, correct in English.

The shared ``scripted`` server (no auth) serves this module; each test has its own user, who
tells the assistant a few facts and then asks it to forget or correct one. Everything
goes through langgraph-sdk, and the audit trail through the server's ``/memory/audit``
route (which takes ``?user_id=`` when no auth is configured).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from e2e_helpers import new_thread, run_turn, stored_items, unique
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer

pytestmark = pytest.mark.e2e


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
    server: DevServer, client: LangGraphClient
) -> None:
    user = unique("xiaoming")
    thread = await new_thread(client)
    await run_turn(server, client, thread, "我住在杭州，我的狗叫旺财。", user_id=user)
    assert current(await stored_items(client, ["user_facts", user])) == ["住在杭州", "狗叫旺财"]
    [home] = [
        key
        for key, value in (await stored_items(client, ["user_facts", user])).items()
        if value["content"] == "住在杭州"
    ]

    values = await run_turn(server, client, thread, "忘掉我住在杭州这件事", user_id=user)

    assert tool_names(values) == ["search_memory", "forget_memory"]
    assert "住在杭州" in values["messages"][-1]["content"]  # the reply says what was forgotten
    assert values["metrics"]["extraction"] == "skipped"
    assert current(await stored_items(client, ["user_facts", user])) == ["狗叫旺财"]
    assert home not in await stored_items(client, ["user_facts", user])
    [entry] = [e for e in await audit_trail(server, user) if e["action"] != "add"]
    assert entry["action"] == "forget"
    assert (entry["fact_key"], entry["content"]) == (home, "[forgotten]")  # no words kept
    assert (entry["actor"], entry["via"], entry["thread_id"]) == (user, "chat", thread)
    assert await audit_trail(server, unique("stranger")) == []


async def test_correct_in_english_leaves_one_current_fact_with_history(
    server: DevServer, client: LangGraphClient
) -> None:
    user = unique("alice")
    thread = await new_thread(client)
    await run_turn(
        server, client, thread, "My dog is called Bella and I live in Hangzhou.", user_id=user
    )
    before = await stored_items(client, ["user_facts", user])
    [bella] = [key for key, value in before.items() if value["content"] == "Dog is Bella"]

    values = await run_turn(server, client, thread, "Actually my dog is called Max", user_id=user)

    assert tool_names(values) == ["search_memory", "correct_memory"]
    assert "Dog is Max" in values["messages"][-1]["content"]
    after = await stored_items(client, ["user_facts", user])
    assert current(after) == ["Dog is Max", "Lives in Hangzhou"]
    [max_key] = [key for key, value in after.items() if value["content"] == "Dog is Max"]
    assert after[bella]["status"] == "superseded"
    assert after[bella]["superseded_by"] == max_key
    assert after[bella]["history"][-1]["content"] == "Dog is Bella"
    assert after[max_key]["supersedes"] == bella
    # consolidation acted; the tool found it done (additions are audited too)
    [entry] = [e for e in await audit_trail(server, user) if e["action"] != "add"]
    assert (entry["action"], entry["fact_key"], entry["new_fact_key"]) == (
        "supersede",
        bella,
        max_key,
    )
    assert (entry["content"], entry["new_content"]) == ("Dog is Bella", "Dog is Max")
    assert (entry["via"], entry["thread_id"]) == ("chat", thread)
