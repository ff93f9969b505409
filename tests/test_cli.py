"""The `assistant` command line, offline: parsing, prompts, errors and the chat loop.

The network is the one thing faked: `assistant.cli.client.http_transport` returns an
``httpx.MockTransport`` over `FakeServer`, an in-memory stand-in for the server's
``/memory/*`` API and the thread and run endpoints that langgraph-sdk calls. The real
server is exercised in ``tests/e2e/test_cli_e2e.py``; "server down" here is a real
refused connection on a free loopback port.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from assistant import cli
from assistant.config import constants
from devserver import free_port

ALICE_FACTS = {
    "1" * 32: {"content": "Name is Alice", "category": "identity", "pinned": True},
    "2" * 32: {"content": "Lives in Hangzhou", "category": "location", "pinned": True},
    "3" * 32: {"content": "Likes green tea", "category": "preference", "pinned": False},
}
HANGZHOU = "2" * 32

ALICE_HEARD = [
    {
        "at": "2026-12-02T07:52:00+00:00",
        "thread_id": "t1",
        "message_id": "m3",
        "excerpt": "Thanks!",
        "outcome": "skipped",
        "reason": "an acknowledgement",
        "facts": [],
    },
    {
        "at": "2026-12-02T07:51:00+00:00",
        "thread_id": "t1",
        "message_id": "m2",
        "excerpt": "My [bold]cat[/bold] is called Mochi",
        "outcome": "failed",
        "reason": "The model provider timed out",
        "facts": [],
    },
    {
        "at": "2026-12-02T07:50:01+00:00",
        "thread_id": "t1",
        "message_id": "m1",
        "excerpt": "I'm allergic to shellfish",
        "outcome": "kept",
        "reason": "added 1",
        "facts": ["5" * 32],
    },
]
"""What memory made of alice's last three messages, newest first, as ``/memory/heard`` says."""


def _fact(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "current",
        "created_at": "2026-01-02T03:04:05+00:00",
        "history": [],
        **value,
    }


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _sse(events: list[tuple[str, Any]]) -> bytes:
    return b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)


def _chunk(text: str, *, node: str = "respond", kind: str = "AIMessageChunk") -> list[Any]:
    return [{"type": kind, "id": f"msg-{node}", "content": text}, {"langgraph_node": node}]


REPLY_EVENTS: list[tuple[str, Any]] = [
    ("metadata", {"run_id": "run-1"}),
    ("messages", _chunk("[scripted] ")),
    ("messages", _chunk('{"operations": []}', node="remember")),
    ("messages", _chunk("Hello ")),
    (
        "messages",
        [{"type": "tool", "id": "t1", "content": "tool output"}, {"langgraph_node": "use_tools"}],
    ),
    ("messages", _chunk("Alice.")),
]
"""A run's stream: the reply in three chunks, plus parts that are not the reply."""


