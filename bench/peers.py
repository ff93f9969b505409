"""Offline adapters that put memory libraries behind one interface for the benchmarks.

Every peer stores facts for many users, applies "this new fact replaces that old one" with
its own primitive, and answers "which of this user's facts fit the query, best first" with
the benchmark's own fact ids. All run in one Python process with no network and no API key:

- :class:`OursPeer`: our store layer as the assistant runs it: ``save_memory``,
  ``supersede_memory`` and hybrid ``recall`` on a langgraph ``InMemoryStore`` with the e5 index.
- :class:`StoreVectorPeer`: plain vector search on the same kind of store:
  ``store.asearch(namespace, query=..., filter={"status": {"$ne": "superseded"}})``.
  Given ``writes=False`` it only reads a store another peer fills, so the two see the same
  contents and only the ranking differs.
- :class:`LangMemPeer`: LangMem's ``manage_memory`` / ``search_memory`` tools on such a store,
  called outside a graph with the user id in ``config["configurable"]``.
- :class:`Mem0Peer`: mem0 OSS ``Memory`` with ``infer=False`` (no LLM), our e5 embedder and an
  in-process Qdrant (``QdrantClient(":memory:")``).
- :class:`BM25Peer`: ``rank_bm25.BM25Okapi`` per user with a CJK-aware tokenizer.

mem0 and LangMem take an update mode: ``update_in_place=False`` keeps their plain
add behaviour (old and new fact both stored: what ``infer=False`` / a create-only tool do);
``True`` applies the replacement with their own update primitive (``Memory.update`` /
the manage tool's ``update`` action, a put on the old key).

The optional libraries (``mem0ai``, ``langmem``, ``rank-bm25``) are imported inside the
classes, so this module imports with only the project installed. Install them with the
project's ``bench`` extra::

    pip install -e '.[bench]'

Run the smoke test with ``python bench/peers.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import tempfile
import threading
import time
import unicodedata
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.store.base import BaseStore, PutOp

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant.inference.models import EMBEDDING_DIMS, get_embeddings
from assistant.memory import WEIGHTS, FusionWeights, recall, save_memory, user_facts_namespace
from assistant.memory.facts import supersede_memory
from assistant.memory.writer import Writer
from assistant.server.persistence.stores import make_store
from function_model import CallInfo, FunctionChatModel

__all__ = [
    "BM25Peer",
    "LangMemPeer",
    "Mem0Peer",
    "NetworkGuard",
    "OursPeer",
    "Peer",
    "StoreVectorPeer",
    "make_indexed_store",
    "mem0_offline_config",
    "tokenize",
]


@runtime_checkable
class Peer(Protocol):
    """A memory system under test: stores facts per user and ranks them for a query."""

    name: str

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        """Store one fact for ``user_id``; ``fact_id`` is the benchmark's id for it."""
        ...

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        """Store ``fact_id``, which replaces ``old_fact_id``, with the peer's own primitive."""
        ...

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        """Up to ``k`` of ``user_id``'s fact ids for ``query``, best first."""
        ...


def _user_config(user_id: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user_id}}


def make_indexed_store(embeddings: Embeddings | None = None) -> BaseStore:
    """An ``InMemoryStore`` indexed like ours (``make_store``), with a chosen embedder."""
    if embeddings is None:
        return make_store()
    return make_store({"dims": EMBEDDING_DIMS, "embed": embeddings, "fields": ["content"]})


def _fact_id(value: dict[str, Any], key: str) -> str:
    return str(value.get("fact_id") or key)


# --------------------------------------------------------------------------- our store


