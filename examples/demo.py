"""Watch memory work without an API key: ``python examples/demo.py`` (or ``make demo``).

Starts `langgraph dev` with the scripted model (rule-based, clearly labelled, no
network) and walks through two threads of one user and one thread of another, in
English and Chinese, then a long thread that gets compressed, a fact that changes, a
question about an earlier conversation, and a request to forget something. For every turn it
prints the reply, the facts recalled into the prompt, the facts stored, the running
summary, and the prompt size the model received.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from assistant.memory import EPISODES_NAMESPACE, FACTS_NAMESPACE
from devserver import DevServer

BANNER = """\
==============================================================================
 assistant demo: SCRIPTED MODEL. Replies, fact extraction and summaries come
 from simple rules (examples/scripted.py), not from an LLM. Memory,
 recall, isolation and compression are the real graph on a real langgraph dev.
=============================================================================="""

LONG_THREAD_CONTEXT = {
    "max_context_tokens": 400,
    "keep_recent_tokens": 150,
    "summary_max_tokens": 120,
}

LONG_THREAD = [
    "Let's plan my trip to Japan in April. I want to see the cherry blossoms in Kyoto.",
    "My budget is about 2000 dollars for the flights and hotels together.",
    "I've decided to fly into Osaka because it is cheaper than Tokyo from Hangzhou.",
    "Can you suggest three quiet temples in Kyoto that are not too crowded in spring?",
    "I prefer small guesthouses over big hotels, ideally near a train station.",
    "What is the best way to get from Osaka to Kyoto with luggage?",
    "我想在奈良待一天，看看小鹿，顺便吃点当地小吃。",
    "Remember that I'm allergic to peanuts, so street food needs care.",
    "Please list a day-by-day outline for the first four days.",
    "Which rail pass makes sense if I only travel in the Kansai area?",
    "Also I'd like one evening in Osaka for Dotonbori. Any tips on timing?",
    "Let's wrap up: summarise the plan in five bullet points.",
]


class Demo:
    """Drives the walkthrough against a running scripted server."""

    def __init__(self, server: DevServer) -> None:
        """Use ``server`` (already started)."""
        self.server = server
        self.client: LangGraphClient = get_client(url=server.url, api_key=None)
        self._log_offset = 0

    def _new_model_calls(self) -> list[dict[str, Any]]:
        path = self.server.scripted_log_path
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        fresh, self._log_offset = lines[self._log_offset :], len(lines)
        return [json.loads(line) for line in fresh]

    async def facts(self, user_id: str) -> list[str]:
        """Every fact stored for ``user_id``."""
        found = await self.client.store.search_items([FACTS_NAMESPACE, user_id], limit=100)
        return [str(item["value"]["content"]) for item in found["items"]]

    async def turn(
        self, thread_id: str, user_id: str, text: str, context: dict[str, Any] | None = None
    ) -> None:
        """Send one user message and print what memory did with it."""
        before = set(await self.facts(user_id))
        payload: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
        result = await self.client.runs.wait(
            thread_id, "assistant", input=payload, context={"user_id": user_id, **(context or {})}
        )
        state = await self.client.threads.get_state(thread_id)
        values: dict[str, Any] = state["values"]  # type: ignore[assignment]
        calls = self._new_model_calls()
        respond = [call for call in calls if call["kind"] == "respond"]
        compressed = any(call["kind"] == "summarize" for call in calls)
        reply = result["messages"][-1]["content"] if isinstance(result, dict) else result
        stored = [fact for fact in await self.facts(user_id) if fact not in before]
        print(f"  {user_id}> {text}")
        print(f"  assistant> {reply}")
        profile = [fact["content"] for fact in values.get("profile", [])]
        recalled = [fact["content"] for fact in values.get("recalled", [])]
        metrics = values.get("metrics", {})
        print(f"    profile in prompt:    {profile or '-'}")
        print(f"    recalled into prompt: {recalled or '-'}")
        if values.get("episodes"):
            print(f"    past conversations:   {len(values['episodes'])} episode(s) in prompt")
        print(f"    newly stored facts:   {stored or '-'}")
        if metrics.get("superseded"):
            print(f"    superseded facts:     {metrics['superseded']} (kept with history)")
        if respond:
            print(
                f"    prompt to model:      {respond[-1]['prompt_tokens']} tokens, "
                f"{len(values.get('messages', []))} messages in thread"
                + ("  [compressed this turn]" if compressed else "")
            )

    async def new_thread(self, title: str) -> str:
        """Create a thread and print a header for it."""
        thread = await self.client.threads.create()
        print(f"\n--- {title} (thread …{thread['thread_id'][-8:]}) ---")
        return str(thread["thread_id"])

    async def run(self) -> None:
        """The whole walkthrough."""
        print(BANNER)
        alice, bob = "alice", "bob"

        thread = await self.new_thread("alice, thread 1, English")
        await self.turn(thread, alice, "Hi! My name is Alice and I live in Hangzhou.")
        await self.turn(thread, alice, "I'm allergic to peanuts, and I prefer short answers.")

        thread = await self.new_thread("alice, thread 2, 中文")
        await self.turn(thread, alice, "我喜欢喝龙井茶，我的猫叫Mochi。")
        await self.turn(thread, alice, "周末有什么好玩的？")

        thread = await self.new_thread("bob, thread 1, 中文 (another user)")
        await self.turn(thread, bob, "我叫小王，我住在成都。")
        await self.turn(thread, bob, "Where does Alice live? 你知道 Alice 的事吗？")

        thread = await self.new_thread("alice, thread 3: recall across threads and languages")
        await self.turn(thread, alice, "What do you remember about me? 你还记得我什么？")

        thread = await self.new_thread(
            f"alice, thread 4: a long thread with a small budget {LONG_THREAD_CONTEXT}"
        )
        for text in LONG_THREAD:
            await self.turn(thread, alice, text, LONG_THREAD_CONTEXT)
        state = await self.client.threads.get_state(thread)
        values: dict[str, Any] = state["values"]  # type: ignore[assignment]
        print("\n  running summary of thread 4 (rides in the system prompt):")
        for line in str(values.get("summary", "")).splitlines():
            print(f"    {line}")

        thread = await self.new_thread("alice, thread 5: a fact changes, and an old decision")
        await self.turn(thread, alice, "Big news: I moved from Hangzhou to Chengdu.")
        await self.turn(thread, alice, "What did we decide about the Japan trip budget?")

        thread = await self.new_thread("alice, thread 6: what do you remember? forget something")
        await self.turn(thread, alice, "What do you remember about me?")
        await self.turn(thread, alice, "忘掉我喜欢喝龙井茶这件事")

        print("\n--- what the store holds ---")
        for user_id in (alice, bob):
            found = await self.client.store.search_items([FACTS_NAMESPACE, user_id], limit=100)
            print(f"  ('{FACTS_NAMESPACE}', '{user_id}'):")
            for item in found["items"]:
                value = item["value"]
                flags = ("pinned " if value.get("pinned") else "") + str(value.get("status"))
                print(f"    - {value['content']}  [{flags}]")
                for entry in value.get("history", []):
                    when, old = entry["at"][:19], entry["content"]
                    print(f"        history: {entry['event']} at {when}: {old}")
        episodes = await self.client.store.search_items([EPISODES_NAMESPACE, alice], limit=10)
        print(f"  ('{EPISODES_NAMESPACE}', '{alice}'): {len(episodes['items'])} episode(s)")
        async with httpx.AsyncClient(base_url=self.server.url) as http:
            audit = (await http.get("/memory/audit", params={"user_id": alice})).json()["audit"]
        print(f"  audit trail of {alice}:")
        for entry in audit:
            change = f" -> {entry['new_content']}" if entry.get("new_content") else ""
            print(
                f"    {entry['at'][:19]} {entry['action']} via {entry['via']}: "
                f"{entry['content']}{change}"
            )


async def _main(workdir: Path) -> None:
    with DevServer(workdir=workdir, scripted=True) as server:
        print(f"langgraph dev (scripted) at {server.url}, data in {workdir}")
        await Demo(server).run()


def main() -> None:
    """Entry point for ``python examples/demo.py``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workdir", type=Path, help="keep the server's data here")
    args = parser.parse_args()
    if args.workdir:
        asyncio.run(_main(args.workdir))
        return
    with tempfile.TemporaryDirectory(prefix="assistant-demo-") as tmp:
        asyncio.run(_main(Path(tmp)))


if __name__ == "__main__":
    main()
