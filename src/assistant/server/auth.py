"""Custom auth for LangGraph Server: who is calling, and what they may touch.

langgraph.json points ``auth.path`` here. Identity comes from the bearer token, never
from what the client says about itself:

* **JWT** (production): ``Authorization: Bearer <HS256 JWT>`` signed with
  ``ASSISTANT_JWT_SECRET``; ``exp`` and ``sub`` are required, ``aud``/``iss`` are
  checked when ``ASSISTANT_JWT_AUDIENCE``/``ASSISTANT_JWT_ISSUER`` are set. ``sub`` is
  the user id.
* **Dev tokens** (``langgraph dev`` only): ``ASSISTANT_DEV_TOKENS="tok1=alice,tok2=bob"``.
* **Single user** (``langgraph dev`` only, when neither is configured): every request is
  ``ASSISTANT_DEFAULT_USER``. There is one user, so there is nobody to leak to. A
  deployment refuses every request in this state instead of sharing one memory.

Authorization:

* Threads and their runs carry ``metadata.owner``, stamped on create; every read,
  search, update, delete and run is filtered to the caller's threads, so another
  user's thread looks like it does not exist (404). Crons are refused.
* Assistants can be read and searched; creating, changing or deleting them is refused,
  since an assistant's context could point memory elsewhere.
* The HTTP store API is confined to ``("user_facts", <identity>)`` and
  ``("user_episodes", <identity>)``: any other namespace, a prefix of them, or a
  deeper one is refused with 403, never rewritten. A fact put or deleted there is
  written by the memory layer (`assistant.server.store_api`).
* ``ASSISTANT_ADMIN_TOKEN``, when set, is a maintenance token (``admin`` permission)
  that reaches every thread and namespace, for retention jobs. Keep it secret.
* What a run or a store request may carry, and how large it may be, is checked in
  `assistant.server.request_checks` before the platform acts on it.
* A user may have ``ASSISTANT_RUNS_PER_USER`` runs waiting or running at once; another
  answers 429, so one user's flood of runs cannot fill the run queue's workers and
  starve the others (`langgraph dev`'s runtime, the one whose run records are readable).
* Inside the graph the namespace comes from ``langgraph_auth_user_id`` (see
  `assistant.run.scope`), which the server sets from this identity and strips from
  client input.
"""

from __future__ import annotations

import hmac
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

import jwt
from langgraph_sdk import Auth

from assistant.compat import dev_thread_records
from assistant.config.constants import (
    ADMIN_IDENTITY,
    ADMIN_PERMISSION,
    CONSOLE_PATH,
    OWNER_KEY,
    USER_PERMISSION,
)
from assistant.config.settings import AuthSettings, get_auth_settings, names_another_graph
from assistant.inference.embedding_queue import embedding_user
from assistant.memory import (
    EPISODES_NAMESPACE,
    FACTS_NAMESPACE,
    InvalidUserIdError,
    is_users_own_namespace,
    validate_user_id,
)
from assistant.run.recall_query import prefetch_query
from assistant.run.scope import server_store
from assistant.server.persistence.threads import forget_thread, journal_run, journal_thread
from assistant.server.request_checks import (
    check_run_request,
    check_store_request,
    forbidden,
    unprocessable,
)
from assistant.server.store_api import embed_for_caller, is_memory_write, write_through_memory

logger = logging.getLogger(__name__)

__all__ = [
    "ADMIN_PERMISSION",
    "auth",
    "authenticate_token",
    "check_run_request",
    "check_store_request",
]

MIN_SECRET_BYTES = 32
"""Shortest ASSISTANT_JWT_SECRET accepted (RFC 7518 asks for a key as long as the hash)."""

auth = Auth()


def _unauthorized(detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"}
    )


def authenticate_token(
    authorization: str | None, settings: AuthSettings
) -> Auth.types.MinimalUserDict:
    """Who the ``Authorization`` header proves the caller is, or an HTTP 401.

    >>> authenticate_token(None, AuthSettings(local_dev=True))["identity"]
    'default-user'
    >>> settings = AuthSettings(dev_tokens={"t1": "alice"}, local_dev=True)
    >>> authenticate_token("Bearer t1", settings)
    {'identity': 'alice', 'permissions': ['memory:own']}
    """
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    admin = settings.admin_token
    if admin and scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), admin.encode()):
        return {"identity": ADMIN_IDENTITY, "permissions": [ADMIN_PERMISSION]}
    return {
        "identity": _user_from_token(scheme, token, settings),
        "permissions": [USER_PERMISSION],
    }


