"""A body is read once, counting bytes, and refused over its limit: `LimitBody`."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from assistant.config.settings import get_auth_settings
from assistant.server.middleware.base import (
    BodyTooLarge,
    HttpOnly,
    Refusal,
    read_body,
    refuse,
    replay_body,
    request_headers,
)

__all__ = ["LimitBody"]


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
