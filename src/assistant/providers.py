"""What the assistant learns about a chat model provider, and errors people can read.

OpenAI-compatible servers differ in what they accept. Some reject a forced named tool
(400), some ignore ``tool_choice`` and answer in text, some have no tools or no
``json_schema`` response format at all. This module lets every structured call work on
any model that can answer in JSON, and the reply work on any model that can chat:

* :func:`ainvoke_structured` tries the strongest mechanism the provider accepts and
  falls back step by step: a forced named tool, then the ``json_schema`` response
  format, then JSON mode, then JSON parsed and validated from plain text.
* :func:`ainvoke_with_tools` offers tools, and answers without them when the provider
  refuses tools.

What is learned about a provider (its base URL and model name) is kept for the process,
so later turns do not pay for failed attempts again, and each fallback is logged once
with the provider's own error.

:func:`readable_error` turns an ``openai`` error into :class:`ModelProviderError`, a
``RuntimeError`` that names the cause and the fix. LangGraph Server passes the message
of built-in exception types through to clients (SDK, CLI, console); other exception
types reach them only as "An internal error occurred".
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

from assistant.settings import endpoint_host

__all__ = [
    "REPEATED_FAILURES",
    "ModelProviderError",
    "ProviderChatModel",
    "ProviderProfile",
    "Structured",
    "StructuredOutputError",
    "ainvoke_structured",
    "ainvoke_with_tools",
    "endpoint_host",
    "extraction_warning",
    "forget_providers",
    "parse_json_reply",
    "profile_for",
    "readable_error",
    "record_extraction",
    "redact",
]

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)

REPEATED_FAILURES = 2
"""Extraction failures in a row after which replies carry a warning."""

MAX_PROVIDER_MESSAGE_CHARS = 300
"""How much of a provider's own error message is quoted."""

JSON_INSTRUCTION = (
    "Answer with one JSON object and nothing else: no prose, no code fences. "
    "It must match this JSON schema:\n{schema}"
)
"""Added to the prompt when the provider's JSON mode or plain text carries the answer."""


class Structured(StrEnum):
    """How a structured answer is asked for, strongest first."""

    TOOL = "tool"
    """A forced named tool (``tool_choice`` naming the function)."""
    JSON_SCHEMA = "json_schema"
    """``response_format={"type": "json_schema", ...}``."""
    JSON_MODE = "json_mode"
    """``response_format={"type": "json_object"}`` plus the schema in the prompt."""
    TEXT = "text"
    """Plain chat with the schema in the prompt; JSON parsed from the answer."""


LADDER = tuple(Structured)
"""The order :func:`ainvoke_structured` tries."""


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


class StructuredOutputError(RuntimeError):
    """No mechanism produced an answer that matches the schema."""


class _Unusable(Exception):
    """The provider answered, but not with the structured answer asked for."""

    def __init__(self, reason: str, *, ignored: bool) -> None:
        super().__init__(reason)
        self.ignored = ignored
        """True when the provider ignored the mechanism (worth remembering)."""


# --------------------------------------------------------------------------- errors

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


# --------------------------------------------------------------------------- the model


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


# --------------------------------------------------------------------------- providers


@dataclass
class ProviderProfile:
    """What this process has learned about one provider and model."""

    structured: Structured = Structured.TOOL
    """The strongest structured mechanism not yet refused."""
    tools: bool = True
    """Whether the provider accepts tools in a chat request."""
    extraction_failures: int = 0
    """Memory extractions that failed in a row."""
    last_extraction_error: str = ""
    """Why the latest failed extraction failed."""


_profiles: dict[tuple[str, str], ProviderProfile] = {}
_logged: set[tuple[str, str, str]] = set()


def provider_key(model: BaseChatModel) -> tuple[str, str]:
    """``(base URL, model name)`` of a chat model: what a profile is kept for."""
    base_url = getattr(model, "openai_api_base", None) or ""
    name = getattr(model, "model_name", None) or type(model).__name__
    return str(base_url), str(name)


