"""The server's outer wall: small middlewares every request passes before any route.

LangGraph Server runs the middleware of the project's ``http.app`` outermost, around its
own routes, the dev runtime's ``/internal/*`` and ``/deploy`` routes (which sit outside
the auth layer) and the meta routes (``/info``, ``/metrics``, ``/docs``,
``/openapi.json``). `GUARD` lists the wall's middlewares, outermost first; each has one job:

1. `NoFraming`: no page of the server may be framed by another (``X-Frame-Options: DENY``
   and CSP ``frame-ancestors 'none'`` on every response, refusals included), so a page
   elsewhere cannot lay the console invisibly over a button of its own (clickjacking).
2. `HiddenRoutes`: ``/internal/*`` and ``/deploy*`` do not exist (404), whatever the auth
   mode: they read any thread and wipe every thread, with no token.
3. `KnownHosts`: under ``langgraph dev`` the ``Host`` must be a loopback name or listed in
   ``ASSISTANT_ALLOWED_HOSTS``, which stops DNS-rebinding pages posing as the server.
4. `KnownOrigins`: a page from another origin gets nothing (403) and causes nothing: only
   loopback origins, the server's own origin and ``ASSISTANT_CORS_ORIGINS`` (LangGraph
   Studio's page by default) may call it. This holds for simple requests (``text/plain``,
   no preflight) as much as for preflighted ones, since the request is refused before it
   runs.
5. `ReadableRefusals`: the answers of the middlewares below it (a 401 for a wrong key, a
   403, a 413) carry ``Access-Control-Allow-Origin`` for the allowed origin that asked, as
   the routes' own answers do, so a browser client (agent-chat-ui) can read the refusal
   instead of reporting a CORS error and retrying.
6. `RequireToken`: with custom auth on, every request but the health checks (``/ok``,
   ``/``), the console page and CORS preflights must authenticate, so a route a future
   langgraph-api adds outside the auth layer is closed by default. With several users (JWTs
   or dev tokens), ``/metrics`` (every user's request counts) is for the maintenance token.
   `ShortInfo`: with several users, ``/info`` shows a user only its ``flags`` (what clients
   such as Studio and agent-chat-ui read); versions and the deployment's ids are for the
   maintenance token (`assistant.info`). `CallersSchemas`: an assistant's ``context_schema``
   (Studio's settings form) offers a caller only the fields it may set per run
   (`assistant.policy.callers_context_schema`); the maintenance token sees them all.
7. `LimitBody`: a request body is read once, counting bytes as they arrive, before any route
   parses it: one over ``ASSISTANT_MAX_BODY_BYTES`` (1 MiB by default) answers 413,
   announced by ``Content-Length`` or sent in chunks without one, and no more of it is read.
   The route then gets the same bytes.
8. `LimitJsonDepth`: JSON nested deeper than `MAX_JSON_DEPTH` answers 422.
9. `NoPrefilledState`: creating a thread with ``supersteps`` (prefilled state), a write the
   platform sends through no auth handler, is for the maintenance token only (403).
10. `OwnStreams`: the event stream of a thread the caller cannot read answers 404, as the
   thread does.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from langgraph_sdk import Auth
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.auth import request_caller
from assistant.constants import ADMIN_PERMISSION, CONSOLE_PATH, HEALTH_PATHS
from assistant.info import ShortInfo
from assistant.middleware import (
    BodyCheck,
    BodyTooLarge,
    HttpOnly,
    Refusal,
    ScopeCheck,
    read_body,
    refuse,
    replay_body,
    request_headers,
    rewritten_body,
    route_path,
)
from assistant.policy import callers_context_schema, parse_run_settings
from assistant.settings import AuthSettings, custom_auth_configured, get_auth_settings

__all__ = [
    "GUARD",
    "MAX_JSON_DEPTH",
    "CallersSchemas",
    "HiddenRoutes",
    "KnownHosts",
    "KnownOrigins",
    "LimitBody",
    "LimitJsonDepth",
    "NoFraming",
    "NoPrefilledState",
    "OwnStreams",
    "ReadableRefusals",
    "RequireToken",
    "is_loopback_host",
    "json_too_deep",
    "origin_allowed",
    "route_path",
]

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


def _host_name(host_header: str) -> str:
    return urlsplit(f"//{host_header}").hostname or ""


class NoFraming(HttpOnly):
    """Every HTTP response carries the `NO_FRAMING` headers."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the headers to its response's start."""

        async def framed_never(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() != b"x-frame-options"
                ]
                message = {**message, "headers": [*kept, *NO_FRAMING]}
            await send(message)

        await self.app(scope, receive, framed_never)


