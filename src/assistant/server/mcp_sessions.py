"""The MCP endpoint's sessions and transport, at ``/memory/mcp`` (tools: `mcp_server`).

A session (``Mcp-Session-Id``) belongs to the user who opened it: another user's request
naming it answers 404, as an unknown session does. A user may hold
``ASSISTANT_MCP_SESSIONS_PER_USER`` sessions at once; opening another answers 429, so one
user looping on ``initialize`` cannot fill the server's `MAX_SESSIONS` and lock every
other user out.

**Transport.** Streamable HTTP with sessions held in the server process, so the client's
name from ``initialize`` is known at every later call (a stateless server would lose it),
and JSON responses (the server sends nothing unasked). A session idle for
``ASSISTANT_MCP_SESSION_IDLE_S`` (5 minutes) ends; the client then opens a new one.
Clients of protocol 2026-07-28 send no handshake: their name comes with each request.

Checked against ``mcp`` 2.3.0's `StreamableHTTPSessionManager`;
``tests/e2e/test_mcp_e2e.py`` drives it with the SDK's own client.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_REQUEST
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from assistant.compat import mcp_open_sessions
from assistant.config.settings import get_auth_settings
from assistant.run.scope import request_user_id
from assistant.server.mcp_server import build_server

__all__ = ["MAX_SESSIONS", "MemoryMCP"]

MAX_SESSIONS = 10_000
"""Open MCP sessions (and their owners) the server keeps; past it a new one answers 503."""


class MemoryMCP:
    """The ASGI app at ``/memory/mcp`` and the lifespan that runs its sessions.

    `run` must be entered (the webapp's lifespan does) before requests are served.
    """

    def __init__(self, *, max_sessions: int = MAX_SESSIONS) -> None:
        """An endpoint that answers 503 until `run` starts it."""
        self._max_sessions = max_sessions
        self._manager: StreamableHTTPSessionManager | None = None
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._opening: dict[str, int] = {}
        """Per user, requests without a session being served now (each may open one)."""

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve sessions for as long as the block runs (a fresh server each time)."""
        server = build_server()
        server.streamable_http_app(
            json_response=True,
            max_sessions=self._max_sessions,
            session_idle_timeout=get_auth_settings().mcp_session_idle_s,
            # The guard (assistant.server.middleware.guard.GUARD) applies the project's origin and
            # Host rules to this route.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None
                self._owners.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request of the MCP transport, for its own caller only."""
        manager = self._manager
        if manager is None:
            detail = "The MCP endpoint is not running; the server has not started it."
            await JSONResponse({"detail": detail}, status_code=503)(scope, receive, send)
            return
        request = Request(scope)
        try:
            user_id = request_user_id(request)
        except HTTPException as error:
            response = JSONResponse({"detail": error.detail}, status_code=error.status_code)
            await response(scope, receive, send)
            return
        session = request.headers.get(MCP_SESSION_ID_HEADER)
        if session is not None and self._owners.get(session) != user_id:
            # Another user's session, or one that ended: the same answer as the SDK's.
            unknown = {"code": INVALID_REQUEST, "message": "Session not found"}
            body = {"jsonrpc": "2.0", "id": None, "error": unknown}
            await JSONResponse(body, status_code=404)(scope, receive, send)
            return
        if session is not None:
            await manager.handle_request(scope, receive, send)
            if request.method == "DELETE":
                self._owners.pop(session, None)
            return
        limit = get_auth_settings().mcp_sessions_per_user
        held = self.sessions_of(user_id) + self._opening.get(user_id, 0)
        if held >= limit:
            detail = (
                f"You have {held} MCP sessions open, the most one user may hold ({limit}; "
                "ASSISTANT_MCP_SESSIONS_PER_USER). Close one (DELETE with its "
                "Mcp-Session-Id) or let one idle out, then connect again."
            )
            refused = {"code": INVALID_REQUEST, "message": detail}
            body = {"jsonrpc": "2.0", "id": None, "error": refused}
            await JSONResponse(body, status_code=429, headers={"Retry-After": "5"})(
                scope, receive, send
            )
            return
        self._opening[user_id] = self._opening.get(user_id, 0) + 1
        try:
            await manager.handle_request(scope, receive, self._binding(send, user_id))
        finally:
            self._opening[user_id] -= 1
            if not self._opening[user_id]:
                del self._opening[user_id]

    def sessions_of(self, user_id: str) -> int:
        """How many sessions ``user_id`` holds open; forgets the owners of ended ones."""
        manager = self._manager
        if manager is None:
            return 0
        open_now = mcp_open_sessions(manager)
        for ended in [key for key in self._owners if key not in open_now]:
            del self._owners[ended]
        return sum(1 for owner in self._owners.values() if owner == user_id)

    def _binding(self, send: Send, user_id: str) -> Send:
        """``send`` that records the owner of a session the response opens."""
        header = MCP_SESSION_ID_HEADER.lower().encode("latin-1")

        async def bind(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == header:
                        self._owners[value.decode("latin-1")] = user_id
                        while len(self._owners) > self._max_sessions:
                            self._owners.popitem(last=False)
            await send(message)

        return bind
