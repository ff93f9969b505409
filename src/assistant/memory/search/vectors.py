"""Each fact's embeddings, kept in the store next to it, so no process embeds them twice.

A fact is embedded as its text and, when it has a ``context`` (the turn before it), as
that turn and its text together (:func:`embedded_texts`). Its vectors live in
``("memory_vectors", *namespace)`` under the fact's key, with the hash of the texts they
embed and the embedder that made them: a fresh server process, or another replica,
recalling over 1,000 facts embeds the query and nothing else, and a vector of an edited
text or of another embedder is never reused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from assistant.compat import base_store
from assistant.memory.namespaces import vector_namespace

__all__ = [
    "LIST_PAGE",
    "WINDOW_CONTEXT_CHARS",
    "Vector",
    "drop_vectors",
    "embedded_texts",
    "embedding_dims",
    "fixed_vectors",
    "save_vectors",
    "store_embeddings",
    "stored_vectors",
]

LIST_PAGE = 50_000
"""Page size when listing a namespace from the store (InMemoryStore re-scans the whole
namespace for every page, so pages are large)."""

GET_BY_KEY = 16
"""Up to this many kept vectors are read by key; more are read by listing them all."""

Vector = np.ndarray[Any, np.dtype[np.float32]]
"""A fact's embeddings as kept: one row per text of :func:`embedded_texts`."""

WINDOW_CONTEXT_CHARS = 400
"""The most of a fact's ``context`` embedded with it (its end, where the question the
fact answers is), so the fact's own words stay inside the embedder's 512 tokens."""


def embedded_texts(value: Mapping[str, Any]) -> list[str]:
    r"""What a stored fact is embedded as: its content, then its context and content.

    >>> embedded_texts({"content": "Biscuit."})
    ['Biscuit.']
    >>> embedded_texts({"content": "Biscuit.", "context": "What did you name the puppy?"})
    ['Biscuit.', 'What did you name the puppy?\nBiscuit.']
    """
    content = str(value.get("content", ""))
    context = value.get("context")
    if isinstance(context, str) and context.strip():
        return [content, f"{context.strip()[-WINDOW_CONTEXT_CHARS:]}\n{content}"]
    return [content]


def store_embeddings(store: BaseStore) -> Embeddings:
    """The embeddings the store indexes with, so recall and the store agree."""
    embeddings = getattr(base_store(store), "embeddings", None)
    if isinstance(embeddings, Embeddings):
        return embeddings
    from assistant.inference.models import get_embeddings

    return get_embeddings()


V = TypeVar("V")


class PerEmbedder(Generic[V]):
    """A value kept for each embedder object while it lives, found by identity.

    Not a `weakref.WeakKeyDictionary`: a served model's `OpenAIEmbeddings` is a pydantic
    model, which cannot be hashed, so a dictionary keyed by it failed every write.
    """

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[Embeddings], V]] = {}

    def get(self, embeddings: Embeddings) -> V | None:
        held = self._held.get(id(embeddings))
        return held[1] if held is not None and held[0]() is embeddings else None

    def set(self, embeddings: Embeddings, value: V) -> V:
        key = id(embeddings)

        def gone(ref: weakref.ref[Embeddings]) -> None:
            if (held := self._held.get(key)) is not None and held[0] is ref:
                del self._held[key]

        self._held[key] = (weakref.ref(embeddings, gone), value)
        return value


_DIMS: PerEmbedder[int] = PerEmbedder()


async def embedding_dims(embeddings: Embeddings) -> int:
    """How many dimensions ``embeddings`` gives (asked once per embedder).

    An embedder that says (the bundled e5's ``dimensions``, a served model's when set) is
    not asked: the bundled one caches by user, so every user's first write embedded the
    probe again on a cold server.
    """
    dims = _DIMS.get(embeddings)
    if dims is None:
        declared = getattr(embeddings, "dimensions", None)
        if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
            dims = declared
        else:
            dims = len(await embeddings.aembed_query("dimension probe"))
        _DIMS.set(embeddings, dims)
    return dims


_FIXED: PerEmbedder[dict[tuple[str, ...], asyncio.Task[Vector]]] = PerEmbedder()


