"""The server's outer wall: every request passes here before any route, the platform's included.

LangGraph Server runs the middleware of the project's ``http.app`` outermost, around its
own routes, the dev runtime's ``/internal/*`` and ``/deploy`` routes (which sit outside
the auth layer) and the meta routes (``/info``, ``/metrics``, ``/docs``,
``/openapi.json``). `Guard` decides, in this order:

1. ``/internal/*`` and ``/deploy*`` do not exist (404), whatever the auth mode: they read
   any thread and wipe every thread, with no token.
2. A page from another origin gets nothing (403) and causes nothing: only loopback origins,
   the server's own origin and ``ASSISTANT_CORS_ORIGINS`` (LangGraph Studio's page by
   default) may call it. This holds for simple requests (``text/plain``, no preflight) as
   much as for preflighted ones, since the request is refused before it runs. Under
   ``langgraph dev`` the ``Host`` must be a loopback name or listed in
   ``ASSISTANT_ALLOWED_HOSTS``, which stops DNS-rebinding pages posing as the server.
3. With custom auth on, every request but the health checks (``/ok``, ``/``), the console
   page and CORS preflights must authenticate, so a route a future langgraph-api adds
   outside the auth layer is closed by default.
4. A request body is read once, counting bytes as they arrive, before any route parses it:
   one over ``ASSISTANT_MAX_BODY_BYTES`` (1 MiB by default) answers 413, announced by
   ``Content-Length`` or sent in chunks without one, and no more of it is read; JSON nested
   deeper than `MAX_JSON_DEPTH` answers 422. The route then gets the same bytes.
   Writes the platform does not send through auth handlers are refused for users: creating
   a thread with ``supersteps`` (prefilled state).
5. The event stream of a thread the caller cannot read answers 404, as the thread does.
6. With several users (JWTs or dev tokens), ``/metrics`` (every user's request counts) is
   for the maintenance token only.
7. No page of the server may be framed by another (``X-Frame-Options: DENY`` and CSP
   ``frame-ancestors 'none'`` on every response), so a page elsewhere cannot lay the
   console invisibly over a button of its own (clickjacking).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from langgraph_sdk import Auth

from assistant.auth import authenticate_token
from assistant.constants import ADMIN_PERMISSION, CONSOLE_PATH, HEALTH_PATHS
from assistant.settings import AuthSettings, custom_auth_configured, get_auth_settings

__all__ = [
    "MAX_JSON_DEPTH",
    "Guard",
    "is_loopback_host",
    "json_too_deep",
    "origin_allowed",
    "route_path",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HIDDEN_PREFIXES = ("/internal/", "/deploy")
"""The dev runtime's routes outside auth; they must not be reachable at all."""

_STREAM_PATH = re.compile(r"^/threads/(?P<thread_id>[^/]+)/(?:runs/[^/]+/)?(?:stream|join)$")
"""Event streams (and joins) of a thread's runs; checked against the thread's owner."""

ADMIN_PATHS = frozenset({"/metrics"})
"""Routes only the maintenance token may read when the server has several users: the
metrics count every user's requests."""

NO_FRAMING = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
)
"""Headers on every response: no page of the server may be shown inside another's frame."""

MAX_JSON_DEPTH = 64
"""Deepest nesting of objects and arrays a JSON body may have (a run's input needs about
six). Parsers recurse on nesting: thousands of levels fail some of them with a 500."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (no port) names this machine.

    >>> [is_loopback_host(h) for h in ("localhost", "127.0.0.1", "::1", "app.localhost")]
    [True, True, True, True]
    >>> is_loopback_host("evil.example") or is_loopback_host("10.0.0.1")
    False
    """
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_allowed(origin: str, own_origin: str | None, settings: AuthSettings) -> bool:
    """Whether a page served from ``origin`` may call this server.

    >>> settings = AuthSettings(cors_origins=("https://smith.langchain.com",))
    >>> origin_allowed("http://localhost:5173", None, settings)
    True
    >>> origin_allowed("https://smith.langchain.com", None, settings)
    True
    >>> origin_allowed("https://evil.example", None, settings)
    False
    >>> origin_allowed("null", None, settings)
    False
    """
    origin = origin.strip().rstrip("/")
    if origin in settings.cors_origins or (own_origin is not None and origin == own_origin):
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and is_loopback_host(parts.hostname or "")


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body``, read as JSON, nests objects and arrays more than ``limit`` deep.

    A body that is not JSON is not too deep: the route answers it as it does any bad body.
    A body with no more brackets than ``limit`` is not even parsed.

    >>> json_too_deep(b'{"messages": [{"content": "[[[[[["}]}', limit=3)  # strings don't count
    False
    >>> json_too_deep(b"[" * 5000 + b"]" * 5000), json_too_deep(b"not json [[[[", limit=2)
    (True, False)
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    try:
        payload = json.loads(body)
    except RecursionError:
        return True
    except ValueError:
        return False
    containers: list[tuple[dict[str, Any] | list[Any], int]] = []
    if isinstance(payload, dict | list):
        containers.append((payload, 1))
    while containers:
        value, depth = containers.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        containers.extend((item, depth + 1) for item in children if isinstance(item, dict | list))
    return False


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", [])
    }


