"""`respond`: answer the user with memory in view; call memory tools when asked to."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from assistant.inference import models, providers
from assistant.inference.provider_errors import ModelProviderError
from assistant.inference.tokens import count_messages_tokens
from assistant.memory.wording import names_a_word_of
from assistant.nodes import requests
from assistant.nodes.heeding import unheeded
from assistant.nodes.requests import Outcome
from assistant.nodes.tools import (
    MEMORY_TOOLS,
    asks_about_memory,
    asks_to_forget,
    correct_memory,
    forget_memory,
    only_asks_what_is_known,
)
from assistant.run import prompts
from assistant.run.context import Context
from assistant.run.history import latest_user_message
from assistant.run.prompting import (
    FittedPrompt,
    as_data,
    fit_prompt,
    has_unanswered,
    mark_unanswered,
    skip_unanswered,
)
from assistant.run.scope import node_scope
from assistant.run.state import RecalledFact, State, TurnMetrics

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 3
"""Tool calls allowed per user turn; after that the model must answer in words."""

TOOL_LIMIT_REPLY = (
    "I couldn't finish that with my memory tools. Could you say it another way?\n"
    "我没能用记忆工具完成这件事，能换个说法吗？"
)

UNSAID_REPLY = (
    "Sorry, I lost my words there. Could you say that again?\n抱歉，我没说清楚，能再说一遍吗？"
)

EMPTY_MESSAGE_REPLY = (
    "Your message looks empty. What would you like to talk about?\n"
    "你的消息好像是空的，想聊些什么呢？"
)


async def respond(state: State, runtime: Runtime[Context]) -> State:
    """Call the chat model on the system prompt plus the thread's recent messages."""
    context = runtime.context or Context()
    messages = state.get("messages", [])
    if not messages or not isinstance(messages[-1], HumanMessage | ToolMessage):
        return {}  # a run with no new user message: nothing to answer
    if _is_blank(messages[-1]):
        return {"messages": [AIMessage(content=EMPTY_MESSAGE_REPLY)]}
    model = models.get_chat_model(context.model)
    tools_allowed = tool_rounds(messages) < MAX_TOOL_ROUNDS
    turn = state.get("metrics", {})
    trace: RunnableConfig = {
        "run_name": "respond",
        "metadata": {
            "memory_profile_fact_ids": turn.get("profile_fact_ids", []),
            "memory_recalled_fact_ids": turn.get("recalled_fact_ids", []),
            "memory_episode_thread_ids": turn.get("episode_thread_ids", []),
            "memory_tokens": turn.get("memory_tokens", 0),
        },
    }
    warning = providers.extraction_warning(model)
    if warning:
        trace["metadata"] = {**trace.get("metadata", {}), "memory_warning": warning}

    # A question of what is known never sets off a forget or correction (`_speaks_of_memory`),
    # so the facts the prompt shows stay those of the whole turn.
    known = _shown(state) if _asks_what_is_known(messages) else None

    def prompt_of(fitted: FittedPrompt) -> list[BaseMessage]:
        prompt = [SystemMessage(content=fitted.system), *fitted.messages]
        if known is not None:
            prompt = with_known_note(prompt, known, recalled=_recalled(state))
        return with_heed_note(prompt, state.get("heed", []))

    # Memory figures ride into LangSmith traces; a model without tools answers without them.
    tools = MEMORY_TOOLS if tools_allowed else []
    offered = tools_allowed and providers.offers_tools(model)
    done = Outcome()
    if tools_allowed and not offered and _speaks_of_memory(messages):
        # A model without the tools (its provider has none, or it misuses them): its
        # memory request as one structured question.
        state, done = await _carry_out(state, runtime, context, messages[-1].text)
    fitted = _fit(state, context, mark_unanswered(messages), tools=offered, done=done.done)
    prompt = prompt_of(fitted)
    try:
        response = await providers.ainvoke_with_tools(model, tools, prompt, trace)
    except Exception as error:
        if not has_unanswered(messages) or _model_down(error):
            raise
        # The unanswered message may be what the model cannot take: answer without it
        # rather than fail every later turn of the thread.
        fitted = _fit(state, context, skip_unanswered(messages), tools=offered, done=done.done)
        prompt = prompt_of(fitted)
        response = await providers.ainvoke_with_tools(model, tools, prompt, trace)
    response = _reply(response)
    if (
        offered
        and not response.tool_calls
        and (
            (not providers.offers_tools(model) and _speaks_of_memory(messages))
            or _forget_left_undone(messages)
        )
    ):
        # Found to misuse its tools on this very turn, or answering a forget in words only:
        # carry the request out as a structured question, and answer again with what was done.
        request = latest_user_message(messages)
        state, done = await _carry_out(state, runtime, context, request.text if request else "")
        if done.done:
            fitted = _fit(state, context, mark_unanswered(messages), tools=False, done=done.done)
            prompt = prompt_of(fitted)
            try:
                response = _reply(await providers.ainvoke_with_tools(model, tools, prompt, trace))
            except Exception:  # done is done: the first reply stands rather than no reply
                logger.warning("Answering again with what was done failed", exc_info=True)
    if known and not response.tool_calls and not tells_any(response.text, known):
        response = await _telling_what_is_known(model, prompt, trace, response, known)
    heed = state.get("heed", [])
    if (
        heed
        and known is None
        and not response.tool_calls
        and (broken := unheeded(response.text, heed))
    ):
        response = await _heeding_again(model, prompt, trace, response, broken)
    if done.done and not response.tool_calls and refuses_bare(response.text):
        response = await _telling_what_was_done(model, prompt, trace, response, done.said)
    elif state.get("heed") and not response.tool_calls and refuses_bare(response.text):
        response = await _with_reason(model, prompt, trace, response)
    if not response.tool_calls and not response.text.strip():
        response = await _said_again(model, prompt, trace, response)
    if not response.tool_calls and (
        echoes_prompt(response.text) or repeats_the_message(response.text, messages)
    ):
        response = await _plainly(model, tools if offered else [], prompt, trace, response)
    if not response.tool_calls and not response.text.strip():
        # Empty twice: never an empty message.
        response = response.model_copy(update={"content": UNSAID_REPLY})
    if not response.tool_calls and isinstance(response.content, str):
        said_once = without_repeated_lines(response.content)
        if said_once != response.content:
            logger.warning("The reply said one line over and over; kept once")
            response = response.model_copy(update={"content": said_once})
    if response.tool_calls and not tools_allowed:
        # Out of tool rounds but the model still asked: answer in words, no dangling calls.
        response = AIMessage(content=response.text or TOOL_LIMIT_REPLY, id=response.id)
    if warning:  # clients (the CLI) show it; LangSmith has it in the trace metadata
        response.response_metadata["memory_warning"] = warning
    metrics = TurnMetrics(
        message_id=state.get("metrics", {}).get("message_id", ""),
        prompt_tokens=count_messages_tokens(prompt),
        left_out=fitted.left_out,
    )
    return {"messages": [response], "metrics": metrics}


