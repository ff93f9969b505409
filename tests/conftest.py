"""Shared offline fixtures: no provider keys, a deterministic embedder, the fake model.

The model seam (`assistant.inference.models.get_chat_model`) is the only thing replaced; the
graph, the store and the nodes run for real.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from assistant.graph import builder
from assistant.inference import models, providers
from assistant.run.context import Context
from assistant.server.persistence.stores import make_store
from devserver import PROVIDER_ENV
from function_model import ChatFunction, FunctionChatModel, Replies, ScriptItem
from helpers import create_database, hashed_vector, noted_and_extracted_by_rules

PROVIDER_ENV_VARS = PROVIDER_ENV

TEST_DIMS = 64


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real provider, whatever the developer's shell exports."""
    for name in PROVIDER_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _fresh_providers() -> Iterator[None]:
    """What one test's provider taught the process (fallbacks, failures) stays in that test."""
    providers.forget_providers()
    yield
    providers.forget_providers()


# --------------------------------------------------------------------------- embeddings


class TestEmbeddings(Embeddings):
    """Hashed bag of words and character bigrams in 64 dims, L2-normalised.

    Identical texts score 1.0; texts that share words score higher than texts
    that do not. Deterministic across processes (no salted ``hash``).
    """

    __test__ = False  # not a test class, despite the name

    def _embed(self, text: str) -> list[float]:
        return hashed_vector(text, TEST_DIMS)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def make_test_store() -> InMemoryStore:
    """An InMemoryStore indexed like production, but with the small test embedder."""
    return make_store({"dims": TEST_DIMS, "embed": TestEmbeddings(), "fields": ["content"]})


TEST_INDEX: dict[str, Any] = {"dims": TEST_DIMS, "embed": TestEmbeddings(), "fields": ["content"]}
"""The test store's index: production's shape with the small test embedder."""


@pytest.fixture
def store() -> InMemoryStore:
    return make_test_store()


# --------------------------------------------------------------------------- postgres


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """An embedded Postgres with pgvector (pgserver) for this test session, started here.

    Its data lives in a fresh temp folder (a short path, since the server's socket is
    there), removed with the server at the end of the session.
    """
    from assistant.server.persistence.storage import embedded_postgres, stop_embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="assistant-pg-"))
    try:
        yield embedded_postgres(folder / "data")
    finally:
        stop_embedded_postgres(folder / "data")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def unit_postgres_uri(postgres_uri: str) -> str:
    """The database the unit tests' Postgres stores use (indexed with ``TEST_DIMS``)."""
    return create_database(postgres_uri, "unit_tests")


STORE_KINDS = ["memory", pytest.param("postgres", marks=pytest.mark.postgres)]
"""Both stores the assistant runs on: ``InMemoryStore`` and ``AsyncPostgresStore``."""


@pytest.fixture(params=STORE_KINDS)
async def both_stores(request: pytest.FixtureRequest) -> AsyncIterator[BaseStore]:
    """The test store, once in memory and once in an emptied Postgres database.

    A module runs its tests on both by overriding ``store`` with this fixture.
    """
    if request.param == "memory":
        yield make_test_store()
        return
    from assistant.server.persistence.storage import open_store

    uri = request.getfixturevalue("unit_postgres_uri")
    async with open_store(uri, index=TEST_INDEX) as postgres_store:
        await empty_postgres_store(postgres_store)
        yield postgres_store


@pytest.fixture
def open_unit_postgres_store(
    unit_postgres_uri: str,
) -> Callable[[Embeddings], AbstractAsyncContextManager[BaseStore]]:
    """``async with open_unit_postgres_store(embeddings) as store``: an emptied Postgres store
    indexed like the test store, with the given embeddings (``TEST_DIMS`` dims)."""
    from assistant.server.persistence.storage import open_store

    @asynccontextmanager
    async def open_(embeddings: Embeddings) -> AsyncIterator[BaseStore]:
        index = {"dims": TEST_DIMS, "embed": embeddings, "fields": ["content"]}
        async with open_store(unit_postgres_uri, index=index) as postgres_store:
            await empty_postgres_store(postgres_store)
            yield postgres_store

    return open_


