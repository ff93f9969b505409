"""Who waits for the bundled embedder, and in what order: a lane per user, served in turn.

The bundled e5 model runs on a few copies, one per core, and its cost grows with the text:
about 0.17 s of a core for 150 tokens and 0.8 s for 500 (as `assistant.inference.tokens` counts
them: a Chinese, Japanese or Korean character is a token, and so are four other characters). A
user who sends the longest inputs the server accepts must not keep the copies from everyone
else, so `FairQueue` follows three rules:

* **A lane per user.** A text waits in the lane of the user it is embedded for, and the
  copies serve the lanes in turn: each model call takes from the lane served longest ago
  (a new one first). Ten texts queued by one user delay another user's text by the call
  under way, not by ten.
* **A copy for short work.** Long calls (more than ``long_tokens`` tokens) may occupy all
  copies but one, so a query or a fact finds a copy without waiting for a long text to
  finish. With a single copy there is nothing to keep free: a short text waits for the
  call under way.
* **Abandoned work is dropped.** A text whose every waiter gave up (its request was
  cancelled because the client left, or its run was cancelled) leaves its lane before a
  copy takes it (`FairQueue.drop`). A call already under way finishes.

Whose work an embedding is comes from a context variable: `embedding_user` sets it for a
block, `embed_as` for the rest of the current task. `assistant.run.scope` sets it whenever it
learns who a run, a tool call or a request acts for, and `assistant.server.auth` for the store API
and the prefetch of a run's query. Work nobody claimed, such as the store's own background
batches, shares the lane ``""``.

>>> queue = FairQueue()
>>> limits = Limits(copies=1, batch_size=16, batch_tokens=500, long_tokens=150)
>>> for user, text in [("alice", "a" * 1500), ("alice", "b" * 1500), ("bob", "where?")]:
...     queue.put(Job(key=(user, True, text)))
>>> served = []
>>> while batch := queue.take(limits):  # one copy: each call ends before the next
...     served.append(batch[0].key[0])
...     queue.finish(batch, limits)
>>> served
['alice', 'bob', 'alice']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from assistant.inference.tokens import count_text_tokens

__all__ = [
    "MAX_REMEMBERED_LANES",
    "UNCLAIMED",
    "FairQueue",
    "Job",
    "Key",
    "Limits",
    "current_embedding_user",
    "embed_as",
    "embedding_user",
]

UNCLAIMED = ""
"""The lane (and cache key) of work no user claimed: the store's own background batches."""

MAX_REMEMBERED_LANES = 10_000
"""Users whose last turn `FairQueue` remembers; past it, only those with work queued."""

Key = tuple[str, bool, str]
"""What one embedding is: (whose work, whether it is a search query, the text)."""

_USER: ContextVar[str] = ContextVar("assistant_embedding_user", default=UNCLAIMED)


def current_embedding_user() -> str:
    """Whose work an embedding started now is; `UNCLAIMED` when nobody said.

    >>> current_embedding_user()
    ''
    >>> with embedding_user("alice"):
    ...     current_embedding_user()
    'alice'
    """
    return _USER.get()


@contextmanager
def embedding_user(user_id: str) -> Iterator[None]:
    """Embeddings started inside the block are ``user_id``'s work (lane and cache key)."""
    token = _USER.set(user_id)
    try:
        yield
    finally:
        _USER.reset(token)


def embed_as(user_id: str) -> None:
    """Embeddings started from now on in the current task are ``user_id``'s work.

    For code that learns the user at the start of a task and acts for that user until the
    task ends (a node, a tool call, an HTTP request); each task has its own context, so
    the setting never reaches another request.
    """
    _USER.set(user_id)


