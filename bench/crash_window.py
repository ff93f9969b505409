"""What a crash of `langgraph dev` loses: in memory (`make dev-memory`), on Postgres (`make dev`).

What is measured
    For each storage and each delay: start `langgraph dev` (the scripted model, no key),
    create thread A and run a turn that stores a fact ("My name is ..."), create thread B
    and run a turn that stores another ("I live in ..."), wait ``delay`` seconds after B's
    run returned, SIGKILL the server's whole process group, start it again on the same
    working directory (and the same Postgres), and count what is left: each thread's
    messages (404 when the thread is gone) and the user's facts.

    Postgres is an embedded one started here in a temp folder (a fresh database per case),
    or ``--postgres-uri``.

Run (offline)::

    python bench/crash_window.py [--delays 0 5 12 30]
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

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant.server.persistence.storage import (
    database_uri,
    embedded_postgres,
    stop_embedded_postgres,
)
from devserver import DevServer

ASSISTANT = "assistant"


async def messages(sdk: Any, thread_id: str) -> str:
    try:
        state = await sdk.threads.get_state(thread_id)
        await sdk.threads.get(thread_id)
    except NotFoundError:
        return "404"
    return str(len((state.get("values") or {}).get("messages", [])))


async def one_case(storage: str, delay: float, workdir: Path, uri: str | None) -> dict[str, str]:
    user = f"crash-{uuid.uuid4().hex[:6]}"
    context = {"user_id": user}
    options: dict[str, Any] = {"storage": storage, "postgres_uri": uri}
    server = DevServer(workdir=workdir, **options).start()
    async with get_client(url=server.url, api_key=None) as sdk:
        thread_a = (await sdk.threads.create())["thread_id"]
        await sdk.runs.wait(
            thread_a, "assistant", input=_says("My name is Alice."), context=context
        )
        thread_b = (await sdk.threads.create())["thread_id"]
        await sdk.runs.wait(
            thread_b, "assistant", input=_says("I live in Hangzhou."), context=context
        )
        facts = len((await sdk.store.search_items(["user_facts", user]))["items"])
        await asyncio.sleep(delay)
        server.kill()
    again = DevServer(workdir=workdir, **options).start()
    try:
        async with get_client(url=again.url, api_key=None) as sdk:
            return {
                "thread A msgs": await messages(sdk, thread_a),
                "thread B msgs": await messages(sdk, thread_b),
                "facts": f"{len((await sdk.store.search_items(['user_facts', user]))['items'])}"
                f"/{facts}",
            }
    finally:
        again.stop()


def _says(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def main(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="assistant-crash-"))
    base = args.postgres_uri or embedded_postgres(folder / "pg")
    rows = []
    started = time.perf_counter()
    try:
        for storage in ("memory", "postgres"):
            for delay in args.delays:
                uri = None
                if storage == "postgres":
                    import psycopg

                    name = f"crash_{uuid.uuid4().hex[:8]}"
                    with psycopg.connect(base, autocommit=True) as conn:
                        conn.execute(f'CREATE DATABASE "{name}"')
                    uri = database_uri(base, name)
                workdir = folder / f"{storage}-{delay:g}"
                result = await one_case(storage, delay, workdir, uri)
                rows.append((storage, delay, result))
                print(f"[{time.perf_counter() - started:.0f} s] {storage} {delay:g} s: {result}")
    finally:
        if not args.postgres_uri:
            stop_embedded_postgres(folder / "pg")
        shutil.rmtree(folder, ignore_errors=True)
    print()
    print("after 2 acknowledged turns (each stores 1 fact), SIGKILL `delay` s later, restart:")
    print(
        f"{'storage':>9} | {'delay s':>7} | {'thread A msgs':>13} | {'thread B msgs':>13} | facts"
    )
    for storage, delay, result in rows:
        print(
            f"{storage:>9} | {delay:>7g} | {result['thread A msgs']:>13} | "
            f"{result['thread B msgs']:>13} | {result['facts']}"
        )
    print("(2 messages per thread when nothing is lost; 404: the thread is gone)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 5.0, 12.0, 30.0])
    parser.add_argument("--postgres-uri", default="")
    asyncio.run(main(parser.parse_args()))
