"""The store layer: namespaces, the life of a fact, hybrid recall, the profile and episodes.

Nodes, tools, routes, tests and benchmarks all go through this package, so there is one
place that decides where a user's memories live and what a stored memory looks like. One
user's memory is a `UserMemory`: every change to it goes through one write path that keeps
the recall index, the audit trail and the turn record with it. Two thin functions serve
code that needs no more: `save_memory` and `recall`. Besides those, this face exports what
code outside the package uses: the namespaces auth checks, the ``via`` of each way in, the
shapes of a consolidation and of a stored episode, and the readers tests and benchmarks
call; the writers stay inside.

>>> user_facts_namespace("alice")
('user_facts', 'alice')
"""

from __future__ import annotations

from assistant.memory.audit import API_VIA, CHAT_VIA, MCP_VIA, list_audit
from assistant.memory.consolidate import (
    CATEGORIES,
    ConsolidationReport,
    MemoryOperation,
    MemoryOperations,
    is_hard_constraint,
)
from assistant.memory.episodes import list_episodes, recall_episodes
from assistant.memory.facts import MAX_FACT_CHARS, get_memory, list_memories, normalize_fact
from assistant.memory.heard import list_heard
from assistant.memory.held import held_messages
from assistant.memory.namespaces import (
    AUDIT_NAMESPACE,
    EPISODES_NAMESPACE,
    FACTS_NAMESPACE,
    InvalidUserIdError,
    is_users_own_namespace,
    user_audit_namespace,
    user_episodes_namespace,
    user_facts_namespace,
    user_turns_namespace,
    validate_user_id,
)
from assistant.memory.records import FORGOTTEN, episode_record
from assistant.memory.search.index import WEIGHTS, FusionWeights, store_embeddings
from assistant.memory.search.query import asks_when
from assistant.memory.search.temporal import named_days
from assistant.memory.search.topics import about_food
from assistant.memory.user_actions import resume_forgets
from assistant.memory.user_memory import UserMemory, recall, save_memory

__all__ = [
    "API_VIA",
    "AUDIT_NAMESPACE",
    "CHAT_VIA",
    "MCP_VIA",
    "CATEGORIES",
    "about_food",
    "asks_when",
    "is_hard_constraint",
    "ConsolidationReport",
    "EPISODES_NAMESPACE",
    "FACTS_NAMESPACE",
    "FORGOTTEN",
    "MAX_FACT_CHARS",
    "WEIGHTS",
    "FusionWeights",
    "InvalidUserIdError",
    "MemoryOperation",
    "MemoryOperations",
    "UserMemory",
    "episode_record",
    "get_memory",
    "held_messages",
    "is_users_own_namespace",
    "list_audit",
    "list_episodes",
    "list_heard",
    "list_memories",
    "named_days",
    "normalize_fact",
    "recall",
    "resume_forgets",
    "recall_episodes",
    "save_memory",
    "store_embeddings",
    "user_audit_namespace",
    "user_episodes_namespace",
    "user_facts_namespace",
    "user_turns_namespace",
    "validate_user_id",
]