class OursPeer:
    """Our store layer as it runs in the assistant: ``save_memory``, ``supersede_memory``
    and hybrid ``recall`` (vectors + BM25 fused by RRF, see ``FusionWeights``).

    The benchmark's fact id is kept on the stored value (``value["fact_id"]``); items
    without one (written by something else into a shared store) map to their store key.
    A superseded fact stays in the store (``status="superseded"``) and leaves recall.
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        weights: FusionWeights = WEIGHTS,
        name: str = "ours",
    ) -> None:
        self.name = name
        self.store = store if store is not None else make_store()
        self.weights = weights
        self.keys: dict[tuple[str, str], str] = {}

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        self.keys[user_id, fact_id] = await save_memory(
            self.store, user_id, content, fact_id=fact_id
        )

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        old_key = self.keys[user_id, old_fact_id]
        writer = Writer(store=self.store, user_id=user_id)
        self.keys[user_id, fact_id] = await supersede_memory(
            writer, old_key, content, action="supersede", fact_id=fact_id
        )

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        items = await recall(self.store, user_id, query, limit=k, weights=self.weights)
        return [_fact_id(item.value, item.key) for item in items]


class StoreVectorPeer:
    """Plain vector search of the langgraph store: ``store.asearch`` with a status filter.

    Args:
        store: The store to search (a new one like ours when None).
        writes: Store facts through ``save_memory`` / ``supersede_memory``. False when
            another peer (an :class:`OursPeer` on the same ``store``) already writes them:
            then ``add`` and ``supersede`` do nothing and only the ranking differs.
    """

    def __init__(
        self, store: BaseStore | None = None, *, writes: bool = True, name: str = "store vector"
    ) -> None:
        self.name = name
        self.store = store if store is not None else make_store()
        self._writer = OursPeer(self.store) if writes else None

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        if self._writer is not None:
            await self._writer.add(user_id, fact_id, content, lang)

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        if self._writer is not None:
            await self._writer.supersede(user_id, old_fact_id, fact_id, content, lang)

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        items = await self.store.asearch(
            user_facts_namespace(user_id),
            query=query,
            limit=k,
            filter={"status": {"$ne": "superseded"}},
        )
        return [_fact_id(item.value, item.key) for item in items]


# --------------------------------------------------------------------------- LangMem


class LangMemPeer:
    """LangMem's memory tools over a langgraph store, called directly (no graph, no LLM).

    Writes go through ``create_manage_memory_tool``: ``action="create"`` stores
    ``{"content": text}`` under a fresh uuid key and answers ``"created memory <uuid>"``;
    the peer keeps uuid -> fact id. With ``update_in_place``, a replacement is the tool's
    ``action="update"`` with the old uuid (a put on the same key, answered
    ``"updated memory <uuid>"``); otherwise it is a plain create and the old fact stays.
    Searches go through ``create_search_memory_tool``, whose answer is a JSON list of
    ``SearchItem.dict()`` rows (``key``, ``value``, ``score``). Both tools use the namespace
    template ``("user_facts", "{user_id}")``, filled from ``config["configurable"]["user_id"]``;
    passing ``store=`` makes them work outside a graph (otherwise they call
    ``langgraph.config.get_store()`` and fail).
    """

    _REPLY = re.compile(r"(created|updated) memory ([0-9a-fA-F-]{36})")

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        namespace: tuple[str, ...] = ("user_facts", "{user_id}"),
        update_in_place: bool = False,
        name: str = "langmem",
    ) -> None:
        with warnings.catch_warnings():
            # trustcall (a langmem dependency) imports Send from its langgraph 0.x place.
            warnings.filterwarnings("ignore", message="Importing Send from langgraph.constants")
            from langmem import create_manage_memory_tool, create_search_memory_tool

        if len(namespace) != 2 or namespace[1] != "{user_id}":
            raise ValueError("namespace must be (label, '{user_id}')")
        self.name = name
        self.store = store if store is not None else make_store()
        self.update_in_place = update_in_place
        self._namespace = namespace
        self._manage = create_manage_memory_tool(
            namespace=namespace, store=self.store, actions_permitted=("create", "update")
        )
        self._search = create_search_memory_tool(namespace=namespace, store=self.store)
        self._fact_ids: dict[str, str] = {}
        self._uuids: dict[tuple[str, str], str] = {}

    async def _call(self, user_id: str, fact_id: str, args: dict[str, Any]) -> None:
        reply = await self._manage.ainvoke(args, config=_user_config(user_id))
        match = self._REPLY.fullmatch(str(reply).strip())
        if match is None:
            raise RuntimeError(f"Unexpected reply from langmem's manage_memory tool: {reply!r}")
        self._fact_ids[match.group(2)] = fact_id
        self._uuids[user_id, fact_id] = match.group(2)

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        await self._call(user_id, fact_id, {"content": content, "action": "create"})

    async def add_many(
        self, user_id: str, rows: Sequence[tuple[str, str]], *, batch: int = 1000
    ) -> None:
        """Bulk load ``(fact_id, content)`` rows with the same puts the manage tool makes
        (``{"content": text}`` under a fresh uuid), in store batches, without the tool's
        per-call overhead. Texts must be distinct within ``rows``."""
        namespace = (self._namespace[0], user_id)
        for start in range(0, len(rows), batch):
            ops = []
            for fact_id, content in rows[start : start + batch]:
                key = str(uuid.uuid4())
                self._fact_ids[key] = fact_id
                self._uuids[user_id, fact_id] = key
                ops.append(PutOp(namespace, key, {"content": content}))
            await self.store.abatch(ops)

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        if not self.update_in_place:
            await self.add(user_id, fact_id, content, lang)
            return
        old = self._uuids.pop((user_id, old_fact_id))
        await self._call(user_id, fact_id, {"content": content, "action": "update", "id": old})

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        reply = await self._search.ainvoke(
            {"query": query, "limit": k}, config=_user_config(user_id)
        )
        rows: list[dict[str, Any]] = json.loads(reply)
        return [self._row_fact_id(row) for row in rows]

    def _row_fact_id(self, row: dict[str, Any]) -> str:
        key = str(row["key"])
        value = row.get("value") or {}
        return self._fact_ids.get(key) or _fact_id(value, key)


# --------------------------------------------------------------------------- mem0


def refuse_every_call(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """The fake model's function for mem0: proves mem0 never asks an LLM with infer=False."""
    raise RuntimeError("mem0 tried to call an LLM; the benchmark runs it with infer=False")


