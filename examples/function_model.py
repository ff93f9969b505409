"""The one fake chat model of the tests, the demo and the benchmarks, driven by a function.

In the manner of pydantic-ai's ``FunctionModel``: :class:`FunctionChatModel` hands every
call to ``function(messages, info)`` and answers with what it returns. ``info`` (a
:class:`CallInfo`) says how the model was called: the tools bound with ``bind_tools``, the
schema asked for with ``with_structured_output``, other model settings, and the LangGraph
node that made the call. The model keeps every call in :attr:`FunctionChatModel.calls`,
so a test can check exactly what the model was sent.

>>> model = FunctionChatModel(function=lambda messages, info: f"echo: {messages[-1].text}")
>>> model.invoke("ping").text
'echo: ping'
>>> [chunk.text for chunk in model.stream("two words") if chunk.text]
['echo: ', 'two ', 'words']
>>> [call.info.streamed for call in model.calls]
[False, True]

What the function may return:

- plain calls (``invoke``, ``stream`` and their async forms, with or without tools): the
  reply's text, or an ``AIMessage`` (with ``tool_calls`` to call tools);
- structured calls (``info.schema`` is set): an instance of the schema, a dict, JSON text,
  or an ``AIMessage`` whose first tool call's arguments (or text) is the answer.

It may raise: the caller sees the exception, as it would a provider's failure. A plain
function runs in a worker thread in async code, as LangChain runs a chat model's
synchronous ``_generate``; an ``async`` function (or an object whose ``__call__`` is
``async``) runs in the caller's event loop, so concurrent calls reach it in call order.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

__all__ = [
    "CallInfo",
    "ChatFunction",
    "FunctionChatModel",
    "ModelCall",
    "Replies",
]


@dataclass(frozen=True)
class CallInfo:
    """How the model was called, besides the messages."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tools bound with ``bind_tools``, in OpenAI's format (``{"type": "function",
    "function": {"name": ..., "parameters": ...}}``); empty when none were."""
    tool_choice: Any = None
    """The ``tool_choice`` bound with the tools, if any."""
    schema: type[BaseModel] | None = None
    """The schema of a ``with_structured_output`` call; None for a plain call."""
    method: str | None = None
    """The ``method`` that ``with_structured_output`` was given (``function_calling``, ...)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Other model settings of the call: ``stop`` and what ``bind`` added (``max_tokens``)."""
    streamed: bool = False
    """True when the caller streamed the answer (``stream``, ``astream``, LangGraph's
    ``stream_mode="messages"``)."""
    node: str | None = None
    """The LangGraph node that made the call (``respond``, ``remember``, ...); None outside
    a graph."""

    @property
    def tool_names(self) -> list[str]:
        """The names of the bound tools, in order."""
        return [str(tool["function"]["name"]) for tool in self.tools]


@dataclass(frozen=True)
class ModelCall:
    """One call the model received."""

    messages: list[BaseMessage]
    info: CallInfo


Reply = str | AIMessage | BaseModel | dict[str, Any]
"""What a function answers (see the module's docstring)."""

ChatFunction = Callable[[list[BaseMessage], CallInfo], Reply | Awaitable[Reply]]
"""``function(messages, info)``: the model's answer to one call."""


class FunctionChatModel(BaseChatModel):
    """A chat model whose every answer comes from :attr:`function` (see the module)."""

    function: ChatFunction
    """Computes each answer from the call's messages and :class:`CallInfo`."""
    calls: list[ModelCall] = Field(default_factory=list)
    """Every call, oldest first: plain, streamed and structured alike."""
    keep_calls: bool = True
    """Keep each call in :attr:`calls`. A long-running server sets False: nothing reads
    them there, and they would grow without bound (and slow its garbage collector)."""

    @property
    def _llm_type(self) -> str:
        return "function"

    # ------------------------------------------------------------------ what was sent

    def sent(self, node: str | None = None) -> list[list[BaseMessage]]:
        """The messages of every call, or only of those that LangGraph ``node`` made."""
        return [call.messages for call in self.calls if node in (None, call.info.node)]

    def prompts(self, node: str | None = None) -> list[str]:
        """The text of the first message of every call (made by ``node``, when given)."""
        return [messages[0].text for messages in self.sent(node) if messages]

    # ------------------------------------------------------------------ answering

    def _record(
        self,
        messages: Sequence[BaseMessage],
        settings: dict[str, Any],
        metadata: dict[str, Any] | None,
        **info: Any,
    ) -> ModelCall:
        """Keep the call in :attr:`calls` (before it is answered: a call that raises counts)."""
        settings = {key: value for key, value in settings.items() if value is not None}
        tools = settings.pop("tools", None) or []
        tool_choice = settings.pop("tool_choice", None)
        call_info = CallInfo(
            tools=list(tools),
            tool_choice=tool_choice,
            settings=settings,
            node=(metadata or {}).get("langgraph_node"),
            **info,
        )
        call = ModelCall(messages=list(messages), info=call_info)
        if self.keep_calls:
            self.calls.append(call)
        return call

    def _answer(self, call: ModelCall) -> Reply:
        return _run_to_completion(self.function(call.messages, call.info))

    async def _aanswer(self, call: ModelCall) -> Reply:
        if not _is_async(self.function):  # as LangChain runs a synchronous _generate
            return await asyncio.to_thread(self._answer, call)
        answer = self.function(call.messages, call.info)
        return await answer if inspect.isawaitable(answer) else answer

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, {"stop": stop, **kwargs}, _metadata(run_manager))
        return _result(self._answer(call))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, {"stop": stop, **kwargs}, _metadata(run_manager))
        return _result(await self._aanswer(call))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        settings = {"stop": stop, **kwargs}
        call = self._record(messages, settings, _metadata(run_manager), streamed=True)
        for chunk in _chunks(_as_message(self._answer(call))):
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        settings = {"stop": stop, **kwargs}
        call = self._record(messages, settings, _metadata(run_manager), streamed=True)
        for chunk in _chunks(_as_message(await self._aanswer(call))):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer ``tools`` (tools, functions or schemas) to the calls made through the result."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(  # type: ignore[override]
        self, schema: type[BaseModel], *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, BaseModel]:
        """Answer with an instance of ``schema`` (a pydantic model).

        As a provider with native structured output does: an answer that does not match
        raises ``ValidationError``. ``include_raw`` is accepted and ignored.
        """
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(
                f"FunctionChatModel.with_structured_output takes a pydantic model class, "
                f"not {schema!r}"
            )
        method = kwargs.get("method")

        def record(model_input: LanguageModelInput, config: RunnableConfig) -> ModelCall:
            messages = self._convert_input(model_input).to_messages()
            return self._record(messages, {}, config.get("metadata"), schema=schema, method=method)

        def answer(model_input: LanguageModelInput, config: RunnableConfig) -> BaseModel:
            return _structured(self._answer(record(model_input, config)), schema)

        async def aanswer(model_input: LanguageModelInput, config: RunnableConfig) -> BaseModel:
            return _structured(await self._aanswer(record(model_input, config)), schema)

        return RunnableLambda(answer, afunc=aanswer, name="structured_output")


