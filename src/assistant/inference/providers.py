"""What the assistant learns about a chat model provider: structured calls and tools.

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
with the provider's own error. What a failed call tells the user (the readable errors,
and the chat model that raises them) is `assistant.inference.provider_errors`.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar, get_origin

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, ValidationError

from assistant.config.settings import endpoint_host
from assistant.inference.provider_errors import MAX_PROVIDER_MESSAGE_CHARS, ModelProviderError

__all__ = [
    "REPEATED_FAILURES",
    "ModelProviderError",
    "ProviderProfile",
    "Structured",
    "StructuredOutputError",
    "ainvoke_structured",
    "ainvoke_with_tools",
    "extraction_warning",
    "forget_providers",
    "offers_tools",
    "parse_json_reply",
    "plain_words",
    "profile_for",
    "record_extraction",
    "tool_calls_in_text",
]

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)

REPEATED_FAILURES = 2
"""Extraction failures in a row after which replies carry a warning."""

STRUCTURED_MAX_TOKENS = 1024
"""The most tokens a structured answer (a memory decision) may take. A small model that
starts repeating itself inside a JSON list would otherwise write until its context is full:
minutes on a CPU."""

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


class StructuredOutputError(RuntimeError):
    """No mechanism produced an answer that matches the schema."""


class _Unusable(Exception):
    """The provider answered, but not with the structured answer asked for."""

    def __init__(self, reason: str, *, ignored: bool) -> None:
        super().__init__(reason)
        self.ignored = ignored
        """True when the provider ignored the mechanism (worth remembering)."""


# --------------------------------------------------------------------------- providers


@dataclass
class ProviderProfile:
    """What this process has learned about one provider and model."""

    structured: Structured = Structured.TOOL
    """The strongest structured mechanism not yet refused."""
    tools: bool = True
    """Whether the provider accepts tools in a chat request."""
    tools_as_text: bool = False
    """Whether it writes tool calls as text instead of making them (read from the text)."""
    misuses_tools: bool = False
    """Whether it misuses the memory tools: writes its calls as text, talks about the
    tools instead of calling them, or calls them with arguments that do not fit. Small
    models that do so also call them when nobody asked, and their descriptions cost a long
    prompt. Its replies are then offered no tools (and shown no tool round), and a turn that
    speaks of memory asks it one structured question instead (`assistant.nodes.requests`)."""
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
        data = _wrap_list(_call_arguments(data), schema)
        if _foreign(data, schema):
            problem = f"the JSON has none of the schema's fields: {sorted(data)[:5]}"
            continue
        try:
            return schema.model_validate(data)
        except ValidationError as error:
            problem = f"the JSON does not match the schema: {error.errors()[0]['msg']}"
    raise ValueError(f"{problem} (answer began {stripped[:80]!r})")


def _foreign(data: Any, schema: type[BaseModel]) -> bool:
    """Whether ``data`` is an object that names none of ``schema``'s fields.

    Such an object would validate as the schema's defaults: an answer of another shape
    read as "nothing to do" instead of as unusable.

    >>> class Fact(BaseModel):
    ...     content: str = ""
    >>> _foreign({"name": "Fact", "args": []}, Fact), _foreign({"content": "x"}, Fact)
    (True, False)
    """
    if not isinstance(data, dict) or not data:
        return False
    names = {alias for name, info in schema.model_fields.items() for alias in (name, info.alias)}
    return not names.intersection(data)


def _answered(raw: Any) -> Any:
    """The JSON a structured answer carried: its tool call's arguments, or its text's object."""
    calls = getattr(raw, "tool_calls", None)
    if calls:
        return calls[0].get("args")
    try:
        return json.loads(raw.text) if isinstance(raw, BaseMessage) else None
    except ValueError:
        return None


def _wrap_list(data: Any, schema: type[BaseModel]) -> Any:
    """A bare list for a schema with one list field becomes ``{field: list}``.

    >>> class Said(BaseModel):
    ...     user_says: str = ""
    ...     operations: list[int] = []
    >>> _wrap_list([1, 2], Said)
    {'operations': [1, 2]}
    """
    lists = [
        name for name, info in schema.model_fields.items() if get_origin(info.annotation) is list
    ]
    if isinstance(data, list) and len(lists) == 1:
        return {lists[0]: data}
    return data


def _call_arguments(data: Any) -> Any:
    """The arguments of a tool call written as JSON text; any other ``data`` as it is.

    Small models asked for a forced tool often write the call instead of making it:
    ``{"name": "MemoryOperations", "arguments": {...}}`` (or OpenAI's nested shape).

    >>> _call_arguments({"name": "Fact", "arguments": {"content": "Lives in Lyon"}})
    {'content': 'Lives in Lyon'}
    >>> _call_arguments({"name": "Facts", "arguments": [{"content": "Lives in Lyon"}]})
    [{'content': 'Lives in Lyon'}]
    >>> _call_arguments({"content": "Lives in Lyon"})
    {'content': 'Lives in Lyon'}
    """
    call = _as_call(data)
    if call is not None:
        return call[1]
    if isinstance(data, dict) and isinstance(data.get("name"), str) and len(data) <= 3:
        listed = data.get("arguments", data.get("parameters"))
        if isinstance(listed, list):  # {"name": …, "arguments": [ … ]}: the list is the answer
            return listed
    return data


def _as_call(data: Any) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when ``data`` has the shape of a tool call, else None."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("function"), dict):  # {"type": "function", "function": {...}}
        data = data["function"]
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(name, str) or not isinstance(arguments, dict) or len(data) > 3:
        return None
    return name, arguments


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
    except openai.LengthFinishReasonError as error:  # a runaway answer, cut at max_tokens
        raise _Unusable("the answer ran past its token limit", ignored=False) from error
    if isinstance(result, schema):
        return result  # a model that answers structured calls directly
    if not isinstance(result, dict):
        raise _Unusable(f"unexpected result {type(result).__name__}", ignored=False)
    parsed = result.get("parsed")
    raw = result.get("raw")
    if isinstance(parsed, schema):
        if _foreign(_answered(raw), schema):
            raise _Unusable(
                f"the answer has none of the schema's fields: {raw!r:.80}", ignored=False
            )
        return parsed
    text = raw.text if isinstance(raw, BaseMessage) else ""
    tool_calls = getattr(raw, "tool_calls", None)
    if method is Structured.TOOL and not tool_calls:
        # The tool was ignored, its call perhaps written as text. Such an answer is not
        # read: written without the schema's grammar, a small model's skips the fields
        # that make it think first (Qwen2.5-Coder's lost "I live in Lisbon"). The next
        # mechanism, a grammar-bound json_schema, answers this call and the later ones.
        written = '"name"' in text and ('"arguments"' in text or '"parameters"' in text)
        shown = "it wrote the tool call as text" if written else "it answered in text"
        raise _Unusable(f"{shown} instead of calling the tool: {text[:80]!r}", ignored=True)
    try:
        return parse_json_reply(text, schema)  # e.g. the JSON came as text instead
    except ValueError as error:
        reason = result.get("parsing_error") or error
        raise _Unusable(f"the answer did not match the schema: {reason}", ignored=False) from error


def for_decisions(model: BaseChatModel) -> BaseChatModel:
    """``model`` set for a decision about memory, where the client has those settings.

    Temperature 0 and at most `STRUCTURED_MAX_TOKENS` tokens: the same message and memory
    then make the same decision, and a runaway answer ends.

    >>> from langchain_openai import ChatOpenAI
    >>> chat = ChatOpenAI(model="m", api_key="k", temperature=0.3)
    >>> decided = for_decisions(chat)
    >>> decided.temperature, decided.max_tokens, chat.temperature, chat.max_tokens
    (0.0, 1024, 0.3, None)
    """
    fields = type(model).model_fields
    settings = {"temperature": 0.0, "max_tokens": STRUCTURED_MAX_TOKENS}
    update = {name: value for name, value in settings.items() if name in fields}
    return model.model_copy(update=update) if update else model


def _learn(model: BaseChatModel, method: Structured, reason: str) -> None:
    """Skip ``method`` for ``model``'s provider from now on, and log it once."""
    index = LADDER.index(method)
    if index + 1 >= len(LADDER):
        return
    following = LADDER[index + 1]
    profile = profile_for(model)
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
    model = for_decisions(model)
    reasons: list[str] = []
    for method in LADDER[start:]:
        try:
            return await _attempt(model, schema, messages, method, config)
        except ModelProviderError as error:
            if error.kind != "rejected":
                raise
            reason, learned = error.provider_message or str(error), True
        except _Unusable as error:
            reason, learned = str(error), error.ignored
        reasons.append(f"{method.value}: {reason}")
        if learned:
            _learn(model, method, reason)
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
    A model that misuses them (`ProviderProfile.misuses_tools`) answers without them, and
    without the turn's tool round in view (`_without_tools`).
    """
    profile = profile_for(model)
    if not tools or not profile.tools:
        return await model.ainvoke(list(messages), config)
    if profile.tools_as_text:  # its raw text would stream tool calls to the user
        config = {**(config or {}), "tags": [*(config or {}).get("tags", []), TAG_NOSTREAM]}
    names = {_tool_name(tool) for tool in tools}
    if profile.misuses_tools:
        return await _without_tools(model, messages, names, config)
    try:
        reply = await model.bind_tools(tools).ainvoke(list(messages), config)
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
    answer = _read_written_calls(model, _without_written_results(reply), names)
    misfits = _misfit_calls(answer, tools)
    if misfits:
        profile.misuses_tools = True
        _log_once(
            model,
            "tool_args",
            "The model %s called its memory tools with arguments that do not fit them (%s); "
            "the reply is asked for again without the tools, and from now on its replies get "
            "no tools and its memory requests are asked as a structured question.",
            _describe(model),
            "; ".join(misfits),
        )
        return await _without_tools(model, messages, names, config)
    if _repeats_a_call(answer, messages):  # it would only loop: answer in words this time
        return await _without_tools(model, messages, names, config)
    if _talks_instead_of_calling(answer, names, [_tool_description(tool) for tool in tools]):
        profile.misuses_tools = True
        _log_once(
            model,
            "tool_talk",
            "The model %s answered with no words, or talked about its memory tools (or "
            "repeated their descriptions) instead of calling them; such a reply is asked for "
            "again without the tools, and from now on its replies get no tools and its memory "
            "requests are asked as a structured question.",
            _describe(model),
        )
        return await _without_tools(model, messages, names, config)
    return answer


async def _without_tools(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    names: set[str],
    config: RunnableConfig | None,
) -> BaseMessage:
    """The answer to ``messages`` asked for again with no tools and no tool round in view.

    The turn's calls and their results go: a small model shown them goes on writing calls
    as text. Any call it still writes is taken out of the text.
    """
    start = _turn_start(messages)
    kept = [
        *messages[:start],
        *(m for m in messages[start:] if not (isinstance(m, ToolMessage) or _calls_of(m))),
    ]
    reply = _without_written_results(await model.ainvoke(kept, config))
    if not isinstance(reply, AIMessage):
        return reply
    calls, rest = tool_calls_in_text(reply.text, names)
    return reply.model_copy(update={"content": rest}) if calls else reply


WRITTEN_RESULTS = re.compile(
    r"<\s*tool_response\s*>.*?(?:<\s*/\s*tool_response\s*>|\Z)", re.IGNORECASE | re.DOTALL
)
"""Tool results a model writes into its own reply (in its chat template's tags)."""


def _without_written_results(reply: BaseMessage) -> BaseMessage:
    r"""``reply`` without the tool results it wrote itself: never words for the user.

    Offered tools, the local model answered a Chinese fact with three
    ``<tool_response>No stored fact matches …</tool_response>`` blocks and nothing else.

    >>> said = "<tool_response>\nNo stored fact matches 'cat'.\n</tool_response>\nNoted!"
    >>> _without_written_results(AIMessage(content=said)).text
    'Noted!'
    """
    if not isinstance(reply, AIMessage) or "tool_response" not in reply.text.lower():
        return reply
    return reply.model_copy(update={"content": WRITTEN_RESULTS.sub("", reply.text).strip()})


def _repeats_a_call(reply: BaseMessage, messages: Sequence[BaseMessage]) -> bool:
    """Whether every call in ``reply`` was already made, with the same arguments, this turn.

    >>> call = ToolCall(name="search_memory", args={"query": "cat"}, id="1")
    >>> turn = [HumanMessage("hi"), AIMessage(content="", tool_calls=[call])]
    >>> _repeats_a_call(AIMessage(content="", tool_calls=[{**call, "id": "2"}]), turn)
    True
    >>> _repeats_a_call(AIMessage(content="", tool_calls=[{**call, "args": {}}]), turn)
    False
    """
    calls = _calls_of(reply)
    made = [(c["name"], c["args"]) for m in messages[_turn_start(messages) :] for c in _calls_of(m)]
    return bool(calls) and all((call["name"], call["args"]) in made for call in calls)


def _turn_start(messages: Sequence[BaseMessage]) -> int:
    """Where the turn's tool round begins: just after the user's latest message (0: none)."""
    humans = [i for i, message in enumerate(messages) if isinstance(message, HumanMessage)]
    return humans[-1] + 1 if humans else 0


def _calls_of(message: BaseMessage) -> list[ToolCall]:
    """The tool calls ``message`` makes (none for a message that cannot make any)."""
    return list(getattr(message, "tool_calls", None) or [])


def offers_tools(model: BaseChatModel) -> bool:
    """Whether a reply of ``model`` is offered the memory tools.

    Not when its provider takes no tools, nor once it was seen to misuse them
    (`ProviderProfile.misuses_tools`).

    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> forget_providers()
    >>> model = GenericFakeChatModel(messages=iter([]))
    >>> offers_tools(model)
    True
    >>> profile_for(model).misuses_tools = True
    >>> offers_tools(model)
    False
    """
    profile = profile_for(model)
    return profile.tools and not profile.misuses_tools


ECHO_CHARS = 12
"""A reply at least this long that a tool's description holds word for word is an echo."""


def _talks_instead_of_calling(
    reply: BaseMessage, names: set[str], documents: Sequence[str] = ()
) -> bool:
    """Whether ``reply`` is no answer for a person: empty, a tool named, or a tool's words.

    A small model offered tools may explain them ("use the `search_memory` function"),
    write nothing, or answer with an example from a tool's description (``documents``):
    the local model answered "Hi! I live in Porto and I'm allergic to peanuts." with "What
    do you remember about me?", from `search_memory`'s. None is for the user to read.

    >>> _talks_instead_of_calling(AIMessage(content="Use `search_memory`."), {"search_memory"})
    True
    >>> _talks_instead_of_calling(AIMessage(content="Noted!"), {"search_memory"})
    False
    >>> docs = ['Use it to answer "what do you remember about me?" (an empty query lists']
    >>> _talks_instead_of_calling(AIMessage(content="What do you remember about me?"), set(), docs)
    True
    >>> _talks_instead_of_calling(AIMessage(content="I remember you!"), set(), docs)
    False
    """
    if not isinstance(reply, AIMessage) or reply.tool_calls:
        return False
    text = reply.text
    said = plain_words(text)
    echoes = len(said) >= ECHO_CHARS and any(said in plain_words(doc) for doc in documents)
    return not text.strip() or any(name in text for name in names) or echoes


def plain_words(text: str) -> str:
    """``text`` casefolded, its spaces collapsed and its outer quotes and spaces dropped.

    >>> plain_words(' "Where do  I live?" ')
    'where do i live?'
    """
    return " ".join(text.casefold().split()).strip(" \"'“”‘’`")


def _misfit_calls(reply: BaseMessage, tools: Sequence[Any]) -> list[str]:
    """The calls in ``reply`` of a tool not offered, or with arguments that do not fit it.

    The local model answered "我在杭州的一家医院当护士" by calling all three memory tools
    with no arguments; run, each returns a validation error, which it then wrote into its
    reply. Such calls are never run.

    >>> from assistant.nodes.tools import MEMORY_TOOLS
    >>> call = ToolCall(name="search_memory", args={}, id="1")
    >>> def called(**changes: Any) -> AIMessage:
    ...     return AIMessage(content="", tool_calls=[{**call, **changes}])
    >>> _misfit_calls(called(), MEMORY_TOOLS)
    ['search_memory: query: Field required']
    >>> _misfit_calls(called(args={"query": ""}), MEMORY_TOOLS)
    []
    >>> _misfit_calls(called(name="web"), MEMORY_TOOLS)
    ['web: no such tool']
    >>> web = {"type": "function", "function": {"name": "web", "parameters": {"required": ["url"]}}}
    >>> _misfit_calls(called(name="web", args={}), [web])
    ['web: url: Field required']
    """
    schemas = {_tool_name(tool): _tool_schema(tool) for tool in tools}
    misfits = []
    for call in _calls_of(reply):
        if call["name"] not in schemas:
            misfits.append(f"{call['name']}: no such tool")
            continue
        why = _misfit(schemas[call["name"]], call["args"])
        if why:
            misfits.append(f"{call['name']}: {why}")
    return misfits


def _tool_schema(tool: Any) -> type[BaseModel] | dict[str, Any]:
    """What a tool's arguments must fit: its pydantic model, or its JSON schema."""
    schema = getattr(tool, "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    if isinstance(schema, dict):
        return schema
    found = _tool_field(tool, "parameters")
    return dict(found) if isinstance(found, dict) else {}


def _misfit(schema: type[BaseModel] | dict[str, Any], args: dict[str, Any]) -> str:
    """Why ``args`` do not fit ``schema`` ("" when they do)."""
    if isinstance(schema, dict):
        missing = [key for key in schema.get("required", []) if key not in args]
        return "; ".join(f"{key}: Field required" for key in missing)
    try:
        schema.model_validate(args)
    except ValidationError as error:
        return "; ".join(
            f"{'.'.join(str(part) for part in issue['loc'])}: {issue['msg']}"
            for issue in error.errors()
        )
    return ""


def _tool_field(tool: Any, key: str) -> Any:
    """``key`` of a tool: a LangChain tool's attribute, or a dict tool's entry.

    The OpenAI format keeps a dict tool's entries under ``"function"``; None when it has none.

    >>> _tool_field({"type": "function", "function": {"name": "web", "parameters": {}}}, "name")
    'web'
    """
    found = getattr(tool, key, None)
    if found is None and isinstance(tool, dict):
        found = tool.get(key) or tool.get("function", {}).get(key)
    return found


def _tool_description(tool: Any) -> str:
    return str(_tool_field(tool, "description") or "")


def _tool_name(tool: Any) -> str:
    """A tool's name: a LangChain tool's, a function's, or a dict tool's."""
    return str(_tool_field(tool, "name") or getattr(tool, "__name__", ""))


def _read_written_calls(model: BaseChatModel, reply: BaseMessage, names: set[str]) -> BaseMessage:
    """``reply`` with the tool calls its text wrote (``<tools>{"name": …}</tools>``) made real.

    Many small models served without a tool-call parser for their format write the call
    as text. The calls are read out of the text, so the tools run and the user never sees
    the markup; the provider is remembered, so its later replies are not streamed raw.
    """
    if not isinstance(reply, AIMessage) or reply.tool_calls:
        return reply
    calls, rest = tool_calls_in_text(reply.text, names)
    if not calls:
        return reply
    profile = profile_for(model)
    profile.tools_as_text = profile.misuses_tools = True
    _log_once(
        model,
        "tools_as_text",
        "The model %s writes its tool calls as text; reading them from the text this time, "
        "and from now on its replies get no tools and its memory requests are asked as a "
        "structured question.",
        _describe(model),
    )
    return AIMessage(
        content=rest,
        tool_calls=calls,
        id=reply.id,
        response_metadata=reply.response_metadata,
        usage_metadata=reply.usage_metadata,
    )


TOOL_MARKUP = re.compile(
    r"</?\s*(?:tools?|tool_calls?|tool_code|function_calls?|functions?)\s*>|```(?:json)?\s*```"
    r"|\[\s*(?:,\s*)*\]",
    re.IGNORECASE,
)
"""What is left around calls read out of a text: their tags, empty fences and lists."""


def tool_calls_in_text(text: str, names: set[str]) -> tuple[list[ToolCall], str]:
    """The calls of tools in ``names`` written as JSON in ``text``, and the text without them.

    >>> calls, rest = tool_calls_in_text(
    ...     'Let me check. <tools>{"name": "search_memory", "arguments": {"query": "cat"}}</tools>',
    ...     {"search_memory"},
    ... )
    >>> [(call["name"], call["args"]) for call in calls], rest
    ([('search_memory', {'query': 'cat'})], 'Let me check.')
    >>> tool_calls_in_text('Use {"name": "other", "arguments": {}}', {"search_memory"})[0]
    []
    """
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    kept: list[str] = []
    position = 0
    start = text.find("{")
    while start != -1:
        try:
            data, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        call = _as_call(data)
        if call is not None and call[0] in names:
            kept.append(text[position:start])
            position = end
            calls.append(ToolCall(name=call[0], args=call[1], id=f"call_{uuid.uuid4().hex[:24]}"))
        start = text.find("{", end)
    if not calls:
        return [], text
    rest = TOOL_MARKUP.sub("", "".join([*kept, text[position:]]))
    lines = (" ".join(line.split()) for line in rest.splitlines())
    return calls, re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


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
