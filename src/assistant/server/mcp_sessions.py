"""The MCP endpoint's sessions and transport, at ``/memory/mcp`` (tools: `mcp_server`).

A session (``Mcp-Session-Id``) belongs to the user who opened it: another user's request
naming it answers 404, as an unknown session does.

**Transport.** Streamable HTTP with sessions held in the server process, so the client's
name from ``initialize`` is known at every later call (a stateless server would lose it),
and JSON responses (the server sends nothing unasked). A session idle for 30 minutes ends;
the client then opens a new one. Clients of protocol 2026-07-28 send no handshake: their
name comes with each request.

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

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve sessions for as long as the block runs (a fresh server each time)."""
        server = build_server()
        server.streamable_http_app(
            json_response=True,
            max_sessions=self._max_sessions,
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
        await manager.handle_request(
            scope, receive, send if session is not None else self._binding(send, user_id)
        )
        if session is not None and request.method == "DELETE":
            self._owners.pop(session, None)

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