DOWN_KINDS = frozenset({"auth", "forbidden", "not_found", "unreachable", "timeout", "rate_limited"})
"""Provider failures that say nothing about the prompt: the model is down or refuses us."""


def _model_down(error: BaseException) -> bool:
    """Whether ``error`` means the model cannot answer any prompt now."""
    if isinstance(error, TimeoutError):
        return True
    return isinstance(error, ModelProviderError) and error.kind in DOWN_KINDS


def _fit(
    state: State,
    context: Context,
    messages: Sequence[BaseMessage],
    *,
    tools: bool,
    done: Sequence[str] = (),
) -> FittedPrompt:
    """The reply prompt for ``messages`` with the turn's memory, fitted to the budgets."""
    return fit_prompt(
        persona=context.system_prompt,
        now=_turn_time(state),
        profile=state.get("profile", []),
        facts=state.get("recalled", []),
        episodes=state.get("episodes", []),
        summary=state.get("summary", ""),
        messages=messages,
        max_context_tokens=context.max_context_tokens,
        max_prompt_tokens=context.max_prompt_tokens,
        tools=tools,
        done=done,
    )


def _turn_time(state: State) -> datetime:
    """When the turn started, in the server's time zone: the same for each of its reply calls.

    >>> started = datetime(2026, 3, 1, 10, tzinfo=UTC)
    >>> _turn_time({"metrics": {"started_at": started.isoformat()}}) == started
    True
    """
    try:
        at = datetime.fromisoformat(state.get("metrics", {}).get("started_at", ""))
    except ValueError:  # a turn that did not pass through recall, or a record broken by hand
        at = datetime.now(UTC)
    return at.astimezone()


def tool_rounds(messages: Sequence[BaseMessage]) -> int:
    """How many times the model has called tools since the user's latest message."""
    return len(_tool_rounds_since_request(messages))


