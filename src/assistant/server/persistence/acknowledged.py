"""A run is journaled, input included, before the server acknowledges it.

Every route that creates a run on a thread answers with the run's address in
``Content-Location`` (``/threads/{thread_id}/runs/{run_id}``): the JSON of a background
run, and the first bytes of a wait or a stream. `JournalAcknowledgedRuns` holds that first
message back until the run's record is in the journal
(`assistant.server.persistence.threads.journal_acknowledged_run`), so a crash right after a
client was told "accepted" loses nothing: the run is queued again at start. Outside `make
dev`'s Postgres the journal is closed and this costs one header lookup per run.

A run cancelled (``POST /threads/{thread_id}/runs/{run_id}/cancel``) leaves its input behind
in the journal, and a deleted one (``DELETE /threads/{thread_id}/runs/{run_id}``) its whole
entry, before the server answers, so neither runs again, nor comes back, after a crash
(`assistant.server.persistence.threads.forget_run`). A bulk ``POST /runs/cancel`` does not:
its runs' inputs leave the journal at the next acknowledgement.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.server.middleware.base import route_path
from assistant.server.persistence.threads import forget_run, journal_acknowledged_run

__all__ = ["JournalAcknowledgedRuns", "acknowledged_run", "withdrawn_run"]

RUN_ADDRESS = re.compile(rb"^/threads/[0-9a-fA-F-]{36}/runs/([0-9a-fA-F-]{36})$")
"""A created run's ``Content-Location``; the group is its id."""


WITHDRAWN = re.compile(r"^/threads/[0-9a-fA-F-]{36}/runs/([0-9a-fA-F-]{36})(/cancel)?$")
"""A run's address, or its cancel route; the first group is its id."""


def withdrawn_run(method: str, path: str) -> tuple[str, bool] | None:
    """The run a request cancels or deletes, and whether it deletes it; None for others.

    >>> run = "00000000-0000-0000-0000-000000000002"
    >>> path = f"/threads/00000000-0000-0000-0000-000000000001/runs/{run}"
    >>> withdrawn_run("POST", path + "/cancel") == (run, False)
    True
    >>> withdrawn_run("DELETE", path) == (run, True)
    True
    >>> withdrawn_run("GET", path), withdrawn_run("POST", path)
    (None, None)
    """
    if (found := WITHDRAWN.match(path)) is None:
        return None
    if method == "POST" and found.group(2):
        return found.group(1), False
    if method == "DELETE" and not found.group(2):
        return found.group(1), True
    return None


def _succeeded(message: Message) -> bool:
    return message["type"] == "http.response.start" and 200 <= int(message.get("status", 0)) < 300


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
    if not _succeeded(message):
        return None
    for name, value in message.get("headers", []):
        if name.lower() == b"content-location" and (found := RUN_ADDRESS.match(value)):
            return found.group(1).decode("ascii")
    return None


class JournalAcknowledgedRuns:
    """ASGI middleware: the journal first, then the answer that a run was made or withdrawn."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the server's app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; the answer waits for the journal."""
        method = scope.get("method")
        if scope["type"] != "http" or method not in ("POST", "DELETE"):
            await self.app(scope, receive, send)
            return
        withdrawn = withdrawn_run(str(method), route_path(scope))

        async def journaled_send(message: Message) -> None:
            if withdrawn is not None and _succeeded(message):
                await forget_run(withdrawn[0], deleted=withdrawn[1])
            elif (run_id := acknowledged_run(message)) is not None:
                await journal_acknowledged_run(run_id)
            await send(message)

        await self.app(scope, receive, journaled_send)