def route_path(scope: Scope) -> str:
    """The path the routes see: without the mount prefix (``root_path``), if any.

    >>> route_path({"path": "/api/store/items/search", "root_path": "/api"})
    '/store/items/search'
    """
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def _host_name(host_header: str) -> str:
    return urlsplit(f"//{host_header}").hostname or ""


async def _respond(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((name.encode(), value.encode()) for name, value in (headers or {}).items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _unframeable(send: Send) -> Send:
    """``send`` with the `NO_FRAMING` headers added to the response's start."""

    async def framed_never(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [
                (name, value)
                for name, value in message.get("headers", [])
                if name.lower() != b"x-frame-options"
            ]
            message = {**message, "headers": [*kept, *NO_FRAMING]}
        await send(message)

    return framed_never


class Guard:
    """ASGI middleware on the project's ``http.app``; see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then pass it on or answer it."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _unframeable(send)
        refusal = await self._check(scope)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await _respond(send, *refusal)
            return
        if scope["type"] == "http":
            replay = await self._admit_body(scope, receive, send)
            if replay is None:
                return
            receive = replay
        path, method = route_path(scope), scope.get("method", "GET")
        match = _STREAM_PATH.match(path)
        if method == "GET" and match and not await self._can_read_thread(scope, match["thread_id"]):
            await _respond(send, 404, f"Thread {match['thread_id']} not found.")
            return
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        path, method = route_path(scope), scope.get("method", "GET")
        if path.startswith(HIDDEN_PREFIXES):
            return 404, "Not Found", {}
        headers = _headers(scope)
        settings = get_auth_settings()
        host = headers.get("host", "")
        if (
            settings.local_dev
            and host
            and not is_loopback_host(_host_name(host))
            and _host_name(host) not in settings.allowed_hosts
        ):
            return (
                403,
                f"Host {host!r} is not this server's. Under `langgraph dev` only loopback "
                "names are served; add others to ASSISTANT_ALLOWED_HOSTS.",
                {},
            )
        origin = headers.get("origin")
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        own = f"{scheme}://{host}" if host else None
        if origin is not None and not origin_allowed(origin, own, settings):
            return (
                403,
                f"Requests from origin {origin!r} are refused. Add it to ASSISTANT_CORS_ORIGINS "
                "to let its pages call this server.",
                {},
            )
        if (
            origin is None
            and headers.get("sec-fetch-site") == "cross-site"
            and method not in ("GET", "HEAD")
        ):
            return 403, "Cross-site requests are refused.", {}
        if not custom_auth_configured() or path in HEALTH_PATHS or method == "OPTIONS":
            return None
        if method == "GET" and path == CONSOLE_PATH:
            return None
        try:
            caller = self._caller(headers, settings)
        except Auth.exceptions.HTTPException as error:
            return error.status_code, str(error.detail), dict(error.headers or {})
        several_users = bool(settings.jwt_secret or settings.dev_tokens)
        if path in ADMIN_PATHS and several_users:
            if ADMIN_PERMISSION not in caller.get("permissions", []):
                return 403, f"{path} is for the maintenance token only.", {}
        return None

    @staticmethod
    def _caller(headers: dict[str, str], settings: AuthSettings) -> Auth.types.MinimalUserDict:
        authorization = headers.get("authorization")
        if not authorization and (api_key := headers.get("x-api-key")):
            authorization = f"Bearer {api_key}"
        return authenticate_token(authorization, settings)

    async def _admit_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the body, at most the allowed size; refuse it, or replay it to the route.

        Returns None when the request is answered here (413, 422, 403) or the client left.
        """
        limit = get_auth_settings().max_body_bytes
        too_large = (
            f"The request body is larger than this server accepts ({limit} bytes; an operator "
            "can change ASSISTANT_MAX_BODY_BYTES)."
        )
        declared = _headers(scope).get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            await _respond(send, 413, too_large)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client left: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _respond(send, 413, too_large)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if json_too_deep(body):
            await _respond(
                send, 422, f"JSON nested more than {MAX_JSON_DEPTH} levels deep is refused."
            )
            return None
        path, method = route_path(scope), scope.get("method", "GET")
        if method == "POST" and path.rstrip("/") == "/threads":
            if await self._refuse_prefilled_state(scope, body, send):
                return None
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    async def _refuse_prefilled_state(self, scope: Scope, body: bytes, send: Send) -> bool:
        """Refuse a ``POST /threads`` body with ``supersteps`` unless admin; True if refused."""
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError:
            payload = {}
        if not isinstance(payload, dict) or not payload.get("supersteps"):
            return False
        permissions: list[str] = []
        if custom_auth_configured():
            caller = self._caller(_headers(scope), get_auth_settings())
            permissions = list(caller.get("permissions", []))
        if ADMIN_PERMISSION in permissions:
            return False
        await _respond(
            send,
            403,
            "A thread's state is written by the assistant: create the thread without "
            "supersteps and send messages as runs.",
        )
        return True

    async def _can_read_thread(self, scope: Scope, thread_id: str) -> bool:
        """Ask the server itself, with the caller's headers, whether the thread exists."""
        status = 0

        async def no_body() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])

        probe = dict(scope)
        root = str(scope.get("root_path", ""))
        probe.update(method="GET", path=f"{root}/threads/{thread_id}", query_string=b"")
        probe["raw_path"] = probe["path"].encode()
        await self.app(probe, no_body, capture)
        return status == 200