def request_caller(
    headers: Mapping[str, str], settings: AuthSettings
) -> Auth.types.MinimalUserDict:
    """Who a request's token (``Authorization``, or ``X-Api-Key``) says the caller is.

    ``headers`` are by lower-case name; an HTTP 401 when the token proves nobody.
    """
    authorization = headers.get("authorization")
    if not authorization and (api_key := headers.get("x-api-key")):
        authorization = f"Bearer {api_key}"
    return authenticate_token(authorization, settings)


def _user_from_token(scheme: str, token: str, settings: AuthSettings) -> str:
    multi_user = bool(settings.jwt_secret or settings.dev_tokens)
    if not multi_user:
        if settings.local_dev:
            return _valid_identity(settings.default_user)
        raise _unauthorized(
            "Server auth is not configured: set ASSISTANT_JWT_SECRET to accept signed user "
            "tokens. Single-user mode only runs under `langgraph dev`."
        )
    if scheme.lower() != "bearer" or not token:
        raise _unauthorized("Missing bearer token: send 'Authorization: Bearer <token>'.")
    if settings.local_dev and token in settings.dev_tokens:
        return _valid_identity(settings.dev_tokens[token])
    if not settings.jwt_secret:
        raise _unauthorized("Unknown token.")
    return _user_from_jwt(token, settings)


def _user_from_jwt(token: str, settings: AuthSettings) -> str:
    """The ``sub`` of a JWT signed with ``ASSISTANT_JWT_SECRET``, checked as the settings ask."""
    if len(settings.jwt_secret.encode()) < MIN_SECRET_BYTES:
        logger.error(
            "ASSISTANT_JWT_SECRET is shorter than %d bytes; refusing JWTs", MIN_SECRET_BYTES
        )
        raise _unauthorized(
            f"Server auth is misconfigured: ASSISTANT_JWT_SECRET must be at least "
            f"{MIN_SECRET_BYTES} bytes."
        )
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            settings.jwt_secret,
            algorithms=["HS256"],
            audience=settings.jwt_audience or None,
            issuer=settings.jwt_issuer or None,
            leeway=settings.jwt_leeway_s,
            options={
                "require": ["exp", "sub"],
                "verify_aud": bool(settings.jwt_audience),
            },
        )
    except jwt.ExpiredSignatureError as error:
        raise _unauthorized("Token expired.") from error
    except jwt.InvalidTokenError as error:
        raise _unauthorized(f"Invalid token: {error}.") from error
    _check_lifetime(claims, settings)
    return _valid_identity(claims["sub"])


TIME_CLAIMS = ("exp", "nbf", "iat")
"""Registered claims that must be NumericDate values (RFC 7519): numbers, never strings."""


def _check_lifetime(claims: dict[str, Any], settings: AuthSettings) -> None:
    """Refuse time claims that are not numbers, and tokens valid for too long.

    A token may be valid for at most ``jwt_max_lifetime_s`` (one day by default) from
    its ``iat``, or from now when it has none, give or take ``jwt_leeway_s``.
    """
    for name in TIME_CLAIMS:
        value = claims.get(name)
        if name in claims and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise _unauthorized(f"Invalid token: the {name} claim must be a number, got {value!r}.")
    start = float(claims.get("iat", time.time()))
    lifetime = float(claims["exp"]) - start
    if lifetime > settings.jwt_max_lifetime_s + settings.jwt_leeway_s:
        raise _unauthorized(
            f"Invalid token: it is valid for {lifetime:.0f} s, longer than this server "
            f"accepts ({settings.jwt_max_lifetime_s} s, ASSISTANT_JWT_MAX_LIFETIME_S)."
        )


def _valid_identity(user_id: object) -> str:
    try:
        return validate_user_id(user_id)
    except InvalidUserIdError as error:
        raise _unauthorized(str(error)) from error


