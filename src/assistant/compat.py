"""Work-arounds for bugs in the libraries we run on, each applied only while needed.

``InMemoryStore`` (which ``langgraph dev`` uses for the store) embeds each distinct text
once per batch but then expects one embedding per item, so a batch in which two items
share a text fails as a whole with "Number of embeddings (N) does not match number of
indices (M)" (langchain-ai/langgraph#8822). The dev server batches concurrent store
calls, so two users saying "I like hiking" at the same moment lost both facts and any
other operation in that batch. :func:`patch_inmemory_store` gives each text's embedding
to every item that has it, and does nothing once the installed langgraph is fixed.

``AsyncPostgresStore`` (langgraph-checkpoint-postgres 3.2.0) embeds search queries with
``aembed_documents``, the method for stored texts. With e5 models that gives a query the
``passage:`` prefix instead of ``query:``, which costs an extra model call per search (the
query's own embedding is cached under the other prefix) and weakens matching across
languages (``bench/recall_stores.py``: pgvector search found the right English fact for a
Chinese question 0.143 of the time, against 0.329 in memory). :func:`patch_postgres_store`
embeds them with ``aembed_query``, and does nothing once the library does.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from langgraph.store.memory import InMemoryStore

__all__ = ["patch_inmemory_store", "patch_postgres_store"]

_BUGGY_SIGNATURE = "for indices in to_embed.values() for index in indices"


def _insert_vectors(
    self: InMemoryStore,
    to_embed: dict[str, list[tuple[tuple[str, ...], str, str]]],
    embeddings: list[list[float]],
) -> None:
    if len(to_embed) != len(embeddings):
        raise ValueError(
            f"Number of embeddings ({len(embeddings)}) does not match number of texts "
            f"({len(to_embed)})"
        )
    vectors: Any = self._vectors
    for embedding, indices in zip(embeddings, to_embed.values(), strict=True):
        for namespace, key, path in indices:
            vectors[namespace][key][path] = embedding


def patch_inmemory_store() -> bool:
    """Fix ``InMemoryStore`` batches with repeated texts; returns whether a patch was needed."""
    return _replace_if(InMemoryStore, "_insertinmem_store", _insert_vectors, _BUGGY_SIGNATURE)


def _replace_if(owner: type, name: str, replacement: Any, signature: str) -> bool:
    """Replace ``owner.name`` by ``replacement`` if its source still contains ``signature``.

    Returns whether it was replaced: not when it already is, when a release fixed it (the
    signature is gone), or when the source cannot be read.
    """
    current = getattr(owner, name)
    if current is replacement:
        return False
    try:
        source = inspect.getsource(current)
    except (OSError, TypeError):
        return False
    if signature not in source:
        return False
    setattr(owner, name, replacement)
    return True


_POSTGRES_BUGGY_SIGNATURE = "vectors = await self.embeddings.aembed_documents("


async def _batch_search_ops(self: Any, search_ops: Any, results: Any, cur: Any) -> None:
    """``AsyncPostgresStore._batch_search_ops`` with queries embedded by ``aembed_query``."""
    from langgraph.store.postgres.base import (
        PLACEHOLDER,
        _decode_ns_bytes,
        _row_to_search_item,
    )

    queries, embedding_requests = self._prepare_batch_search_queries(search_ops)
    if embedding_requests and self.embeddings:
        vectors = await asyncio.gather(
            *(self.embeddings.aembed_query(query) for _, query in embedding_requests)
        )
        for (index, _), vector in zip(embedding_requests, vectors, strict=True):
            params = queries[index][1]
            for i in range(len(params)):
                if params[i] is PLACEHOLDER:
                    params[i] = vector
    for (index, _), (query, params) in zip(search_ops, queries, strict=False):
        await cur.execute(query, params)
        rows = await cur.fetchall()
        results[index] = [
            _row_to_search_item(_decode_ns_bytes(row["prefix"]), row, loader=self._deserializer)
            for row in rows
        ]


def patch_postgres_store() -> bool:
    """Embed ``AsyncPostgresStore`` search queries as queries; returns whether it was needed."""
    from langgraph.store.postgres import AsyncPostgresStore

    return _replace_if(
        AsyncPostgresStore, "_batch_search_ops", _batch_search_ops, _POSTGRES_BUGGY_SIGNATURE
    )
