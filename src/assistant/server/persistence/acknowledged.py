"""A run is journaled, input included, before the server acknowledges it.

Every route that creates a run on a thread answers with the run's address in
``Content-Location`` (``/threads/{thread_id}/runs/{run_id}``): the JSON of a background
run, and the first bytes of a wait or a stream. `JournalAcknowledgedRuns` holds that first
message back until the run's record is in the journal
(`assistant.server.persistence.threads.journal_acknowledged_run`), so a crash right after a
client was told "accepted" loses nothing: the run is queued again at start. Outside `make
dev`'s Postgres the journal is closed and this costs one header lookup per run.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.server.persistence.threads import journal_acknowledged_run

__all__ = ["JournalAcknowledgedRuns", "acknowledged_run"]

RUN_ADDRESS = re.compile(rb"^/threads/[0-9a-fA-F-]{36}/runs/([0-9a-fA-F-]{36})$")
"""A created run's ``Content-Location``; the group is its id."""


def acknowledged_run(message: Message) -> str | None:
    """The id of the run a response's start acknowledges; None for any other response.

    >>> start = {"type": "http.response.start", "status": 200, "headers": [(b"content-location",
    ...          b"/threads/00000000-0000-0000-0000-000000000001/runs/"
    ...          b"00000000-0000-0000-0000-000000000002")]}
    >>> acknowledged_run(start)
    '00000000-0000-0000-0000-000000000002'
    >>> acknowledged_run({**start, "status": 409}) is None
    True
    """
    if message["type"] != "http.response.start" or not 200 <= message.get("status", 0) < 300:
        return None
    for name, value in message.get("headers", []):
        if name.lower() == b"content-location" and (found := RUN_ADDRESS.match(value)):
            return found.group(1).decode("ascii")
    return None


class JournalAcknowledgedRuns:
    """ASGI middleware: journal a created run before its acknowledgement is sent."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; a run's acknowledgement waits for the journal."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return

        async def journaled_send(message: Message) -> None:
            if (run_id := acknowledged_run(message)) is not None:
                await journal_acknowledged_run(run_id)
            await send(message)

        await self.app(scope, receive, journaled_send)