class HiddenRoutes(ScopeCheck):
    """``/internal/*`` and ``/deploy*`` answer 404, whatever the auth mode."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Not Found for the dev runtime's routes outside auth."""
        if route_path(scope).startswith(HIDDEN_PREFIXES):
            return Refusal(404, "Not Found")
        return None


class KnownHosts(ScopeCheck):
    """Under ``langgraph dev``, a ``Host`` that is not loopback or listed answers 403."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Forbidden for another host's name (DNS rebinding)."""
        host = request_headers(scope).get("host", "")
        name = _host_name(host)
        if not settings.local_dev or not host or is_loopback_host(name):
            return None
        if name in settings.allowed_hosts:
            return None
        return Refusal(
            403,
            f"Host {host!r} is not this server's. Under `langgraph dev` only loopback "
            "names are served; add others to ASSISTANT_ALLOWED_HOSTS.",
        )


class KnownOrigins(ScopeCheck):
    """A request from an origin that may not call this server answers 403, before it runs."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Forbidden for a foreign ``Origin``, or a cross-site write that names none."""
        headers = request_headers(scope)
        host, origin = headers.get("host", ""), headers.get("origin")
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        own = f"{scheme}://{host}" if host else None
        if origin is not None and not origin_allowed(origin, own, settings):
            return Refusal(
                403,
                f"Requests from origin {origin!r} are refused. Add it to ASSISTANT_CORS_ORIGINS "
                "to let its pages call this server.",
            )
        cross_site = headers.get("sec-fetch-site") == "cross-site"
        if origin is None and cross_site and scope.get("method", "GET") not in ("GET", "HEAD"):
            return Refusal(403, "Cross-site requests are refused.")
        return None


class ReadableRefusals(HttpOnly):
    """An answer without CORS headers gets them for the (allowed) origin that asked.

    `KnownOrigins`, outside it, has already refused every other origin; the platform's
    own CORS layer sits inside the routes, so the answers of the middlewares between them
    would otherwise reach a browser unreadable.
    """

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the origin to an answer that lacks it."""
        origin = request_headers(scope).get("origin")
        if origin is None:
            await self.app(scope, receive, send)
            return

        async def readable(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                if b"access-control-allow-origin" not in names:
                    headers += [
                        (b"access-control-allow-origin", origin.encode("latin-1")),
                        (b"vary", b"Origin"),
                    ]
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, readable)


class RequireToken(ScopeCheck):
    """With custom auth, a request without valid credentials answers 401 on any route."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Unauthorized without a valid token; forbidden for a user on an admin route."""
        path, method = route_path(scope), scope.get("method", "GET")
        if not custom_auth_configured() or path in HEALTH_PATHS or method == "OPTIONS":
            return None
        if method == "GET" and path == CONSOLE_PATH:
            return None
        try:
            caller = request_caller(request_headers(scope), settings)
        except Auth.exceptions.HTTPException as error:
            headers = tuple((error.headers or {}).items())
            return Refusal(error.status_code, str(error.detail), headers)
        several_users = bool(settings.jwt_secret or settings.dev_tokens)
        if path in ADMIN_PATHS and several_users:
            if ADMIN_PERMISSION not in caller.get("permissions", []):
                return Refusal(403, f"{path} is for the maintenance token only.")
        return None


_SCHEMAS_PATH = re.compile(r"^/assistants/[^/]+/schemas$")
"""An assistant's schemas: input, output, state and the context Studio's form is built from."""


