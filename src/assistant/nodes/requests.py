"""Forget and correct by chat, for a model that cannot call the memory tools well.

A small model offered `assistant.nodes.tools` often answers "forget that I play the
cello" in words without calling anything, or calls `search_memory` and never follows
with `forget_memory`. Such a model (`ProviderProfile.tools_on_request`) is asked instead,
on a turn whose message speaks of memory, one structured question: which of the
numbered facts closest to the message does it ask to forget, or say is wrong? The answer
is carried out exactly as the tools would (same writes, same audit trail), and the reply
is told what was done, so it can say so. A model that still has the tools but answers a
request to forget in words (`assistant.nodes.tools.asks_to_forget`) gets the same question
after its reply. A structured answer is what such models give
most reliably (`assistant.inference.providers.ainvoke_structured`): the same call shape
as extraction.
"""

from __future__ import annotations

import logging
from typing import Literal

from langchain_core.messages import HumanMessage
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, Field

from assistant.extraction.extract import known_facts, numbered
from assistant.inference import models, providers
from assistant.memory import CHAT_VIA
from assistant.memory.records import is_current
from assistant.memory.wording import names_a_word_of
from assistant.nodes.tools import asks_to_forget_everything
from assistant.run import prompts
from assistant.run.history import truncate_text
from assistant.run.prompting import as_data
from assistant.run.scope import RunScope

__all__ = ["MemoryRequest", "Outcome", "carry_out"]

logger = logging.getLogger(__name__)

MAX_REQUEST_TOKENS = 500
"""Only this much of a long message (its start and end) is read for the request."""


class MemoryRequest(BaseModel):
    """What the user's latest message asks of the assistant's memory."""

    action: Literal["forget", "correct", "none"] = Field(
        description="forget: the user asks to forget or delete the known facts `facts`; "
        "correct: the user says known fact `facts[0]` is wrong and gives the right one; "
        "none: anything else."
    )
    facts: list[int] = Field(
        default_factory=list, description="Numbers of the known facts the request is about."
    )
    corrected: str = Field(
        default="",
        description="For correct: the whole fact as it should now read, one short sentence "
        "in the user's language.",
    )


class Outcome(BaseModel):
    """What `carry_out` changed."""

    done: list[str] = Field(default_factory=list)
    """One line a change, for the reply's system prompt."""
    said: list[str] = Field(default_factory=list)
    """The same changes told to the user, for a reply that will not tell them."""
    gone: list[str] = Field(default_factory=list)
    """Keys of the facts no longer current (forgotten or corrected)."""


FORGOT_EVERYTHING = "- Forgot everything remembered about the user: {count} facts."
"""Told to the reply after a request to forget everything (`asks_to_forget_everything`)."""

FORGOT_PART = (
    "- Forgot {count} facts about the user, then memory failed: the rest is still remembered; "
    "ask them to ask again."
)

NOTHING_TO_FORGET = "- Nothing to forget: nothing is remembered about the user."

NOTHING_MATCHED = "- Nothing forgotten: no remembered fact is about what they asked to forget."
"""Told to the reply when the model chose facts the message says nothing about."""


async def carry_out(scope: RunScope, model_name: str, text: str) -> Outcome:
    """Ask what ``text`` wants forgotten or corrected among the closest facts; do it.

    Never fails the turn: a model or store failure is logged and nothing is changed.
    """
    try:
        if asks_to_forget_everything(text):
            return await _forget_everything(scope)
        known = await known_facts(scope.memory, text)
        if not known:
            return Outcome()
        prompt = prompts.MEMORY_REQUEST_PROMPT.format(
            known_facts=numbered(known), message=as_data(truncate_text(text, MAX_REQUEST_TOKENS))
        )
        request = await providers.ainvoke_structured(
            models.get_chat_model(model_name),
            MemoryRequest,
            [HumanMessage(content=prompt)],
            {"run_name": "memory_request", "tags": [TAG_NOSTREAM]},
        )
        chosen = [known[n - 1] for n in dict.fromkeys(request.facts) if 1 <= n <= len(known)]
        outcome = Outcome()
        if request.action == "forget":
            named = [i for i in chosen if names_a_word_of(text, str(i.value.get("content", "")))]
            if chosen and not named:
                logger.warning("A forget request chose facts the message does not name; kept")
                outcome.done.append(NOTHING_MATCHED)
                outcome.said.append("Nothing I remember is about what you asked me to forget.")
            for item in named:
                forgotten = await scope.memory.forget(
                    item.key, actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
                )
                if forgotten is not None:
                    outcome.done.append(f"- Forgot: {forgotten.content}")
                    outcome.said.append(f"I forgot: {forgotten.content}")
                    outcome.gone.append(item.key)
        elif request.action == "correct" and chosen and request.corrected.strip():
            item = chosen[0]
            await scope.memory.correct(
                item.key,
                request.corrected,
                actor=scope.user_id,
                via=CHAT_VIA,
                thread_id=scope.thread_id,
            )
            before = str(item.value.get("content", ""))
            outcome.done.append(f"- Corrected: {before} → {request.corrected.strip()}")
            outcome.said.append(f"I corrected: {before} → {request.corrected.strip()}")
            outcome.gone.append(item.key)
        return outcome
    except Exception:
        logger.exception("Could not carry out a memory request by chat; nothing was changed")
        return Outcome()


async def _forget_everything(scope: RunScope) -> Outcome:
    """Forget every fact of the user, current and superseded, each with its words everywhere.

    Asked for in so many words (`asks_to_forget_everything`), so no model chooses what goes.
    What still waits for an extraction is dropped by `assistant.nodes.remember`, which runs
    beside this turn's reply. A failure part way is told as such: what was forgotten stays
    forgotten, and the user is asked to ask again for the rest.
    """
    outcome = Outcome()
    forgotten, stopped = 0, False
    try:
        for item in await scope.memory.facts(include_superseded=True):
            gone = await scope.memory.forget(
                item.key, actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
            )
            if gone is not None:
                outcome.gone.append(item.key)
                forgotten += is_current(item.value)
    except Exception:
        logger.exception("Forgetting everything stopped part way; what went stays forgotten")
        stopped = True
    facts = f"{forgotten} fact" + ("" if forgotten == 1 else "s")
    if stopped:
        outcome.done.append(FORGOT_PART.format(count=forgotten))
        outcome.said.append(f"I forgot {facts} about you, then could not go on: ask me again.")
    elif outcome.gone:
        outcome.done.append(FORGOT_EVERYTHING.format(count=forgotten))
        outcome.said.append(f"I forgot everything I remembered about you ({facts}).")
    else:
        outcome.done.append(NOTHING_TO_FORGET)
        outcome.said.append("I remember nothing about you, so there was nothing to forget.")
    return outcome
