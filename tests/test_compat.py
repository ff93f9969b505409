from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from assistant.compat import patch_inmemory_store, patch_postgres_store


async def test_a_batch_in_which_two_users_say_the_same_thing_stores_both(
    store: InMemoryStore,
) -> None:
    # langgraph dev batches concurrent store calls; a repeated text failed the whole batch.
    patch_inmemory_store()
    await store.abatch(
        [
            PutOp(("user_facts", "alice"), "k1", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k2", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k3", {"content": "Works as a nurse"}),
        ]
    )
    for user, keys in (("alice", {"k1"}), ("bob", {"k2", "k3"})):
        found = await store.asearch(("user_facts", user), query="hiking")
        assert {item.key for item in found} == keys
        assert all(item.score is not None for item in found)


def test_the_patch_is_applied_once() -> None:
    patch_inmemory_store()
    assert patch_inmemory_store() is False


class PrefixedEmbeddings(Embeddings):
    """Records which method embedded each text, as e5's two prefixes would differ."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return [[1.0] * 64 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [1.0] * 64


@pytest.mark.postgres
async def test_postgres_store_searches_embed_the_query_as_a_query(
    open_unit_postgres_store: Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]],
) -> None:
    embeddings = PrefixedEmbeddings()
    async with open_unit_postgres_store(embeddings) as store:
        await store.aput(("user_facts", "alice"), "k1", {"content": "Likes hiking"})
        found = await store.asearch(("user_facts", "alice"), query="what do I enjoy?")

    assert [item.key for item in found] == ["k1"]
    assert embeddings.documents == ["Likes hiking"]
    assert embeddings.queries == ["what do I enjoy?"]
    assert patch_postgres_store() is False  # applied by open_store, once
