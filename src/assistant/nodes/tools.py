"""Memory tools the assistant can call in conversation: look up, forget, correct.

Every tool works on the caller's own namespace, derived from the run's identity (the
authenticated user, or ``Context.user_id`` without auth). No tool takes a user id or a
namespace from the model, so a prompt-injected "forget Bob's facts" can only ever reach
the speaker's own memory. Deletions and corrections are written to the audit trail
(``("user_audit", user_id)``) with the thread they came from.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import Item

from assistant.memory import CHAT_VIA
from assistant.run.context import Context
from assistant.run.scope import tool_scope

__all__ = [
    "MEMORY_TOOLS",
    "asks_about_memory",
    "correct_memory",
    "forget_memory",
    "search_memory",
]

SEARCH_LIMIT = 20
"""Most facts one search returns to the model."""


@tool
async def search_memory(query: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Look up what you remember about the user, with each fact's id.

    Use it to answer "what do you remember about me?" (an empty query lists
    everything) and to find the id of a fact before forgetting or correcting it. A query
    returns only the facts that match it, each with its match score; when none does,
    nothing the user described is stored, so there is nothing to forget.
    """
    memory = tool_scope(runtime).memory
    if query.strip():
        found = await memory.search(query, limit=SEARCH_LIMIT)
        if not found:
            return f"No stored fact matches {query.strip()!r}; nothing to forget or correct."
        return "\n".join(
            f"{item.key}: {item.value.get('content', '')} (match {item.score or 0.0:.2f})"
            for item in found
        )
    items: list[Item] = (await memory.facts())[:SEARCH_LIMIT]
    if not items:
        return "No facts are stored about this user."
    return "\n".join(f"{item.key}: {item.value.get('content', '')}" for item in items)


@tool
async def forget_memory(fact_id: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Forget one stored fact about the user, by the id that search_memory gave.

    Only use it when the user asks you to forget or delete something.
    """
    scope = tool_scope(runtime)
    forgotten = await scope.memory.forget(
        fact_id.strip(), actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
    )
    if forgotten is None:
        return f"No fact has the id {fact_id!r}. Call search_memory to find the right id."
    return f"Forgotten: {forgotten.content}"


@tool
async def correct_memory(fact_id: str, corrected: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Replace a stored fact the user says is wrong with the corrected fact.

    `corrected` is the whole fact as it should now read, one short sentence in the
    user's language. The old version is kept as history.
    """
    scope = tool_scope(runtime)
    try:
        await scope.memory.correct(
            fact_id.strip(), corrected, actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
        )
    except KeyError:
        return f"No fact has the id {fact_id!r}. Call search_memory to find the right id."
    except ValueError as error:
        return f"Could not correct it: {error}"
    return f"Corrected to: {corrected.strip()}"


MEMORY_TOOLS: list[BaseTool] = [search_memory, forget_memory, correct_memory]
"""The tools `respond` binds to the chat model."""


ABOUT_MEMORY = re.compile(
    r"remember|recall|memor|forget|forgot|delete|erase|\bcorrect|\bwrong\b|you know about me"
    r"|记得|记住|记忆|忘|删|更正|纠正|改正|你知道我|記得|記住|記憶|刪"
    r"|覚え|忘れ|削除|記憶|訂正|기억|잊|삭제|정정"
    r"|erinner|vergiss|vergessen|lösch|gedächtnis|korrigier|merk dir|merkst"
    r"|souvien|souvenir|oubli|supprim|effac|mémoire|corrig"
    r"|recuerd|olvid|borra|elimin|memoria|lembr|esquec|apag|memória"
    r"|ricord|dimentic|cancell"
    r"|помни|помнишь|забудь|забыть|удали|памят|исправ"
    r"|onthoud|herinner|vergeet|verwijder|geheugen"
    r"|hatırla|unut|sil\b|pamięt|zapomnij|usuń|nhớ|quên|xóa|ingat|lupa|hapus"
    r"|تذكر|انس|احذف|याद|भूल|हटा",
    re.IGNORECASE,
)
"""Words that ask what the assistant remembers, or to forget or correct it, in the
languages our users write most. It errs towards yes: a word too many only offers the tools."""


def asks_about_memory(text: str) -> bool:
    """Whether a message may ask what is remembered, or to forget or correct a memory.

    `respond` offers the memory tools to a model that misuses them (see
    `assistant.inference.providers.ProviderProfile.tools_on_request`) only on such turns.

    >>> asks_about_memory("Please forget that I live in Lisbon.")
    True
    >>> asks_about_memory("你还记得我女儿叫什么吗？")
    True
    >>> asks_about_memory("Vergiss bitte meine alte Adresse.")
    True
    >>> asks_about_memory("My daughter Lily is allergic to peanuts.")
    False
    """
    return bool(ABOUT_MEMORY.search(text))
