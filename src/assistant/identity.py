"""Whose memory a run may touch.

With custom auth the server puts the authenticated identity into
``config["configurable"]["langgraph_auth_user_id"]`` and strips that key from client
input, so it cannot be spoofed. Only when no auth is configured does the graph fall
back to the client-supplied ``Context.user_id``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from assistant import models
from assistant.context import Context
from assistant.memory import validate_user_id

logger = logging.getLogger(__name__)

AUTH_USER_KEY = "langgraph_auth_user_id"


def resolve_user_id(configurable: Mapping[str, Any], context: Context | None) -> str:
    """The validated user id: the authenticated one, else ``Context.user_id``.

    >>> resolve_user_id({"langgraph_auth_user_id": "alice"}, Context(user_id="bob"))
    'alice'
    >>> resolve_user_id({}, Context(user_id="bob"))
    'bob'

    Raises:
        InvalidUserIdError: The id cannot name a namespace; it is never replaced
            by another user's id.
    """
    authenticated = configurable.get(AUTH_USER_KEY)
    if authenticated:
        return validate_user_id(authenticated)
    return validate_user_id((context or Context()).user_id)


def run_user_id(runtime: Runtime[Context]) -> str:
    """The user id of the run in progress (call from inside a node)."""
    return resolve_user_id(get_config().get("configurable") or {}, runtime.context)


def run_thread_id(runtime: Runtime[Context]) -> str | None:
    """The thread of the run in progress, or None for a run without a checkpointer."""
    return runtime.execution_info.thread_id if runtime.execution_info else None


def warn_if_unauthenticated() -> None:
    """Log a clear warning when the server runs this graph without custom auth."""
    if models.running_on_server() and not models.custom_auth_configured():
        logger.warning(
            "No custom auth is configured: each run's memory belongs to the user_id the "
            "client sends in its context, which any client can set. Use this only on a "
            "trusted machine; add auth.path to langgraph.json (see README, Security model)."
        )


def require_store(store: BaseStore | None) -> BaseStore:
    """The run's store, or a clear error when the graph was compiled without one."""
    if store is None:
        raise RuntimeError(
            "The assistant graph needs a store: run it on LangGraph Server (which provides "
            "one) or compile it with `builder.compile(store=make_store(), ...)`."
        )
    return store
