"""What the summariser is shown: the profile memory already keeps, so it need not repeat it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph.store.memory import InMemoryStore

from assistant.memory import save_memory
from assistant.run.context import Context
from helpers import between

if TYPE_CHECKING:  # fixtures come from tests/conftest.py; import only their types
    from conftest import Chat, PatchModel

SMALL = Context(max_context_tokens=200, keep_recent_tokens=100, summary_max_tokens=60)


def reply(messages: list) -> str:  # type: ignore[type-arg]
    first = messages[0].text
    if "<existing_summary>" in first:
        return "Summary: the user asked about topics."
    return "A reply of some forty characters or so, x" * 2


async def test_the_summariser_sees_the_profile_it_need_not_repeat(
    patch_model: PatchModel, chat: Chat, store: InMemoryStore
) -> None:
    await save_memory(store, "default-user", "Name is Alice", category="identity", pinned=True)
    model = patch_model([reply] * 20)
    for turn in range(1, 7):
        await chat(f"Topic {turn}: tell me something about rivers, lakes and seas?", context=SMALL)
    [first, *_] = model.prompts("compress")
    assert between(first, "remembered") == "- Name is Alice"
    assert between(first, "existing_summary") == "(none yet)"


async def test_with_no_profile_the_summariser_is_told_so(
    patch_model: PatchModel, chat: Chat
) -> None:
    model = patch_model([reply] * 20)
    for turn in range(1, 7):
        await chat(f"Topic {turn}: tell me something about rivers, lakes and seas?", context=SMALL)
    assert between(model.prompts("compress")[0], "remembered") == "(none)"