# --------------------------------------------------------------------------- a preset

ScriptItem = str | AIMessage | BaseException | Callable[[list[BaseMessage]], Reply]
"""One scripted answer: text, a full AIMessage, an exception to raise when reached, or a
function of the call's messages (handy in endless scripts: ``itertools.repeat(fn)``)."""


class Replies:
    """A function for :class:`FunctionChatModel` that answers from a script, in call order.

    Each call takes the next item of ``replies`` (any iterable, possibly endless).
    Structured calls take theirs from ``structured`` when it is given, which keeps a test
    deterministic when two nodes call the model concurrently; when ``structured_gate`` is
    given, they wait for that event before they answer (a slow extractor, without a clock).
    A call past the end of the script fails loudly.

    >>> model = FunctionChatModel(function=Replies(["one", RuntimeError("down")]))
    >>> model.invoke("hi").text
    'one'
    >>> model.invoke("hi")
    Traceback (most recent call last):
    RuntimeError: down
    >>> model.invoke("hi")
    Traceback (most recent call last):
    AssertionError: The model was called more times than the test scripted
    """

    def __init__(
        self,
        replies: Iterable[ScriptItem],
        *,
        structured: Iterable[ScriptItem] | None = None,
        structured_gate: asyncio.Event | None = None,
    ) -> None:
        """Script ``replies`` (and ``structured``, for structured calls only)."""
        self.replies = iter(replies)
        self.structured = iter(structured) if structured is not None else None
        self.structured_gate = structured_gate

    async def __call__(self, messages: list[BaseMessage], info: CallInfo) -> Reply:
        """The next scripted answer: raised if it is an exception, computed if a function."""
        if info.schema is not None and self.structured_gate is not None:
            await self.structured_gate.wait()
        script = self.replies
        if info.schema is not None and self.structured is not None:
            script = self.structured
        try:
            item = next(script)
        except StopIteration:
            raise AssertionError("The model was called more times than the test scripted") from None
        if isinstance(item, BaseException):
            raise item
        return item(messages) if callable(item) else item