def _tool_rounds_since_request(messages: Sequence[BaseMessage]) -> list[AIMessage]:
    """The model's messages that called tools since the user's latest message."""
    rounds: list[AIMessage] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage) and message.tool_calls:
            rounds.append(message)
    return rounds


def _speaks_of_memory(messages: Sequence[BaseMessage]) -> bool:
    """Whether the latest message is the user's and asks a tool's work of memory.

    That is `asks_about_memory`, but not a question of what is known only, which the facts
    in the prompt answer (`with_known_note`).
    """
    if not isinstance(messages[-1], HumanMessage):
        return False
    text = messages[-1].text
    return asks_about_memory(text) and not only_asks_what_is_known(text)


def _asks_what_is_known(messages: Sequence[BaseMessage]) -> bool:
    """Whether this turn's user message only asks what is known about them (tool rounds too).

    Not when it also asks to forget or correct, nor once a tool has forgotten or corrected
    something this turn: the facts the prompt shows may be gone.
    """
    request = latest_user_message(messages)
    if request is None or not only_asks_what_is_known(request.text):
        return False
    return not _changed_by_tools(messages)


def _recalled(state: State) -> bool:
    """Whether the turn's recall ran (a store outage leaves the prompt without memory)."""
    return not state.get("metrics", {}).get("recall_failed", False)


def _forget_left_undone(messages: Sequence[BaseMessage]) -> bool:
    """Whether this turn's user message asks to forget and no forget or correction was called.

    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> _forget_left_undone([HumanMessage("Please forget that I play the cello.")])
    True
    >>> searched = AIMessage("", tool_calls=[{"name": "search_memory", "args": {}, "id": "1"}])
    >>> asked = HumanMessage("Forget my cello.")
    >>> _forget_left_undone([asked, searched, ToolMessage("..", tool_call_id="1")])
    True
    >>> forgot = AIMessage("", tool_calls=[{"name": "forget_memory", "args": {}, "id": "2"}])
    >>> _forget_left_undone([asked, forgot, ToolMessage("ok", tool_call_id="2")])
    False
    """
    request = latest_user_message(messages)
    if request is None or not asks_to_forget(request.text):
        return False
    return not _changed_by_tools(messages)


def _changed_by_tools(messages: Sequence[BaseMessage]) -> bool:
    """Whether the model has called `forget_memory` or `correct_memory` this turn."""
    rounds = _tool_rounds_since_request(messages)
    called = {call["name"] for message in rounds for call in message.tool_calls}
    return bool(called & {forget_memory.name, correct_memory.name})


async def _carry_out(
    state: State, runtime: Runtime[Context], context: Context, text: str
) -> tuple[State, Outcome]:
    """Carry out the memory request in ``text`` (`assistant.nodes.requests`).

    Returns ``state`` without the facts it forgot or corrected (the prompt's blocks must
    not show them), and what was done.
    """
    done = await requests.carry_out(node_scope(runtime), context.model, text)
    if not done.gone:
        return state, done
    return {
        **state,
        "profile": [fact for fact in state.get("profile", []) if fact["id"] not in done.gone],
        "recalled": [fact for fact in state.get("recalled", []) if fact["id"] not in done.gone],
        "heed": [fact for fact in state.get("heed", []) if fact["id"] not in done.gone],
    }, done


MAX_KNOWN_NOTED = 20
"""Most facts listed under a question of what is known (the prompt's own order: the profile,
then the facts most relevant)."""


def _shown(state: State) -> list[RecalledFact]:
    """The facts the reply prompt shows, as listed under a question of what is known."""
    shown = [*state.get("profile", []), *state.get("recalled", [])]
    by_text = {" ".join(fact["content"].split()).casefold(): fact for fact in reversed(shown)}
    return list(reversed(by_text.values()))[:MAX_KNOWN_NOTED]


def tells_any(reply: str, facts: Sequence[RecalledFact]) -> bool:
    """Whether ``reply`` says a word of one of ``facts`` (`names_a_word_of`).

    >>> fact = RecalledFact(id="1", content="Has a cat named Miau", category="relationship")
    >>> tells_any("Você tem um gato chamado Miau.", [fact])
    True
    >>> tells_any("Sou um assistente de inteligência artificial.", [fact])
    False
    """
    return any(names_a_word_of(reply, fact["content"]) for fact in facts)


