"""Idle threads that were never compressed still become episodes (retention job)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from assistant import models
from assistant.retention import save_idle_episodes
from devserver import DevServer
from scripted import ScriptedChatModel

pytestmark = pytest.mark.e2e

ADMIN = "maintenance-token-for-the-idle-episode-test-0123456789"
TOKENS = {"alice": "tok-alice-idle", "bob": "tok-bob-idle"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    env: dict[str, str | None] = {
        "ASSISTANT_DEV_TOKENS": ",".join(f"{t}={u}" for u, t in TOKENS.items()),
        "ASSISTANT_ADMIN_TOKEN": ADMIN,
        "ASSISTANT_JWT_SECRET": None,
    }
    workdir: Path = tmp_path_factory.mktemp("idle-episodes")
    with DevServer(workdir=workdir, auth=True, env=env) as running:
        yield running


def client_for(server: DevServer, token: str):  # type: ignore[no-untyped-def]
    return get_client(url=server.url, api_key=None, headers={"Authorization": f"Bearer {token}"})


async def say(client, thread_id: str, text: str) -> dict:  # type: ignore[no-untyped-def]
    payload = {"messages": [{"role": "user", "content": text}]}
    return await client.runs.wait(thread_id, "assistant", input=payload)


async def test_a_short_idle_thread_becomes_an_episode_recalled_elsewhere(
    server: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = [client_for(server, token) for token in (TOKENS["alice"], ADMIN, TOKENS["bob"])]
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
