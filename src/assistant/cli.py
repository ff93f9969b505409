"""The ``assistant`` command line: chat with the assistant and manage what it remembers.

It talks to a running server (``make dev``): threads and runs through langgraph-sdk, the
user's memory through the server's ``/memory/*`` API (`assistant.webapp`), so a fact
forgotten here lands in the same audit trail as one forgotten in the console::

    assistant chat                          # a new thread; /memories, /forget <text>, /quit
    assistant memories list --all           # facts, superseded ones with their history
    assistant memories forget Hangzhou      # asks first (--yes does not)
    assistant memories export -o me.json    # facts, episodes and audit trail as JSON
    assistant threads list | show ID | delete ID

``--url`` and ``--token`` default to ASSISTANT_URL (http://127.0.0.1:2025) and
ASSISTANT_TOKEN. With auth on the server, the token says who you are; a server without
auth (``make demo``, the tests) takes ``--user`` instead, sent as the runs'
``context.user_id`` and the memory API's ``?user_id=``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIConnectionError
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from assistant.constants import OWNER_KEY
from assistant.models import get_client_settings

__all__ = ["ChatSession", "Server", "app", "explain", "main", "reply_pieces"]

ASSISTANT_ID = "assistant"
"""The graph id in langgraph.json."""

CLIENT_HEADERS = {"x-assistant-client": "cli", "user-agent": "assistant-cli"}
"""Sent with every request; the audit trail records memory API changes as ``via="api"``."""

SERVER_DOWN = (
    "Cannot reach the assistant server at {url} — start it with `make dev` or set ASSISTANT_URL."
)

CHAT_HELP = (
    "/new starts a thread, /threads lists yours, /memories lists what I remember, "
    "/forget <text> forgets a fact, /quit (or Ctrl-D) leaves."
)

out = Console(highlight=False, emoji=False, soft_wrap=True)
"""Standard output (replies, tables); resolves ``sys.stdout`` at each write. Lines of text
are left for the terminal to wrap, so a pasted error or reply has no inserted breaks."""
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)
"""Standard error (errors and notes)."""


class CliError(Exception):
    """A problem the user can fix: printed as one line, exit code 1, no traceback."""


class RunFailedError(Exception):
    """The server reported an error event while streaming a run."""


# --------------------------------------------------------------------------- errors


def explain(error: httpx.HTTPError, *, url: str, token: str = "") -> str:
    """One line that says what went wrong with a request to ``url`` and what to do.

    >>> explain(httpx.ConnectError("refused"), url="http://127.0.0.1:9")
    'Cannot reach the assistant server at http://127.0.0.1:9 — start it with `make dev` or ...'
    >>> request = httpx.Request("GET", "http://127.0.0.1:9/memory/me")
    >>> refused = httpx.Response(401, json={"detail": "Unknown token."}, request=request)
    >>> explain(httpx.HTTPStatusError("401", request=request, response=refused),
    ...         url="http://127.0.0.1:9", token="wrong")
    'The server refused the token (401: Unknown token.). Check --token or ASSISTANT_TOKEN.'
    """
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | APIConnectionError):
        return SERVER_DOWN.format(url=url)
    if isinstance(error, httpx.TimeoutException):
        return f"The assistant server at {url} did not answer in time: {error.__class__.__name__}."
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        detail = _detail(error)
        if status in (401, 403) and token:
            return (
                f"The server refused the token ({status}: {detail}). "
                "Check --token or ASSISTANT_TOKEN."
            )
        if status in (401, 403):
            return (
                f"The server refused the request without a token ({status}: {detail}). "
                "Pass --token or set ASSISTANT_TOKEN."
            )
        if status == 404:
            return f"Not found on the server at {url} ({detail})."
        return f"The server at {url} answered {status}: {detail}"
    return f"Lost the connection to the assistant server at {url}: {error}"


def _detail(error: httpx.HTTPStatusError) -> str:
    """The server's own explanation of a failed request."""
    message = getattr(error, "message", None)  # langgraph-sdk's APIError already parsed it
    if isinstance(message, str) and message:
        return message
    response = error.response
    try:
        body = response.json()
    except (ValueError, httpx.ResponseNotRead):
        return response.reason_phrase or str(response.status_code)
    if isinstance(body, dict):
        for key in ("detail", "message", "error"):
            if isinstance(body.get(key), str) and body[key]:
                return str(body[key])
    return response.reason_phrase or str(response.status_code)


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]Error:[/] {_escape(message)}")
    raise typer.Exit(1)


