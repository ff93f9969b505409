"""Each thread's timer that extracts its held messages later, in the server process.

`assistant.extraction.extract` starts a thread's timer when it holds a message and cancels it when
the thread's held messages are extracted sooner. A timer that fires runs the release as a
task of its own, kept until it ends; a failure is logged, never raised.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["cancel", "start"]

logger = logging.getLogger(__name__)

Key = tuple[str, str]
"""A thread's timer is kept by (user, thread)."""

_TIMERS: dict[Key, asyncio.TimerHandle] = {}
"""Each thread's pending release of its held messages."""

_RELEASES: set[asyncio.Task[Any]] = set()
"""Releases running now (kept so that they are not garbage-collected mid-way)."""


def start(key: Key, delay: float, release: Callable[[], Awaitable[object]]) -> None:
    """Run ``release()`` in ``delay`` seconds, replacing the thread's pending timer."""
    cancel(*key)
    loop = asyncio.get_running_loop()

    def fire() -> None:
        _TIMERS.pop(key, None)
        task = loop.create_task(_quietly(release))
        _RELEASES.add(task)
        task.add_done_callback(_RELEASES.discard)

    _TIMERS[key] = loop.call_later(delay, fire)


def cancel(user_id: str, thread_id: str) -> None:
    """Cancel the thread's pending timer, if any."""
    timer = _TIMERS.pop((user_id, thread_id), None)
    if timer is not None:
        timer.cancel()


async def _quietly(release: Callable[[], Awaitable[object]]) -> None:
    try:
        await release()
    except Exception:
        logger.exception("Extracting held messages failed")
