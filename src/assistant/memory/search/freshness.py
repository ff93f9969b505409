"""Whether a user's search index may be searched as it is: a small state machine.

An index is in one of the five states of :class:`State`. Before each search,
:meth:`Freshness.step` says what to do first (a :class:`Step`), from the state, the
store's revision token and the clock; the index's keeper (:mod:`assistant.memory.search.sync`)
does it and records the outcome with the transition methods. Nothing here reads the
store.

>>> fresh = Freshness()
>>> fresh.step(token=None, now=0.0)
<Step.LIST: 'list'>
>>> fresh.listed_now(revision="r1", now=0.0)
>>> fresh.state, fresh.step(token="r1", now=PROBE_INTERVAL_S), fresh.step(token="r2", now=0.1)
(<State.READY: 'ready'>, <Step.PROBE: 'probe'>, <Step.LIST: 'list'>)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from assistant.compat import Removals

__all__ = ["MAX_AGE_S", "PROBE_INTERVAL_S", "Freshness", "State", "Step"]

PROBE_INTERVAL_S = 0.5
"""A user's index probes at most this often, so the several searches of one turn (the
profile, recall, the extraction's recall) share one probe; the next turn probes again.
The store's revision token is read at most this often too."""

MAX_AGE_S = 60.0
"""An index older than this is refreshed in the background, to pick up raw store writes."""


class State(Enum):
    """Where a user's index stands against the store."""

    EMPTY = "empty"
    """Never listed."""
    BUILDING = "building"
    """A first listing is embedded in the background: searches use the store meanwhile."""
    READY = "ready"
    """Listed; in step with the store as of :attr:`Freshness.revision`."""
    REFRESHING = "refreshing"
    """Listed, and being listed again in the background: searches use it as it is."""
    STALE = "stale"
    """Listed, but another writer wrote since: to be listed again before a search."""


class Step(Enum):
    """What a search does before it uses the index."""

    SERVE = "serve"
    """Search it: it is in step."""
    PROBE = "probe"
    """Read the newest facts for writes made around the index, then search it."""
    LIST = "list"
    """List the user's facts again, then search it."""
    WAIT = "wait"
    """A background listing runs: search the index as it is, or the store if it has none."""


@dataclass
class Freshness:
    """One user's index against the store: its state and when it was last brought in step."""

    state: State = State.EMPTY
    revision: str | None = None
    """The store's revision token when the index was last known in step (None: unknown)."""
    listed: int = 0
    """Items (current and superseded) the namespace held at the last listing or probe."""
    listed_at: float = 0.0
    """When the user's facts were last listed in full (``time.monotonic()``)."""
    probed_at: float = 0.0
    """When writes made around the index were last looked for (a listing or a probe)."""
    checked_at: float = 0.0
    """When the store's revision token last matched the index's."""
    removals: Removals | None = None
    """The store's count of this namespace's removed facts (`assistant.compat.removals`)
    that the index is known to lack every one of; None: not known, so a search re-reads its
    hits. Set by :mod:`~assistant.memory.search.sync` after it has dropped them."""
    values_from: int = 0
    """How many times the index took values read from the store (a listing, a probe that
    found changes): a removal counted after such a read may have come back with it."""

    @property
    def searchable(self) -> bool:
        """Whether the index holds a listing (possibly out of date) to search."""
        return self.state in (State.READY, State.REFRESHING, State.STALE)

    def trusted(self, now: float) -> bool:
        """Whether a search may skip reading the revision token: it matched just now."""
        return (
            self.state is State.READY
            and self.revision is not None
            and now - self.checked_at < PROBE_INTERVAL_S
        )

    def step(self, *, token: str | None, now: float) -> Step:
        """What a search does first, given the store's revision ``token``."""
        in_step = self.revision == token
        if self.state is State.READY and in_step:
            return Step.PROBE if now - self.probed_at >= PROBE_INTERVAL_S else Step.SERVE
        if self.state is State.REFRESHING:
            return Step.SERVE if in_step else Step.WAIT
        if self.state is State.BUILDING:
            return Step.WAIT
        return Step.LIST  # empty, stale, or another writer wrote

    def refresh_due(self, now: float) -> bool:
        """Whether the last full listing is old enough to list again in the background."""
        return self.state is State.READY and now - self.listed_at > MAX_AGE_S

    def listed_now(self, *, revision: str | None, now: float) -> None:
        """The index now holds every current fact, as of the store's ``revision``."""
        self.state = State.READY
        self.revision = revision
        self.listed_at = self.probed_at = now
        self.values_read()

    def values_read(self) -> None:
        """The index took values read from the store: the removals since are not known."""
        self.removals = None
        self.values_from += 1

    def checked(self, now: float) -> None:
        """The store's revision token matched the index's at ``now``."""
        self.checked_at = now

    def build_started(self) -> None:
        """A listing runs in the background."""
        self.state = State.REFRESHING if self.searchable else State.BUILDING

    def build_failed(self) -> None:
        """The background listing stopped before it was done: list again on demand."""
        self.state = State.STALE if self.state is State.REFRESHING else State.EMPTY

    def written(self, *, before: str | None, after: str) -> bool:
        """This process wrote and moved the token from ``before`` to ``after``.

        Returns whether the index may take the write in place: it was in step, so no
        other writer came between. Otherwise it is stale (or, while it is being listed,
        the listing will be).
        """
        if self.state in (State.READY, State.REFRESHING) and self.revision == before:
            self.revision = after
            return True
        self.revision = None
        if self.state is State.READY:
            self.state = State.STALE
        return False
