"""The event stream of a thread the caller cannot read does not exist: `OwnStreams`."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.server.middleware.base import (
    Refusal,
    refuse,
    route_path,
)

__all__ = ["OwnStreams"]

_STREAM_PATH = re.compile(r"^/threads/(?P<thread_id>[^/]+)/(?:runs/[^/]+/)?(?:stream|join)$")
"""Event streams (and joins) of a thread's runs; checked against the thread's owner."""


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
