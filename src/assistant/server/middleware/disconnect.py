"""A search whose client has left stops: its request is cancelled, and its embedding dropped.

The server (uvicorn under LangGraph Server) lets a request's handler run on after its
client disconnects; nobody reads the answer. For a search that waits for the embedder, that
is work for no one, ahead of other users' work. `CancelOnDisconnect` runs the searches in
`SEARCH_ROUTES` beside a watch on the connection, and cancels them when the client goes;
the embedder then drops the texts they queued (`assistant.inference.embedding_queue`).

Only searches are cancelled: they read, so stopping one half-way leaves nothing half-done.
Writes run to the end, as before (their inputs are bounded in `assistant.server.auth`), and runs
have the platform's own ``on_disconnect``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import suppress

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.server.middleware.base import route_path

__all__ = ["SEARCH_ROUTES", "CancelOnDisconnect"]

SEARCH_ROUTES = frozenset({("POST", "/store/items/search"), ("GET", "/memory/facts")})
"""(method, path) of the requests that are cancelled when their client leaves: the store
API's search and the memory API's fact search, both of which embed their query."""


def _left(gone: asyncio.Future[Message]) -> bool:
    """Whether the watch on the connection saw the client leave."""
    if not gone.done() or gone.cancelled() or gone.exception() is not None:
        return False
    return bool(gone.result()["type"] == "http.disconnect")


class CancelOnDisconnect:
    """ASGI middleware: cancel a search in `SEARCH_ROUTES` when its client disconnects."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request; a search runs beside a watch on its connection."""
        route = (scope.get("method"), route_path(scope))
        if scope["type"] != "http" or route not in SEARCH_ROUTES:
            await self.app(scope, receive, send)
            return
        body: deque[Message] = deque()
        while True:  # the body first: the request's own messages, read once
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # gone before it was sent in full: nothing to answer
            body.append(message)
            if not message.get("more_body", False):
                break
        gone = asyncio.ensure_future(receive())  # after the body, only a disconnect comes
        answered = False

        async def app_receive() -> Message:
            if body:
                return body.popleft()
            return await asyncio.shield(gone)

        async def app_send(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True
            await send(message)

        work = asyncio.ensure_future(self.app(scope, app_receive, app_send))
        try:
            await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
            if _left(gone) and not work.done() and not answered:
                work.cancel()  # the client left first: stop the search and its embedding
                with suppress(asyncio.CancelledError):
                    await work
                return
            await work
        finally:
            for task in (work, gone):
                if not task.done():
                    task.cancel()
                    with suppress(asyncio.CancelledError):
                        await task