@dataclass(eq=False, kw_only=True)
class Job:
    """One text to embed, and everyone waiting for its vector."""

    key: Key
    """Whose work, query or passage, and the text."""
    future: Future[list[float]] = field(default_factory=Future)
    """Settled with the vector, the model's error, or cancelled when the job is dropped."""
    waiters: int = 1
    """Callers waiting for it (a prefetch is not one); when the last gives up while it is
    queued, it is dropped."""

    @property
    def size(self) -> int:
        """What the text costs to embed, in tokens (`tokens.count_text_tokens`)."""
        return count_text_tokens(self.key[2])


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How much one model call may take."""

    copies: int
    """Model copies, each running one call at a time."""
    batch_size: int
    """Most texts in one call."""
    batch_tokens: int
    """Most tokens in one call (a single longer text goes alone)."""
    long_tokens: int
    """A call of more tokens than this is long: at most ``copies - 1`` run at once."""


class FairQueue:
    """Texts waiting for a model copy, in a lane per user (see the module).

    Not thread-safe by itself: the embedder calls it under its own lock, and every method
    returns at once.
    """

    def __init__(self) -> None:
        """An empty queue with no call under way."""
        self._lanes: dict[str, deque[Job]] = {}
        """Queued jobs by user."""
        self._served: dict[str, int] = {}
        """When each user's lane was last served (a count of calls); a lane never served, or
        forgotten, comes first."""
        self._calls = 0
        """Calls taken so far."""
        self._busy = 0
        """Calls under way."""
        self._long = 0
        """Long calls under way."""

    def __len__(self) -> int:
        """Jobs queued, in every lane."""
        return sum(len(lane) for lane in self._lanes.values())

    def put(self, job: Job) -> None:
        """Queue ``job`` at the end of its user's lane."""
        self._lanes.setdefault(job.key[0], deque()).append(job)

    def take(self, limits: Limits) -> list[Job]:
        """The next call's jobs, from the lane served longest ago that may run now.

        A lane's call takes its share of what the lane holds (spread over the copies not
        busy), at most ``batch_size`` texts and ``batch_tokens`` tokens; while
        ``copies - 1`` long calls run, only a short call may start. Empty when nothing may
        run now. Call `finish` with the jobs when the call is over.
        """
        free = max(1, limits.copies - self._busy)
        long_allowed = self._long < max(1, limits.copies - 1)
        for user in sorted(self._lanes, key=lambda user: self._served.get(user, -1)):
            lane = self._lanes[user]
            batch = self._batch(lane, limits, free=free, long_allowed=long_allowed)
            if not batch:
                continue
            for _ in batch:
                lane.popleft()
            if not lane:
                del self._lanes[user]
            self._served[user] = self._calls
            self._calls += 1
            if len(self._served) > MAX_REMEMBERED_LANES:
                self._served = {user: self._served[user] for user in self._lanes}
            self._busy += 1
            self._long += self._is_long(batch, limits)
            return batch
        return []

    def finish(self, batch: Sequence[Job], limits: Limits) -> None:
        """A call `take` gave is over (embedded or failed)."""
        self._busy -= 1
        self._long -= self._is_long(batch, limits)

    def drop(self, job: Job) -> bool:
        """Take ``job`` out of its lane; False when it is not queued (taken, or never put)."""
        lane = self._lanes.get(job.key[0])
        if lane is None or not any(queued is job for queued in lane):
            return False
        lane.remove(job)
        if not lane:
            del self._lanes[job.key[0]]
        return True

    @staticmethod
    def _batch(lane: deque[Job], limits: Limits, *, free: int, long_allowed: bool) -> list[Job]:
        share = min(limits.batch_size, -(-len(lane) // free))
        most = limits.batch_tokens if long_allowed else limits.long_tokens
        batch: list[Job] = []
        tokens = 0
        for job in lane:
            if len(batch) == share or (batch and tokens + job.size > most):
                break
            if not batch and not long_allowed and job.size > most:
                return []  # this lane's next text is long, and no long call may start
            batch.append(job)
            tokens += job.size
        return batch

    @staticmethod
    def _is_long(batch: Sequence[Job], limits: Limits) -> bool:
        return sum(job.size for job in batch) > limits.long_tokens
