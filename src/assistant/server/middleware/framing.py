"""No page of the server may be framed by another (clickjacking): `NoFraming`."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from assistant.server.middleware.base import (
    HttpOnly,
)

__all__ = ["NO_FRAMING", "NoFraming"]

NO_FRAMING = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
)
"""Headers on every response: no page of the server may be shown inside another's frame."""


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
