"""Small helpers shared by the unit tests: extractor answers, model functions, prompt parsing.

Import them as ``from helpers import ...`` (pytest puts ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, Item

from assistant.run.context import Context
from function_model import CallInfo, Reply
from scripted import ScriptedRules

if TYPE_CHECKING:
    from function_model import FunctionChatModel

# --------------------------------------------------------------------------- extractor answers


def hashed_vector(text: str, dims: int) -> list[float]:
    """A hashed bag of ``text``'s words and their character bigrams, L2-normalised.

    Identical texts score 1.0; texts that share words score higher than texts that do not.
    Deterministic across processes (no salted ``hash``). The test embedder's and the stub
    provider's ``/v1/embeddings``.
    """
    vector = [0.0] * dims

    def bucket(feature: str) -> int:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % dims

    for word in re.findall(r"\w+", text.casefold()):
        vector[bucket("w:" + word)] += 1.0
        for i in range(len(word) - 1):
            vector[bucket("b:" + word[i : i + 2])] += 0.5
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


def op(
    action: str,
    content: str,
    category: str = "other",
    confidence: float = 0.9,
    target: int | None = None,
    profile: bool | None = None,
) -> dict[str, Any]:
    """One memory operation as the extractor returns it (``target`` is 1-based)."""
    return {
        "action": action,
        "content": content,
        "category": category,
        "confidence": confidence,
        "target": target,
        "profile": profile,
    }


def operations_json(*operations: dict[str, Any]) -> str:
    """What the extractor returns: ``{"operations": [...]}`` as JSON."""
    return json.dumps({"operations": list(operations)}, ensure_ascii=False)


def adds_json(*facts: tuple[str, str, float]) -> str:
    """The extractor adding each ``(content, category, confidence)`` as a new fact."""
    return operations_json(*(op("add", c, category, conf) for c, category, conf in facts))


def noted_and_extracted_by_rules(messages: list[BaseMessage], info: CallInfo) -> Reply:
    """A model function: "Noted." to every reply; extraction by the scripted rules.

    The extraction reads the numbered ``<known_facts>`` and the ``<user_message>`` from
    the prompt, as a real model would (:class:`scripted.ScriptedRules`), so tests exercise
    the prompt the node actually built. The ``rule_based_model`` fixture uses it.
    """
    return "Noted." if info.schema is None else ScriptedRules()(messages, info)


# --------------------------------------------------------------------------- prompts


def between(text: str, tag: str) -> str:
    """The text inside ``<tag>…</tag>`` (the first occurrence)."""
    match = re.search(rf"<{tag}>\n(.*?)\n?</{tag}>", text, re.DOTALL)
    assert match, f"no <{tag}> block in:\n{text}"
    return match.group(1)


def lines(text: str, tag: str) -> list[str]:
    """The ``- item`` lines inside ``<tag>…</tag>``, without the dash."""
    return [line[2:] for line in between(text, tag).splitlines() if line.startswith("- ")]


def system_prompt(model: FunctionChatModel, index: int = -1) -> str:
    """The system prompt of one of the reply calls `respond` made (the last by default)."""
    replies = [c.messages for c in model.calls if c.info.node == "respond" and not c.info.schema]
    call = replies[index]
    assert isinstance(call[0], SystemMessage)
    return call[0].text


def quick_timeout() -> Context:
    """A Context whose extraction gives up after 50 ms: below what Context accepts (1 s),
    set past validation so that the test does not wait a whole second."""
    context = Context()
    context.extraction_timeout_s = 0.05
    return context


def config(thread_id: str = "thread-1") -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


# --------------------------------------------------------------------------- store


async def stored_facts(store: BaseStore, user_id: str) -> list[str]:
    """Every stored fact's content for ``user_id``, current or superseded, sorted."""
    items = await store.asearch(("user_facts", user_id), limit=100)
    return sorted(str(item.value["content"]) for item in items)


async def fact_items(store: BaseStore, user_id: str) -> list[Item]:
    """Every stored fact item for ``user_id`` (current and superseded), oldest first."""
    items = await store.asearch(("user_facts", user_id), limit=100)
    return sorted(items, key=lambda item: (item.value["created_at"], item.key))


async def current_facts(store: BaseStore, user_id: str) -> list[str]:
    """The content of ``user_id``'s current (not superseded) facts, sorted."""
    items = await store.asearch(("user_facts", user_id), limit=100)
    return sorted(str(i.value["content"]) for i in items if i.value["status"] == "current")


def create_database(uri: str, name: str) -> str:
    """Create database ``name`` (if new) on the server at ``uri`` and return its URI."""
    import psycopg

    from assistant.server.persistence.storage import database_uri

    with psycopg.connect(uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    return database_uri(uri, name)


BENCH = Path(__file__).resolve().parents[1] / "bench"
"""The benchmarks' folder: scripts, not a package."""


@contextmanager
def bench_module(name: str) -> Iterator[ModuleType]:
    """``bench/<name>.py`` loaded as module ``name``, with ``bench/`` importable meanwhile.

    A benchmark imports its neighbours (``peers``, ``recall``, ``locomo``) as top-level
    modules, and its dataclasses look their own module up in ``sys.modules``.
    """
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
        sys.path.remove(str(BENCH))


def changes(audit: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of an audit trail other than additions (every added fact has one)."""
    return [entry for entry in audit if entry.get("action") != "add"]
