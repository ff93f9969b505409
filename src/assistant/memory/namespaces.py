"""Where a user's memories live, and which user ids are acceptable."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

__all__ = [
    "AUDIT_NAMESPACE",
    "EPISODES_NAMESPACE",
    "FACTS_NAMESPACE",
    "FORGETS_NAMESPACE",
    "HEARD_NAMESPACE",
    "HELD_NAMESPACE",
    "REVISION_NAMESPACE",
    "TURNS_NAMESPACE",
    "USER_API_NAMESPACES",
    "VECTOR_NAMESPACE",
    "every_item",
    "index_revision_location",
    "is_users_own_namespace",
    "vector_namespace",
    "user_audit_namespace",
    "InvalidUserIdError",
    "user_episodes_namespace",
    "user_facts_namespace",
    "user_forgets_namespace",
    "user_heard_namespace",
    "user_held_namespace",
    "user_turns_namespace",
    "validate_user_id",
]

FACTS_NAMESPACE = "user_facts"
"""First label of every namespace that holds a user's facts."""

EPISODES_NAMESPACE = "user_episodes"
"""First label of every namespace that holds a user's conversation episodes."""

AUDIT_NAMESPACE = "user_audit"
"""First label of every namespace that holds a user's audit trail."""

USER_API_NAMESPACES = frozenset({FACTS_NAMESPACE, EPISODES_NAMESPACE})
"""The namespaces a user may reach through the server's HTTP store API, each followed by
their own id. The audit trail and the bookkeeping below are written only by the graph and
the memory routes."""

TURNS_NAMESPACE = "memory_turns"
"""First label of every namespace that holds a user's unsettled turns (see `memory.turns`)."""

HEARD_NAMESPACE = "memory_heard"
"""First label of every namespace that holds what memory made of a user's last messages."""

HELD_NAMESPACE = "memory_held"
"""First label of every namespace that holds a user's messages waiting for a batched
extraction (see `memory.held`)."""

FORGETS_NAMESPACE = "memory_forgets"
"""First label of every namespace that holds a user's forgets under way: what each is to
erase, written before it starts and deleted when it is done (see `memory.user_actions`)."""

REVISION_NAMESPACE = "memory_index"
"""First label of the namespace that keeps each memory namespace's revision token."""

VECTOR_NAMESPACE = "memory_vectors"
"""First label of the namespace that keeps each fact's vector, next to the fact's own."""

USER_ID_PUNCTUATION = "-_@+:|=~"
"""The only characters besides letters, digits and combining marks (any script) that a user
id may hold. None is special to a store: not ``*`` (a namespace wildcard in
``list_namespaces``), not ``%`` or ``.`` (a LIKE wildcard, the label separator), no
whitespace, slashes, quotes or control characters. ``_`` is a LIKE wildcard too, but both
stores match it literally (the Postgres store escapes it)."""

_USER_ID_LENGTH = 128


class InvalidUserIdError(ValueError):
    """A user id that cannot name a store namespace."""


def validate_user_id(user_id: object) -> str:
    """Return ``user_id`` if it can be a namespace label, else raise :class:`InvalidUserIdError`.

    >>> validate_user_id("alice")
    'alice'
    >>> validate_user_id("a.b")
    Traceback (most recent call last):
    ...
    assistant.memory.namespaces.InvalidUserIdError: Invalid user_id='a.b': ...
    """
    if not isinstance(user_id, str):
        raise InvalidUserIdError(f"Invalid user_id={user_id!r}: expected a string.")
    allowed = all(
        char in USER_ID_PUNCTUATION or unicodedata.category(char)[0] in "LNM" for char in user_id
    )
    if not 1 <= len(user_id) <= _USER_ID_LENGTH or not allowed or user_id.startswith("langgraph"):
        raise InvalidUserIdError(
            f"Invalid user_id={user_id!r}: use 1-{_USER_ID_LENGTH} letters, digits or "
            f"{' '.join(USER_ID_PUNCTUATION)}, not starting with 'langgraph'."
        )
    return user_id


def user_facts_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s facts.

    >>> user_facts_namespace("alice")
    ('user_facts', 'alice')
    """
    return (FACTS_NAMESPACE, validate_user_id(user_id))


def user_episodes_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s conversation episodes.

    >>> user_episodes_namespace("alice")
    ('user_episodes', 'alice')
    """
    return (EPISODES_NAMESPACE, validate_user_id(user_id))


def user_turns_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds what each of ``user_id``'s threads last changed in memory.

    >>> user_turns_namespace("alice")
    ('memory_turns', 'alice')
    """
    return (TURNS_NAMESPACE, validate_user_id(user_id))


def user_heard_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds what memory made of ``user_id``'s last messages.

    >>> user_heard_namespace("alice")
    ('memory_heard', 'alice')
    """
    return (HEARD_NAMESPACE, validate_user_id(user_id))


def user_held_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s messages waiting for a batched extraction.

    >>> user_held_namespace("alice")
    ('memory_held', 'alice')
    """
    return (HELD_NAMESPACE, validate_user_id(user_id))


def user_forgets_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s forgets under way.

    >>> user_forgets_namespace("alice")
    ('memory_forgets', 'alice')
    """
    return (FORGETS_NAMESPACE, validate_user_id(user_id))


def user_audit_namespace(user_id: str) -> tuple[str, str]:
    """The namespace that holds ``user_id``'s audit trail.

    >>> user_audit_namespace("alice")
    ('user_audit', 'alice')
    """
    return (AUDIT_NAMESPACE, validate_user_id(user_id))


def is_users_own_namespace(namespace: tuple[str, ...], user_id: str) -> bool:
    """Whether a caller signed in as ``user_id`` may use ``namespace`` over the store API.

    Exactly ``("user_facts", user_id)`` or ``("user_episodes", user_id)``: not a prefix, not
    a deeper namespace, not anyone else's.

    >>> is_users_own_namespace(("user_facts", "alice"), "alice")
    True
    >>> [is_users_own_namespace(ns, "alice") for ns in
    ...  [("user_facts",), ("user_facts", "bob"), ("user_facts", "alice", "x"),
    ...   ("user_audit", "alice")]]
    [False, False, False, False]
    """
    return len(namespace) == 2 and namespace[0] in USER_API_NAMESPACES and namespace[1] == user_id


def index_revision_location(namespace: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """Where the revision token of ``namespace`` is kept: ``(namespace, key)``.

    Every writer bumps it, so each server's in-process recall index sees writes made by
    another process (another server, the retention job).

    >>> index_revision_location(("user_episodes", "alice"))
    (('memory_index', 'alice'), 'user_episodes')
    """
    return (REVISION_NAMESPACE, *namespace[1:]), namespace[0]


def vector_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The namespace that keeps the vectors of the items in ``namespace``.

    >>> vector_namespace(("user_facts", "alice"))
    ('memory_vectors', 'user_facts', 'alice')
    """
    return (VECTOR_NAMESPACE, *namespace)


PAGE = 1000
"""How many items :func:`every_item` reads at a time."""


async def every_item(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    """Every item of ``namespace``, read a page at a time: no cap.

    What erases a forgotten fact's words must read all there is, not the latest few
    hundred. Read everything first, then change it: a change can move an item between
    pages.
    """
    items: list[Item] = []
    while page := await store.asearch(namespace, limit=PAGE, offset=len(items)):
        items += page
        if len(page) < PAGE:
            break
    return items
