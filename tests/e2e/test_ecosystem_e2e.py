"""A chat UI's calls against the served graph, with custom auth on (the `dev_tokens` server).

These tests make the calls agent-chat-ui (langchain-ai/agent-chat-ui, through the
LangGraph SDK's ``useStream``) makes, with a bearer token in the ``Authorization``
header: create a thread, stream each turn with ``values`` and ``messages-tuple``
(subgraphs on, resumable, no context), then read the thread's state and history and
list the user's threads. They check what such a UI renders from: typed message dicts
with ids, token chunks from the ``respond`` node, and tool calls paired with their
tool messages.

The conversation is streamed once per module (`conversation`); each test inspects
one part of it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from e2e_helpers import ASSISTANT_ID, DEV_TOKENS, connect
from langgraph_sdk.client import LangGraphClient

from devserver import DevServer

pytestmark = pytest.mark.e2e

USER = "ui-alice"
"""This module's user on the shared ``dev_tokens`` server."""
TOKEN = DEV_TOKENS[USER]

FIRST = "Hi, I'm Alice and I live in Hangzhou"
SECOND = "What's a good name for a cat?"
THIRD = "what do you remember about me?"


# --------------------------------------------------------------------------- the conversation


@dataclass(frozen=True)
class Turn:
    """One streamed run: the human message sent and every stream part, in order."""

    message: dict[str, Any]
    parts: list[tuple[str, Any]]

    @property
    def events(self) -> list[str]:
        return [event for event, _ in self.parts]

    @property
    def values(self) -> list[dict[str, Any]]:
        return [data for event, data in self.parts if event == "values"]

    @property
    def chunks(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The ``messages-tuple`` events: ``(message chunk, metadata)`` pairs."""
        return [(data[0], data[1]) for event, data in self.parts if event == "messages"]

    @property
    def final(self) -> list[dict[str, Any]]:
        """The messages of the last ``values`` event."""
        messages: list[dict[str, Any]] = self.values[-1]["messages"]
        return messages

    @property
    def new_messages(self) -> list[dict[str, Any]]:
        """The final messages from this turn's human message on."""
        start = max(i for i, message in enumerate(self.final) if message["type"] == "human")
        return self.final[start:]


@dataclass(frozen=True)
class Conversation:
    server: DevServer
    sdk: LangGraphClient
    thread: dict[str, Any]
    turns: list[Turn]

    @property
    def thread_id(self) -> str:
        return str(self.thread["thread_id"])


def chat_ui_message(text: str) -> dict[str, Any]:
    """A human message as agent-chat-ui sends it: its own id and a list of content blocks."""
    return {"id": str(uuid.uuid4()), "type": "human", "content": [{"type": "text", "text": text}]}


async def stream_turn(
    sdk: LangGraphClient, thread_id: str, message: dict[str, Any], **options: Any
) -> Turn:
    """Stream one run the way ``useStream().submit`` does; no context, no config."""
    parts: list[tuple[str, Any]] = []
    async for part in sdk.runs.stream(
        thread_id,
        ASSISTANT_ID,
        input={"messages": [message]},
        stream_mode=["values", "messages-tuple"],
        stream_subgraphs=True,
        stream_resumable=True,
        on_disconnect="continue",
        **options,
    ):
        parts.append((part.event, part.data))
    return Turn(message=message, parts=parts)


@pytest.fixture(scope="module")
async def conversation(dev_tokens_server: DevServer) -> AsyncIterator[Conversation]:
    """Three turns on one thread: a fact, a plain question, and a memory-tool request."""
    sdk = connect(dev_tokens_server, TOKEN)
    try:
        thread = await sdk.threads.create()
        thread_id = str(thread["thread_id"])
        turns = [
            await stream_turn(sdk, thread_id, {"type": "human", "content": FIRST}),
            await stream_turn(
                sdk, thread_id, chat_ui_message(SECOND), multitask_strategy="interrupt"
            ),
            await stream_turn(sdk, thread_id, chat_ui_message(THIRD)),
        ]
        for turn in turns:
            assert "error" not in turn.events, (
                f"run failed: {turn.parts}\nserver log:\n{dev_tokens_server.log_tail()}"
            )
        yield Conversation(server=dev_tokens_server, sdk=sdk, thread=dict(thread), turns=turns)
    finally:
        await sdk.aclose()


# --------------------------------------------------------------------------- streaming


def test_thread_is_created_for_the_signed_in_user(conversation: Conversation) -> None:
    assert conversation.thread["metadata"]["owner"] == USER


def test_each_run_streams_metadata_then_values_and_messages(
    conversation: Conversation,
) -> None:
    for turn in conversation.turns:
        assert turn.events[0] == "metadata"
        assert turn.parts[0][1]["run_id"]
        assert set(turn.events) == {"metadata", "values", "messages"}
        assert turn.events[-1] == "values"


def test_values_events_carry_typed_messages_with_ids(conversation: Conversation) -> None:
    for turn in conversation.turns:
        for values in turn.values:
            assert isinstance(values["messages"], list)
            for message in values["messages"]:
                assert message["type"] in {"human", "ai", "tool"}, message
                assert message["id"], message
    first = conversation.turns[0]
    assert first.values[0]["messages"][-1]["type"] == "human"
    assert first.values[0]["messages"][-1]["content"] == FIRST
    for turn in conversation.turns:
        reply = turn.final[-1]
        assert reply["type"] == "ai"
        assert not reply.get("tool_calls")
        assert reply["content"].startswith("[scripted]")


def test_messages_tuple_streams_the_reply_token_by_token_from_respond(
    conversation: Conversation,
) -> None:
    for turn in conversation.turns[:2]:  # plain replies: every chunk is the reply
        reply = turn.final[-1]
        assert len(turn.chunks) > 1
        for chunk, metadata in turn.chunks:
            assert chunk["type"] == "AIMessageChunk"
            assert chunk["id"] == reply["id"]
            assert metadata["langgraph_node"] == "respond"  # never remember's extraction
            assert metadata["thread_id"] == conversation.thread_id
        assert "".join(chunk["content"] for chunk, _ in turn.chunks) == reply["content"]


def test_client_message_ids_and_content_blocks_are_kept(conversation: Conversation) -> None:
    """agent-chat-ui matches its optimistic message to the server's by id."""
    second = conversation.turns[1]
    [sent] = [m for m in second.final if m["id"] == second.message["id"]]
    assert sent["type"] == "human"
    assert sent["content"] == second.message["content"]
    assert second.values[0]["messages"][-1]["id"] == second.message["id"]


def test_second_turn_continues_the_thread_and_remembers_the_user(
    conversation: Conversation,
) -> None:
    second = conversation.turns[1]
    assert [m["type"] for m in second.final] == ["human", "ai", "human", "ai"]
    assert second.final[0]["content"] == FIRST
    assert "Lives in Hangzhou" in second.final[-1]["content"]  # learned in the first turn


async def test_memory_was_stored_under_the_authenticated_user(
    conversation: Conversation,
) -> None:
    response = await conversation.sdk.store.search_items(["user_facts", USER], limit=100)
    contents = [item["value"]["content"] for item in response["items"]]
    assert "Lives in Hangzhou" in contents


def test_tool_call_turn_renders_like_a_chat_ui_expects(conversation: Conversation) -> None:
    third = conversation.turns[2]
    human, call, result, reply = third.new_messages
    assert human["id"] == third.message["id"]
    assert call["type"] == "ai"
    [tool_call] = call["tool_calls"]
    assert tool_call["name"] == "search_memory"
    assert tool_call["id"] and isinstance(tool_call["args"], dict)
    assert result["type"] == "tool"
    assert result["tool_call_id"] == tool_call["id"]  # how a UI pairs a call with its result
    assert result["name"] == "search_memory"
    assert result["status"] == "success"
    assert "Lives in Hangzhou" in result["content"]
    assert reply["type"] == "ai" and not reply["tool_calls"]
    assert "Lives in Hangzhou" in reply["content"]
    # A values event showed the call before its result, so the UI can render it pending.
    assert any(values["messages"][-1]["id"] == call["id"] for values in third.values)


def test_tool_call_and_tool_result_are_streamed_as_messages(conversation: Conversation) -> None:
    third = conversation.turns[2]
    _, call, result, reply = third.new_messages
    nodes = {chunk["id"]: metadata["langgraph_node"] for chunk, metadata in third.chunks}
    assert nodes == {call["id"]: "respond", result["id"]: "use_tools", reply["id"]: "respond"}
    streamed_calls = [
        tool_chunk
        for chunk, _ in third.chunks
        if chunk["id"] == call["id"]
        for tool_chunk in chunk.get("tool_call_chunks") or []
    ]
    assert [(c["name"], c["id"]) for c in streamed_calls] == [
        ("search_memory", call["tool_calls"][0]["id"])
    ]


# --------------------------------------------------------------------------- state, history, list


async def test_get_state_returns_the_final_values(conversation: Conversation) -> None:
    state = await conversation.sdk.threads.get_state(conversation.thread_id)
    assert state["values"]["messages"] == conversation.turns[-1].final
    assert state["next"] == []
    assert state["checkpoint"]["checkpoint_id"]


async def test_get_history_gives_each_message_a_first_seen_state(
    conversation: Conversation,
) -> None:
    """agent-chat-ui branches and regenerates from a message's first state's parent."""
    sdk = conversation.sdk
    state = await sdk.threads.get_state(conversation.thread_id)
    history = await sdk.threads.get_history(conversation.thread_id, limit=1000)
    assert history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    assert all(entry["parent_checkpoint"] for entry in history[:-1])
    oldest_first = list(reversed(history))
    for message in state["values"]["messages"]:
        first_seen = next(
            entry
            for entry in oldest_first
            if any(m["id"] == message["id"] for m in (entry["values"] or {}).get("messages", []))
        )
        assert first_seen["parent_checkpoint"], message


async def test_thread_list_shows_the_thread(conversation: Conversation) -> None:
    threads = await conversation.sdk.threads.search(metadata={"graph_id": ASSISTANT_ID}, limit=100)
    assert conversation.thread_id in [thread["thread_id"] for thread in threads]


# --------------------------------------------------------------------------- connecting


async def test_info_answers_the_key_agent_chat_ui_sends(dev_tokens_server: DevServer) -> None:
    """agent-chat-ui checks ``GET /info`` with its ``X-Api-Key``; without a key it is closed."""
    async with httpx.AsyncClient(base_url=dev_tokens_server.url, timeout=10) as http:
        signed = await http.get("/info", headers={"X-Api-Key": TOKEN})
        anonymous = await http.get("/info")
    assert signed.status_code == 200
    assert anonymous.status_code == 401


async def test_an_api_key_header_is_taken_as_the_bearer_token(dev_tokens_server: DevServer) -> None:
    """agent-chat-ui sends its key as ``X-Api-Key``: it works unchanged, a wrong key does not."""
    async with httpx.AsyncClient(base_url=dev_tokens_server.url, timeout=10) as http:
        good = await http.post("/threads/search", json={"limit": 10}, headers={"X-Api-Key": TOKEN})
        bad = await http.post("/threads/search", json={"limit": 10}, headers={"X-Api-Key": "nope"})
    assert good.status_code == 200, good.text
    assert bad.status_code == 401
    assert bad.json()["detail"] == "Unknown token."
