"""Which pages may call the server, and what they can read of its refusals.

A page from another origin gets nothing and causes nothing (`KnownOrigins`); an allowed one
can read the wall's refusals (`ReadableRefusals`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import Message, Receive, Scope, Send

from assistant.config.settings import AuthSettings
from assistant.server.middleware.base import (
    HttpOnly,
    Refusal,
    ScopeCheck,
    request_headers,
)
from assistant.server.middleware.hosts import is_loopback_host

__all__ = ["KnownOrigins", "ReadableRefusals", "origin_allowed"]


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
    (a 401 for a wrong key, a 403, a 413) would otherwise reach a browser unreadable, and
    agent-chat-ui would report a CORS error and retry.
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
