"""The store layer: namespaces, the life of a fact, hybrid recall, the profile and episodes.

Nodes, tools, routes, tests and benchmarks all go through this package, so there is one
place that decides where a user's memories live and what a stored memory looks like. One
user's memory is a `UserMemory`: every change to it goes through one write path that keeps
the recall index, the audit trail and the turn record with it. Four thin functions serve
code that needs no more: `make_store`, `open_store`, `save_memory` and `recall`.

>>> user_facts_namespace("alice")
('user_facts', 'alice')
"""

from __future__ import annotations

from assistant.memory.audit import API_VIA, list_audit
from assistant.memory.consolidate import (
    CATEGORIES,
    ConsolidationReport,
    MemoryOperation,
    MemoryOperations,
)
from assistant.memory.episodes import list_episodes, recall_episodes
from assistant.memory.facts import MAX_FACT_CHARS, get_memory, list_memories, normalize_fact
from assistant.memory.heard import OUTCOMES, list_heard
from assistant.memory.held import held_messages
from assistant.memory.index import WEIGHTS, FusionWeights
from assistant.memory.namespaces import (
    AUDIT_NAMESPACE,
    EPISODES_NAMESPACE,
    FACTS_NAMESPACE,
    HEARD_NAMESPACE,
    HELD_NAMESPACE,
    TURNS_NAMESPACE,
    InvalidUserIdError,
    is_users_own_namespace,
    user_audit_namespace,
    user_episodes_namespace,
    user_facts_namespace,
    user_heard_namespace,
    user_held_namespace,
    user_turns_namespace,
    validate_user_id,
)
from assistant.memory.records import FORGOTTEN
from assistant.memory.search import find_duplicate, profile, recall, warm_user_index
from assistant.memory.stores import make_store, open_store
from assistant.memory.user_actions import Forgotten, resume_forgets
from assistant.memory.user_memory import UserMemory, save_memory

__all__ = [
    "API_VIA",
    "AUDIT_NAMESPACE",
    "CATEGORIES",
    "ConsolidationReport",
    "EPISODES_NAMESPACE",
    "FACTS_NAMESPACE",
    "FORGOTTEN",
    "Forgotten",
    "HEARD_NAMESPACE",
    "HELD_NAMESPACE",
    "MAX_FACT_CHARS",
    "WEIGHTS",
    "FusionWeights",
    "InvalidUserIdError",
    "TURNS_NAMESPACE",
    "MemoryOperation",
    "MemoryOperations",
    "OUTCOMES",
    "UserMemory",
    "find_duplicate",
    "get_memory",
    "held_messages",
    "is_users_own_namespace",
    "list_audit",
    "list_episodes",
    "list_heard",
    "list_memories",
    "make_store",
    "normalize_fact",
    "open_store",
    "profile",
    "recall",
    "resume_forgets",
    "recall_episodes",
    "save_memory",
    "user_audit_namespace",
    "user_episodes_namespace",
    "user_facts_namespace",
    "user_heard_namespace",
    "user_held_namespace",
    "user_turns_namespace",
    "validate_user_id",
    "warm_user_index",
]