def mem0_offline_config(
    embeddings: Embeddings, qdrant_client: Any, *, collection_name: str = "bench"
) -> dict[str, Any]:
    """``Memory.from_config`` settings that need no server, no key and no network.

    Args:
        embeddings: A langchain ``Embeddings`` (ours: ``E5Embeddings``, 384 dims).
        qdrant_client: A ``qdrant_client.QdrantClient(location=":memory:")``; mem0 uses a
            passed client as is (no host/port/path), so nothing is written to disk.
        collection_name: The Qdrant collection for this Memory.
    """
    return {
        "embedder": {
            "provider": "langchain",
            "config": {"model": embeddings, "embedding_dims": EMBEDDING_DIMS},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "client": qdrant_client,
                "collection_name": collection_name,
                "embedding_model_dims": EMBEDDING_DIMS,
            },
        },
        # mem0 builds an LLM client at init even when add() is never asked to infer;
        # the "langchain" provider takes a model instance, so no OpenAI client is made.
        "llm": {
            "provider": "langchain",
            "config": {"model": FunctionChatModel(function=refuse_every_call)},
        },
        "history_db_path": ":memory:",
    }


def _prepare_mem0_import() -> None:
    """Settings mem0 reads at import time: telemetry off, its config dir out of $HOME."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-bench-"))


def _force_mem0_offline(memory: Any) -> None:
    """Stop the lazy loaders in mem0 that would download models at run time.

    mem0 2.x scores search as semantic + BM25 (fastembed's ``Qdrant/bm25``, fetched from
    the Hugging Face hub) + entity boosts (spaCy ``en_core_web_sm``, fetched by
    ``spacy.cli.download``). Neither is available offline, so both are marked as failed up
    front and mem0 ranks by vector similarity alone, as it does when they are missing.
    """
    import mem0.memory.main as mem0_main
    import mem0.memory.telemetry as mem0_telemetry
    from mem0.utils import spacy_models

    mem0_telemetry.MEM0_TELEMETRY = False  # if mem0 was imported before the env was set
    mem0_main.MEM0_TELEMETRY = False
    spacy_models._load_failed_full = True
    spacy_models._load_failed_lemma = True
    memory.vector_store._bm25_encoder = False  # mem0's "tried and failed" sentinel


@cache
def _action_aware_embedder_class() -> type[Any]:
    from mem0.embeddings.langchain import LangchainEmbedding

    class ActionAwareLangchainEmbedding(LangchainEmbedding):  # type: ignore[misc]
        """mem0's langchain embedder, but stored text embeds as a document.

        mem0's own class calls ``embed_query`` for every action, so e5 would see
        ``query: `` on stored memories too. mem0 passes ``memory_action`` ("add",
        "update" or "search") to ``embed``/``embed_batch``; this picks the method from it.
        """

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            if memory_action in ("add", "update"):
                return list(self.langchain_model.embed_documents([text])[0])
            return list(self.langchain_model.embed_query(text))

        def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[Any]:
            if memory_action in ("add", "update"):
                return list(self.langchain_model.embed_documents(list(texts)))
            return [self.langchain_model.embed_query(text) for text in texts]

    return ActionAwareLangchainEmbedding


class Mem0Peer:
    """mem0 OSS ``Memory`` with ``infer=False``: raw facts in, vector search out.

    The fact id travels as ``metadata={"fact_id": ...}`` and comes back as
    ``result["metadata"]["fact_id"]`` in ``m.search(...)["results"]``; the ids mem0 returns
    from ``add`` are kept as a fallback. mem0 is synchronous; calls run in a worker thread
    one at a time (local Qdrant is not meant for concurrent writers).

    Args:
        embeddings: Defaults to the project's embedder (``E5Embeddings``).
        prefix_aware: Embed stored facts with ``embed_documents`` (e5 ``passage: ``) and
            queries with ``embed_query`` (``query: ``). False keeps mem0's langchain
            embedder as shipped, which uses ``embed_query`` for both.
        threshold: mem0's minimum semantic score (its default 0.1); 0.0 never drops results.
        update_in_place: Apply a replacement with ``Memory.update(old_id, text=...,
            metadata={"fact_id": new})`` (mem0 keeps the old text only in its history
            db). False adds the new fact next to the old one, which is what
            ``add(..., infer=False)`` does: with no LLM, mem0 never decides an update.
    """

    def __init__(
        self,
        embeddings: Embeddings | None = None,
        *,
        prefix_aware: bool = True,
        threshold: float = 0.0,
        update_in_place: bool = False,
        collection_name: str = "bench",
        name: str = "mem0",
    ) -> None:
        _prepare_mem0_import()
        from mem0 import Memory
        from qdrant_client import QdrantClient

        self.name = name
        self.threshold = threshold
        self.update_in_place = update_in_place
        config = mem0_offline_config(
            embeddings if embeddings is not None else get_embeddings(),
            QdrantClient(location=":memory:"),
            collection_name=collection_name,
        )
        with warnings.catch_warnings():
            # "Payload indexes have no effect in the local Qdrant": expected in-process.
            warnings.simplefilter("ignore", UserWarning)
            self.memory = Memory.from_config(config)
        _force_mem0_offline(self.memory)
        if prefix_aware:
            self.memory.embedding_model = _action_aware_embedder_class()(
                self.memory.embedding_model.config
            )
        self._lock = threading.Lock()
        self._fact_ids: dict[str, str] = {}
        self._memory_ids: dict[tuple[str, str], str] = {}

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        await asyncio.to_thread(self._add, user_id, fact_id, content, lang)

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        if self.update_in_place:
            await asyncio.to_thread(self._update, user_id, old_fact_id, fact_id, content, lang)
        else:
            await self.add(user_id, fact_id, content, lang)

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        return await asyncio.to_thread(self._search, user_id, query, k)

    def add_many(self, user_id: str, rows: Sequence[tuple[str, str]], lang: str = "") -> None:
        """Load ``(fact_id, content)`` rows synchronously, one ``Memory.add`` per fact."""
        with warnings.catch_warnings():
            # Qdrant's local mode warns past 20k points (it suggests a server instead).
            warnings.filterwarnings("ignore", message="Local mode is not recommended")
            for fact_id, content in rows:
                self._add(user_id, fact_id, content, lang)

    def _add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        with self._lock:
            result = self.memory.add(
                content, user_id=user_id, infer=False, metadata={"fact_id": fact_id, "lang": lang}
            )
        for row in result["results"]:
            self._fact_ids[str(row["id"])] = fact_id
            self._memory_ids[user_id, fact_id] = str(row["id"])

    def _update(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        memory_id = self._memory_ids.pop((user_id, old_fact_id))
        with self._lock:
            self.memory.update(memory_id, text=content, metadata={"fact_id": fact_id, "lang": lang})
        self._fact_ids[memory_id] = fact_id
        self._memory_ids[user_id, fact_id] = memory_id

    def _search(self, user_id: str, query: str, k: int) -> list[str]:
        if k <= 0 or not query.strip():
            return []
        with self._lock:
            # mem0 2.x: scope goes in filters; search(user_id=..., limit=...) raises ValueError.
            result = self.memory.search(
                query, top_k=k, filters={"user_id": user_id}, threshold=self.threshold
            )
        ids = []
        for row in result["results"]:
            metadata = row.get("metadata") or {}
            ids.append(str(metadata.get("fact_id") or self._fact_ids.get(row["id"], row["id"])))
        return ids


# --------------------------------------------------------------------------- BM25

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")


def tokenize(text: str) -> list[str]:
    """Lowercased words, and overlapping character bigrams of CJK runs (a lone char as is).

    >>> tokenize("Lives in 杭州西湖, loves Go!")
    ['lives', 'in', '杭州', '州西', '西湖', 'loves', 'go']
    >>> tokenize("住在杭州。我")
    ['住在', '在杭', '杭州', '我']
    """
    tokens: list[str] = []
    for run in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK_RUN.fullmatch(run):
            tokens.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        else:
            tokens.append(run)
    return tokens


class BM25Peer:
    """Keyword baseline: ``rank_bm25.BM25Okapi`` over each user's current facts, no embeddings.

    The index of a user is rebuilt on the first search after an add. Only facts sharing
    at least one token with the query are returned: BM25Okapi's idf is zero or negative
    for terms in half or more of a small corpus (a user with one fact scores a match
    below a miss), so "score > 0" would drop real matches.
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, name: str = "bm25") -> None:
        import rank_bm25  # noqa: F401  (fail at construction, not at the first search)

        self.name = name
        self.k1 = k1
        self.b = b
        self._docs: dict[str, list[tuple[str, list[str]]]] = {}
        self._index: dict[str, Any] = {}

    async def add(self, user_id: str, fact_id: str, content: str, lang: str) -> None:
        self._docs.setdefault(user_id, []).append((fact_id, tokenize(content)))
        self._index.pop(user_id, None)

    async def supersede(
        self, user_id: str, old_fact_id: str, fact_id: str, content: str, lang: str
    ) -> None:
        """Index of current facts only: the old fact leaves, the new one comes in."""
        docs = self._docs.get(user_id, [])
        self._docs[user_id] = [doc for doc in docs if doc[0] != old_fact_id]
        await self.add(user_id, fact_id, content, lang)

    async def search(self, user_id: str, query: str, k: int) -> list[str]:
        docs = self._docs.get(user_id)
        terms = set(tokenize(query))
        if not docs or not terms or k <= 0:
            return []
        index = self._index.get(user_id)
        if index is None:
            from rank_bm25 import BM25Okapi

            corpus = [tokens or [""] for _, tokens in docs]  # an empty doc breaks avgdl
            index = self._index[user_id] = BM25Okapi(corpus, k1=self.k1, b=self.b)
        scores = index.get_scores(list(terms))
        hits = [i for i, (_, tokens) in enumerate(docs) if terms.intersection(tokens)]
        hits.sort(key=lambda i: -scores[i])  # stable: ties keep insertion order
        return [docs[i][0] for i in hits[:k]]


