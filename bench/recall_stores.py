"""Hybrid recall on both stores: bench/recall.py's dataset on InMemoryStore and on Postgres.

What is measured
    The recall dataset of ``bench/recall.py`` (the same queries, metrics and seeded keys)
    fed through our store layer (``save_memory`` / ``supersede_memory``, then ``recall``)
    twice: on the in-memory store (``make_store``) and on ``AsyncPostgresStore`` with
    pgvector (``memory.open_store``) in an embedded Postgres started here (or
    ``--postgres-uri``). Also the store's own vector search (``asearch``) on each, and
    ours on Postgres as a fresh process meets it: a second store object, no index in
    memory, every vector read from the store.

Run (offline)::

    python bench/recall_stores.py
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import psycopg

from assistant.inference.models import EMBEDDING_DIMS, get_embeddings
from assistant.server.persistence.storage import (
    database_uri,
    embedded_postgres,
    open_store,
    stop_embedded_postgres,
)
from assistant.server.persistence.stores import make_store
from peers import NetworkGuard, OursPeer, StoreVectorPeer
from recall import (
    DATASET,
    SeededUUIDs,
    ingest,
    load_dataset,
    metrics,
    run_queries,
    summary_line,
    table,
)


async def main(args: argparse.Namespace) -> None:
    data = load_dataset(args.dataset)
    queries = data["queries"]
    print(summary_line(data))
    embeddings = get_embeddings()
    folder = Path(tempfile.mkdtemp(prefix="assistant-recall-pg-"))
    base = args.postgres_uri or embedded_postgres(folder / "data")
    name = f"recall_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    uri = database_uri(base, name)
    index: dict[str, Any] = {"dims": EMBEDDING_DIMS, "embed": embeddings, "fields": ["content"]}
    started = time.perf_counter()
    rows = []
    ingest_s: dict[str, float] = {}
    try:
        with NetworkGuard() as guard, mock.patch("uuid.uuid4", SeededUUIDs(args.seed)):
            embeddings.embed_documents([e["content"] for u in data["users"] for e in u["events"]])
            for query in queries:
                embeddings.embed_query(query["text"])
            memory_peer = OursPeer(make_store(), name="ours, InMemoryStore")
            async with open_store(uri, index=index) as postgres:
                postgres_peer = OursPeer(postgres, name="ours, Postgres")
                for peer in (memory_peer, postgres_peer):
                    ingest_s[peer.name] = await ingest(peer, data)
                order = [
                    memory_peer,
                    postgres_peer,
                    StoreVectorPeer(memory_peer.store, writes=False, name="asearch, InMemoryStore"),
                    StoreVectorPeer(postgres, writes=False, name="asearch, Postgres (pgvector)"),
                ]
                for peer in order:
                    rows.append(
                        (peer.name, metrics(await run_queries(peer, queries, peer.name), queries))
                    )
            async with open_store(uri, index=index) as fresh:
                peer = OursPeer(fresh, name="ours, Postgres, fresh process")
                peer.keys = postgres_peer.keys
                rows.append(
                    (peer.name, metrics(await run_queries(peer, queries, peer.name), queries))
                )
    finally:
        if not args.postgres_uri:
            stop_embedded_postgres(folder / "data")
        shutil.rmtree(folder, ignore_errors=True)
    print()
    print(table(rows))
    print()
    print(
        "ingest (s, embeddings cached): " + ", ".join(f"{k} {v:.2f}" for k, v in ingest_s.items())
    )
    print(
        f"network attempts: {guard.attempts or 'none'}; total {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--postgres-uri", default="")
    asyncio.run(main(parser.parse_args()))
