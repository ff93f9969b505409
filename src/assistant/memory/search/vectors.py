"""Each fact's embeddings, kept in the store next to it, so no process embeds them twice.

A fact is embedded as its text and, when it has a ``context`` (the turn before it), as
that turn and its text together (:func:`embedded_texts`). Its vectors live in
``("memory_vectors", *namespace)`` under the fact's key, with the hash of the texts they
embed and the embedder that made them: a fresh server process, or another replica,
recalling over 1,000 facts embeds the query and nothing else, and a vector of an edited
text or of another embedder is never reused.
"""

from __future__ import annotations

import base64
import hashlib
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

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


_DIMS: weakref.WeakKeyDictionary[Embeddings, int] = weakref.WeakKeyDictionary()


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
        _DIMS[embeddings] = dims
    return dims


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
