"""A deterministic, offline stand-in for a chat model, for `make demo` and end-to-end tests.

:class:`ScriptedRules` is a function for the one fake chat model of the project
(:class:`function_model.FunctionChatModel`); :func:`ScriptedChatModel` builds that model
with it. It never calls a network. It recognises the three kinds of request the graph
makes (reply, fact extraction, summarisation) and answers each with simple rules, so
memory can be watched working without an API key. Every reply starts with ``[scripted]``
so nobody mistakes it for a real model. It can append a JSON line per call to a log file,
which is how the demo and the end-to-end tests see the exact prompts a server sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from assistant.extraction.extract import StillTrue
from assistant.inference.tokens import count_messages_tokens, count_text_tokens
from assistant.memory.search.lexical import tokenize
from function_model import CallInfo, FunctionChatModel

__all__ = [
    "ScriptedChatModel",
    "ScriptedRules",
    "decide_operations",
    "memory_command",
    "extract_statements",
    "scripted_summary",
]

LABEL = "[scripted]"
_LOG_LOCK = threading.Lock()

# (pattern, template, category): the pattern's groups fill the template.
_VALUE = r"([^,.;!?]+?)(?=\s+(?:and|but|so|because|since)\b|[,.;!?]|$)"
_ENGLISH_RULES: list[tuple[str, str, str]] = [
    (r"\bmy name is " + _VALUE, "Name is {}", "identity"),
    (r"\bi(?:'m| am) called " + _VALUE, "Name is {}", "identity"),
    (r"\bi (?:live|am living|'m living) in " + _VALUE, "Lives in {}", "location"),
    (r"\bi(?:'ve| have)? moved (?:from [^,.;!?]+? )?to " + _VALUE, "Lives in {}", "location"),
    (r"\bi(?:'m| am) allergic to " + _VALUE, "Allergic to {}", "constraint"),
    (r"\bi (?:work as|am working as) (?:an? )?" + _VALUE, "Works as {}", "identity"),
    (
        r"\bi(?:'m| am) an? ([a-z ]*(?:engineer|developer|doctor|nurse|teacher|designer|student))",
        "Is a {}",
        "identity",
    ),
    (r"\bi (?:really )?(?:like|love|enjoy) " + _VALUE, "Likes {}", "preference"),
    (r"\bi prefer " + _VALUE, "Prefers {}", "preference"),
    (r"\bi (?:hate|dislike|don't like) " + _VALUE, "Dislikes {}", "preference"),
    (
        r"\bmy (dog|cat|wife|husband|son|daughter|partner|sister|brother)(?:'s name)? is "
        r"(?:called |named )?" + _VALUE,
        "{} is {}",
        "relationship",
    ),
    (r"\bi(?:'m| am) (?:working on|building) " + _VALUE, "Is working on {}", "project"),
    (r"\bi(?:'ve| have)? decided to " + _VALUE, "Decided to {}", "decision"),
]
_CHINESE_RULES: list[tuple[str, str, str]] = [
    (r"我(?:的名字)?叫([^，。；！？,.!?\s]+)", "名字是{}", "identity"),
    (r"我(?:现在)?住在([^，。；！？,.!?\s]+)", "住在{}", "location"),
    (
        r"我(?:从[^，。；！？,.!?\s]+?)?搬到了?([^，。；！？,.!?\s]+?)了?(?=[，。；！？,.!?\s]|$)",
        "住在{}",
        "location",
    ),
    (r"我对([^，。；！？,.!?\s]+)过敏", "对{}过敏", "constraint"),
    (r"我(?:很|特别|最)?喜欢([^，。；！？,.!?\s]+)", "喜欢{}", "preference"),
    (r"我不喜欢([^，。；！？,.!?\s]+)", "不喜欢{}", "preference"),
    (r"我是(?:一名|一个|个)?([^，。；！？,.!?\s]+)", "是{}", "identity"),
    (r"我的(狗|猫|妻子|丈夫|儿子|女儿)叫([^，。；！？,.!?\s]+)", "{}叫{}", "relationship"),
    (r"我(?:在做|正在做)([^，。；！？,.!?\s]+)", "在做{}", "project"),
    (r"我决定([^，。；！？,.!?\s]+)", "决定{}", "decision"),
]


def extract_statements(text: str) -> list[dict[str, Any]]:
    """Facts the rules find in ``text``, as extractor output dicts.

    >>> [f["content"] for f in extract_statements("Hi! My name is Alice and I live in Hangzhou.")]
    ['Name is Alice', 'Lives in Hangzhou']
    >>> [f["content"] for f in extract_statements("我叫小明，我住在成都。")]
    ['名字是小明', '住在成都']
    """
    found: list[tuple[int, dict[str, Any]]] = []
    for rules, flags in ((_ENGLISH_RULES, re.IGNORECASE), (_CHINESE_RULES, 0)):
        for pattern, template, category in rules:
            for match in re.finditer(pattern, text, flags):
                parts = [group.strip() for group in match.groups()]
                if len(parts) > 1:
                    parts[0] = parts[0].capitalize() if rules is _ENGLISH_RULES else parts[0]
                content = template.format(*parts)
                slot = template.split("{}")[0]
                if len(parts) > 1:  # "{} is {}" / "{}叫{}": the slot is the filled first part
                    slot = template.split("{}")[0] + parts[0] + template.split("{}")[1]
                fact = {
                    "content": content,
                    "category": category,
                    "confidence": 0.9,
                    "slot": (slot, template.split("{}")[-1]),
                }
                found.append((match.start(), fact))
    found.sort(key=lambda pair: pair[0])
    unique = {str(fact["content"]): fact for _, fact in reversed(found)}
    return list(reversed(unique.values()))


def decide_operations(text: str, known: list[str]) -> list[dict[str, Any]]:
    """Memory operations for ``text`` given the numbered ``known`` facts, by simple rules.

    A statement that repeats a known fact is a skip; one that gives a single-valued
    slot (name, home, job, a pet's name: "Lives in …", "住在…") another value
    supersedes it; anything else is an add. The rules cannot see that an English and
    a Chinese fact mean the same.

    >>> [(o["action"], o["target"]) for o in decide_operations(
    ...     "I moved from Hangzhou to Chengdu", ["Lives in Hangzhou", "Likes tea"])]
    [('supersede', 1)]
    >>> [o["action"] for o in decide_operations("I live in Chengdu", ["Lives in Chengdu"])]
    ['skip']
    """
    operations: list[dict[str, Any]] = []
    if (command := memory_command(text)) and command[0] != "correct":
        return operations  # forgetting and listing are the memory tools' job
    for fact in extract_statements(text):
        prefix, suffix = fact.pop("slot")
        operation = {**fact, "action": "add", "target": None}
        for number, content in enumerate(known, start=1):
            if content == fact["content"]:
                operation.update(action="skip", target=number)
                break
            single_valued = fact["category"] in ("identity", "location", "relationship")
            if single_valued and content.startswith(prefix) and content.endswith(suffix):
                operation.update(action="supersede", target=number)
        operations.append(operation)
    return operations


def scripted_summary(existing: str, transcript: str, *, max_tokens: int) -> str:
    r"""Fold the user's lines of ``transcript`` into ``existing``, within ``max_tokens``.

    The oldest lines (who the user is) fill up to half the budget, the newest fill the
    rest, and the middle gives way.

    >>> scripted_summary("- My name is Alice", "User: I like tea\nAssistant: ok", max_tokens=50)
    '- My name is Alice\n- I like tea'
    """
    lines = [line for line in existing.splitlines() if line.strip() and line != "(none yet)"]
    lines += [
        "- " + line.removeprefix("User: ").strip()
        for line in transcript.splitlines()
        if line.startswith("User: ")
    ]
    lines = list(dict.fromkeys(lines))
    head: list[str] = []
    budget = max_tokens // 2
    for line in lines:
        budget -= count_text_tokens(line) + 1
        if budget < 0:
            break
        head.append(line)
    tail: list[str] = []
    budget = max_tokens - sum(count_text_tokens(line) + 1 for line in head)
    for line in reversed(lines[len(head) :]):
        budget -= count_text_tokens(line) + 1
        if budget < 0:
            break
        tail.append(line)
    return "\n".join(head + tail[::-1])


_RECALL_ALL = re.compile(
    r"what do you (?:remember|know) about me|你(?:还)?(?:记得|知道)(?:关于)?我(?:的)?(?:什么|哪些)",
    re.IGNORECASE,
)
_FORGET = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+)?(?:forget|delete)\b(?: that)?\s*(.*)"
    r"|^\s*(?:请)?(?:忘掉|忘记|删掉|删除)(.*)",
    re.IGNORECASE,
)
_CORRECT = re.compile(
    r"^\s*(?:actually|correction:)\s*,?\s*(.*)|^\s*(?:其实|更正[:：]?)(.*)", re.IGNORECASE
)


def memory_command(text: str) -> tuple[str, str] | None:
    """``(kind, rest)`` when ``text`` asks to list, forget or correct memories.

    >>> memory_command("Please forget that I live in Hangzhou")
    ('forget', 'I live in Hangzhou')
    >>> memory_command("忘掉我住在杭州这件事")
    ('forget', '我住在杭州这件事')
    >>> memory_command("what do you remember about me?")
    ('list', '')
    >>> memory_command("Actually my dog is called Max")
    ('correct', 'my dog is called Max')
    """
    if _RECALL_ALL.search(text):
        return ("list", "")
    if match := _FORGET.search(text):
        return ("forget", next(group for group in match.groups() if group is not None).strip())
    if match := _CORRECT.search(text):
        return ("correct", next(group for group in match.groups() if group is not None).strip())
    return None


def _section(text: str, tag: str) -> str:
    """The text inside the last ``<tag>…</tag>`` block of ``text``."""
    matches = re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return str(matches[-1]).strip() if matches else ""


def _matching_ids(search_result: str, request: str) -> list[str]:
    """Ids in a search_memory result whose fact shares a search term with ``request``."""
    wanted = set(tokenize(request))
    return [
        key
        for key, content in re.findall(r"^([0-9a-f]{32}): (.*)$", search_result, re.MULTILINE)
        if wanted & set(tokenize(content))
    ]


def _tool_call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}"}],
    )


def _has_cjk(text: str) -> bool:
    return re.search("[\u4e00-\u9fff]", text) is not None


SLOW_SECONDS = 8.0
"""How long a reply takes when the conversation contains ``slow_on``."""


@dataclass(frozen=True)
class ScriptedRules:
    """The scripted model's answers, as a function for :class:`FunctionChatModel`.

    A structured call (the extraction) gets the operations :func:`decide_operations`
    finds; a summarisation prompt gets :func:`scripted_summary`; a memory command with
    the memory tools bound gets the next tool call (see :func:`memory_command`); anything
    else gets a reply that lists what the system prompt told it about the user.

    >>> from langchain_core.messages import HumanMessage
    >>> ScriptedRules()([HumanMessage("hello")], CallInfo()).text.startswith("[scripted]")
    True
    """

    log_path: str | None = None
    """Append one JSON line per call here (kind, system prompt, prompt tokens, ...)."""

    fail_on: str | None = None
    """Raise a RuntimeError for any request containing this text (to test faults)."""

    slow_on: str | None = None
    """Take ``SLOW_SECONDS`` over a reply to a conversation containing this text (to catch a
    run in flight). Fact extraction stays fast."""

    def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage | dict[str, Any]:
        """The answer to one call (it runs in a worker thread under async callers)."""
        if self.fail_on and any(self.fail_on in message.text for message in messages):
            raise RuntimeError(f"scripted failure: request contains {self.fail_on!r}")
        if info.schema is StillTrue:
            return {"still_true": True, "now": ""}  # its extractor already writes each change
        if info.schema is not None:
            return self._extract(messages)
        return self._reply(messages, info.tool_names)

    def _log(self, record: dict[str, Any]) -> None:
        if not self.log_path:
            return
        with _LOG_LOCK, Path(self.log_path).open("a", encoding="utf-8") as log:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")

    def _extract(self, messages: list[BaseMessage]) -> dict[str, Any]:
        """Memory operations for an extraction prompt, by :func:`decide_operations`."""
        prompt = "\n".join(message.text for message in messages)
        known = [
            line.split(". ", 1)[1]
            for line in _section(prompt, "known_facts").splitlines()
            if ". " in line
        ]
        operations = decide_operations(_section(prompt, "user_message"), known)
        self._log(
            {
                "kind": "extract",
                "operations": [(op["action"], op["content"]) for op in operations],
            }
        )
        return {"operations": operations}

    def _tool_step(
        self, conversation: list[BaseMessage], tool_names: list[str]
    ) -> AIMessage | None:
        """The next step of a memory command: a tool call, or the final reply after tools."""
        turn_start = max(
            (i for i, message in enumerate(conversation) if isinstance(message, HumanMessage)),
            default=None,
        )
        if turn_start is None or not tool_names:
            return None
        command = memory_command(conversation[turn_start].text)
        if command is None:
            return None
        kind, rest = command
        results = [m for m in conversation[turn_start + 1 :] if isinstance(m, ToolMessage)]
        last = results[-1] if results else None
        ids = re.findall(r"^([0-9a-f]{32}): ", last.text, re.MULTILINE) if last else []
        if last is None:
            query = "" if kind == "list" else rest
            return _tool_call("search_memory", {"query": query})
        hits = _matching_ids(last.text, rest) if kind != "list" else ids
        if last.name == "search_memory" and kind == "forget" and hits:
            return _tool_call("forget_memory", {"fact_id": hits[0]})
        if last.name == "search_memory" and kind == "correct" and hits:
            facts = extract_statements(rest)
            corrected = facts[0]["content"] if facts else rest
            return _tool_call("correct_memory", {"fact_id": hits[0], "corrected": corrected})
        if last.name == "search_memory" and kind != "list" and not hits:
            return AIMessage(f"{LABEL} I couldn't find a stored fact about that.")
        self._log({"kind": "respond_after_tools", "tools": [m.name for m in results]})
        text = re.sub(r"^[0-9a-f]{32}: ", "- ", last.text, flags=re.MULTILINE)
        return AIMessage(f"{LABEL} {text}")

    def _reply(self, messages: list[BaseMessage], tool_names: list[str]) -> AIMessage:
        replying = bool(messages) and isinstance(messages[0], SystemMessage)
        if self.slow_on and replying and any(self.slow_on in m.text for m in messages[1:]):
            time.sleep(SLOW_SECONDS)  # in the worker thread the fake runs this function in
        prompt = messages[0].text if messages else ""
        if "<new_messages>" in prompt:
            limit = re.search(r"about (\d+) tokens", prompt)
            summary = scripted_summary(
                _section(prompt, "existing_summary"),
                _section(prompt, "new_messages"),
                max_tokens=int(limit.group(1)) if limit else 500,
            )
            self._log({"kind": "summarize", "summary": summary})
            return AIMessage(summary)
        system = prompt if isinstance(messages[0], SystemMessage) else ""
        conversation = [message for message in messages if not isinstance(message, SystemMessage)]
        if (step := self._tool_step(conversation, tool_names)) is not None:
            return step
        profile = [line[2:] for line in _section(system, "user_profile").splitlines() if line]
        facts = [line[2:] for line in _section(system, "user_facts").splitlines() if line]
        episodes = re.findall(r"^<conversation ", _section(system, "past_conversations"), re.M)
        summary = _section(system, "summary")
        tokens = count_messages_tokens(messages)
        latest = conversation[-1].text if conversation else ""
        self._log(
            {
                "kind": "respond",
                "system": system,
                "messages": len(conversation),
                "prompt_tokens": tokens,
                "latest": latest[:200],
            }
        )
        known = [*profile, *facts]
        if _has_cjk(latest):
            return AIMessage(
                f"{LABEL} 收到。我记得关于你的事：{'；'.join(known) or '还没有'}。"
                + (f"我还记得 {len(episodes)} 段以前的对话。" if episodes else "")
                + ("我还有这段对话之前的摘要。" if summary else "")
                + f"（提示词约 {tokens} 个 token）"
            )
        return AIMessage(
            f"{LABEL} Got it. What I remember about you: {'; '.join(known) or 'nothing yet'}."
            + (f" I also recall {len(episodes)} earlier conversation(s)." if episodes else "")
            + (" I have a summary of the earlier part of this conversation." if summary else "")
            + f" (prompt ≈ {tokens} tokens)"
        )


def ScriptedChatModel(
    *,
    log_path: str | None = None,
    fail_on: str | None = None,
    slow_on: str | None = None,
    keep_calls: bool = True,
) -> FunctionChatModel:
    """The scripted model: the one fake chat model answering by :class:`ScriptedRules`.

    Named like the class it replaced, so that servers and tests build it as before. A
    server passes ``keep_calls=False`` (it logs each call to ``log_path`` instead).

    >>> model = ScriptedChatModel()
    >>> model.invoke("hello").text.startswith("[scripted]")
    True
    """
    return FunctionChatModel(
        function=ScriptedRules(log_path=log_path, fail_on=fail_on, slow_on=slow_on),
        keep_calls=keep_calls,
    )