async def fixed_vectors(embeddings: Embeddings, texts: tuple[str, ...]) -> Vector:
    """The unit vectors, by row, of constant ``texts`` embedded as passages: once per embedder.

    Callers that ask at once share one embedding: a cold server's first turns all ask for
    the same texts together (50 users' first turns embedded the 12 topic descriptions 34
    times over). A caller that gives up leaves the embedding to the others; one that failed
    is tried again by the next caller.
    """
    held = _FIXED.get(embeddings)
    if held is None:
        held = _FIXED.set(embeddings, {})
    loop = asyncio.get_running_loop()
    task = held.get(texts)
    if task is None or task.get_loop() is not loop or _failed(task):
        task = held[texts] = loop.create_task(_unit_rows(embeddings, texts))
        task.add_done_callback(_failed)  # retrieved, so a failure nobody awaited is not logged
    return await asyncio.shield(task)


async def _unit_rows(embeddings: Embeddings, texts: tuple[str, ...]) -> Vector:
    rows = np.asarray(await embeddings.aembed_documents(list(texts)), dtype=np.float32)
    unit: Vector = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
    return unit


def _failed(task: asyncio.Task[Vector]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


def _text_hash(texts: Sequence[str]) -> str:
    """One text hashes as itself (so vectors kept before windows are still read)."""
    return hashlib.sha256("\x1f".join(texts).encode("utf-8")).hexdigest()[:32]


def _embedder_id(embeddings: Embeddings) -> str:
    """Which embedder made a stored vector: vectors of another one are never reused."""
    kind = type(embeddings)
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None) or ""
    return f"{kind.__module__}.{kind.__qualname__}/{model}"


async def save_vectors(
    store: BaseStore,
    namespace: tuple[str, ...],
    vectors: Mapping[str, tuple[Sequence[str], Sequence[Sequence[float]] | Vector]],
    embeddings: Embeddings,
) -> None:
    """Store ``{key: (texts, their vectors)}`` next to the facts (not indexed themselves)."""
    embedder = _embedder_id(embeddings)
    await store.abatch(
        [
            PutOp(
                vector_namespace(namespace),
                key,
                {
                    "text_sha256": _text_hash(texts),
                    "embedder": embedder,
                    "vector": base64.b64encode(np.asarray(rows, dtype="<f4").tobytes()).decode(
                        "ascii"
                    ),
                },
                index=False,
            )
            for key, (texts, rows) in vectors.items()
        ]
    )


async def drop_vectors(store: BaseStore, namespace: tuple[str, ...], keys: Iterable[str]) -> None:
    """Delete the kept vectors of ``keys`` (facts deleted or superseded)."""
    vectors = vector_namespace(namespace)
    await store.abatch([PutOp(vectors, key, None) for key in keys])


async def _kept(store: BaseStore, namespace: tuple[str, ...], keys: list[str]) -> list[Item | None]:
    """The kept vector items of ``keys``, in order (None where there is none)."""
    vectors = vector_namespace(namespace)
    if len(keys) <= GET_BY_KEY:
        results = await store.abatch([GetOp(vectors, key) for key in keys])
        return [result if isinstance(result, Item) else None for result in results]
    listed: dict[str, Item] = {}
    offset = 0
    while True:
        page = await store.asearch(vectors, limit=LIST_PAGE, offset=offset)
        listed.update((found.key, found) for found in page)
        if len(page) < LIST_PAGE:
            break
        offset += LIST_PAGE
    return [listed.get(key) for key in keys]


def _decoded(kept: Item | None, texts: list[str], embedder: str) -> Vector | None:
    """The kept vectors, a row per text, if ``embedder`` made them from ``texts``."""
    if kept is None or kept.value.get("embedder") != embedder:
        return None
    if kept.value.get("text_sha256") != _text_hash(texts):
        return None
    try:
        flat = np.frombuffer(base64.b64decode(kept.value["vector"]), dtype="<f4")
    except (KeyError, TypeError, ValueError):
        return None
    if not flat.size or flat.size % len(texts):
        return None
    return flat.reshape(len(texts), -1)


async def stored_vectors(
    store: BaseStore, namespace: tuple[str, ...], items: list[Item], embeddings: Embeddings
) -> dict[str, Vector]:
    """The kept vectors of ``items`` whose texts and embedder still match, by key."""
    if not items:
        return {}
    kept = await _kept(store, namespace, [item.key for item in items])
    embedder = _embedder_id(embeddings)
    found: dict[str, Vector] = {}
    for item, stored in zip(items, kept, strict=True):
        vector = _decoded(stored, embedded_texts(item.value), embedder)
        if vector is not None:
            found[item.key] = vector
    return found