# --------------------------------------------------------------------------- helpers


def _is_async(function: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 (an object with async __call__)
    )


def _run_to_completion(answer: Reply | Awaitable[Reply]) -> Reply:
    """The result of an awaitable answer, from synchronous code."""
    if not inspect.isawaitable(answer):
        return answer

    async def wait() -> Reply:
        return await answer

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: run one
        return asyncio.run(wait())
    # A synchronous call from async code: run the answer's own loop in another thread.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="function-model") as worker:
        return worker.submit(asyncio.run, wait()).result()


def _metadata(run_manager: Any) -> dict[str, Any] | None:
    return getattr(run_manager, "metadata", None)


def _as_message(answer: Reply) -> AIMessage:
    """The answer of a plain call as an AIMessage (copied: LangChain sets ids in place)."""
    if isinstance(answer, AIMessage):
        return answer.model_copy(deep=True)
    if isinstance(answer, str):
        return AIMessage(content=answer)
    raise TypeError(
        f"The model function answered a plain call with {type(answer).__name__}; "
        "return text or an AIMessage (a schema instance only for structured calls)"
    )


def _result(answer: Reply) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=_as_message(answer))])


def _chunks(reply: AIMessage) -> Iterator[ChatGenerationChunk]:
    """``reply`` as streamed chunks: a word (and its trailing space) each; tool calls whole."""
    if reply.tool_calls:
        tool_call_chunks = [
            {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"], "index": i}
            for i, call in enumerate(reply.tool_calls)
        ]
        message = AIMessageChunk(
            content=reply.content,
            id=reply.id,
            tool_call_chunks=tool_call_chunks,  # type: ignore[arg-type]
        )
        yield ChatGenerationChunk(message=message)
        return
    pieces = re.findall(r"\S+\s*|\s+", reply.text) or [""]
    for piece in pieces:
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=reply.id))


def _structured(answer: Reply, schema: type[BaseModel]) -> BaseModel:
    """The answer of a structured call as a ``schema`` instance (ValidationError if not)."""
    if isinstance(answer, AIMessage):
        if answer.tool_calls:
            return schema.model_validate(answer.tool_calls[0]["args"])
        return schema.model_validate_json(answer.text)
    if isinstance(answer, schema):
        return answer
    if isinstance(answer, BaseModel):
        return schema.model_validate(answer.model_dump())
    if isinstance(answer, dict):
        return schema.model_validate(answer)
    return schema.model_validate_json(answer)