@dataclass
class FakeServer:
    """In-memory stand-in for the server's HTTP API, as the CLI calls it.

    Without ``token`` it behaves like a server without auth (``?user_id=`` picks the
    user, ``default-user`` otherwise); with one, every request must carry it.
    """

    facts: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {"alice": {k: _fact(v) for k, v in ALICE_FACTS.items()}}
    )
    threads: dict[str, dict[str, Any]] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)
    heard: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"alice": [dict(entry) for entry in ALICE_HEARD]}
    )
    run_metrics: dict[str, Any] = field(
        default_factory=lambda: {"extraction": "kept", "extraction_reason": "added 1"}
    )
    """The metrics each run leaves in the thread, besides ``added``."""
    token: str | None = None
    reply_events: list[tuple[str, Any]] = field(default_factory=lambda: list(REPLY_EVENTS))
    requests: list[httpx.Request] = field(default_factory=list)

    def paths(self, method: str) -> list[str]:
        return [r.url.path for r in self.requests if r.method == method]

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.token is not None:
            if request.headers.get("authorization") != f"Bearer {self.token}":
                return httpx.Response(401, json={"detail": "Unknown token."})
            user = "alice"
        else:
            user = request.url.params.get("user_id") or "default-user"
        path, method = request.url.path, request.method
        body = json.loads(request.content) if request.content else {}
        if path.startswith("/memory/"):
            return self._memory(method, path.removeprefix("/memory/"), user, request)
        if (method, path) == ("POST", "/threads"):
            thread_id = str(uuid.uuid4())
            self.threads[thread_id] = {
                "thread_id": thread_id,
                "metadata": body.get("metadata") or {},
                "values": {"messages": []},
                "updated_at": "2026-01-02T03:04:05+00:00",
            }
            return httpx.Response(200, json=self.threads[thread_id])
        if (method, path) == ("POST", "/threads/search"):
            wanted = body.get("metadata") or {}
            found = [
                t
                for t in self.threads.values()
                if all(t["metadata"].get(k) == v for k, v in wanted.items())
            ]
            return httpx.Response(200, json=found)
        match = re.fullmatch(r"/threads/([^/]+)(/state|/runs/stream)?", path)
        if not match or match.group(1) not in self.threads:
            return httpx.Response(404, json={"detail": "Thread not found"})
        thread = self.threads[match.group(1)]
        if match.group(2) == "/runs/stream":
            return self._run(thread, body)
        if match.group(2) == "/state":
            return httpx.Response(200, json={"values": thread["values"]})
        if method == "DELETE":
            del self.threads[thread["thread_id"]]
            return httpx.Response(204)
        return httpx.Response(200, json=thread)

    def _memory(self, method: str, route: str, user: str, request: httpx.Request) -> httpx.Response:
        facts = self.facts.setdefault(user, {})
        if route == "me":
            return httpx.Response(200, json={"user_id": user})
        if route == "facts":
            everything = request.url.params.get("include_superseded") == "true"
            listed = [
                {"key": key, **value}
                for key, value in facts.items()
                if everything or value["status"] == "current"
            ]
            if query := request.url.params.get("query", ""):
                # As the server: only the facts that match, each with its match score.
                for fact in listed:
                    fact["score"] = len(_words(query) & _words(fact["content"])) / 10
                listed = sorted((f for f in listed if f["score"] > 0), key=lambda f: -f["score"])
            return httpx.Response(200, json={"user_id": user, "facts": listed})
        if route.startswith("facts/") and method == "DELETE":
            value = facts.pop(route.removeprefix("facts/"), None)
            if value is None:
                return httpx.Response(404, json={"detail": "No such fact."})
            entry = {"action": "forget", "content": value["content"], "via": "cli"}
            self.audit.append(entry)
            return httpx.Response(200, json={"forgotten": entry})
        if route == "episodes":
            return httpx.Response(200, json={"episodes": []})
        if route == "audit":
            return httpx.Response(200, json={"audit": self.audit})
        if route == "heard":
            limit = int(request.url.params.get("limit", "20"))
            return httpx.Response(200, json={"heard": self.heard.get(user, [])[:limit]})
        return httpx.Response(404, json={"detail": "Not Found"})

    def _run(self, thread: dict[str, Any], body: dict[str, Any]) -> httpx.Response:
        user = (body.get("context") or {}).get("user_id", "default-user")
        text = body["input"]["messages"][0]["content"]
        reply = "".join(
            data[0]["content"]
            for event, data in self.reply_events
            if event == "messages" and data[1]["langgraph_node"] == "respond"
        )
        pinned = [
            {"id": key, "content": value["content"], "category": value["category"]}
            for key, value in self.facts.get(user, {}).items()
            if value.get("pinned")
        ]
        thread["values"] = {
            "messages": [
                *thread["values"]["messages"],
                {"type": "human", "content": text},
                {"type": "ai", "content": reply},
            ],
            "profile": pinned,
            "recalled": [],
            "metrics": {"added": ["3" * 32], **self.run_metrics},
        }
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=_sse(self.reply_events)
        )


@pytest.fixture(autouse=True)
def _no_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No server or token from the developer's shell; wide tables so rows stay on one line."""
    monkeypatch.delenv("ASSISTANT_URL", raising=False)
    monkeypatch.delenv("ASSISTANT_TOKEN", raising=False)
    for console in (cli.render.out, cli.render.err):  # sized when imported, so set here
        monkeypatch.setattr(console, "width", 200)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer()
    monkeypatch.setattr(cli.client, "http_transport", lambda: httpx.MockTransport(fake.handle))
    return fake


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli.app, list(args), input=input)


