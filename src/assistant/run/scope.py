"""Whose memory a piece of work touches, in which thread, with which store and settings.

Nodes, memory tools and the HTTP memory routes all act for one user. `RunScope` is built
the same way for each of them (`node_scope`, `tool_scope`, `request_scope`), so there is
one rule for who the caller is:

* With custom auth the server puts the authenticated identity into
  ``config["configurable"]["langgraph_auth_user_id"]`` (and the request's ``user``) and
  strips that key from client input, so it cannot be spoofed.
* Only when no auth is configured does the caller's own word count: ``Context.user_id``
  for runs, ``?user_id=`` for the memory routes.

Building a scope also makes the embeddings the current task starts that user's work
(`assistant.inference.embedding_queue.embed_as`): they wait in the user's lane of the embedder's
queue and are cached under the user's key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.config import get_config
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from starlette.exceptions import HTTPException
from starlette.requests import Request

from assistant.compat import platform_store
from assistant.config import settings
from assistant.config.constants import ADMIN_PERMISSION, USER_PERMISSION
from assistant.inference.embedding_queue import embed_as
from assistant.memory import InvalidUserIdError, UserMemory, validate_user_id
from assistant.run.context import Context

__all__ = [
    "AUTH_USER_KEY",
    "RunScope",
    "node_scope",
    "request_scope",
    "request_user_id",
    "require_store",
    "resolve_user_id",
    "server_request_scope",
    "server_store",
    "tool_scope",
]


AUTH_USER_KEY = "langgraph_auth_user_id"
"""Where the server puts the authenticated identity in a run's configurable."""

API_PERMISSIONS = frozenset({USER_PERMISSION, ADMIN_PERMISSION})
"""Permissions that may use the memory routes (see `assistant.server.auth`)."""


@dataclass(frozen=True, kw_only=True)
class RunScope:
    """Who the work is for and what it works with."""

    user_id: str
    """The validated user whose memory is read and written."""
    thread_id: str | None
    """The thread the work belongs to; None outside a thread (a memory route)."""
    store: BaseStore
    """The server's store."""
    context: Context
    """The run's settings (the defaults for a memory route)."""

    @property
    def memory(self) -> UserMemory:
        """The user's memory in the store: every read and write of it goes through this."""
        return UserMemory(self.store, self.user_id)


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


def require_store(store: BaseStore | None) -> BaseStore:
    """The run's store, or a clear error when the graph was compiled without one."""
    if store is None:
        raise RuntimeError(
            "The assistant graph needs a store: run it on LangGraph Server (which provides "
            "one) or compile it with `builder.compile(store=make_store(), ...)`."
        )
    return store


def node_scope(runtime: Runtime[Context]) -> RunScope:
    """The scope of the run in progress (call from inside a node); its embeddings are the user's."""
    context = runtime.context or Context()
    return _claimed(
        RunScope(
            user_id=resolve_user_id(get_config().get("configurable") or {}, context),
            thread_id=runtime.execution_info.thread_id if runtime.execution_info else None,
            store=require_store(runtime.store),
            context=context,
        )
    )


def _claimed(scope: RunScope) -> RunScope:
    """``scope``, after making the current task's embeddings its user's work."""
    embed_as(scope.user_id)
    return scope


def tool_scope(runtime: ToolRuntime[Context, Any]) -> RunScope:
    """The scope of the run a memory tool was called in (its embeddings are the user's)."""
    configurable = runtime.config.get("configurable") or {}
    context = runtime.context or Context()
    thread_id = configurable.get("thread_id")
    return _claimed(
        RunScope(
            user_id=resolve_user_id(configurable, context),
            thread_id=str(thread_id) if thread_id else None,
            store=require_store(runtime.store),
            context=context,
        )
    )


def request_user_id(request: Request) -> str:
    """Whose memory an HTTP request to the memory routes (or ``/memory/mcp``) acts on.

    Raises:
        HTTPException: 401 when auth is on and the request carries no usable identity,
            400 for an unusable ``?user_id=`` without auth.
    """
    if settings.custom_auth_configured():
        user = request.scope.get("user")
        permissions = set(getattr(request.scope.get("auth"), "scopes", []) or [])
        identity = getattr(user, "identity", None)
        if not identity or not permissions & API_PERMISSIONS:
            raise HTTPException(401, "Sign in: send 'Authorization: Bearer <token>'.")
        return str(identity)
    try:
        return validate_user_id(request.query_params.get("user_id") or Context().user_id)
    except InvalidUserIdError as error:
        raise HTTPException(400, str(error)) from error


def request_scope(request: Request, store: BaseStore | None) -> RunScope:
    """The scope of an HTTP request to the memory routes (its embeddings are the user's).

    Raises:
        HTTPException: as `request_user_id`.
    """
    return _claimed(
        RunScope(
            user_id=request_user_id(request),
            thread_id=None,
            store=require_store(store),
            context=Context(),
        )
    )


async def server_store() -> BaseStore:
    """The running server's store, for code outside a run (routes, auth handlers).

    Read fresh from the server (`assistant.compat.platform_store` says why).
    """
    return await platform_store()


async def server_request_scope(request: Request) -> RunScope:
    """`request_scope` with the running server's store (for ``webapp`` and ``mcp_server``)."""
    return request_scope(request, await server_store())