SELF_DESCRIPTION = re.compile(
    r"\b(?:I am|I'm|I’m|as) an? (?:AI|artificial intelligence|language model|virtual assistant)\b"
    r"|\b(?:soy|sou|sono|je suis|ich bin) (?:un|una|um|uma|ein|eine|une) "
    r"(?:asistente|assistente|assistant|Assistent|KI|IA|modelo|modèle|modello)\b"
    r"|我是(?:一个|一名|一款)?(?:人工智能|AI|语言模型|智能助手|助手)|私は(?:AI|人工知能|アシスタント)"
    r"|저는 (?:AI|인공지능)|я\s*(?:—\s*)?(?:искусственный интеллект|ИИ|ассистент|языковая модель)",
    re.IGNORECASE,
)
"""A reply that says what the assistant is ("I am an artificial intelligence assistant"):
what Qwen2.5-Coder-1.5B answers "¿Qué sabes de mí?" with, in the user's language."""


def answers_nothing(text: str) -> bool:
    """Whether a reply to a question of what is known is no answer to it.

    It says what the assistant is, or only asks a short question back ("Cosa sai di te?"
    answered "Cosa sai di me?").

    >>> answers_nothing("Soy un asistente de inteligencia artificial, no tengo experiencias.")
    True
    >>> answers_nothing("Cosa sai di te?"), answers_nothing("Vives em Coimbra, com o Miau.")
    (True, False)
    """
    stripped = text.strip()
    short_question = stripped.endswith(("?", "？")) and len(stripped) < SHORT_QUESTION_CHARS
    return bool(SELF_DESCRIPTION.search(stripped)) or short_question


SHORT_QUESTION_CHARS = 80
"""A reply this short that ends in a question mark only asks back."""


async def _telling_what_is_known(
    model: BaseChatModel,
    prompt: list[BaseMessage],
    trace: RunnableConfig,
    evasive: AIMessage,
    facts: Sequence[RecalledFact],
) -> AIMessage:
    """A reply to a question of what is known that says what is known.

    ``evasive`` said none of the ``facts``: the model is asked once more, told in a system
    note after the message; if that says none of them either, the facts follow the second
    answer, one a line, or stand alone when it is no answer (`answers_nothing`).
    Qwen2.5-Coder-1.5B answered "O que você sabe sobre mim?" and "¿Qué sabes de mí?" with
    "I am an artificial intelligence assistant, I have no personal knowledge" under every
    wording of the note under the message (docs/testing.md). Any other answer stays above
    the list, because words are compared, not meanings: a right answer in another language
    than the facts' says none of their words.
    """
    logger.warning("The reply to a question of what is known said none of it; asking again")
    note = prompts.KNOWN_AGAIN_NOTE.format(facts=_inline(facts))
    again = await _answered_again(
        model, [*prompt, SystemMessage(note)], trace, evasive, "Asking again what is known failed"
    )
    if not again.tool_calls and tells_any(again.text, facts):
        return again
    answer = "" if again.tool_calls or answers_nothing(again.text) else again.text.strip()
    listed = "\n".join(f"- {' '.join(fact['content'].split())}" for fact in facts)
    return AIMessage(content=f"{answer}\n\n{listed}".strip(), id=evasive.id)


def with_known_note(
    prompt: list[BaseMessage], shown: Sequence[RecalledFact], *, recalled: bool = True
) -> list[BaseMessage]:
    """``prompt`` with the facts ``shown`` in it listed under the user's latest message.

    For a question of what is known about the user (`asks_what_is_known`); with none shown,
    the note says that nothing is remembered, so the model does not make something up, unless
    the turn's recall failed (``recalled`` false: then nothing is noted).

    >>> from langchain_core.messages import HumanMessage
    >>> fact = RecalledFact(id="1", content="Lives in Coimbra.", category="location")
    >>> asked = [SystemMessage("s"), HumanMessage("O que você sabe sobre mim?")]
    >>> print(with_known_note(asked, [fact, fact])[-1].text)
    O que você sabe sobre mim?
    <BLANKLINE>
    (What you remember about me: Lives in Coimbra.)
    >>> print(with_known_note(asked, [])[-1].text.splitlines()[-1])
    (You remember nothing about me yet.)
    >>> with_known_note(asked, [], recalled=False) == asked
    True
    """
    facts = list({fact["id"]: fact for fact in shown}.values())
    if not facts:
        return _with_note(prompt, prompts.NOTHING_KNOWN_NOTE) if recalled else prompt
    return _with_note(prompt, prompts.KNOWN_NOTE.format(facts=_inline(facts)))


