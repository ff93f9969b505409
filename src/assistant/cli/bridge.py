"""``assistant mcp``: the user's memory for MCP clients that speak only stdio.

It serves MCP on stdin and stdout and forwards every message, unchanged, to the server's
``/memory/mcp`` (Streamable HTTP) with the user's token, and every answer back. The server
therefore sees the client's own handshake (its name lands in the audit trail) and decides
who the user is, as for any other request; the bridge holds no memory and no tools.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Protocol
from urllib.parse import urlencode

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from assistant.cli.client import CLIENT_HEADERS, Connection
from assistant.config.constants import MCP_PATH

__all__ = ["endpoint", "forward", "serve"]

TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The MCP SDK's own defaults: a tool call may take a while (``add_memory`` asks a model)."""


class Sink(Protocol):
    """Where `forward` sends messages (either side's write stream)."""

    async def send(self, item: SessionMessage, /) -> None:
        """Send one message on."""


def endpoint(connection: Connection) -> str:
    """The server's MCP address for ``connection`` (``?user_id=`` only for ``--user``).

    >>> endpoint(Connection(url="http://127.0.0.1:2025"))
    'http://127.0.0.1:2025/memory/mcp'
    >>> endpoint(Connection(url="http://127.0.0.1:2025", user="alice"))
    'http://127.0.0.1:2025/memory/mcp?user_id=alice'
    """
    query = f"?{urlencode({'user_id': connection.user})}" if connection.user else ""
    return f"{connection.url}{MCP_PATH}{query}"


async def forward(
    source: AsyncIterator[SessionMessage | Exception],
    target: Sink,
    *,
    side: str,
) -> None:
    """Pass every message from ``source`` to ``target``; report unreadable ones on stderr."""
    async for message in source:
        if isinstance(message, Exception):
            print(f"assistant mcp: dropped a message from {side}: {message}", file=sys.stderr)
            continue
        await target.send(message)


async def serve(connection: Connection) -> None:
    """Bridge stdio to the server until the client closes stdin (or the server goes)."""
    token = connection.token
    headers = {
        "user-agent": CLIENT_HEADERS["user-agent"],
        **({"authorization": f"Bearer {token}"} if token else {}),
    }
    async with stdio_server() as (local_read, local_write):
        try:
            await _bridge(connection, headers, local_read, local_write)
        finally:
            # stdio_server waits for its writer, which ends only when this stream closes:
            # without it the bridge would outlive its client's stdin.
            await local_write.aclose()


async def _bridge(
    connection: Connection,
    headers: dict[str, str],
    local_read: AsyncIterator[SessionMessage | Exception],
    local_write: Sink,
) -> None:
    """Forward both ways until one side ends; leaving closes the server's session."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
        streamable_http_client(endpoint(connection), http_client=http) as (
            remote_read,
            remote_write,
        ),
        anyio.create_task_group() as group,
    ):

        async def upstream() -> None:
            await forward(local_read, remote_write, side="the client")
            group.cancel_scope.cancel()  # stdin closed: the client is done

        async def downstream() -> None:
            await forward(remote_read, local_write, side="the server")
            group.cancel_scope.cancel()

        group.start_soon(upstream)
        group.start_soon(downstream)