# --------------------------------------------------------------------------- offline check

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class NetworkGuard:
    """Refuses and records every non-loopback connect or DNS lookup made in this process.

    >>> with NetworkGuard() as guard:
    ...     pass
    >>> guard.attempts
    []
    """

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def __enter__(self) -> NetworkGuard:
        self._saved = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)
        connect, connect_ex, getaddrinfo = self._saved
        guard = self

        def _allowed(address: Any) -> bool:
            if isinstance(address, str | bytes):  # AF_UNIX socket path
                return True
            return bool(address) and address[0] in _LOOPBACK

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            if not _allowed(address):
                guard.attempts.append(f"connect {address!r}")
                raise OSError(f"NetworkGuard: blocked connect to {address!r}")
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            if not _allowed(address):
                guard.attempts.append(f"connect_ex {address!r}")
                raise OSError(f"NetworkGuard: blocked connect to {address!r}")
            return connect_ex(sock, address)

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host not in _LOOPBACK and host is not None:
                guard.attempts.append(f"getaddrinfo {host!r}")
                raise socket.gaierror(f"NetworkGuard: blocked lookup of {host!r}")
            return getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = guarded_getaddrinfo
        return self

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = self._saved  # type: ignore[method-assign]


# --------------------------------------------------------------------------- smoke test

