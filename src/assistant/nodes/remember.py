"""`remember`: extract durable facts from the user's new turn and store the new ones.

It reads only the latest human message, never assistant text, and runs in parallel
with `respond`, so memory adds no latency to the reply. Any failure is logged and
the turn goes on: the reply stands and nothing already stored is touched.
"""

from __future__ import annotations

import asyncio
import logging
import re

from langchain_core.messages import HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from assistant import memory, models, prompts
from assistant.context import Context
from assistant.history import truncate_text
from assistant.identity import require_store, run_user_id
from assistant.state import State

logger = logging.getLogger(__name__)

CATEGORIES = (
    "identity",
    "location",
    "preference",
    "constraint",
    "decision",
    "project",
    "relationship",
    "other",
)
"""The kinds of fact the extractor may report."""

MAX_EXTRACTION_TOKENS = 2000
"""Only this much of a huge message (its start and its end) goes to the extractor."""

KNOWN_FACTS_SHOWN = 8
"""How many of the user's closest stored facts the extractor sees, to avoid repeats."""

_FIRST_PERSON = re.compile(
    r"\b(i|i'm|im|i've|i'd|i'll|me|my|mine|myself|we|we're|our|ours|us)\b|我|咱|本人",
    re.IGNORECASE,
)
_TRIVIAL_CHARS = 12


class ExtractedFact(BaseModel):
    """One durable fact about the user."""

    content: str = Field(
        description="The fact as one short third-person sentence, in the user's language."
    )
    category: str = Field(description="One of: " + ", ".join(CATEGORIES))
    confidence: float = Field(
        ge=0.0, le=1.0, description="How sure you are that this is a durable fact."
    )


class ExtractedFacts(BaseModel):
    """Durable facts found in the user's message; empty when there are none."""

    facts: list[ExtractedFact] = Field(default_factory=list)


def worth_extracting(text: str) -> bool:
    """Whether a message might hold a durable fact; skips greetings and bare questions.

    >>> worth_extracting("I moved to Chengdu last month")
    True
    >>> worth_extracting("thanks!")
    False
    >>> worth_extracting("What's the capital of France?")
    False
    >>> worth_extracting("我对花生过敏")
    True
    """
    text = text.strip()
    if _FIRST_PERSON.search(text):
        return True
    return len(text) >= _TRIVIAL_CHARS and not text.endswith(("?", "？"))


async def remember(state: State, runtime: Runtime[Context]) -> State:
    """Store the durable facts in the latest user message that are not stored yet."""
    messages = state.get("messages", [])
    latest = messages[-1] if messages else None
    if not isinstance(latest, HumanMessage) or not worth_extracting(latest.text):
        return {}
    context = runtime.context or Context()
    user_id = run_user_id(runtime)
    store = require_store(runtime.store)
    thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
    try:
        facts = await asyncio.wait_for(
            extract_facts(store, user_id, latest.text, context=context),
            timeout=context.extraction_timeout_s,
        )
    except Exception:
        logger.exception("Fact extraction failed for this turn; nothing was stored")
        return {}
    try:
        await store_new_facts(store, user_id, facts, thread_id=thread_id, message_id=latest.id)
    except Exception:
        logger.exception("Storing extracted facts failed; the reply stands")
    return {}


async def store_new_facts(
    store: BaseStore,
    user_id: str,
    facts: list[ExtractedFact],
    *,
    thread_id: str | None,
    message_id: str | None,
) -> None:
    """Save each fact that is not stored yet, with where it was learned."""
    seen: set[str] = set()
    for fact in facts:
        normalized = memory.normalize_fact(fact.content)
        if normalized in seen or await memory.find_duplicate(store, user_id, fact.content):
            continue
        seen.add(normalized)
        await memory.save_memory(
            store,
            user_id,
            fact.content,
            category=fact.category if fact.category in CATEGORIES else "other",
            confidence=fact.confidence,
            thread_id=thread_id,
            message_id=message_id,
        )


async def extract_facts(
    store: BaseStore, user_id: str, text: str, *, context: Context
) -> list[ExtractedFact]:
    """Ask the model for durable facts in ``text``, keeping those above the confidence floor."""
    known = await memory.recall(store, user_id, text[:2000], limit=KNOWN_FACTS_SHOWN)
    prompt = prompts.EXTRACTION_PROMPT.format(
        categories=", ".join(CATEGORIES),
        known_facts="\n".join(f"- {item.value.get('content', '')}" for item in known) or "(none)",
        message=truncate_text(text, MAX_EXTRACTION_TOKENS),
    )
    extractor = models.get_chat_model(context.model).with_structured_output(
        ExtractedFacts, method="function_calling"
    )
    result = await extractor.ainvoke(
        [HumanMessage(content=prompt)], {"run_name": "extract_facts", "tags": [TAG_NOSTREAM]}
    )
    if not isinstance(result, ExtractedFacts):
        raise TypeError(f"Extractor returned {type(result).__name__}, expected ExtractedFacts")
    return [
        fact
        for fact in result.facts
        if fact.content.strip()
        and len(fact.content) <= memory.MAX_FACT_CHARS
        and fact.confidence >= context.min_fact_confidence
    ]