def _escape(text: str) -> str:
    """Text with Rich markup characters made literal."""
    return escape(text)


class _ReportErrors(TyperGroup):
    """Turns expected failures into a one-line message and exit code 1, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as error:
            _fail(str(error))
        except httpx.HTTPError as error:
            connection = ctx.obj if isinstance(ctx.obj, Connection) else Connection.from_env()
            _fail(explain(error, url=connection.url, token=connection.token))


# --------------------------------------------------------------------------- the server


@dataclass(frozen=True, kw_only=True)
class Connection:
    """Where the server is and how to sign in, from the global options."""

    url: str
    """Base URL of the server."""
    token: str = ""
    """Bearer token; empty sends none."""
    user: str | None = None
    """User id for a server without auth; None leaves it to the server's default."""

    @classmethod
    def from_env(cls) -> Connection:
        """ASSISTANT_URL and ASSISTANT_TOKEN, read through `get_client_settings`."""
        url, token = get_client_settings()
        return cls(url=url.rstrip("/"), token=token)


def http_transport() -> httpx.BaseTransport:
    """Where every request goes: the network (unit tests put an ``httpx.MockTransport`` here)."""
    return httpx.HTTPTransport()


@dataclass(kw_only=True)
class Server:
    """The assistant server: threads and runs through langgraph-sdk, memory through HTTP.

    Both share one ``httpx.Client``, which sends the bearer token when there is one.
    """

    connection: Connection
    """Where it is, the token, and the requested user."""
    http: httpx.Client = field(init=False)
    """The HTTP client for ``/memory/*``, also under the SDK."""
    sdk: SyncLangGraphClient = field(init=False)
    """langgraph-sdk on the same HTTP client."""
    _user_id: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        """Open the HTTP client."""
        token = self.connection.token
        self.http = httpx.Client(
            base_url=self.connection.url,
            headers={**CLIENT_HEADERS, **({"authorization": f"Bearer {token}"} if token else {})},
            timeout=httpx.Timeout(connect=5, read=300, write=60, pool=5),
            transport=http_transport(),
        )
        self.sdk = SyncLangGraphClient(self.http)

    def close(self) -> None:
        """Close the HTTP client."""
        self.http.close()

    # ---- memory

    def _memory(self, method: str, path: str, **params: str) -> Any:
        if self.connection.user:
            params["user_id"] = self.connection.user
        response = self.http.request(method, f"/memory/{path}", params=params)
        response.raise_for_status()
        return response.json()

    @property
    def user_id(self) -> str:
        """Whose memory and threads these are: the token's identity with auth, else ``--user``.

        Asked of the server once. With auth, a ``--user`` that differs gets a note.
        """
        if self._user_id is None:
            self._user_id = str(self._memory("GET", "me")["user_id"])
            requested = self.connection.user
            if requested and requested != self._user_id:
                err.print(
                    f"[dim]Note: the server knows you as {self._user_id!r} from your token; "
                    f"--user {_escape(requested)} is ignored.[/]"
                )
        return self._user_id

    def facts(self, *, query: str = "", include_superseded: bool = False) -> list[dict[str, Any]]:
        """The user's facts (oldest first), or those matching ``query`` (best first)."""
        if query.strip():
            found = self._memory("GET", "facts", query=query.strip())
        else:
            flag = "true" if include_superseded else "false"
            found = self._memory("GET", "facts", include_superseded=flag)
        return list(found["facts"])

    def forget(self, key: str) -> dict[str, Any]:
        """Delete one fact; returns its audit entry. A missing key is a `CliError`."""
        try:
            return dict(self._memory("DELETE", f"facts/{key}")["forgotten"])
        except httpx.HTTPStatusError as error:
            if error.response.status_code == 404:
                raise CliError(
                    f"No fact with key {key!r} (see `assistant memories list`)."
                ) from None
            raise

    def episodes(self) -> list[dict[str, Any]]:
        """The user's past conversations, newest first."""
        return list(self._memory("GET", "episodes")["episodes"])

    def audit(self) -> list[dict[str, Any]]:
        """The user's audit trail (deletions and corrections), newest first."""
        return list(self._memory("GET", "audit")["audit"])

    # ---- threads and runs

    def threads(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """The user's threads, most recently updated first."""
        found = self.sdk.threads.search(
            metadata={OWNER_KEY: self.user_id},
            limit=limit,
            sort_by="updated_at",
            sort_order="desc",
        )
        return [dict(thread) for thread in found]

    def new_thread(self) -> str:
        """Create a thread owned by the user and return its id."""
        return str(self.sdk.threads.create(metadata={OWNER_KEY: self.user_id})["thread_id"])

    def thread(self, thread_id: str) -> dict[str, Any]:
        """One thread, or a `CliError` when it does not exist (or is not the user's)."""
        try:
            return dict(self.sdk.threads.get(thread_id))
        except httpx.HTTPStatusError as error:
            if error.response.status_code in (404, 422):
                raise CliError(
                    f"No thread {thread_id!r} for user {self.user_id!r} "
                    "(see `assistant threads list`)."
                ) from None
            raise

    def thread_values(self, thread_id: str) -> dict[str, Any]:
        """The thread's current state values (messages, summary, profile, recalled, metrics)."""
        values = self.sdk.threads.get_state(thread_id)["values"]
        return dict(values) if isinstance(values, dict) else {}

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread with its messages."""
        self.sdk.threads.delete(thread_id)

    def stream_reply(self, thread_id: str, text: str) -> Iterator[str]:
        """Send ``text`` as the user's next message and yield the reply as it streams.

        Leaving the loop early (Ctrl-C) disconnects, which cancels the run.
        """
        message: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
        context: dict[str, Any] | None = None
        if self.connection.user:
            context = {"user_id": self.connection.user}
        parts = self.sdk.runs.stream(
            thread_id,
            ASSISTANT_ID,
            input=message,
            context=context,
            stream_mode="messages-tuple",
            on_disconnect="cancel",
        )
        yield from reply_pieces((part.event, part.data) for part in parts)


def reply_pieces(parts: Iterable[tuple[str, Any]]) -> Iterator[str]:
    r"""The reply's text in ``(event, data)`` parts of ``stream_mode="messages-tuple"``.

    Only AI message chunks from the `respond` node are the reply: tool calls, tool results,
    and the model calls of `remember` and `compress` are left out. A second AI message in
    the same run (after tools) starts on a new line. An ``error`` event raises
    `RunFailedError` with the server's message.

    >>> def part(text, node="respond", id="m1"):
    ...     return ("messages", [{"type": "AIMessageChunk", "id": id, "content": text},
    ...                          {"langgraph_node": node}])
    >>> "".join(reply_pieces([part("Hi "), part("{...}", node="remember"), part("there")]))
    'Hi there'
    >>> "".join(reply_pieces([part("Looking."), part("Found it.", id="m2")]))
    'Looking.\nFound it.'
    """
    shown_id: str | None = None
    for event, data in parts:
        if event == "error":
            detail = (data.get("message") or data.get("error")) if isinstance(data, dict) else data
            raise RunFailedError(str(detail))
        if event != "messages" or not isinstance(data, list | tuple) or len(data) != 2:
            continue
        message, metadata = data
        if not isinstance(message, dict) or not isinstance(metadata, dict):
            continue
        if metadata.get("langgraph_node") != "respond":
            continue
        if message.get("type") not in ("AIMessageChunk", "ai"):
            continue
        text = message_text(message.get("content"))
        if not text:
            continue
        if shown_id is not None and message.get("id") != shown_id:
            yield "\n"
        shown_id = message.get("id")
        yield text


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of content blocks.

    >>> message_text([{"type": "text", "text": "Hello"}, {"type": "image_url"}, " world"])
    'Hello world'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        )
    return ""


# --------------------------------------------------------------------------- rendering


def _date(value: Any) -> str:
    """The date part of an ISO 8601 timestamp."""
    return str(value or "")[:10]


def _short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def facts_table(facts: list[dict[str, Any]], *, title: str, history: bool = False) -> Table:
    """A table of facts: key, content, category, profile pin, status, when learned.

    With ``history``, each fact also lists its earlier wordings, and a superseded fact
    names the fact that replaced it.
    """
    by_key = {str(fact.get("key")): fact for fact in facts}
    table = Table(title=title, title_justify="left")
    table.add_column("Key", style="dim", no_wrap=True)
    table.add_column("Fact", overflow="fold")
    table.add_column("Category")
    table.add_column("Profile")
    table.add_column("Status")
    table.add_column("Learned", no_wrap=True)
    for fact in facts:
        current = fact.get("status", "current") != "superseded"
        content = Text(str(fact.get("content", "")), style="" if current else "dim strike")
        if history:
            for entry in fact.get("history") or []:
                if entry.get("event") == "superseded":
                    successor = by_key.get(str(entry.get("by")), {}).get("content", entry.get("by"))
                    line = f"\n  replaced {_date(entry.get('at'))} by {successor!r}"
                else:
                    event, when = entry.get("event"), _date(entry.get("at"))
                    line = f"\n  {event} {when}, was {entry.get('content')!r}"
                content.append(line, style="dim")
        table.add_row(
            str(fact.get("key", ""))[:8],
            content,
            Text(str(fact.get("category", ""))),
            "pinned" if fact.get("pinned") else "",
            "current" if current else "superseded",
            _date(fact.get("created_at")),
        )
    return table


def threads_table(threads: list[dict[str, Any]], *, current: str | None = None) -> Table:
    """A table of threads: id, last update, message count, first message."""
    table = Table(title="Threads", title_justify="left")
    table.add_column("Thread", no_wrap=True)
    table.add_column("Updated", no_wrap=True)
    table.add_column("Messages", justify="right")
    table.add_column("Started with", overflow="ellipsis")
    for thread in threads:
        values = thread.get("values") if isinstance(thread.get("values"), dict) else {}
        messages = list((values or {}).get("messages") or [])
        first = next((m for m in messages if m.get("type") == "human"), None)
        thread_id = str(thread["thread_id"])
        marker = " ←" if thread_id == current else ""
        table.add_row(
            thread_id + marker,
            str(thread.get("updated_at", ""))[:16].replace("T", " "),
            str(len(messages)),
            Text(_short(message_text(first.get("content"))) if first else ""),
        )
    return table


def print_messages(messages: list[dict[str, Any]]) -> None:
    """The thread's messages, one speaker label each; tool traffic dimmed."""
    for message in messages:
        kind = message.get("type")
        text = message_text(message.get("content"))
        if kind == "human":
            out.print(Text("you> ", style="bold cyan") + Text(text))
        elif kind == "ai":
            for call in message.get("tool_calls") or []:
                called = _short(f"{call.get('name')} {call.get('args')}", 100)
                out.print(Text(f"  (called {called})", style="dim"))
            if text:
                out.print(Text("assistant> ", style="bold green") + Text(text))
        elif kind == "tool":
            out.print(Text(f"  ({message.get('name')}: {_short(text, 100)})", style="dim"))


def metrics_table(metrics: dict[str, Any]) -> Table:
    """What memory did in the thread's last turn (see `assistant.state.TurnMetrics`)."""
    table = Table(title="Last turn", title_justify="left", show_header=False)
    table.add_column("", style="dim")
    table.add_column("")
    rows = [
        ("profile facts", len(metrics.get("profile_fact_ids") or [])),
        ("recalled facts", len(metrics.get("recalled_fact_ids") or [])),
        ("episodes", len(metrics.get("episode_thread_ids") or [])),
        ("memory tokens", metrics.get("memory_tokens", 0)),
        ("prompt tokens", metrics.get("prompt_tokens", 0)),
        ("extraction", metrics.get("extraction", "")),
        ("added", len(metrics.get("added") or [])),
        ("updated", len(metrics.get("updated") or [])),
        ("superseded", len(metrics.get("superseded") or [])),
        ("confirmed", len(metrics.get("confirmed") or [])),
        ("compressed", "yes" if metrics.get("compressed") else "no"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def best_match(server: Server, target: str) -> dict[str, Any]:
    """The fact ``target`` names: by key (or a key prefix of 8+), else the best text match.

    A target that looks like a key is only ever a key, so a mistyped key never deletes
    whichever fact happens to match best. Keys reach superseded facts too (an old address
    can be forgotten); text matches only current ones, as recall does.

    Raises:
        CliError: The user has no fact that matches.
    """
    target = target.strip()
    if not target:
        raise CliError("Say which fact: a key from `assistant memories list`, or some of its text.")
    if len(target) >= 8 and all(c in "0123456789abcdef" for c in target.lower()):
        facts = server.facts(include_superseded=True)
        keyed = [fact for fact in facts if str(fact.get("key", "")).startswith(target.lower())]
        if len(keyed) != 1:
            found = "matches several facts" if keyed else "matches no fact"
            raise CliError(f"The key {target!r} {found} (see `assistant memories list`).")
        return keyed[0]
    matches = server.facts(query=target)
    if not matches:
        raise CliError(f"No stored fact matches {target!r} for user {server.user_id!r}.")
    return matches[0]


# --------------------------------------------------------------------------- chat


def read_line(prompt: str) -> str:
    """One line of input after ``prompt`` (Rich markup); raises EOFError at end of input.

    Input that does not come from a terminal (a pipe, a test) is echoed after the prompt,
    so the transcript reads like a conversation.
    """
    line = out.input(prompt)
    if not sys.stdin.isatty():
        out.print(line, markup=False)
    return line


@dataclass(kw_only=True)
class ChatSession:
    """The chat loop: read a line, stream the reply, show what memory did; or run a command."""

    server: Server
    """The server to talk to."""
    thread_id: str
    """The thread messages go to; ``/new`` replaces it."""

    def run(self) -> None:
        """Chat until ``/quit``, Ctrl-D or Ctrl-C at the prompt."""
        banner = Text(f"Chatting as {self.server.user_id}", style="bold")
        banner.append(f" in thread {self.thread_id} on {self.server.connection.url}.\n")
        banner.append(CHAT_HELP, style="dim")
        out.print(banner)
        while True:
            try:
                line = read_line("[bold cyan]you>[/] ").strip()
            except (EOFError, KeyboardInterrupt):
                out.print()
                return
            if not line:
                continue
            try:
                if line.startswith("/"):
                    if not self.command(line):
                        return
                else:
                    self.turn(line)
            except httpx.HTTPStatusError as error:
                connection = self.server.connection
                err.print(
                    f"[red]{_escape(explain(error, url=connection.url, token=connection.token))}[/]"
                )
            except CliError as error:
                err.print(f"[red]{_escape(str(error))}[/]")

    def turn(self, text: str) -> None:
        """Send one message, print the reply as it streams, then the facts it drew on."""
        out.print("[bold green]assistant>[/] ", end="")
        try:
            for piece in self.server.stream_reply(self.thread_id, text):
                out.print(piece, end="", markup=False)
        except KeyboardInterrupt:
            out.print("\n[dim](stopped)[/]")
            return
        except RunFailedError as error:
            out.print()
            err.print(f"[red]The run failed: {_escape(str(error))}[/]")
            return
        out.print()
        self.show_memory()

    def show_memory(self) -> None:
        """The facts recalled into this turn's prompt, and what the turn stored (dimmed)."""
        values = self.server.thread_values(self.thread_id)
        recalled = [*(values.get("profile") or []), *(values.get("recalled") or [])]
        contents = [str(fact.get("content", "")) for fact in recalled]
        out.print(Text(f"  recalled: {' · '.join(contents) or 'nothing'}", style="dim"))
        metrics = values.get("metrics") or {}
        if metrics.get("extraction") == "failed":
            err.print(
                Text(
                    "  memory: nothing was saved from this message (extraction failed; "
                    "the server log says why)",
                    style="yellow",
                )
            )
        messages = values.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        warning = (last.get("response_metadata") or {}).get("memory_warning")
        if warning:
            err.print(Text(f"  warning: {warning}", style="yellow"))
        changed = {
            label: list(metrics.get(name) or [])
            for name, label in (
                ("added", "remembered"),
                ("updated", "updated"),
                ("superseded", "replaced"),
            )
        }
        if any(changed.values()):
            facts = {f["key"]: f for f in self.server.facts(include_superseded=True)}
            for label, keys in changed.items():
                if keys:
                    texts = [str(facts.get(key, {}).get("content", key)) for key in keys]
                    out.print(Text(f"  {label}: {' · '.join(texts)}", style="dim"))

    def command(self, line: str) -> bool:
        """Run one ``/command``; False means leave the chat."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/new":
            self.thread_id = self.server.new_thread()
            out.print(f"New thread {self.thread_id}.", markup=False)
        elif name == "/threads":
            threads = self.server.threads()
            out.print(threads_table(threads, current=self.thread_id) if threads else "No threads.")
        elif name == "/memories":
            facts = self.server.facts()
            title = f"What I remember about {self.server.user_id}"
            out.print(facts_table(facts, title=title) if facts else "Nothing remembered yet.")
        elif name == "/forget":
            self.forget(rest)
        elif name == "/help":
            out.print(CHAT_HELP)
        else:
            out.print(f"Unknown command {name!r}. {CHAT_HELP}", markup=False)
        return True

    def forget(self, text: str) -> None:
        """Find the fact ``text`` describes, ask, and forget it."""
        if not text:
            out.print("Say what to forget: /forget <some of the fact's text>.")
            return
        fact = best_match(self.server, text)
        content = str(fact.get("content", ""))
        try:
            answer = read_line(f"Forget {_escape(repr(content))}? \\[y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            out.print("Kept it.")
            return
        self.server.forget(str(fact["key"]))
        out.print(Text(f"Forgotten: {content}"))


# --------------------------------------------------------------------------- commands

app = typer.Typer(
    cls=_ReportErrors,
    name="assistant",
    help="Chat with the memory assistant and manage what it remembers about you.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals would include the token
    add_completion=False,
)
memories_app = typer.Typer(help="List, search, forget and export your facts.", no_args_is_help=True)
threads_app = typer.Typer(help="List, show and delete your threads.", no_args_is_help=True)
app.add_typer(memories_app, name="memories")
app.add_typer(threads_app, name="threads")

UserOption = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        help="Your user id on a server without auth; with auth, the token decides.",
        show_default=False,
    ),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


@app.callback()
def connect(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            help="Server URL; default ASSISTANT_URL, else http://127.0.0.1:2025.",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Bearer token; default ASSISTANT_TOKEN.", show_default=False),
    ] = None,
    user: UserOption = None,
) -> None:
    """Chat with the memory assistant and manage what it remembers about you."""
    defaults = Connection.from_env()
    ctx.obj = Connection(
        url=(url or defaults.url).rstrip("/"),
        token=defaults.token if token is None else token,
        user=user,
    )


def _server(ctx: typer.Context, user: str | None) -> Server:
    """The server from the global options; a command's ``--user`` wins over the global one."""
    connection = ctx.find_root().obj
    assert isinstance(connection, Connection)
    if user:
        connection = Connection(url=connection.url, token=connection.token, user=user)
    server = Server(connection=connection)
    ctx.call_on_close(server.close)
    return server


@app.command()
def chat(
    ctx: typer.Context,
    user: UserOption = None,
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", help="Continue this thread.", show_default=False)
    ] = None,
    new: Annotated[bool, typer.Option("--new", help="Start a new thread (the default).")] = False,
) -> None:
    """Talk to the assistant; it remembers you across threads.

    In the chat: /new, /threads, /memories, /forget <text>, /quit (or Ctrl-D).
    """
    if thread and new:
        raise typer.BadParameter("pass --thread ID or --new, not both.", param_hint="--thread")
    server = _server(ctx, user)
    thread_id = str(server.thread(thread)["thread_id"]) if thread else server.new_thread()
    ChatSession(server=server, thread_id=thread_id).run()


@memories_app.command("list")
def memories_list(
    ctx: typer.Context,
    user: UserOption = None,
    all_: Annotated[
        bool, typer.Option("--all", "-a", help="Include superseded facts, with their history.")
    ] = False,
) -> None:
    """List your facts."""
    server = _server(ctx, user)
    facts = server.facts(include_superseded=all_)
    if not facts:
        out.print(f"No facts stored for {server.user_id!r} yet.", markup=False)
        return
    out.print(facts_table(facts, title=f"Facts about {server.user_id}", history=all_))


@memories_app.command("search")
def memories_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in any language.")],
    user: UserOption = None,
) -> None:
    """Search your facts, best match first."""
    server = _server(ctx, user)
    facts = server.facts(query=query)
    if not facts:
        out.print(f"No facts stored for {server.user_id!r} yet.", markup=False)
        return
    out.print(facts_table(facts, title=f"Facts matching {query!r}"))


@memories_app.command("forget")
def memories_forget(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A fact's key, or some of its text.")],
    user: UserOption = None,
    yes: YesOption = False,
) -> None:
    """Forget one fact, by key or by its best match for some text."""
    server = _server(ctx, user)
    fact = best_match(server, target)
    content = str(fact.get("content", ""))
    if not yes and not typer.confirm(f"Forget {content!r}?", default=False):
        out.print("Kept it.")
        return
    server.forget(str(fact["key"]))
    out.print(Text(f"Forgotten: {content}"))


@memories_app.command("export")
def memories_export(
    ctx: typer.Context,
    user: UserOption = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", dir_okay=False, help="Write here instead of stdout."),
    ] = None,
) -> None:
    """Export your facts (superseded ones too), episodes and audit trail as JSON."""
    server = _server(ctx, user)
    export = {
        "user_id": server.user_id,
        "server": server.connection.url,
        "exported_at": datetime.now(UTC).isoformat(),
        "facts": server.facts(include_superseded=True),
        "episodes": server.episodes(),
        "audit": server.audit(),
    }
    text = json.dumps(export, ensure_ascii=False, indent=2)
    if output is None:
        typer.echo(text)
        return
    output.write_text(text + "\n", encoding="utf-8")
    out.print(
        f"Wrote {len(export['facts'])} facts, {len(export['episodes'])} episodes and "
        f"{len(export['audit'])} audit entries to {output}.",
        markup=False,
    )