# --------------------------------------------------------------------------- parsing


def test_help_lists_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("chat", "memories", "threads", "--url", "--token", "--user"):
        assert command in result.output
    memories = invoke("memories", "--help")
    for command in ("list", "heard", "search", "forget", "export"):
        assert command in memories.output
    threads = invoke("threads", "--help")
    for command in ("list", "show", "delete"):
        assert command in threads.output


@pytest.mark.parametrize(
    "args",
    [
        ["chat", "--thread", "abc", "--new"],
        ["memories", "forget"],  # what to forget is required
        ["memories", "frobnicate"],
        ["threads", "list", "--limit", "0"],
        ["memories", "heard", "--limit", "0"],
    ],
)
def test_bad_arguments_are_usage_errors(server: FakeServer, args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert server.requests == [], "nothing is sent for a command line that does not parse"


def test_user_option_works_before_and_after_the_command(server: FakeServer) -> None:
    before = invoke("--user", "alice", "memories", "list")
    after = invoke("memories", "list", "--user", "alice")
    assert before.exit_code == after.exit_code == 0
    assert "Lives in Hangzhou" in before.output and "Lives in Hangzhou" in after.output
    assert {r.url.params.get("user_id") for r in server.requests} == {"alice"}


def test_url_and_token_default_to_the_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_URL", "http://assistant.test:9999/")
    monkeypatch.setenv("ASSISTANT_TOKEN", "tok-a")
    server.token = "tok-a"
    result = invoke("memories", "list")
    assert result.exit_code == 0, result.output
    assert "Name is Alice" in result.output
    request = server.requests[0]
    assert (request.url.host, request.url.port) == ("assistant.test", 9999)
    assert request.headers["authorization"] == "Bearer tok-a"
    assert request.headers["x-assistant-client"] == "cli"


# --------------------------------------------------------------------------- errors


def test_server_down_is_one_clear_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for args in (["--url", url, "memories", "list"], ["--url", url, "chat"]):
        result = invoke(*args)
        assert result.exit_code == 1
        assert f"Cannot reach the assistant server at {url}" in result.output
        assert "make dev" in result.output and "ASSISTANT_URL" in result.output
        assert "Traceback" not in result.output


def test_server_down_names_the_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ASSISTANT_URL", url)
    result = invoke("threads", "list")
    assert result.exit_code == 1
    assert f"Cannot reach the assistant server at {url}" in result.output


def test_refused_token_is_one_clear_line(server: FakeServer) -> None:
    server.token = "right"
    result = invoke("--token", "wrong", "memories", "list")
    assert result.exit_code == 1
    assert "The server refused the token (401: Unknown token.)" in result.output
    assert "wrong" not in result.output, "the token is never printed"
    missing = invoke("memories", "list")
    assert missing.exit_code == 1
    assert "without a token" in missing.output and "ASSISTANT_TOKEN" in missing.output


def test_unknown_thread_is_one_clear_line(server: FakeServer) -> None:
    for args in (["threads", "show", "nope"], ["threads", "delete", "nope", "--yes"]):
        result = invoke(*args)
        assert result.exit_code == 1
        assert "No thread 'nope' for user 'default-user'" in result.output
    assert server.paths("DELETE") == []


def test_explain_says_what_the_server_said() -> None:
    request = httpx.Request("GET", "http://h/x")

    def status(code: int, body: Any) -> httpx.HTTPStatusError:
        response = httpx.Response(code, json=body, request=request)
        return httpx.HTTPStatusError(str(code), request=request, response=response)

    assert cli.explain(status(403, {"detail": "No."}), url="u", token="t").startswith(
        "The server refused the token (403: No.)"
    )
    assert (
        cli.explain(status(500, {"message": "boom"}), url="u")
        == "The server at u answered 500: boom"
    )
    assert "did not answer in time" in cli.explain(httpx.ReadTimeout("slow"), url="u")


# --------------------------------------------------------------------------- memories


def test_forget_asks_first_and_no_keeps_the_fact(server: FakeServer) -> None:
    result = invoke("memories", "forget", "Hangzhou", "--user", "alice", input="n\n")
    assert result.exit_code == 0, result.output
    assert "Forget 'Lives in Hangzhou'? [y/N]" in result.output
    assert "Kept it." in result.output
    assert HANGZHOU in server.facts["alice"]
    assert server.paths("DELETE") == []


def test_forget_asks_first_and_yes_forgets(server: FakeServer) -> None:
    result = invoke("memories", "forget", "Hangzhou", "--user", "alice", input="y\n")
    assert result.exit_code == 0, result.output
    assert "Forgotten: Lives in Hangzhou" in result.output
    assert HANGZHOU not in server.facts["alice"]
    assert server.paths("DELETE") == [f"/memory/facts/{HANGZHOU}"]


def test_forget_with_yes_does_not_ask(server: FakeServer) -> None:
    result = invoke("memories", "forget", HANGZHOU[:8], "--yes", "--user", "alice")
    assert result.exit_code == 0, result.output
    assert "[y/N]" not in result.output
    assert "Forgotten: Lives in Hangzhou" in result.output
    assert HANGZHOU not in server.facts["alice"]


def test_a_superseded_fact_can_be_forgotten_by_key(server: FakeServer) -> None:
    old = "4" * 32
    server.facts["alice"][old] = _fact({"content": "Lives in Suzhou", "status": "superseded"})
    result = invoke("memories", "forget", old, "--yes", "--user", "alice")
    assert result.exit_code == 0, result.output
    assert "Forgotten: Lives in Suzhou" in result.output
    assert old not in server.facts["alice"]


def test_a_mistyped_key_never_forgets_the_best_text_match(server: FakeServer) -> None:
    result = invoke("memories", "forget", "0123456789abcdef", "--yes", "--user", "alice")
    assert result.exit_code == 1
    assert "matches no fact" in result.output
    assert server.paths("DELETE") == []


def test_forget_yes_shows_the_match_and_never_forgets_what_does_not_match(
    server: FakeServer,
) -> None:
    unrelated = invoke("memories", "forget", "skydiving lessons, Peru", "--yes", "--user", "alice")
    assert unrelated.exit_code == 1
    assert "No stored fact matches 'skydiving lessons, Peru'" in unrelated.output
    assert "nothing was forgotten" in unrelated.output
    assert server.paths("DELETE") == []

    result = invoke("memories", "forget", "Hangzhou", "--yes", "--user", "alice")
    assert result.exit_code == 0, result.output
    assert "Best match: 'Lives in Hangzhou' (match 0.10)" in result.output
    assert "Forgotten: Lives in Hangzhou" in result.output


def test_search_shows_each_match_with_its_score_and_says_when_nothing_matches(
    server: FakeServer,
) -> None:
    found = invoke("memories", "search", "Hangzhou", "--user", "alice")
    assert found.exit_code == 0, found.output
    assert "Match" in found.output and "0.10" in found.output
    assert "Lives in Hangzhou" in found.output
    nothing = invoke("memories", "search", "skydiving", "--user", "alice")
    assert "Nothing matches 'skydiving'" in nothing.output


def test_forget_with_no_facts_says_so(server: FakeServer) -> None:
    result = invoke("memories", "forget", "anything", "--yes", "--user", "bob")
    assert result.exit_code == 1
    assert "No stored fact matches 'anything' for user 'bob'" in result.output


def test_list_shows_superseded_history_only_with_all(server: FakeServer) -> None:
    facts = server.facts["alice"]
    facts["4" * 32] = _fact(
        {
            "content": "Lives in Suzhou",
            "category": "location",
            "status": "superseded",
            "history": [{"event": "superseded", "at": "2026-01-05T00:00:00+00:00", "by": HANGZHOU}],
        }
    )
    current = invoke("memories", "list", "--user", "alice")
    assert "Lives in Suzhou" not in current.output
    everything = invoke("memories", "list", "--all", "--user", "alice")
    assert "replaced 2026-01-05 by 'Lives in Hangzhou'" in everything.output
    assert "superseded" in everything.output
    listings = [r.url.params.get("include_superseded") for r in server.requests]
    listings = [flag for flag in listings if flag is not None]
    assert listings == ["false", "true"]


def _row(output: str, text: str) -> str:
    """The printed line that holds ``text`` (the tests' consoles are wide: one row, one line)."""
    (line,) = [line for line in output.splitlines() if text in line]
    return line


def test_heard_shows_what_memory_made_of_each_message(server: FakeServer) -> None:
    result = invoke("memories", "heard", "--user", "alice")
    assert result.exit_code == 0, result.output
    assert "What memory heard" in result.output
    kept = _row(result.output, "I'm allergic to shellfish")
    assert "2026-12-02 07:50" in kept and "kept" in kept and "added 1" in kept
    skipped = _row(result.output, "Thanks!")
    assert "skipped" in skipped and "an acknowledgement" in skipped
    failed = _row(result.output, "Mochi")
    assert "failed" in failed and "The model provider timed out" in failed
    assert "My [bold]cat[/bold] is called Mochi" in failed, "server text is never markup"
    lines = result.output.splitlines()
    newest_first = [
        next(i for i, line in enumerate(lines) if text in line)
        for text in ("Thanks!", "Mochi", "shellfish")
    ]
    assert newest_first == sorted(newest_first)
    (request,) = [r for r in server.requests if r.url.path == "/memory/heard"]
    assert request.url.params["limit"] == "20"
    assert request.url.params["user_id"] == "alice"


def test_heard_takes_a_limit_and_says_when_nothing_was_heard(server: FakeServer) -> None:
    one = invoke("memories", "heard", "--limit", "1", "--user", "alice")
    assert one.exit_code == 0, one.output
    assert "Thanks!" in one.output and "shellfish" not in one.output
    assert [r.url.params["limit"] for r in server.requests if "heard" in r.url.path] == ["1"]
    nobody = invoke("memories", "heard", "--user", "bob")
    assert nobody.exit_code == 0, nobody.output
    assert "Memory has heard no messages from 'bob' yet." in nobody.output


def test_list_shows_the_last_ten_heard_after_the_facts(server: FakeServer) -> None:
    result = invoke("memories", "list", "--user", "alice")
    assert result.exit_code == 0, result.output
    facts_at = result.output.index("Lives in Hangzhou")
    heard_at = result.output.index("What memory heard")
    assert facts_at < heard_at < result.output.index("I'm allergic to shellfish")
    assert "kept" in _row(result.output, "I'm allergic to shellfish")
    (request,) = [r for r in server.requests if r.url.path == "/memory/heard"]
    assert request.url.params["limit"] == "10"


def test_list_without_facts_still_shows_what_was_heard(server: FakeServer) -> None:
    server.heard["bob"] = [{**ALICE_HEARD[0], "excerpt": "ok thanks"}]
    result = invoke("memories", "list", "--user", "bob")
    assert result.exit_code == 0, result.output
    assert "No facts stored for 'bob' yet." in result.output
    assert "an acknowledgement" in _row(result.output, "ok thanks")


def test_export_writes_facts_episodes_and_audit(server: FakeServer, tmp_path: Path) -> None:
    invoke("memories", "forget", "tea", "--yes", "--user", "alice")
    target = tmp_path / "me.json"
    result = invoke("memories", "export", "--user", "alice", "--output", str(target))
    assert result.exit_code == 0, result.output
    exported = json.loads(target.read_text(encoding="utf-8"))
    assert exported["user_id"] == "alice"
    assert {f["content"] for f in exported["facts"]} == {"Name is Alice", "Lives in Hangzhou"}
    assert exported["audit"] == [{"action": "forget", "content": "Likes green tea", "via": "cli"}]
    assert exported["episodes"] == []
    to_stdout = invoke("memories", "export", "--user", "alice")
    assert json.loads(to_stdout.stdout)["user_id"] == "alice"


# --------------------------------------------------------------------------- chat


def test_reply_pieces_raise_the_runs_error() -> None:
    parts = [("messages", _chunk("Half")), ("error", {"error": "X", "message": "model down"})]
    pieces: Iterator[str] = cli.reply_pieces(parts)
    assert next(pieces) == "Half"
    with pytest.raises(cli.RunFailedError, match="model down"):
        next(pieces)


def test_chat_streams_the_reply_and_shows_recalled_facts(server: FakeServer) -> None:
    lines = "Hi, I'm Alice.\n/memories\n/threads\n/nonsense\n/quit\n"
    result = invoke("chat", "--user", "alice", input=lines)
    assert result.exit_code == 0, result.output
    assert "assistant> [scripted] Hello Alice.\n" in result.output
    assert "operations" not in result.output and "tool output" not in result.output
    assert "recalled: Name is Alice · Lives in Hangzhou" in result.output
    assert "remembered: Likes green tea" in result.output
    assert "memory: kept 1 fact" in result.output
    assert "Likes green tea" in result.output.split("/memories", 1)[1]
    assert "Unknown command '/nonsense'" in result.output
    (thread,) = server.threads.values()
    assert thread["metadata"] == {constants.OWNER_KEY: "alice"}
    assert thread["thread_id"] in result.output.split("/threads", 1)[1]
    runs = [r for r in server.requests if r.url.path.endswith("/runs/stream")]
    assert json.loads(runs[0].content)["context"] == {"user_id": "alice"}
    assert json.loads(runs[0].content)["stream_mode"] == "messages-tuple"


def test_chat_forget_asks_and_ends_cleanly_at_end_of_input(server: FakeServer) -> None:
    result = invoke("chat", "--user", "alice", input="/forget tea\nn\n/forget Hangzhou\ny\n")
    assert result.exit_code == 0, result.output
    assert "Forget 'Likes green tea'? [y/N] n\nKept it." in result.output
    assert "Forgotten: Lives in Hangzhou" in result.output
    assert set(server.facts["alice"]) == {"1" * 32, "3" * 32}


def test_chat_reports_a_failed_run_and_goes_on(server: FakeServer) -> None:
    server.reply_events = [
        ("error", {"error": "ModelNotConfiguredError", "message": "No chat model"})
    ]
    result = invoke("chat", input="hello\n/memories\n")
    assert result.exit_code == 0, result.output
    assert "The run failed: No chat model" in result.output
    assert "Nothing remembered yet." in result.output


def test_chat_continues_a_thread_and_new_starts_another(server: FakeServer) -> None:
    first = invoke("chat", "--user", "alice", input="hello\n")
    (thread_id,) = server.threads
    again = invoke("chat", "--user", "alice", "--thread", thread_id, input="/new\n")
    assert again.exit_code == 0, again.output
    assert f"thread {thread_id}" in again.output and "New thread" in again.output
    assert len(server.threads) == 2
    assert first.exit_code == 0


def test_chat_says_when_memory_skipped_the_message(server: FakeServer) -> None:
    server.run_metrics = {"extraction": "skipped", "extraction_reason": "an acknowledgement"}
    result = invoke("chat", "--user", "alice", input="Thanks!\n")
    assert result.exit_code == 0, result.output
    assert "memory: skipped (an acknowledgement)" in result.output
    assert "memory: kept" not in result.output


def test_chat_says_when_nothing_was_saved(server: FakeServer) -> None:
    server.run_metrics = {"extraction": "failed", "extraction_reason": "[red]timed out[/red]"}
    result = invoke("chat", "--user", "alice", input="I'm allergic to shellfish\n")
    assert result.exit_code == 0, result.output
    assert (
        "memory: nothing was saved from this message (extraction failed: [red]timed out[/red])"
        in result.output
    )
    assert "memory: kept" not in result.output and "memory: skipped" not in result.output


# --------------------------------------------------------------------------- threads


def test_threads_show_and_delete(server: FakeServer) -> None:
    invoke("chat", input="hello there\n")
    (thread_id,) = server.threads
    listed = invoke("threads", "list")
    assert thread_id in listed.output and "hello there" in listed.output
    shown = invoke("threads", "show", thread_id)
    assert "you> hello there" in shown.output
    assert "assistant> [scripted] Hello Alice." in shown.output
    assert "Last turn" in shown.output
    assert re.search(r"│ extraction\s+│ kept\s+│", shown.output)
    assert re.search(r"│ extraction reason\s+│ added 1\s+│", shown.output)
    kept = invoke("threads", "delete", thread_id, input="n\n")
    assert f"Delete thread {thread_id}? [y/N]" in kept.output
    assert thread_id in server.threads
    deleted = invoke("threads", "delete", thread_id, "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert server.threads == {}


# --------------------------------------------------------------------------- hostile text

HOSTILE = (
    "Lives in \x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\Paris\r\x9b31m\x08"
)
"""A fact that would clear the screen, retitle the window, plant a link and rewrite the line."""

TERMINAL_CONTROLS = ("\x1b", "\x07", "\r", "\x08", "\x9b", "\x9d", "\x90")


def _assert_no_controls(output: str) -> None:
    assert not [c for c in TERMINAL_CONTROLS if c in output], repr(output)


def test_text_from_the_server_reaches_the_terminal_without_escape_sequences(
    server: FakeServer, tmp_path: Path
) -> None:
    server.facts["alice"]["4" * 32] = _fact(
        {
            "content": HOSTILE,
            "category": "location\x1b[31m",
            "pinned": True,
            "history": [{"event": "corrected", "at": "2026-01-03", "content": HOSTILE}],
        }
    )
    server.heard["alice"][0]["excerpt"] = HOSTILE
    server.heard["alice"][0]["reason"] = "\x1b]0;pwned\x07because"
    server.reply_events = [("messages", _chunk("Sure: \x1b[2J")), ("messages", _chunk(HOSTILE))]
    server.run_metrics = {"extraction": "skipped", "extraction_reason": "\x07\x1b[5mno"}
    outputs = {
        "list": invoke("memories", "list", "--all", "--user", "alice"),
        "search": invoke("memories", "search", "Paris", "--user", "alice"),
        "heard": invoke("memories", "heard", "--user", "alice"),
        "chat": invoke(
            "chat", "--user", "alice", input="where do I live?\n/memories\n/forget Paris\nn\n"
        ),
    }
    (thread_id,) = server.threads
    outputs["show"] = invoke("threads", "show", thread_id, "--user", "alice")
    outputs["forget"] = invoke("memories", "forget", "4" * 32, "--user", "alice", input="n\n")
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output)
        _assert_no_controls(result.output)
        assert "pwned" not in result.output and "evil.example" not in result.output, name
        assert "Lives in Paris" in result.output, name
    assert "because" in outputs["heard"].output
    assert "assistant> Sure: Lives in Paris" in outputs["chat"].output
    assert "memory: skipped (no)" in outputs["chat"].output
    assert "Forget 'Lives in Paris'? [y/N] n\nKept it." in outputs["chat"].output


def test_an_export_keeps_the_text_exactly_but_prints_no_escape_sequence(
    server: FakeServer,
) -> None:
    server.facts["alice"]["4" * 32] = _fact({"content": HOSTILE, "category": "location"})
    result = invoke("memories", "export", "--user", "alice")
    assert result.exit_code == 0, result.output
    _assert_no_controls(result.stdout)
    exported = json.loads(result.stdout)
    assert HOSTILE in [fact["content"] for fact in exported["facts"]]  # escaped, not lost


def test_an_export_file_is_readable_by_its_owner_only(server: FakeServer, tmp_path: Path) -> None:
    fresh, existing = tmp_path / "me.json", tmp_path / "old.json"
    existing.write_text("old", encoding="utf-8")
    existing.chmod(0o644)
    for target in (fresh, existing):
        result = invoke("memories", "export", "--user", "alice", "--output", str(target))
        assert result.exit_code == 0, result.output
        assert target.stat().st_mode & 0o777 == constants.PRIVATE_FILE_MODE == 0o600
        assert json.loads(target.read_text(encoding="utf-8"))["user_id"] == "alice"