def with_heed_note(prompt: list[BaseMessage], heed: Sequence[RecalledFact]) -> list[BaseMessage]:
    """``prompt`` with the ``heed`` constraints written under the user's latest message.

    Only the prompt changes; the thread keeps the message as the user wrote it.

    >>> from langchain_core.messages import HumanMessage
    >>> fact = RecalledFact(id="1", content="Allergic to peanuts.", category="constraint")
    >>> prompt = with_heed_note([SystemMessage("s"), HumanMessage("A peanut cake?")], [fact])
    >>> [type(message).__name__ for message in prompt]
    ['SystemMessage', 'HumanMessage']
    >>> print(prompt[-1].text)
    A peanut cake?
    <BLANKLINE>
    (Remember: Allergic to peanuts.)
    """
    if not heed:
        return prompt
    return _with_note(prompt, prompts.HEED_NOTE.format(constraints=_inline(heed)))


def _inline(facts: Sequence[RecalledFact]) -> str:
    """``facts`` as data on one line for a prompt's note, separated by semicolons."""
    return "; ".join(as_data(fact["content"], one_line=True).rstrip(" .。") for fact in facts)


def _with_note(prompt: list[BaseMessage], note: str) -> list[BaseMessage]:
    """``prompt`` with ``note`` added to the user's latest message (in the prompt only)."""
    latest = next(
        (i for i in range(len(prompt) - 1, -1, -1) if isinstance(prompt[i], HumanMessage)), None
    )
    if latest is None:
        return prompt
    message = prompt[latest]
    content = (
        f"{message.content}{note}"
        if isinstance(message.content, str)
        else [*message.content, {"type": "text", "text": note.lstrip()}]
    )
    noted = message.model_copy(update={"content": content})
    return [*prompt[:latest], noted, *prompt[latest + 1 :]]


PROMPT_TAGS = tuple(
    dict.fromkeys(
        re.findall(
            r"<(\w+)>",
            prompts.SYSTEM_PROMPT
            + prompts.EPISODES_BLOCK
            + prompts.SUMMARY_BLOCK
            + prompts.DONE_BLOCK,
        )
    )
)
"""The tags of the reply's system prompt blocks (``user_profile``, ``user_facts``, ...)."""

NAMES_A_TOOL = re.compile(
    r"\b(?:" + "|".join(tool.name for tool in MEMORY_TOOLS) + r")\b", re.IGNORECASE
)
"""A memory tool's name: a reply meant for the user never writes one."""

ECHOED = re.compile(
    r"<\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r")\b[^<>]*>"
    r"|<\s*/?\s*(?:facts?|functions?|tools?|tool_calls?|parameters?)\b[^<>]*>"
    r"|" + NAMES_A_TOOL.pattern,
    re.IGNORECASE,
)
"""What a reply must not carry: the prompt's block tags, tags a small model makes up for
facts or tools (with or without attributes), and the tools' names."""

LEAKED = re.compile(
    r'^\s*[\[{].*"[^"\n]{1,40}"\s*:.*$'
    r'|"(?:name|arguments|parameters|properties|required)"\s*:'
    r"|^\s*\w+: Field required\s*$|Please fix (?:the error and try again|your mistakes)",
    re.IGNORECASE | re.MULTILINE,
)
"""Data no reply is for: a line of JSON, a tool call's or schema's keys, and the errors the
tool node returns for a call that does not fit (`TOOL_CALL_ERROR_TEMPLATE`, pydantic's
"Field required"). Looked for outside code (`FENCED`) only."""

FENCED = re.compile(r"^\s*```.*?(?:^\s*```[^\n]*$|\Z)|`[^`\n]+`", re.DOTALL | re.MULTILINE)
"""A fenced code block or an inline code span: where a reply may rightly show JSON."""

MARKUP = re.compile(r"<\s*/?\s*[A-Za-z_][\w.-]*(?:\s[^<>]*)?/?\s*>")
"""Any XML-like tag: what is taken out of a reply that echoed the prompt twice."""

PLAINLY = (
    "\n\nYour last answer copied the tagged blocks above, wrote out your tools, wrote JSON or "
    "only repeated the user's message. Answer the user's latest message in plain sentences, as "
    "you would speak to them, without any tags or JSON and without naming any tool."
)
"""Added to the system prompt when a reply is asked for again after it echoed the blocks."""