@auth.authenticate
async def authenticate(
    authorization: str | None, headers: dict[bytes, bytes], path: str, method: str
) -> Auth.types.MinimalUserDict:
    """Resolve the caller from the ``Authorization`` header.

    A client that sends its token as ``X-Api-Key`` instead, as agent-chat-ui does, is
    treated the same. The console page itself (``GET /console``) holds no data and loads
    without a token, so a browser can open it; it then calls the API with the token the
    user enters.
    """
    if not authorization and (api_key := headers.get(b"x-api-key")):
        authorization = f"Bearer {api_key.decode('latin-1')}"
    if method == "GET" and path == CONSOLE_PATH and not authorization:
        return {"identity": "anonymous", "permissions": []}
    return authenticate_token(authorization, get_auth_settings())


def _identity(ctx: Auth.types.AuthContext) -> str:
    return str(ctx.user.identity)


def _is_admin(ctx: Auth.types.AuthContext) -> bool:
    return ADMIN_PERMISSION in ctx.permissions


def _stamp_owner(
    ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate | Auth.types.RunsCreate
) -> Auth.types.FilterType:
    value.setdefault("metadata", {})[OWNER_KEY] = _identity(ctx)
    return {OWNER_KEY: _identity(ctx)}


@auth.on.threads.create
async def on_thread_create(
    ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate
) -> Auth.types.FilterType:
    """Stamp the caller as the new thread's owner; journal its metadata (`make dev`)."""
    owned = _stamp_owner(ctx, value)
    await journal_thread(value.get("thread_id"), dict(value.get("metadata") or {}), created=True)
    return owned


@auth.on.threads.create_run
async def on_run_create(
    ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate
) -> Auth.types.FilterType:
    """Runs only on the caller's own threads, with the caller's input and allowed settings.

    The run is stamped with its owner. Its input may carry only ``messages``, a command
    only ``resume``, its context only the settings the operator lets callers choose
    (`assistant.run.policy`), and its webhook only a host the operator listed; anything else is
    refused with a 4xx naming the field (`assistant.server.request_checks`). The
    query `recall` will search with starts embedding now (`prefetch_query`).
    """
    kwargs = value.get("kwargs") or {}
    check_run_request(kwargs, admin=_is_admin(ctx))
    if not _is_admin(ctx):
        await admit_run(_identity(ctx), str(value.get("run_id") or uuid.uuid4()), value)
    if not names_another_graph(value.get("assistant_id")):
        with embedding_user(_identity(ctx)):  # the run's recall embeds as the same user
            prefetch_query(kwargs.get("input"))  # embedded while the run waits in the queue
    owned = _stamp_owner(ctx, value)
    await journal_run(
        value.get("run_id"),
        value.get("thread_id"),
        assistant_id=value.get("assistant_id"),
        metadata=dict(value.get("metadata") or {}),
        multitask_strategy=value.get("multitask_strategy"),
    )
    return owned


IN_FLIGHT = ("pending", "running")
"""Run statuses that hold (or wait for) one of the run queue's workers."""

ADMISSION_GRACE_S = 10.0
"""How long a run admitted here counts before it shows in the runtime's records (a create
refused after this handler, e.g. a busy thread with ``reject``, never shows)."""

_ADMITTED: dict[str, dict[str, float]] = {}
"""Per user, runs admitted here that the runtime's records may not hold yet, and when."""


async def admit_run(user_id: str, run_id: str, value: Mapping[str, Any]) -> None:
    """Admit one more run of ``user_id``, or refuse it with 429 when the user has enough.

    Counts the user's runs waiting or running in the dev runtime's records, plus those
    admitted in the last `ADMISSION_GRACE_S` seconds that the records do not show yet (runs
    created at the same moment). A run the platform will refuse anyway (another user's
    thread, a missing one) is not counted. Nothing is counted outside `langgraph dev`, or
    with a single user (there is no one else to starve).
    """
    records = dev_thread_records()
    settings = get_auth_settings()
    if records is None or not (settings.jwt_secret or settings.dev_tokens):
        return
    limit = settings.runs_per_user
    async with records.connect() as conn:
        # No await from here on: counting and admitting happen as one step.
        thread_id = value.get("thread_id")
        if thread_id is not None:
            thread = records.thread_metadata(conn, str(thread_id))
            if thread is None and value.get("if_not_exists") != "create":
                return  # the platform answers 404
            if thread is not None and thread.get(OWNER_KEY) not in (None, user_id):
                return  # another user's thread: the platform answers 404
        # One pass, and only the user's own run ids made text: the records hold every
        # run of every user (a UUID each), and this runs for every run created.
        in_flight, known = 0, set()
        for run in records.runs(conn):
            if (run.get("metadata") or {}).get(OWNER_KEY) == user_id:
                known.add(str(run.get("run_id")))
                in_flight += run.get("status") in IN_FLIGHT
        now = time.monotonic()
        admitted = _ADMITTED.setdefault(user_id, {})
        for waiting, since in list(admitted.items()):
            if waiting in known or now - since > ADMISSION_GRACE_S:
                del admitted[waiting]
        if in_flight + len(admitted) >= limit:
            raise Auth.exceptions.HTTPException(
                status_code=429,
                detail=(
                    f"You have {in_flight + len(admitted)} runs waiting or running, the most "
                    f"one user may have at once ({limit}; ASSISTANT_RUNS_PER_USER). Wait for "
                    "one to finish, then send this again."
                ),
                headers={"Retry-After": "1"},
            )
        admitted[run_id] = now