async def empty_postgres_store(postgres_store: Any) -> None:
    """Delete every item (and vector) of a Postgres store, so each test starts empty."""
    async with postgres_store.conn.connection() as conn:
        await conn.execute("TRUNCATE store, store_vectors")


@pytest.fixture
def new_store() -> Callable[[], InMemoryStore]:
    """A factory for more test stores, for tests that need several."""
    return make_test_store


# --------------------------------------------------------------------------- chat model

UseModel = Callable[[ChatFunction], FunctionChatModel]
PatchModel = Callable[..., FunctionChatModel]


@pytest.fixture
def use_model(monkeypatch: pytest.MonkeyPatch) -> UseModel:
    """Put the one fake chat model, answering by ``function``, in the model seam; return it.

    ``use_model(function)``: ``function(messages, info)`` answers every call (see
    examples/function_model.py); the model records every call in ``model.calls``.
    """

    def use(function: ChatFunction) -> FunctionChatModel:
        model = FunctionChatModel(function=function)
        monkeypatch.setattr(models, "get_chat_model", lambda model_name="": model)
        return model

    return use


@pytest.fixture
def patch_model(use_model: UseModel) -> PatchModel:
    """Put the fake model in the seam, answering from a script (`Replies`); return it.

    ``patch_model(replies, structured=None, structured_gate=None)``: ``replies`` (any
    iterable, possibly endless) feed every call in order; ``structured``, when given, feeds
    only the structured-output calls, i.e. `remember`'s one memory-operations call, whose
    reply is ``{"operations": [...]}`` JSON (``helpers.operations_json``; the
    ``rule_based_model`` fixture extracts by the scripted rules instead);
    ``structured_gate``, when given, holds the structured calls until it is set.
    """

    def patch(
        replies: Iterable[ScriptItem],
        *,
        structured: Iterable[ScriptItem] | None = None,
        structured_gate: asyncio.Event | None = None,
    ) -> FunctionChatModel:
        return use_model(Replies(replies, structured=structured, structured_gate=structured_gate))

    return patch


@pytest.fixture
def rule_based_model(use_model: UseModel) -> FunctionChatModel:
    """The fake model in the seam: "Noted." to every reply, extraction by the scripted rules
    (``helpers.noted_and_extracted_by_rules``), for as many turns as a test runs."""
    return use_model(noted_and_extracted_by_rules)


# --------------------------------------------------------------------------- graph


def compile_graph(store: InMemoryStore) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The real graph with an in-memory checkpointer and the given store."""
    return builder.compile(checkpointer=InMemorySaver(), store=store)


@pytest.fixture
def graph(store: InMemoryStore) -> CompiledStateGraph[Any, Any, Any, Any]:
    return compile_graph(store)


Chat = Callable[..., Any]


@pytest.fixture
def chat(graph: CompiledStateGraph[Any, Any, Any, Any]) -> Chat:
    """Send one user turn through the graph and return the final state values.

    ``await chat("hi", thread_id="t1", context=Context(...), configurable={...})``. Without
    a context, messages the gate is unsure about are extracted at once
    (``extraction_hold_s=0``), so that a test of what is stored reads it right after the
    turn; ``tests/test_holding.py`` tests holding with the default context.
    """

    async def send(
        content: str | list[Any] | HumanMessage,
        *,
        thread_id: str = "thread-1",
        context: Context | None = None,
        configurable: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        message = content if isinstance(content, HumanMessage) else HumanMessage(content=content)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, **(configurable or {})}}
        context = context or Context(extraction_hold_s=0)
        result = await graph.ainvoke({"messages": [message]}, config, context=context)
        return dict(result)

    return send
