"""Custom HTTP routes served by LangGraph Server (langgraph.json ``http.app``).

* ``GET /console``: the memory console, one static page (``console.html``) with a little
  JavaScript. The page itself holds no data; everything it shows comes from the API
  below and the platform's thread API, with the same bearer token.
* ``/memory/*``: the signed-in user's memory, through `assistant.memory`, so writes keep
  the recall index in step and every deletion and correction lands in the audit trail:

  ========  ==============================  ========================================
  GET       /memory/me                      who the caller is
  GET       /memory/facts                   facts; ``?query=`` searches: only the facts
                                            that match, each with its ``score`` (none
                                            when nothing does), best first;
                                            ``?include_superseded=true`` adds history
  PATCH     /memory/facts/{key}             correct a fact: ``{"content": "..."}``
  DELETE    /memory/facts/{key}             forget a fact, with its words everywhere
  GET       /memory/episodes                past conversations
  GET       /memory/audit                   deletions and corrections, newest first
  GET       /memory/heard                   what memory made of the latest messages
                                            (kept, nothing, skipped, failed), newest first
  ========  ==============================  ========================================

* ``/memory/mcp``: the same memory for the user's other agents, over MCP (Streamable
  HTTP), with the same identity (`assistant.server.mcp_server`).

With custom auth (langgraph.json sets ``enable_custom_route_auth``) the user is the
authenticated identity. Without it, as in ``make demo``, the routes take ``?user_id=``
like runs take ``context.user_id``, and are as unprotected as those runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from langgraph.store.base import Item, SearchItem
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from assistant.config.constants import CONSOLE_PATH, MCP_PATH
from assistant.memory import API_VIA
from assistant.run.recall_query import MAX_QUERY_CHARS
from assistant.run.scope import RunScope, server_request_scope
from assistant.server.mcp_sessions import MemoryMCP
from assistant.server.middleware.disconnect import CancelOnDisconnect
from assistant.server.middleware.guard import GUARD
from assistant.server.persistence.acknowledged import JournalAcknowledgedRuns
from assistant.server.startup import finish_forgets, start_server

__all__ = ["app"]

CONSOLE_HTML = (
    resources.files("assistant.server").joinpath("console.html").read_text(encoding="utf-8")
)
"""The page, read once at import (file reads inside a request would block the server)."""


async def _scope(request: Request) -> RunScope:
    """Who the request acts for, and the server's store."""
    return await server_request_scope(request)


def _fact(item: Item) -> dict[str, Any]:
    fact = {"key": item.key, **item.value}
    if isinstance(item, SearchItem) and item.score is not None:
        fact["score"] = round(item.score, 4)  # the match score, at least MATCH_FLOOR
    return fact


async def me(request: Request) -> JSONResponse:
    """Who the caller is."""
    return JSONResponse({"user_id": (await _scope(request)).user_id})


async def list_facts(request: Request) -> JSONResponse:
    """The caller's facts, searched by ``query`` or all, optionally with superseded ones."""
    scope = await _scope(request)
    query = request.query_params.get("query", "").strip()
    if len(query) > MAX_QUERY_CHARS:
        raise HTTPException(
            422, f"A search query may be at most {MAX_QUERY_CHARS} characters, got {len(query)}."
        )
    if query:
        items: list[Item] = list(await scope.memory.search(query, limit=20))
    else:
        superseded = request.query_params.get("include_superseded", "").lower() == "true"
        items = await scope.memory.facts(include_superseded=superseded)
    return JSONResponse({"user_id": scope.user_id, "facts": [_fact(item) for item in items]})


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except json.JSONDecodeError as error:
        raise HTTPException(400, "Send a JSON body.") from error
    if not isinstance(body, dict):
        raise HTTPException(400, "Send a JSON object.")
    return body


HEARD_LIMIT = 100
"""Most outcomes ``GET /memory/heard`` returns at once."""

CLIENT_HEADER = "x-assistant-client"
"""Where the console and the command line name themselves. Any client can send any name, so
the audit trail records it as the entry's unverified ``client``; its ``via`` is ``api``."""


def _client(request: Request) -> str | None:
    return request.headers.get(CLIENT_HEADER)