class CallersSchemas(HttpOnly):
    """An assistant's ``context_schema`` offers a caller only the fields it may set."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; for a caller's schemas, keep only its own settings."""
        if not self._for_a_caller(scope):
            await self.app(scope, receive, send)
            return
        rules = parse_run_settings(get_auth_settings().run_settings)

        def offered(body: bytes) -> bytes:
            try:
                schemas = json.loads(body)
            except ValueError:
                return body
            context = schemas.get("context_schema") if isinstance(schemas, dict) else None
            if not isinstance(context, dict):
                return body
            schemas["context_schema"] = callers_context_schema(context, rules)
            return json.dumps(schemas).encode()

        await self.app(scope, receive, rewritten_body(send, offered))

    @staticmethod
    def _for_a_caller(scope: Scope) -> bool:
        """A ``GET`` of schemas by someone other than the maintenance token, under auth."""
        if scope.get("method") != "GET" or not _SCHEMAS_PATH.match(route_path(scope)):
            return False
        if not custom_auth_configured():
            return False
        # `RequireToken`, outside this middleware, has refused a request without a valid token.
        caller = request_caller(request_headers(scope), get_auth_settings())
        return ADMIN_PERMISSION not in caller.get("permissions", [])


class LimitBody(HttpOnly):
    """A body over ``ASSISTANT_MAX_BODY_BYTES`` answers 413, and no more of it is read."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body, at most the allowed size; refuse it, or replay it to the route."""
        limit = get_auth_settings().max_body_bytes
        too_large = Refusal(
            413,
            f"The request body is larger than this server accepts ({limit} bytes; an operator "
            "can change ASSISTANT_MAX_BODY_BYTES).",
        )
        declared = request_headers(scope).get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            await refuse(scope, send, too_large)
            return
        try:
            body = await read_body(receive, limit)
        except BodyTooLarge:
            await refuse(scope, send, too_large)
            return
        if body is not None:
            await self.app(scope, replay_body(body, receive), send)


class LimitJsonDepth(BodyCheck):
    """A JSON body nested deeper than `MAX_JSON_DEPTH` answers 422."""

    def refusal(self, scope: Scope, body: bytes) -> Refusal | None:
        """Unprocessable when the body nests too deep."""
        if json_too_deep(body):
            return Refusal(422, f"JSON nested more than {MAX_JSON_DEPTH} levels deep is refused.")
        return None


class NoPrefilledState(BodyCheck):
    """``POST /threads`` with ``supersteps`` answers 403 unless the caller is the admin."""

    def reads(self, scope: Scope) -> bool:
        """Only thread creation is read."""
        return scope.get("method") == "POST" and route_path(scope).rstrip("/") == "/threads"

    def refusal(self, scope: Scope, body: bytes) -> Refusal | None:
        """Forbidden for a user's prefilled state."""
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError:
            payload = {}
        if not isinstance(payload, dict) or not payload.get("supersteps"):
            return None
        if custom_auth_configured():
            caller = request_caller(request_headers(scope), get_auth_settings())
            if ADMIN_PERMISSION in caller.get("permissions", []):
                return None
        return Refusal(
            403,
            "A thread's state is written by the assistant: create the thread without "
            "supersteps and send messages as runs.",
        )


class OwnStreams:
    """The event stream of a thread the caller cannot read answers 404, as the thread does."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Ask the server whether the caller can read the stream's thread; pass on if so."""
        match = _STREAM_PATH.match(route_path(scope))
        if scope["type"] in ("http", "websocket") and scope.get("method", "GET") == "GET" and match:
            if not await self._can_read_thread(scope, match["thread_id"]):
                await refuse(scope, send, Refusal(404, f"Thread {match['thread_id']} not found."))
                return
        await self.app(scope, receive, send)

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


GUARD: tuple[Callable[[ASGIApp], ASGIApp], ...] = (
    NoFraming,
    HiddenRoutes,
    KnownHosts,
    KnownOrigins,
    ReadableRefusals,
    RequireToken,
    ShortInfo,
    CallersSchemas,
    LimitBody,
    LimitJsonDepth,
    NoPrefilledState,
    OwnStreams,
)
"""The wall's middlewares, outermost first (see the module docstring); `assistant.webapp`
puts them, in this order, around every route the server answers."""