@auth.on.threads.update
async def on_thread_update(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Owners may update their threads' metadata, but never hand them to someone else.

    Writing a thread's state directly (``update_state``) arrives here with no metadata. It
    is refused: the state belongs to the graph, and a client that wrote ``summary`` or
    ``metrics`` could break its own thread. Only the maintenance token may.
    """
    if "metadata" not in value and not _is_admin(ctx):
        raise forbidden(
            "A thread's state is written by the assistant; send new messages as a run instead."
        )
    owner = (value.get("metadata") or {}).get(OWNER_KEY)
    if owner is not None and owner != _identity(ctx) and not _is_admin(ctx):
        raise forbidden("A thread's owner cannot be changed.")
    if value.get("metadata"):
        await journal_thread(
            value.get("thread_id"),
            dict(value["metadata"]),
            created=False,
            owner=None if _is_admin(ctx) else _identity(ctx),
        )
    return {} if _is_admin(ctx) else {OWNER_KEY: _identity(ctx)}


@auth.on.threads.delete
async def on_thread_delete(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Only the caller's own threads can be deleted; a deleted thread leaves the journal."""
    await forget_thread(value.get("thread_id"), owner=None if _is_admin(ctx) else _identity(ctx))
    return {} if _is_admin(ctx) else {OWNER_KEY: _identity(ctx)}


@auth.on.threads
async def on_thread_access(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Only the caller's own threads, and their runs, can be read, searched or changed.

    Creating threads and runs has its own handlers above, which also stamp the owner.
    The maintenance token sees every thread.
    """
    return {} if _is_admin(ctx) else {OWNER_KEY: _identity(ctx)}


@auth.on.crons
async def on_cron_access(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Scheduled runs are not offered to users."""
    raise forbidden("Crons are not available.")


@auth.on.assistants(actions=["read", "search"])
async def on_assistant_read(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anyone signed in may see the assistants the deployment defines."""
    return True


@auth.on.assistants
async def on_assistant_change(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Users may not create, change or delete assistants."""
    raise forbidden("Assistants are defined by the deployment and cannot be changed.")


@auth.on.store()
async def on_store(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Confine the HTTP store API to the caller's own memory namespaces.

    What the request will embed is embedded first, here in the request, as the caller's
    work (`assistant.server.store_api.embed_for_caller`). A put or delete of a fact or an episode is
    then carried out by the memory layer (`assistant.server.store_api`), audited ``via="api"``; a
    fact it refuses answers 422.
    """
    check_store_request(value)
    namespace = tuple(value.get("namespace") or ())
    identity = _identity(ctx)
    if not _is_admin(ctx) and not is_users_own_namespace(namespace, identity):
        raise forbidden(
            f"Store access is limited to ('{FACTS_NAMESPACE}', '{identity}') and "
            f"('{EPISODES_NAMESPACE}', '{identity}'); got namespace={namespace!r}."
        )
    store = await server_store()
    with embedding_user(identity):
        await embed_for_caller(store, ctx.action, value)
        if is_memory_write(ctx.action, value):
            try:
                await write_through_memory(store, ctx.action, value, actor=identity)
            except ValueError as error:  # an invalid user id (admin) or a refused fact
                raise unprocessable(str(error)) from error
    return True