_FACTS: list[tuple[str, str, str, str]] = [
    ("alice", "a1", "Lives in Hangzhou near West Lake", "en"),
    ("alice", "a2", "对花生过敏", "zh"),
    ("alice", "a3", "Works as a data engineer at a logistics company", "en"),
    ("alice", "a4", "喜欢周末去爬山", "zh"),
    ("alice", "a5", "Has a cat named Mochi", "en"),
    ("bob", "b1", "住在成都高新区", "zh"),
    ("bob", "b2", "Is vegetarian and avoids eggs", "en"),
    ("bob", "b3", "在一家医院当护士", "zh"),
    ("bob", "b4", "Plays basketball every Thursday evening", "en"),
    ("bob", "b5", "有两个孩子，一个上小学", "zh"),
]
_QUERIES = ["Where does the user live?", "有什么饮食限制或过敏？", "what do they do for work"]
_UPDATE = ("alice", "a1", "a6", "Moved to Chengdu last spring", "en")
"""A replacement applied after the facts above: a6 supersedes a1."""


@contextmanager
def _timer(bucket: list[float]) -> Iterator[None]:
    start = time.perf_counter()
    yield
    bucket.append((time.perf_counter() - start) * 1000)


def _build_peers() -> list[Peer]:
    ours = OursPeer()
    peers: list[Peer] = [ours, StoreVectorPeer(ours.store, writes=False), BM25Peer()]
    for update_in_place in (False, True):
        suffix = "+update" if update_in_place else "add-only"
        try:
            peers.append(LangMemPeer(update_in_place=update_in_place, name=f"langmem {suffix}"))
            peers.append(Mem0Peer(update_in_place=update_in_place, name=f"mem0 {suffix}"))
        except ImportError as error:
            print(f"skipping langmem/mem0: {error}")
    return peers


async def _smoke() -> None:
    get_embeddings().embed_query("warm up")  # load the model outside the timings
    contents = {fact_id: content for _, fact_id, content, _ in _FACTS}
    contents[_UPDATE[2]] = _UPDATE[3]
    with NetworkGuard() as guard:
        peers = _build_peers()
        for peer in peers:
            add_ms: list[float] = []
            search_ms: list[float] = []
            for user_id, fact_id, content, lang in _FACTS:
                with _timer(add_ms):
                    await peer.add(user_id, fact_id, content, lang)
            with _timer(add_ms):
                await peer.supersede(*_UPDATE)
            print(f"\n== {peer.name}: add {sum(add_ms) / len(add_ms):.1f} ms/fact")
            for user_id in ("alice", "bob"):
                for query in _QUERIES:
                    with _timer(search_ms):
                        ids = await peer.search(user_id, query, 3)
                    shown = ", ".join(f"{i}:{contents[i]}" for i in ids)
                    print(f"  {user_id} | {query} -> {shown}")
            print(f"  search {sum(search_ms) / len(search_ms):.1f} ms/query")
    print(f"\nnetwork attempts: {guard.attempts or 'none'}")


if __name__ == "__main__":
    asyncio.run(_smoke())