def echoes_prompt(text: str) -> bool:
    r"""Whether a reply writes out the system prompt's blocks or the tools, as small models do.

    >>> echoes_prompt("<user_profile>\n<name>Lin</name>\n</user_profile>")
    True
    >>> echoes_prompt("You live in Munich. The <summary> tag in HTML is for details.")
    True
    >>> echoes_prompt('<fact id="3">护士</fact>'), echoes_prompt('<function name="search_memory">')
    (True, True)
    >>> echoes_prompt("Let me call search_memory for that.")
    True
    >>> echoes_prompt("You live in Munich, and Toby is your dog. 2 < 3 > 1")
    False

    JSON written as prose, a tool's schema or its error, as the local model wrote them:

    >>> echoes_prompt('{"name": "Lily", "allergy": "peanuts"}\nNoted!')
    True
    >>> echoes_prompt('Sure.\n"arguments": {"properties": {"query": {"type": "string"}}}')
    True
    >>> echoes_prompt(" query: Field required\nPlease fix the error and try again.")
    True
    >>> echoes_prompt('Here it is:\n```json\n{"port": 80}\n```\nRestart after.')
    False
    >>> echoes_prompt('Set `"name": "web"` in the file, then restart it.')
    False
    """
    return bool(ECHOED.search(text) or LEAKED.search(FENCED.sub("", text)))


def repeats_the_message(text: str, messages: Sequence[BaseMessage]) -> bool:
    """Whether a reply only says the user's latest message again, word for word.

    The local model answered "O que você sabe sobre mim?" in a new thread with the question
    itself.

    >>> asked = [HumanMessage("O que você sabe sobre mim?")]
    >>> repeats_the_message("O que você sabe  sobre mim?", asked)
    True
    >>> repeats_the_message("Você mora em Coimbra.", asked), repeats_the_message("", asked)
    (False, False)
    """
    request = latest_user_message(messages)
    said = providers.plain_words(text)
    return bool(said) and request is not None and said == providers.plain_words(request.text)


async def _plainly(
    model: BaseChatModel,
    tools: Sequence[object],
    prompt: list[BaseMessage],
    trace: RunnableConfig,
    echoed: AIMessage,
) -> AIMessage:
    """The reply asked for again, after ``echoed`` was no answer.

    It wrote out the prompt's blocks, the tools or data, or only said the user's message
    again. The second answer may echo them too: then its tags are taken out, so the user reads
    the words and never the markup.
    """
    logger.warning("The reply wrote out the prompt, tools or data, or the message; asking again")
    again = _with_system_line(prompt, PLAINLY)
    response = _reply(await providers.ainvoke_with_tools(model, tools, again, trace))
    if response.tool_calls or not echoes_prompt(response.text):
        return response
    text = _without_markup(response.text) or _without_markup(echoed.text) or UNSAID_REPLY
    return response.model_copy(update={"content": text})


def _with_system_line(prompt: list[BaseMessage], line: str) -> list[BaseMessage]:
    """``prompt`` with ``line`` at the end of its system prompt (the cached prefix still serves)."""
    system, *rest = prompt
    return [SystemMessage(content=f"{system.text}{line}"), *rest]


async def _answered_again(
    model: BaseChatModel,
    again: list[BaseMessage],
    trace: RunnableConfig,
    kept: AIMessage,
    failed: str,
) -> AIMessage:
    """The model's answer to the prompt ``again``, without tools; ``kept`` if the call fails.

    A reply already stands, so a failed second call never fails the turn: it is logged as
    ``failed`` and ``kept`` is returned.
    """
    try:
        return _reply(await providers.ainvoke_with_tools(model, [], again, trace))
    except Exception:
        logger.warning(failed, exc_info=True)
        return kept


async def _said_again(
    model: BaseChatModel, prompt: list[BaseMessage], trace: RunnableConfig, empty: AIMessage
) -> AIMessage:
    """The reply asked for once more, without tools, after ``empty`` said nothing at all.

    Qwen2.5-Coder-1.5B answered "Tenho um gato que se chama Miau." with nothing (a `make
    dev` check), and the user read a request to say it again. The same prompt would get the
    same nothing at temperature 0, so the system prompt ends with `prompts.EMPTY_AGAIN`.
    ``empty`` stays if this call fails.
    """
    logger.warning("The model's reply was empty; asking again")
    again = _with_system_line(prompt, prompts.EMPTY_AGAIN)
    return await _answered_again(
        model, again, trace, empty, "Asking again for an empty reply failed"
    )