async def correct_fact(request: Request) -> JSONResponse:
    """Replace a fact with the caller's corrected wording; the old one becomes history."""
    scope = await _scope(request)
    content = (await _body(request)).get("content")
    if not isinstance(content, str) or not content.strip():
        raise HTTPException(400, "Send the corrected fact as {'content': '...'}.")
    try:
        key = await scope.memory.correct(
            request.path_params["key"],
            content,
            actor=scope.user_id,
            via=API_VIA,
            client=_client(request),
        )
    except KeyError as error:
        raise HTTPException(404, "No such fact.") from error
    except ValueError as error:
        raise HTTPException(400, str(error)) from error
    return JSONResponse({"key": key, "content": content.strip()})


async def forget_fact(request: Request) -> Response:
    """Forget a fact (`assistant.memory.UserMemory.forget`), recording who asked in the audit trail.

    Answers the audit entry, which holds no words of the fact, and what was erased.
    """
    scope = await _scope(request)
    forgotten = await scope.memory.forget(
        request.path_params["key"], actor=scope.user_id, via=API_VIA, client=_client(request)
    )
    if forgotten is None:
        raise HTTPException(404, "No such fact.")
    return JSONResponse({"forgotten": forgotten.entry, "erased": forgotten.erased})


async def list_episodes(request: Request) -> JSONResponse:
    """The caller's past conversations."""
    scope = await _scope(request)
    episodes = await scope.memory.episodes()
    return JSONResponse({"episodes": [item.value for item in episodes]})


async def list_audit(request: Request) -> JSONResponse:
    """The caller's audit trail, newest first."""
    scope = await _scope(request)
    return JSONResponse({"audit": await scope.memory.audit()})


async def list_heard(request: Request) -> JSONResponse:
    """What memory made of the caller's latest messages, newest first (``?limit=``, 1-100)."""
    scope = await _scope(request)
    raw = request.query_params.get("limit", "20")
    if not raw.isdigit() or not 1 <= int(raw) <= HEARD_LIMIT:
        raise HTTPException(
            400, f"limit must be a whole number from 1 to {HEARD_LIMIT}, got {raw!r}."
        )
    turns = await scope.memory.heard(limit=int(raw))
    return JSONResponse({"heard": turns})


async def console(request: Request) -> HTMLResponse:
    """The memory console page."""
    return HTMLResponse(CONSOLE_HTML)


memory_mcp = MemoryMCP()
"""``/memory/mcp``: the user's memory for their other agents (`assistant.server.mcp_server`,
`assistant.server.mcp_sessions`)."""


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Start the server (`assistant.server.startup.start_server`), then run the MCP sessions.

    LangGraph Server runs this app's lifespan once it has loaded the graph, and serves
    nothing before it has started. The start-up hook runs first, before anything awaits;
    then the forgets a crash cut short are finished in the background
    (`assistant.server.startup.finish_forgets`).
    """
    start_server()
    finishing = asyncio.create_task(finish_forgets())
    async with memory_mcp.run():
        yield
    finishing.cancel()


app = Starlette(
    routes=[
        Route(CONSOLE_PATH, console, methods=["GET"]),
        Route("/memory/me", me, methods=["GET"]),
        Route("/memory/facts", list_facts, methods=["GET"]),
        Route("/memory/facts/{key}", correct_fact, methods=["PATCH"]),
        Route("/memory/facts/{key}", forget_fact, methods=["DELETE"]),
        Route("/memory/episodes", list_episodes, methods=["GET"]),
        Route("/memory/audit", list_audit, methods=["GET"]),
        Route("/memory/heard", list_heard, methods=["GET"]),
        Route(MCP_PATH, memory_mcp, methods=["GET", "POST", "DELETE"]),
    ],
    middleware=[
        *(Middleware(layer) for layer in GUARD),
        Middleware(CancelOnDisconnect),
        Middleware(JournalAcknowledgedRuns),
    ],
    lifespan=lifespan,
)
"""The custom routes; langgraph.json's ``http.app`` points here.

Its middleware wraps every route the server answers, the platform's and the dev runtime's
included, outermost first: `assistant.server.middleware.guard.GUARD` (the outer wall, one
middleware a rule:
no framing, hidden routes, hosts, origins, credentials, the body's size and depth,
prefilled state, streams of others' threads), then
`assistant.server.middleware.disconnect.CancelOnDisconnect` (a search whose client left is
cancelled, and its embedding dropped), then
`assistant.server.persistence.acknowledged.JournalAcknowledgedRuns` (a run is journaled before
the server acknowledges it)."""
