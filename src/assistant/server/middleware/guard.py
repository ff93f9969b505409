"""The server's outer wall: small middlewares every request passes before any route.

LangGraph Server runs the middleware of the project's ``http.app`` outermost, around its
own routes, the dev runtime's ``/internal/*`` and ``/deploy`` routes (which sit outside
the auth layer) and the meta routes (``/info``, ``/metrics``, ``/docs``,
``/openapi.json``). `GUARD` lists the wall's middlewares, outermost first; each has one job
and a module of its own beside this one (as starlette's ``middleware/``):

1. `NoFraming`: no page of the server may be framed by another (``X-Frame-Options: DENY``
   and CSP ``frame-ancestors 'none'`` on every response, refusals included), so a page
   elsewhere cannot lay the console invisibly over a button of its own (clickjacking).
2. `HiddenRoutes`: ``/internal/*`` and ``/deploy*`` do not exist (404), whatever the auth
   mode: they read any thread and wipe every thread, with no token.
3. `KnownHosts`: under ``langgraph dev`` the ``Host`` must be a loopback name or listed in
   ``ASSISTANT_ALLOWED_HOSTS``, which stops DNS-rebinding pages posing as the server.
4. `KnownOrigins`: a page from another origin gets nothing (403) and causes nothing: only
   loopback origins, the server's own origin and ``ASSISTANT_CORS_ORIGINS`` (LangGraph
   Studio's page by default) may call it. This holds for simple requests (``text/plain``,
   no preflight) as much as for preflighted ones, since the request is refused before it
   runs.
5. `ReadableRefusals`: the answers of the middlewares below it (a 401 for a wrong key, a
   403, a 413) carry ``Access-Control-Allow-Origin`` for the allowed origin that asked, as
   the routes' own answers do, so a browser client (agent-chat-ui) can read the refusal
   instead of reporting a CORS error and retrying.
6. `RequireToken`: with custom auth on, every request but the health checks (``/ok``,
   ``/``), the console page and CORS preflights must authenticate, so a route a future
   langgraph-api adds outside the auth layer is closed by default. With several users (JWTs
   or dev tokens), ``/metrics`` (every user's request counts) is for the maintenance token.
   `ShortInfo`: with several users, ``/info`` shows a user only its ``flags`` (what clients
   such as Studio and agent-chat-ui read); versions and the deployment's ids are for the
   maintenance token (`assistant.server.middleware.info`). `CallersSchemas`: an assistant's
   ``context_schema`` (Studio's settings form) offers a caller only the fields it may set
   per run (`assistant.run.policy.callers_context_schema`); the maintenance token sees all.
7. `LimitBody`: a request body is read once, counting bytes as they arrive, before any route
   parses it: one over ``ASSISTANT_MAX_BODY_BYTES`` (1 MiB by default) answers 413,
   announced by ``Content-Length`` or sent in chunks without one, and no more of it is read.
   The route then gets the same bytes.
8. `LimitJsonDepth`: JSON nested deeper than `MAX_JSON_DEPTH` answers 422.
9. `NoPrefilledState`: creating a thread with ``supersteps`` (prefilled state), a write the
   platform sends through no auth handler, is for the maintenance token only (403).
10. `OwnStreams`: the event stream of a thread the caller cannot read answers 404, as the
   thread does.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp

from assistant.server.middleware.body_size import LimitBody
from assistant.server.middleware.callers_schemas import CallersSchemas
from assistant.server.middleware.framing import NoFraming
from assistant.server.middleware.hidden_routes import HiddenRoutes
from assistant.server.middleware.hosts import KnownHosts
from assistant.server.middleware.info import ShortInfo
from assistant.server.middleware.json_depth import LimitJsonDepth
from assistant.server.middleware.origins import KnownOrigins, ReadableRefusals
from assistant.server.middleware.own_streams import OwnStreams
from assistant.server.middleware.prefilled_state import NoPrefilledState
from assistant.server.middleware.token import RequireToken

__all__ = ["GUARD"]


GUARD: tuple[Callable[[ASGIApp], ASGIApp], ...] = (
    NoFraming,
    HiddenRoutes,
    KnownHosts,
    KnownOrigins,
    ReadableRefusals,
    RequireToken,
    ShortInfo,
    CallersSchemas,
    LimitBody,
    LimitJsonDepth,
    NoPrefilledState,
    OwnStreams,
)
"""The wall's middlewares, outermost first (see the module docstring); `assistant.server.webapp`
puts them, in this order, around every route the server answers."""