async def _heeding_again(
    model: BaseChatModel,
    prompt: list[BaseMessage],
    trace: RunnableConfig,
    reply: AIMessage,
    broken: Sequence[RecalledFact],
) -> AIMessage:
    """The reply asked for again after ``reply`` suggested what the ``broken`` allergies rule out.

    The same prompt ends with `prompts.UNHEEDED_NOTE`. An answer that still names the
    allergen (or none at all) is kept with the allergies written under it, so the user
    reads them beside the suggestion.
    """
    logger.warning("The reply suggested what a heeded allergy rules out; asking again")
    again = _with_system_line(prompt, prompts.UNHEEDED_NOTE.format(constraints=_inline(broken)))
    second = await _answered_again(
        model, again, trace, reply, "Asking again after an unheeded allergy failed"
    )
    if second.text.strip() and not unheeded(second.text, broken):
        return second
    kept = second if second.text.strip() else reply
    warning = "\n".join(f"⚠️ {as_data(fact['content'], one_line=True)}" for fact in broken)
    return AIMessage(content=f"{kept.text.rstrip()}\n\n{warning}", id=reply.id)


async def _telling_what_was_done(
    model: BaseChatModel,
    prompt: list[BaseMessage],
    trace: RunnableConfig,
    refused: AIMessage,
    said: Sequence[str],
) -> AIMessage:
    """The reply asked for again after ``refused`` turned down a memory change already made.

    The user must learn what their request changed: the same prompt ends with
    `prompts.DONE_AGAIN`, and if that only refuses again (or fails) the reply is the changes
    as ``said`` (`assistant.nodes.requests.Outcome.said`, in English).
    """
    logger.warning("The reply refused a memory change already made; asking again")
    again = _with_system_line(prompt, prompts.DONE_AGAIN)
    response = await _answered_again(
        model, again, trace, refused, "Asking again after a refused memory change failed"
    )
    if response.text.strip() and not refuses_bare(response.text):
        return response
    return AIMessage(content="\n".join(said), id=refused.id)


BARE_REFUSAL = re.compile(
    r"\W*(?:I['’]?m\s+|I\s+am\s+)?(?:sorry|I\s+apologi[sz]e)\b[^.!?\n]{0,40}"
    r"\b(?:can['’]?t|cannot|can\s+not|won['’]?t|unable\s+to|not\s+able\s+to)"
    r"(?:\s+(?:assist|help|do\s+that)(?:\s+(?:you\s+)?with\s+(?:that|this)(?:\s+request)?)?)?\W*",
    re.IGNORECASE,
)
"""A canned refusal and nothing else: what a safety-tuned model answers to a request it reads
as harmful, such as a peanut cake for a child allergic to peanuts."""


def refuses_bare(text: str) -> bool:
    """Whether a reply only refuses, without a reason or anything else.

    >>> refuses_bare("Sorry, but I can't assist with that."), refuses_bare("I'm sorry, I can't.")
    (True, True)
    >>> refuses_bare("I’m sorry, but I can’t assist with that request.")
    True
    >>> refuses_bare("I'm sorry, but I can't recommend a recipe that involves peanuts.")
    False
    >>> refuses_bare("Sorry, I can't help with that: Lily is allergic to peanuts.")
    False
    """
    return BARE_REFUSAL.fullmatch(text.strip()) is not None


async def _with_reason(
    model: BaseChatModel, prompt: list[BaseMessage], trace: RunnableConfig, refused: AIMessage
) -> AIMessage:
    """The reply asked for again, after ``refused`` turned down a request without a reason.

    A request against a remembered constraint is what gets refused so; ``refused`` stays if
    the second answer is no better.
    """
    logger.warning("The reply refused without a reason; asking for the reason")
    again = [*prompt, AIMessage(content=refused.text), SystemMessage(content=prompts.REASON_NOTE)]
    response = await _answered_again(
        model, again, trace, refused, "Asking for the refusal's reason failed"
    )
    if response.tool_calls or not response.text.strip() or refuses_bare(response.text):
        return refused
    return response


def _without_markup(text: str) -> str:
    r"""``text`` without its tags, and without the lines that name a tool or are data.

    >>> _without_markup("<user_facts>\n- Lives in Munich\n</user_facts>\nHi <b>you</b>!")
    '- Lives in Munich\nHi you!'
    >>> _without_markup('Sure.\n<function name="search_memory">\n{"query": "x"}\n</function>')
    'Sure.'
    >>> _without_markup('Use:\n```\n{"port": 80}\n```')
    'Use:\n```\n{"port": 80}\n```'
    >>> _without_markup('Set `"name": "web"` there.\n{"name": "Lily"}')
    'Set `"name": "web"` there.'
    """
    kept: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.lstrip().startswith("```"):
            kept.append(line)
            continue
        dropped = NAMES_A_TOOL.search(line) or LEAKED.search(FENCED.sub("", line))
        plain = "" if dropped else MARKUP.sub("", line).rstrip()
        if plain.strip() or not line.strip():
            kept.append(plain)
    return "\n".join(kept).strip()


