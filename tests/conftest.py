"""Shared offline fixtures: no provider keys, a deterministic embedder, a scripted model.

The model seam (`assistant.models.get_chat_model`) is the only thing replaced; the
graph, the store and the nodes run for real.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import GenericFakeChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel, Field

from assistant import models, providers
from assistant.context import Context
from assistant.graph import builder
from assistant.memory import make_store
from devserver import PROVIDER_ENV
from helpers import create_database

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

_WORD = re.compile(r"\w+")


def _bucket(feature: str) -> int:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % TEST_DIMS


class TestEmbeddings(Embeddings):
    """Hashed bag of words and character bigrams in 64 dims, L2-normalised.

    Identical texts score 1.0; texts that share words score higher than texts
    that do not. Deterministic across processes (no salted ``hash``).
    """

    __test__ = False  # not a test class, despite the name

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * TEST_DIMS
        for word in _WORD.findall(text.casefold()):
            vector[_bucket("w:" + word)] += 1.0
            for i in range(len(word) - 1):
                vector[_bucket("b:" + word[i : i + 2])] += 0.5
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]

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
    from assistant.storage import embedded_postgres, stop_embedded_postgres

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
    from assistant.storage import open_store

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
    from assistant.storage import open_store

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

ReplyFunction = Callable[[list[BaseMessage]], "str | AIMessage"]
"""A scripted reply computed from the prompt the model was given."""

ScriptItem = str | AIMessage | BaseException | ReplyFunction
Script = Iterable[ScriptItem]
"""Scripted replies: text, a full AIMessage, an exception to raise when reached, or a
function of the prompt's messages (handy in endless scripts: ``itertools.repeat(fn)``)."""


def _as_reply(item: str | AIMessage) -> AIMessage:
    """An AIMessage with its own id, whatever the script gave."""
    if isinstance(item, AIMessage):
        return item if item.id else item.model_copy(update={"id": _new_id()})
    return AIMessage(content=item, id=_new_id())


def _new_id() -> str:
    return f"scripted-{uuid.uuid4().hex[:12]}"


class RecordingChatModel(GenericFakeChatModel):
    """A scripted chat model that records every prompt it is given.

    Every call, whether plain, streamed or structured, appends its input messages
    to ``calls``. Structured-output calls parse the next scripted reply's content as
    JSON into the requested schema. They read the shared script, or ``structured``
    when one was given, which keeps tests deterministic when `respond` and
    `remember` call the model concurrently.
    """

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    """Input messages of every call, in the order the calls were made."""
    messages: Iterator[Any]  # type: ignore[assignment]
    """The script (see `Script`); consumed one item per call."""
    structured: Iterator[Any] | None = None
    """Script for structured-output calls only; None means they share ``messages``."""
    structured_gate: asyncio.Event | None = None
    """When set, a structured-output call waits for this event before it answers: a slow
    extractor, without a clock."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # `_stream` delegates here, so streamed calls are recorded exactly once too.
        self.calls.append(list(messages))
        reply = self._reply(self.messages, messages)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def _reply(script: Iterator[Any], messages: list[BaseMessage]) -> AIMessage:
        """The next scripted reply: raised if it is an exception, computed if a function."""
        try:
            item = next(script)
        except StopIteration:
            raise AssertionError("The model was called more times than the test scripted") from None
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            item = item(messages)
        return _as_reply(item)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Run in the event loop (no thread pool) so the script is consumed in call order.
        return self._generate(messages, stop=stop, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop=stop, **kwargs):
            if run_manager:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:  # type: ignore[override]
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: type[BaseModel], **kwargs: Any
    ) -> Runnable[LanguageModelInput, BaseModel]:
        def answer(model_input: LanguageModelInput) -> BaseModel:
            messages = self._convert_input(model_input).to_messages()
            self.calls.append(messages)
            script = self.structured if self.structured is not None else self.messages
            reply = self._reply(script, messages)
            return schema.model_validate_json(reply.text)

        async def aanswer(model_input: LanguageModelInput) -> BaseModel:
            if self.structured_gate is not None:
                await self.structured_gate.wait()
            return answer(model_input)

        return RunnableLambda(answer, afunc=aanswer, name="structured_output")

    @property
    def respond_calls(self) -> list[list[BaseMessage]]:
        """Calls whose first message is a system prompt: the ones `respond` makes."""
        return [call for call in self.calls if call and isinstance(call[0], SystemMessage)]

    @property
    def extraction_prompts(self) -> list[str]:
        """Prompts of the fact-extraction calls that `remember` makes."""
        return [call[0].text for call in self.calls if "<user_message>" in call[0].text]

    @property
    def summary_prompts(self) -> list[str]:
        """Prompts of the summarisation calls that `compress` makes."""
        return [call[0].text for call in self.calls if "<existing_summary>" in call[0].text]


PatchModel = Callable[..., RecordingChatModel]


@pytest.fixture
def patch_model(monkeypatch: pytest.MonkeyPatch) -> PatchModel:
    """Replace the model seam with one shared RecordingChatModel and return it.

    ``patch_model(replies, structured=None)``: ``replies`` (any iterable, possibly
    endless) feed every call in order; ``structured``, when given, feeds only the
    structured-output calls, i.e. `remember`'s one memory-operations call, whose reply is
    ``{"operations": [...]}`` JSON (``helpers.operations_json``, or
    ``itertools.repeat(helpers.rule_based_operations)`` for the scripted rules).
    """

    def patch(replies: Script, *, structured: Script | None = None) -> RecordingChatModel:
        model = RecordingChatModel(
            messages=iter(replies),
            structured=iter(structured) if structured is not None else None,
        )
        monkeypatch.setattr(models, "get_chat_model", lambda model_name="": model)
        return model

    return patch


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

    ``await chat("hi", thread_id="t1", context=Context(...), configurable={...})``
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
        result = await graph.ainvoke({"messages": [message]}, config, context=context or Context())
        return dict(result)

    return send