@threads_app.command("list")
def threads_list(
    ctx: typer.Context,
    user: UserOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many to show.")] = 20,
) -> None:
    """List your threads, most recent first."""
    server = _server(ctx, user)
    threads = server.threads(limit=limit)
    out.print(
        threads_table(threads) if threads else f"No threads for {server.user_id!r}.", markup=False
    )


@threads_app.command("show")
def threads_show(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="The thread's id.")],
    user: UserOption = None,
) -> None:
    """Show a thread's messages, its running summary and its last turn's metrics."""
    server = _server(ctx, user)
    server.thread(thread_id)
    values = server.thread_values(thread_id)
    out.print(Text(f"Thread {thread_id}", style="bold"))
    print_messages(list(values.get("messages") or []))
    if summary := str(values.get("summary") or ""):
        out.print(Panel(Text(summary), title="Summary of earlier messages", title_align="left"))
    if metrics := values.get("metrics"):
        out.print(metrics_table(metrics))


@threads_app.command("delete")
def threads_delete(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="The thread's id.")],
    user: UserOption = None,
    yes: YesOption = False,
) -> None:
    """Delete a thread and its messages (facts learned in it stay)."""
    server = _server(ctx, user)
    server.thread(thread_id)
    if not yes and not typer.confirm(f"Delete thread {thread_id}?", default=False):
        out.print("Kept it.")
        return
    server.delete_thread(thread_id)
    out.print(f"Deleted thread {thread_id}.", markup=False)


def main() -> None:
    """Entry point of the ``assistant`` console script."""
    app()
