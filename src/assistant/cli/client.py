"""Talking to the server: connection settings, the SDK and memory API client, errors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIConnectionError

from assistant.cli.render import err, escape_markup, message_text
from assistant.config.constants import GRAPH_ID, OWNER_KEY
from assistant.config.settings import get_client_settings

CLIENT_HEADERS = {"x-assistant-client": "cli", "user-agent": "assistant-cli"}
"""Sent with every request. The audit trail records memory API changes as ``via="api"``,
with ``client="cli"`` as the name this program gave (the server cannot verify it)."""

SERVER_DOWN = (
    "Cannot reach the assistant server at {url} — start it with `make dev` or set ASSISTANT_URL."
)


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
                    f"[dim]Note: the server knows you as {escape_markup(repr(self._user_id))} "
                    f"from your token; --user {escape_markup(requested)} is ignored.[/]"
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

    def heard(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """What memory made of the user's latest messages (kept, nothing, held, skipped, failed).

        Newest first, at most ``limit`` (the server takes 1 to 100).
        """
        return list(self._memory("GET", "heard", limit=str(limit))["heard"])

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
            GRAPH_ID,
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


# --------------------------------------------------------------------------- rendering