def profile_for(model: BaseChatModel) -> ProviderProfile:
    """The profile of ``model``'s provider, created on first use."""
    return _profiles.setdefault(provider_key(model), ProviderProfile())


def forget_providers() -> None:
    """Forget every profile and logged fallback (for tests)."""
    _profiles.clear()
    _logged.clear()


def _describe(model: BaseChatModel) -> str:
    base_url, name = provider_key(model)
    return f"{name!r} at {endpoint_host(base_url)}"


def _log_once(model: BaseChatModel, event: str, message: str, *args: object) -> None:
    key = (*provider_key(model), event)
    if key not in _logged:
        _logged.add(key)
        logger.warning(message, *args)


# --------------------------------------------------------------------------- structured


def parse_json_reply(text: str, schema: type[SchemaT]) -> SchemaT:
    r"""The ``schema`` instance in a model's text answer: bare JSON, fenced, or in prose.

    >>> class Fact(BaseModel):
    ...     content: str
    >>> parse_json_reply('Sure! ```json\\n{"content": "Lives in Chengdu"}\\n```', Fact)
    Fact(content='Lives in Chengdu')

    Raises:
        ValueError: No JSON object in ``text`` matches ``schema``.
    """
    stripped = text.strip()
    candidates = [stripped]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", stripped, re.DOTALL | re.IGNORECASE)
    if fenced:
        candidates.append(fenced.group(1).strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start : end + 1])
    problem = "no JSON object in the answer"
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        try:
            return schema.model_validate(_wrap_list(data, schema))
        except ValidationError as error:
            problem = f"the JSON does not match the schema: {error.errors()[0]['msg']}"
    raise ValueError(f"{problem} (answer began {stripped[:80]!r})")


def _wrap_list(data: Any, schema: type[BaseModel]) -> Any:
    """A bare list for a schema whose only field is a list becomes ``{field: list}``."""
    fields = list(schema.model_fields)
    if isinstance(data, list) and len(fields) == 1:
        return {fields[0]: data}
    return data


def _with_instruction(
    messages: Sequence[BaseMessage], schema: type[BaseModel]
) -> list[BaseMessage]:
    instruction = JSON_INSTRUCTION.format(schema=json.dumps(schema.model_json_schema()))
    last = messages[-1] if messages else None
    if isinstance(last, HumanMessage) and isinstance(last.content, str):
        return [
            *messages[:-1],
            last.model_copy(update={"content": f"{last.content}\n\n{instruction}"}),
        ]
    return [*messages, HumanMessage(content=instruction)]


async def _attempt(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    method: Structured,
    config: RunnableConfig | None,
) -> SchemaT:
    """One structured call with ``method``; raises `_Unusable` when the answer is not usable."""
    if method is Structured.TEXT:
        reply = await model.ainvoke(_with_instruction(messages, schema), config)
        try:
            return parse_json_reply(reply.text, schema)
        except ValueError as error:
            raise _Unusable(str(error), ignored=False) from error
    prompt = _with_instruction(messages, schema) if method is Structured.JSON_MODE else messages
    name = "function_calling" if method is Structured.TOOL else method.value
    runnable = model.with_structured_output(schema, method=name, include_raw=True)
    try:
        result: Any = await runnable.ainvoke(list(prompt), config)
    except (ValidationError, ValueError) as error:  # parsed inside the client
        raise _Unusable(f"the answer did not match the schema: {error}", ignored=False) from error
    if isinstance(result, schema):
        return result  # a model that answers structured calls directly
    if not isinstance(result, dict):
        raise _Unusable(f"unexpected result {type(result).__name__}", ignored=False)
    parsed = result.get("parsed")
    if isinstance(parsed, schema):
        return parsed
    raw = result.get("raw")
    text = raw.text if isinstance(raw, BaseMessage) else ""
    tool_calls = getattr(raw, "tool_calls", None)
    try:
        return parse_json_reply(text, schema)  # e.g. the JSON came as text instead
    except ValueError as error:
        if method is Structured.TOOL and not tool_calls:
            raise _Unusable(
                f"it answered in text instead of calling the tool: {text[:80]!r}", ignored=True
            ) from error
        reason = result.get("parsing_error") or error
        raise _Unusable(f"the answer did not match the schema: {reason}", ignored=False) from error


