"""The `assistant` command line end to end: the installed script against a real `langgraph dev`.

Two shared servers serve this module: ``scripted``, without auth (the CLI's ``--user``
picks the user), and ``dev_tokens``, with the project's auth (the token picks the user). The
CLI runs as a subprocess, fed through a pipe or a pseudo-terminal; what it did is checked
through langgraph-sdk and the memory API, never by trusting its own output alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pexpect
import pytest
from e2e_helpers import DEV_TOKENS, cli_env, unique
from langgraph_sdk import get_sync_client

from devserver import DevServer, free_port

pytestmark = pytest.mark.e2e

CLI = Path(sys.executable).with_name("assistant")
"""The console script pyproject.toml installs next to this interpreter."""

ALICE, BOB = "cli-alice", "cli-bob"
"""This module's users on the shared ``dev_tokens`` server."""

SMALL_BUDGET = {"max_context_tokens": 120, "keep_recent_tokens": 50, "summary_max_tokens": 80}
"""Budgets so small that three turns compress a thread, so it has a running summary."""


def run_cli(
    url: str, *args: str, input: str | None = None, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``assistant *args`` to completion with ``input`` on a pipe."""
    return subprocess.run(
        [str(CLI), *args],
        input=input,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=cli_env(url, token),
        timeout=60,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """The output of a run that must have succeeded."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def fact_contents(url: str, user: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """``{content: status}`` of every fact stored for ``user``, through the SDK's store API."""
    with get_sync_client(url=url, api_key=None, headers=headers) as sdk:
        items = sdk.store.search_items(["user_facts", user], limit=100)["items"]
    return {str(item["value"]["content"]): str(item["value"]["status"]) for item in items}


def audit(url: str, user: str) -> list[dict[str, Any]]:
    """The user's audit trail from the memory API (a server without auth)."""
    response = httpx.get(f"{url}/memory/audit", params={"user_id": user})
    response.raise_for_status()
    return list(response.json()["audit"])


def seed(url: str, user: str, *texts: str, **context: Any) -> str:
    """A thread of ``user`` (owner metadata as the CLI sets it) with one run per text."""
    with get_sync_client(url=url, api_key=None) as sdk:
        thread_id = str(sdk.threads.create(metadata={"owner": user})["thread_id"])
        for text in texts:
            result = sdk.runs.wait(
                thread_id,
                "assistant",
                input={"messages": [{"role": "user", "content": text}]},
                context={"user_id": user, **context},
                raise_error=False,
            )
            assert isinstance(result, dict) and "__error__" not in result, result
    return thread_id


# --------------------------------------------------------------------------- chat


def test_chat_through_a_pipe_streams_lists_and_forgets(server: DevServer) -> None:
    user = unique("alice")
    script = "My name is Alice and I live in Hangzhou.\n/memories\n/forget Hangzhou\ny\n/quit\n"
    output = ok(run_cli(server.url, "chat", "--user", user, input=script))

    reply, rest = output.split("you> /memories", 1)
    assert "assistant> [scripted] Got it." in reply
    assert "remembered: Name is Alice · Lives in Hangzhou" in reply
    listing, after = rest.split("you> /forget Hangzhou", 1)
    assert "Name is Alice" in listing and "Lives in Hangzhou" in listing
    assert "Forget 'Lives in Hangzhou'? [y/N] y" in after
    assert "Forgotten: Lives in Hangzhou" in after

    assert fact_contents(server.url, user) == {"Name is Alice": "current"}
    trail = audit(server.url, user)
    (entry,) = [entry for entry in trail if entry["action"] != "add"]
    assert entry["action"] == "forget" and entry["content"] == "[forgotten]"  # no words kept
    added = {e["content"] for e in trail if e["action"] == "add"}  # both facts' additions
    assert added == {"Name is Alice", "[forgotten]"}, trail
    assert (entry["actor"], entry["via"], entry["client"]) == (user, "api", "cli")
    with get_sync_client(url=server.url, api_key=None) as sdk:
        (thread,) = sdk.threads.search(metadata={"owner": user})
        messages = sdk.threads.get_state(thread["thread_id"])["values"]["messages"]  # type: ignore[call-overload]
    assert [m["type"] for m in messages] == ["human", "ai"]
    assert messages[1]["content"] in reply, "the streamed text is the stored reply"


def test_chat_in_a_terminal_streams_the_reply(server: DevServer) -> None:
    user = unique("tty")
    child = pexpect.spawn(
        str(CLI),
        ["chat", "--user", user],
        env=cli_env(server.url),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    try:
        child.expect_exact("you>")  # bold: Rich saw a terminal
        child.sendline("I really like green tea.")
        child.expect_exact("assistant>")
        child.expect_exact("[scripted] Got it. What I remember about you: nothing yet.")
        child.expect_exact("remembered: Likes green tea")
        child.expect_exact("you>")
        child.sendline("What do I like?")
        child.expect_exact("recalled: Likes green tea")
        child.expect_exact("you>")
        child.sendeof()  # Ctrl-D
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    assert fact_contents(server.url, user) == {"Likes green tea": "current"}


# --------------------------------------------------------------------------- memories


def test_memories_list_search_forget_and_export(server: DevServer, tmp_path: Path) -> None:
    user = unique("mem")
    url = server.url
    seed(url, user, "I live in Hangzhou.", "I moved from Hangzhou to Chengdu.", "I like green tea.")

    current = ok(run_cli(url, "memories", "list", "--user", user))
    assert "Lives in Chengdu" in current and "Likes green tea" in current
    assert "Lives in Hangzhou" not in current
    everything = ok(run_cli(url, "memories", "list", "--all", "--user", user))
    assert "Lives in Hangzhou" in everything and "superseded" in everything
    assert "by 'Lives in Chengdu'" in everything

    found = ok(run_cli(url, "memories", "search", "tea", "--user", user))
    rows = [line for line in found.splitlines() if "Lives in" in line or "Likes" in line]
    assert "Likes green tea" in rows[0], found

    forgotten = ok(run_cli(url, "memories", "forget", "green tea", "--yes", "--user", user))
    assert "Forgotten: Likes green tea" in forgotten
    assert fact_contents(url, user) == {
        "Lives in Hangzhou": "superseded",
        "Lives in Chengdu": "current",
    }

    target = tmp_path / "export.json"
    ok(run_cli(url, "memories", "export", "--user", user, "--output", str(target)))
    exported = json.loads(target.read_text(encoding="utf-8"))
    assert exported["user_id"] == user
    assert {f["content"]: f["status"] for f in exported["facts"]} == fact_contents(url, user)
    newest = exported["audit"][0]  # the trail may also record the move as a supersede
    assert (newest["action"], newest["content"], newest["via"], newest["client"]) == (
        "forget",
        "[forgotten]",
        "api",
        "cli",
    )
    assert "green tea" not in json.dumps(exported).lower()
    assert isinstance(exported["episodes"], list)


# --------------------------------------------------------------------------- threads


def test_threads_list_show_and_delete(server: DevServer) -> None:
    user = unique("threads")
    url = server.url
    thread_id = seed(
        url,
        user,
        "My name is Tom and I live in Paris.",
        "I am allergic to peanuts and shellfish.",
        "I really like green tea with jasmine flowers.",
        **SMALL_BUDGET,
    )
    other_user = unique("someone-else")
    other = seed(url, other_user, "Hello there.")

    listed = ok(run_cli(url, "threads", "list", "--user", user))
    assert thread_id in listed and other not in listed

    shown = ok(run_cli(url, "threads", "show", thread_id, "--user", user))
    assert "you> I really like green tea with jasmine flowers." in shown
    assert "assistant> [scripted]" in shown
    assert "Summary of earlier messages" in shown and "My name is Tom" in shown
    assert "Last turn" in shown and "compressed" in shown

    deleted = ok(run_cli(url, "threads", "delete", thread_id, "--yes", "--user", user))
    assert f"Deleted thread {thread_id}" in deleted
    with get_sync_client(url=url, api_key=None) as sdk:
        assert [t["thread_id"] for t in sdk.threads.search(metadata={"owner": user})] == []
        assert [t["thread_id"] for t in sdk.threads.search(metadata={"owner": other_user})] == [
            other
        ]


# --------------------------------------------------------------------------- auth and errors


def test_with_auth_the_token_decides_who_you_are(dev_tokens_server: DevServer) -> None:
    url, alice_token, bob_token = dev_tokens_server.url, DEV_TOKENS[ALICE], DEV_TOKENS[BOB]
    alice = ok(run_cli(url, "chat", input="My name is Alice.\n", token=alice_token))
    assert f"Chatting as {ALICE}" in alice and "remembered: Name is Alice" in alice

    as_bob = run_cli(url, "memories", "list", "--user", BOB, token=alice_token)
    assert "Name is Alice" in ok(as_bob)
    assert f"--user {BOB} is ignored" in as_bob.stderr

    with get_sync_client(
        url=url, api_key=None, headers={"Authorization": f"Bearer {alice_token}"}
    ) as sdk:
        (thread,) = sdk.threads.search()
    peek = run_cli(url, "threads", "show", str(thread["thread_id"]), token=bob_token)
    assert peek.returncode == 1 and "No thread" in peek.stderr


def test_a_refused_token_is_one_clear_line(dev_tokens_server: DevServer) -> None:
    result = run_cli(dev_tokens_server.url, "chat", token="not-a-token", input="hello\n")
    assert result.returncode == 1, result.stdout
    assert "The server refused the token (401: Unknown token.)" in result.stderr
    assert "Traceback" not in result.stderr
    missing = run_cli(dev_tokens_server.url, "memories", "list")
    assert missing.returncode == 1 and "without a token" in missing.stderr


def test_server_down_is_one_clear_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli(url, "chat", input="hello\n")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"Error: Cannot reach the assistant server at {url} — start it with `make dev` or "
        "set ASSISTANT_URL."
    )
    assert result.stdout == ""
