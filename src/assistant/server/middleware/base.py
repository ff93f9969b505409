"""ASGI building blocks of the server's middlewares (`guard`, `disconnect`).

A middleware of the guard checks one thing and either passes the request on or answers it
with a `Refusal`. `ScopeCheck` is one that decides from the request line and headers alone
(HTTP and websockets); `BodyCheck` one that reads the HTTP body first and hands the route
the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.config.settings import AuthSettings, get_auth_settings

__all__ = [
    "HttpOnly",
    "BodyCheck",
    "BodyTooLarge",
    "Refusal",
    "ScopeCheck",
    "read_body",
    "refuse",
    "replay_body",
    "request_headers",
    "rewritten_body",
    "route_path",
]


def route_path(scope: Scope) -> str:
    """The path the routes see: without the mount prefix (``root_path``), if any.

    >>> route_path({"path": "/api/store/items/search", "root_path": "/api"})
    '/store/items/search'
    """
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the last one of a repeated name).

    >>> request_headers({"headers": [(b"Host", b"localhost:2025")]})
    {'host': 'localhost:2025'}
    """
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", [])
    }


class Refusal(NamedTuple):
    """How a middleware answers a request it refuses."""

    status: int
    """The HTTP status (a websocket is closed instead)."""
    detail: str
    """What was wrong and what to do, sent as ``{"detail": ...}``."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers the answer carries besides its content type and length."""


async def refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
    """Answer ``refusal`` as JSON ``{"detail": ...}``; a websocket is closed (policy, 1008)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"detail": refusal.detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": refusal.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((name.encode(), value.encode()) for name, value in refusal.headers),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HttpOnly:
    """A middleware for HTTP requests; anything else (websockets, lifespan) passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand an HTTP request to :meth:`handle`; pass anything else on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer, or pass on to ``self.app``, an HTTP request."""
        raise NotImplementedError


class ScopeCheck:
    """A middleware that refuses a request, HTTP or websocket, from its scope alone."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on."""
        if scope["type"] in ("http", "websocket"):
            refusal = self.refusal(scope, get_auth_settings())
            if refusal is not None:
                await refuse(scope, send, refusal)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Why the request is refused, or None to pass it on."""
        raise NotImplementedError


class BodyTooLarge(Exception):
    """The request body grew over the limit while it was read; the rest is left unread."""


async def read_body(receive: Receive, limit: int | None = None) -> bytes | None:
    """The whole request body, or None if the client left before sending it all.

    Raises:
        BodyTooLarge: The body grew over ``limit`` bytes.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # the client left: nobody to answer
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever ``receive`` gives (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class BodyCheck:
    """A middleware that reads an HTTP request's body, then refuses it or replays it."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body, then refuse the request or pass it on with the same bytes."""
        if scope["type"] != "http" or not self.reads(scope):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return  # the client left: nobody to answer
        refusal = self.refusal(scope, body)
        if refusal is not None:
            await refuse(scope, send, refusal)
            return
        await self.app(scope, replay_body(body, receive), send)

    def reads(self, scope: Scope) -> bool:
        """Whether this middleware looks at the request's body (every request by default)."""
        return True

    def refusal(self, scope: Scope, body: bytes) -> Refusal | None:
        """Why the request with ``body`` is refused, or None to pass it on."""
        raise NotImplementedError


def rewritten_body(send: Send, change: Callable[[bytes], bytes]) -> Send:
    """``send`` that sends a 200 answer's whole body as ``change(body)`` (length fixed).

    Any other status passes unchanged.
    """
    start: Message = {}
    chunks: list[bytes] = []

    async def rewrite(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        if message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(chunks)
        if start.get("status") == 200:
            body = change(body)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return rewrite
