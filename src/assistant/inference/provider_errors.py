"""Model errors people can read: :class:`ModelProviderError` and the chat model that raises it.

:func:`readable_error` turns an ``openai`` error into :class:`ModelProviderError`, a
``RuntimeError`` that names the cause and the fix, with secrets cut out
(:func:`redact`). LangGraph Server passes the message of built-in exception types
through to clients (SDK, CLI, console); other exception types reach them only as "An
internal error occurred". :class:`ProviderChatModel` is ``ChatOpenAI`` with its failures
turned into such errors; `assistant.inference.models` builds it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import openai
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from assistant.config.settings import endpoint_host

__all__ = [
    "MAX_PROVIDER_MESSAGE_CHARS",
    "ModelProviderError",
    "ProviderChatModel",
    "readable_error",
    "redact",
]

MAX_PROVIDER_MESSAGE_CHARS = 300
"""How much of a provider's own error message is quoted."""


class ModelProviderError(RuntimeError):
    """A model call failed; the message names the cause and the fix.

    A ``RuntimeError`` on purpose: LangGraph Server shows clients the message of
    built-in exception types only.
    """

    def __init__(
        self, message: str, *, kind: str, status: int | None = None, provider_message: str = ""
    ) -> None:
        """Keep the ``kind`` of failure, the HTTP ``status`` and the provider's message.

        Kinds: auth, forbidden, not_found, unreachable, timeout, rejected, rate_limited,
        server_error, other. ``provider_message`` has its secrets cut out.
        """
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.provider_message = provider_message


_SECRET_PATTERNS = (
    re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]+"),
    re.compile(r"\b(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)\b((?:api[_-]?)?key|token|secret|password)(\s*[=:]\s*)[^\s\"',;&]+"),
)


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with API keys, bearer tokens and the given ``secrets`` cut out.

    >>> redact("Incorrect API key provided: sk-abc123456789. Bearer xyz", ["hunter22"])
    'Incorrect API key provided: ***. Bearer ***'
    >>> redact("bad key=hunter22 in url", ["hunter22"])
    'bad key=*** in url'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _SECRET_PATTERNS[0].sub(r"\1 ***", text)
    text = _SECRET_PATTERNS[1].sub("***", text)
    return _SECRET_PATTERNS[2].sub(r"\1\2***", text)


def _provider_message(error: openai.APIError, secrets: Sequence[str]) -> str:
    message = error.message
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            message = inner["message"]
        elif isinstance(inner, str):
            message = inner
    message = " ".join(redact(str(message), secrets).split())
    if len(message) > MAX_PROVIDER_MESSAGE_CHARS:
        message = message[: MAX_PROVIDER_MESSAGE_CHARS - 1] + "…"
    return message


def readable_error(
    error: openai.APIError,
    *,
    model: str,
    base_url: str,
    api_key: str = "",
    timeout_s: float | None = None,
) -> ModelProviderError:
    """A :class:`ModelProviderError` saying what went wrong with ``error`` and what to do.

    >>> import httpx
    >>> request = httpx.Request("POST", "http://localhost:9/v1/chat/completions")
    >>> response = httpx.Response(401, request=request)
    >>> error = openai.AuthenticationError("Incorrect API key provided: sk-abcdef123456",
    ...     response=response, body=None)
    >>> print(readable_error(error, model="m", base_url="http://localhost:9/v1"))
    The model provider at localhost:9 refused the API key (401: Incorrect API key provided: ***). Check OPENAI_API_KEY.
    """  # noqa: E501
    host = endpoint_host(base_url)
    secrets = [api_key] if api_key else []
    status = getattr(error, "status_code", None)
    said = _provider_message(error, secrets)
    detail = f"{status}: {said}" if status and said else str(status or said)
    if isinstance(error, openai.APITimeoutError):
        within = f" within {timeout_s:g} s" if timeout_s else " in time"
        return ModelProviderError(
            f"The model {model!r} at {host} did not answer{within}. The provider may be "
            "overloaded or the model slow: try again, or raise ASSISTANT_MODEL_TIMEOUT_S.",
            kind="timeout",
        )
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error.__context__
        reason = redact(str(cause), secrets) if cause else "connection failed"
        return ModelProviderError(
            f"Cannot reach the model provider at {host} ({reason}). Check OPENAI_BASE_URL "
            "and that the server is running and reachable from the assistant's server.",
            kind="unreachable",
        )
    kind, message = next(
        ((kind, message) for kinds, kind, message in _HTTP_ERRORS if isinstance(error, kinds)),
        ("other", "The model call to {model!r} at {host} failed ({detail})."),
    )
    return ModelProviderError(
        message.format(host=host, model=model, detail=detail or type(error).__name__),
        kind=kind,
        status=status,
        provider_message=said,
    )


_HTTP_ERRORS: tuple[
    tuple[type[openai.APIError] | tuple[type[openai.APIError], ...], str, str], ...
] = (
    (
        openai.AuthenticationError,
        "auth",
        "The model provider at {host} refused the API key ({detail}). Check OPENAI_API_KEY.",
    ),
    (
        openai.PermissionDeniedError,
        "forbidden",
        "The model provider at {host} refused access to {model!r} ({detail}). "
        "Check that OPENAI_API_KEY may use this model.",
    ),
    (
        openai.NotFoundError,
        "not_found",
        "The model provider at {host} does not know the model {model!r} ({detail}). "
        "Set ASSISTANT_MODEL (or the run's context.model) to a model it serves, and check "
        "that OPENAI_BASE_URL ends with the API path (often /v1).",
    ),
    (
        openai.RateLimitError,
        "rate_limited",
        "The model provider at {host} is rate-limiting requests ({detail}). "
        "Wait and try again, or raise the account's limits.",
    ),
    (
        (openai.BadRequestError, openai.UnprocessableEntityError),
        "rejected",
        "The model provider at {host} rejected the request to {model!r} ({detail}).",
    ),
    (
        openai.InternalServerError,
        "server_error",
        "The model provider at {host} failed ({detail}). Try again later.",
    ),
)
"""HTTP errors a provider answers with: the error class, its kind, and what to tell the user."""


# --------------------------------------------------------------------------- the chat model


class ProviderChatModel(ChatOpenAI):
    """``ChatOpenAI`` whose failures read as :class:`ModelProviderError`.

    Every call (reply, extraction, summary; plain, streamed or structured) turns the
    ``openai`` client's errors into a message naming the cause and the fix, with secrets
    cut out, which LangGraph Server passes on to clients.
    """

    def _readable(self, error: openai.APIError) -> ModelProviderError:
        timeout = self.request_timeout if isinstance(self.request_timeout, int | float) else None
        key = self.openai_api_key
        return readable_error(
            error,
            model=self.model_name,
            base_url=self.openai_api_base or "",
            api_key=key.get_secret_value() if isinstance(key, SecretStr) else "",
            timeout_s=timeout,
        )

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        try:
            return super()._generate(*args, **kwargs)
        except openai.APIError as error:
            raise self._readable(error) from error

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        try:
            return await super()._agenerate(*args, **kwargs)
        except openai.APIError as error:
            raise self._readable(error) from error

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        try:
            yield from super()._stream(*args, **kwargs)
        except openai.APIError as error:
            raise self._readable(error) from error

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        try:
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
        except openai.APIError as error:
            raise self._readable(error) from error
