"""Work-arounds for bugs in the libraries we run on, each applied only while needed.

``InMemoryStore`` (which ``langgraph dev`` uses for the store) embeds each distinct text
once per batch but then expects one embedding per item, so a batch in which two items
share a text fails as a whole with "Number of embeddings (N) does not match number of
indices (M)" (langchain-ai/langgraph#8822). The dev server batches concurrent store
calls, so two users saying "I like hiking" at the same moment lost both facts and any
other operation in that batch. :func:`patch_inmemory_store` gives each text's embedding
to every item that has it, and does nothing once the installed langgraph is fixed.
"""

from __future__ import annotations

import inspect
from typing import Any

from langgraph.store.memory import InMemoryStore

__all__ = ["patch_inmemory_store"]

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
    current = InMemoryStore._insertinmem_store
    if current is _insert_vectors:
        return False
    try:
        source = inspect.getsource(current)
    except (OSError, TypeError):
        return False
    if _BUGGY_SIGNATURE not in source:
        return False
    InMemoryStore._insertinmem_store = _insert_vectors  # type: ignore[method-assign]
    return True
