"""What the server does once when it starts: one hook, :func:`start_server`.

Importing `assistant.graph` builds the graph and nothing else. The work a server process
needs before it serves, in the order it needs it, is here, and the server runs it from the
lifespan of the project's ``http.app`` (`assistant.server.webapp.lifespan`), its first statement.

When that is, in langgraph-api 0.16.7 (``langgraph_api/server.py`` and the runtime's
``lifespan.py``; the same for `langgraph dev` and a deployment, whose separate queue
process, ``langgraph_api/queue_entrypoint.py``, runs the same two lifespans): the server
enters its own lifespan first (it opens the checkpointer and the store, loads the graphs,
and creates, but does not yet run, the queue's workers), then the custom app's; uvicorn
serves no request before every lifespan has started. So :func:`start_server` runs once per
server process, after the graph is loaded and before the first run, the first request and
the store's first batch: nothing in between awaits. Outside the server (tests, scripts,
benchmarks) each step but the store patch does nothing.
"""

from __future__ import annotations

import logging

from assistant.compat import patch_inmemory_store
from assistant.config import settings
from assistant.inference.e5 import limit_numeric_threads
from assistant.memory import resume_forgets
from assistant.run.scope import server_store
from assistant.server.banner import log_settings
from assistant.server.process import keep_server_files_private, tune_server_process

__all__ = ["finish_forgets", "start_server"]

logger = logging.getLogger(__name__)

logger = logging.getLogger(__name__)


def start_server() -> None:
    """Prepare this server process to serve, in order; each step runs once per process.

    1. Warn when no custom auth is configured (:func:`warn_if_unauthenticated`).
    2. Log the settings line (`assistant.server.banner.log_settings`).
    3. Fix the in-memory store's batches with repeated texts (`make dev-memory`), before
       its first batch (`assistant.compat.patch_inmemory_store`).
    4. Make the files the server creates private (`assistant.server.process`).
    5. Cap numpy's BLAS and OpenMP threads (`assistant.inference.e5.limit_numeric_threads`),
       before the first run multiplies a vector; the bundled embedder has done it when it
       loaded, a served embedding model has not.
    6. Last, tune the garbage collector: it freezes what is alive then, everything the
       server loaded included (`assistant.server.process.tune_server_process`).
    """
    warn_if_unauthenticated()
    log_settings()
    patch_inmemory_store()
    keep_server_files_private()
    limit_numeric_threads()
    tune_server_process()


def warn_if_unauthenticated() -> None:
    """Log a clear warning when the server runs this graph without custom auth."""
    if settings.running_on_server() and not settings.custom_auth_configured():
        logger.warning(
            "No custom auth is configured: each run's memory belongs to the user_id the "
            "client sends in its context, which any client can set. Use this only on a "
            "trusted machine; add auth.path to langgraph.json (see docs/security.md)."
        )


async def finish_forgets() -> dict[str, int]:
    """Finish the forgets a crash cut short (`assistant.memory.resume_forgets`).

    The lifespan runs it in the background once the server serves: a forget's record
    holds what it still has to erase, and a retry of the same forget finishes it too, so
    nothing waits for this. Returns how many were finished per user.
    """
    try:
        finished = await resume_forgets(await server_store())
    except Exception:
        logger.exception("Could not finish the forgets cut short; a retry of each finishes it.")
        return {}
    if finished:
        logger.warning("Finished %d forgets cut short by a crash.", sum(finished.values()))
    return finished
