"""Idle threads that were never compressed still become episodes (retention job).

The job sweeps every idle thread on the server, so this test owns a ``dev_tokens`` server
instead of sharing one with other modules' threads.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from e2e_helpers import ADMIN_TOKEN, DEV_TOKENS, StartServer, connect

from assistant.inference import models
from assistant.server.retention import save_idle_episodes
from scripted import ScriptedChatModel

pytestmark = pytest.mark.e2e


async def say(client, thread_id: str, text: str) -> dict:  # type: ignore[no-untyped-def]
    payload = {"messages": [{"role": "user", "content": text}]}
    return await client.runs.wait(thread_id, "assistant", input=payload)


async def test_a_short_idle_thread_becomes_an_episode_recalled_elsewhere(
    own_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = own_server("dev_tokens")
    tokens = (DEV_TOKENS["alice"], ADMIN_TOKEN, DEV_TOKENS["bob"])
    clients = [connect(server, token) for token in tokens]
    try:
        await check_idle_episodes(server, monkeypatch, *clients)
    finally:
        for client in clients:
            await client.aclose()


async def check_idle_episodes(server, monkeypatch, alice, admin, bob) -> None:  # type: ignore[no-untyped-def]
    thread = (await alice.threads.create())["thread_id"]
    marker = uuid.uuid4().hex[:8]
    await say(alice, thread, f"({marker}) I've decided to fly into Osaka in April.")
    await say(alice, thread, "The budget is about 2000 dollars for flights and hotels.")
    state = await alice.threads.get_state(thread)
    assert not state["values"].get("summary"), "the thread must be too short to compress"

    # The job runs outside the server with the maintenance token and its own model.
    monkeypatch.setattr(models, "get_chat_model", lambda model="": ScriptedChatModel())
    later = datetime.now(UTC) + timedelta(hours=2)
    assert await save_idle_episodes(admin, idle_hours=1, now=datetime.now(UTC)) == []
    saved = await save_idle_episodes(admin, idle_hours=1, now=later)
    assert thread in saved
    episode = await alice.store.get_item(["user_episodes", "alice"], thread)
    assert episode is not None
    assert "Osaka" in episode["value"]["content"]
    assert episode["value"]["thread_id"] == thread
    # Running it again summarises nothing twice.
    assert thread not in await save_idle_episodes(admin, idle_hours=1, now=later)

    # A new thread of alice recalls it; bob's does not.
    other = (await alice.threads.create())["thread_id"]
    values = await say(alice, other, "What did we decide about the Japan trip?")
    assert [e["thread_id"] for e in values["episodes"]] == [thread]
    bobs = (await bob.threads.create())["thread_id"]
    assert (await say(bob, bobs, "What did we decide about the Japan trip?"))["episodes"] == []
