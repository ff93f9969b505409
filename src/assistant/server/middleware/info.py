"""``GET /info`` for a user: what clients read, not what identifies the deployment.

LangGraph Server's ``/info`` answers the server's and LangGraph's versions, the
deployment's project, tenant and revision ids, and ``flags`` (which features are on).
Clients check it: agent-chat-ui asks for it with its key before it connects, and LangGraph
Studio reads the flags. With several users (JWTs or dev tokens), :class:`ShortInfo` keeps a
user's answer to ``flags``, so no user learns exact versions to look up known flaws for, or
the deployment's ids; the maintenance token gets the whole answer. With one user (or no
custom auth) that user runs the server, and the answer is whole.
"""

from __future__ import annotations

import json

from starlette.types import Receive, Scope, Send

from assistant.config.constants import ADMIN_PERMISSION
from assistant.config.settings import custom_auth_configured, get_auth_settings
from assistant.server.auth import request_caller
from assistant.server.middleware.base import HttpOnly, request_headers, rewritten_body, route_path

__all__ = ["INFO_PATH", "USER_INFO_KEYS", "ShortInfo", "short_info"]

INFO_PATH = "/info"

USER_INFO_KEYS = ("flags",)
"""What a user (not the maintenance token) sees of ``/info`` on a server with several users."""


def short_info(body: bytes) -> bytes:
    """``body`` (``/info``'s JSON) with only `USER_INFO_KEYS`; anything else as ``{}``.

    >>> short_info(b'{"version": "0.16.7", "flags": {"crons": true}, "host": {"tenant_id": "t"}}')
    b'{"flags": {"crons": true}}'
    >>> short_info(b"not json")
    b'{}'
    """
    try:
        whole = json.loads(body)
    except ValueError:
        whole = {}
    kept = {key: whole[key] for key in USER_INFO_KEYS if isinstance(whole, dict) and key in whole}
    return json.dumps(kept).encode()


def _shortened_for(scope: Scope) -> bool:
    """Whether this request's ``/info`` answer is a user's, on a server with several users."""
    if scope.get("method") != "GET" or route_path(scope) != INFO_PATH:
        return False
    settings = get_auth_settings()
    if not custom_auth_configured() or not (settings.jwt_secret or settings.dev_tokens):
        return False
    # `RequireToken`, outside this middleware, has refused a request without a valid token.
    caller = request_caller(request_headers(scope), settings)
    return ADMIN_PERMISSION not in caller.get("permissions", [])


class ShortInfo(HttpOnly):
    """A user's ``GET /info`` answers `short_info` of the server's answer."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; for a user's ``/info``, send the shortened body instead."""
        if not _shortened_for(scope):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, rewritten_body(send, short_info))