async def ainvoke_structured(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None = None,
) -> SchemaT:
    """Ask ``model`` for a ``schema`` instance with the strongest mechanism it accepts.

    Starts at the mechanism this process last found working for the provider, and falls
    back step by step (see :class:`Structured`). A mechanism the provider rejects (400
    or 422) or ignores (no tool call) is skipped from then on, and the fallback is logged
    once with the provider's own error. An answer that merely fails the schema moves on
    to the next mechanism for this call only.

    Raises:
        ModelProviderError: The provider failed for another reason (key, URL, model
            name, timeout, ...); falling back would not help.
        StructuredOutputError: No mechanism produced a valid answer.
    """
    profile = profile_for(model)
    start = LADDER.index(profile.structured)
    reasons: list[str] = []
    for index, method in enumerate(LADDER[start:], start):
        try:
            return await _attempt(model, schema, messages, method, config)
        except ModelProviderError as error:
            if error.kind != "rejected":
                raise
            reason, learned = error.provider_message or str(error), True
        except _Unusable as error:
            reason, learned = str(error), error.ignored
        reasons.append(f"{method.value}: {reason}")
        if index + 1 < len(LADDER) and learned:
            following = LADDER[index + 1]
            if LADDER.index(profile.structured) < index + 1:
                profile.structured = following
            _log_once(
                model,
                f"structured:{method.value}",
                "The model %s does not support structured output by %s (%s); using %s from now on.",
                _describe(model),
                method.value,
                reason,
                following.value,
            )
    raise StructuredOutputError(
        f"The model {_describe(model)} gave no answer in the expected JSON format. Tried "
        + "; ".join(reasons)
        + ". Use a model that can answer in JSON for memory to work."
    )


# --------------------------------------------------------------------------- tools


async def ainvoke_with_tools(
    model: BaseChatModel,
    tools: Sequence[Any],
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None = None,
) -> BaseMessage:
    """The model's answer with ``tools`` offered, or without them if the provider has none.

    When a request with tools is rejected (400/422) and the same request without tools
    succeeds, the provider is remembered as having no tools, and the fallback logged once.
    """
    profile = profile_for(model)
    if not tools or not profile.tools:
        return await model.ainvoke(list(messages), config)
    try:
        return await model.bind_tools(tools).ainvoke(list(messages), config)
    except ModelProviderError as error:
        if error.kind != "rejected":
            raise
        reply = await model.ainvoke(list(messages), config)
        profile.tools = False
        _log_once(
            model,
            "tools",
            "The model %s rejected a request with tools (%s); replying without the memory "
            "tools from now on.",
            _describe(model),
            error.provider_message or error,
        )
        return reply


# --------------------------------------------------------------------------- extraction


def record_extraction(model: BaseChatModel, error: BaseException | None) -> None:
    """Count a memory extraction's outcome for ``model``'s provider (None: it worked)."""
    profile = profile_for(model)
    if error is None:
        profile.extraction_failures = 0
        profile.last_extraction_error = ""
        return
    profile.extraction_failures += 1
    message = " ".join(str(error).split()) or type(error).__name__
    profile.last_extraction_error = message[:MAX_PROVIDER_MESSAGE_CHARS]


def extraction_warning(model: BaseChatModel) -> str:
    """One line for the reply when memory extraction keeps failing; empty otherwise.

    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> model = GenericFakeChatModel(messages=iter([]))
    >>> forget_providers()
    >>> record_extraction(model, RuntimeError("boom")); extraction_warning(model)
    ''
    >>> record_extraction(model, RuntimeError("boom")); extraction_warning(model)
    'Memory is not being saved: extraction failed on the last 2 turns (boom).'
    """
    profile = profile_for(model)
    if profile.extraction_failures < REPEATED_FAILURES:
        return ""
    return (
        f"Memory is not being saved: extraction failed on the last "
        f"{profile.extraction_failures} turns ({profile.last_extraction_error})."
    )