LIST_MARK = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
"""A list item's number or bullet, left out when lines are compared."""

REPEATS_KEPT_ONCE = 3
"""A line said this many times in a row or more is kept once."""


def without_repeated_lines(text: str) -> str:
    r"""``text`` with a line said over and over in a row kept once.

    A small model that starts repeating itself writes one line until its token cap: in the
    real-model tier (run 38) a peanut-cake recipe ended with "Colocar o chocolate em cima:
    Coloque o chocolate em cima do bolo." 38 times, numbered 5 to 42. Lines are compared
    without their number or bullet and end punctuation; blank lines between them do not
    count, and a line said twice stays twice. Two or three lines said in turn (Qwen2.5-Coder
    listed "Chave de garrafa" and "Chave de frigobar" by turns until its cap) are kept once
    too, with the last line the cap cut short, when the cap cut them or they come
    `BLOCK_REPEATS` times. Code in a fence, and lines of punctuation only,
    are left as they are.

    >>> print(without_repeated_lines("1. Mix.\n\n2. Bake.\n\n3. Bake.\n\n4. Bake.\n\n5. Bake"))
    1. Mix.
    <BLANKLINE>
    2. Bake.
    >>> looping = "- Pens\n- Keys\n- Glue\n- Keys\n- Glue\n- Keys\n- Glue\n- Ke"
    >>> print(without_repeated_lines(looping))
    - Pens
    - Keys
    - Glue
    >>> without_repeated_lines("Stir.\nStir.\nServe.")
    'Stir.\nStir.\nServe.'
    >>> code = "```\nx = 1\nx = 1\nx = 1\n```\n}\n}\n}"
    >>> without_repeated_lines(code) == code
    True
    """
    lines = text.split("\n")
    keys, fenced = [], False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        key = LIST_MARK.sub("", line).strip().rstrip(".。!！ ").casefold()
        keys.append("" if fenced or not re.search(r"\w\w", key) else key)
    said = [i for i, key in enumerate(keys) if key]
    dropped: set[int] = set()
    start = 0
    while start < len(said):
        period, run, cut_off = _repeating(keys, said, start)
        if not run:
            start += 1
            continue
        end = start + period + run
        dropped.update(said[start + period : end + cut_off])  # with the line the cap cut short
        start = end
    if not dropped:
        return text
    kept = "\n".join(line for i, line in enumerate(lines) if i not in dropped)
    return re.sub(r"\n{3,}", "\n\n", kept).rstrip()


BLOCK_REPEATS = 10
"""Two or three lines said in turn this many times are a loop; fewer (a workout's eight
rounds, a dosing schedule) are kept unless the token cap cut the last of them short."""


def _repeating(keys: Sequence[str], said: Sequence[int], start: int) -> tuple[int, int, bool]:
    """The block of 1 to 3 lines at ``start`` said again and again, and its repeats.

    Returns the block's length, how many lines after its first time repeat it (0 when it is
    said fewer than `REPEATS_KEPT_ONCE` times in a row), and whether the line after them is
    the reply's last, a start of the block's that the token cap cut short.
    """
    for period in (1, 2, 3):
        run = 0
        while (
            start + period + run < len(said)
            and keys[said[start + period + run]] == keys[said[start + run]]
        ):
            run += 1
        times = 1 + run // period
        if times < REPEATS_KEPT_ONCE:
            continue
        end = start + period + run
        block = {keys[said[n]] for n in range(start, start + period)}
        cut_off = end == len(said) - 1 and any(  # a loop the token cap cut mid-line
            key.startswith(keys[said[end]]) for key in block
        )
        if period == 1 or cut_off or times >= BLOCK_REPEATS:
            return period, run, cut_off
    return 1, 0, False


def _reply(response: BaseMessage) -> AIMessage:
    """``response`` as the reply it must be."""
    if not isinstance(response, AIMessage):
        raise TypeError(f"The chat model returned {type(response).__name__}, not an AIMessage")
    return response


def _is_blank(message: BaseMessage) -> bool:
    """A human message with no text and no image or file blocks."""
    if not isinstance(message, HumanMessage) or message.text.strip():
        return False
    return isinstance(message.content, str) or all(
        isinstance(block, str) or block.get("type") == "text" for block in message.content
    )
