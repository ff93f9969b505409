"""What a stored memory looks like, for every module that writes or reads one.

>>> is_current({"content": "Lives in Lyon", "status": "superseded"})
False
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from langgraph.store.base import BaseStore

__all__ = ["FORGOTTEN", "Owner", "episode_record", "is_current", "now_iso"]

FORGOTTEN = "[forgotten]"
"""What stands where the words of a forgotten fact were: in the audit trail, in what memory
heard, and in an episode summary that quoted it (see `assistant.memory.UserMemory.forget`)."""


class Owner(Protocol):
    """Whose records a change touches: a store and a user (`assistant.memory.writer.Writer`).

    The erasers of a forget that write no fact take one, so every eraser has the one
    signature ``(writer, keys, texts) -> int`` (see `assistant.memory.user_actions`).
    """

    @property
    def store(self) -> BaseStore:
        """The store the records are in."""
        ...

    @property
    def user_id(self) -> str:
        """The user whose records they are."""
        ...


def now_iso() -> str:
    """The current UTC time as an ISO 8601 string, as stored on facts (and every record)."""
    return datetime.now(UTC).isoformat()


def is_current(value: dict[str, Any]) -> bool:
    """Whether a stored fact is current (not superseded)."""
    return bool(value.get("status", "current") != "superseded")


def episode_record(
    *, summary: str, thread_id: str, started_at: str, ended_at: str, updated_at: str
) -> dict[str, Any]:
    """The stored value of a thread's episode: its summary and the time span it covers.

    Written by `compress` (through `assistant.memory.UserMemory.save_episode`) and by the
    retention job for idle threads; ``content`` is what recall embeds and searches.
    """
    return {
        "content": summary.strip(),
        "thread_id": thread_id,
        "started_at": started_at,
        "ended_at": ended_at,
        "updated_at": updated_at,
    }
