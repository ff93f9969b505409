"""Which messages get a user's hard constraint noted under them, on labelled messages.

What is measured: ``bench/data/heed/messages.json`` holds 48 messages in ten languages
(registers, typos and code-switching included), each labelled, before any method read it,
with whether it asks about food or drink, so that a food allergy or a diet bears on the
answer. The prototypes of `assistant.memory.search.topics` were chosen on other messages and
are not changed on these.

For one user with seven facts (a daughter's peanut allergy the one hard constraint; no
fact about food), each message goes through recall as the recall node runs it, with the
bundled e5, and two rules say whether the allergy is noted under it (`nodes.recall.heeded`):

- ``rank``: the rule before, a hard constraint noted when it is the fact most relevant to
  the message (``HEED_RANK`` 1);
- ``rank or food``: the rule now, besides that, every hard constraint noted under a message
  about food (`assistant.memory.about_food`: food ranks first among a dozen subjects).

A food message left without the note is one where a small model may suggest the allergen
(the local model suggested peanut butter toast for breakfast); a note under another message
is noise in the prompt. The topic's own figures are printed too, with the misses.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import _examples  # noqa: F401 (puts examples/ on the path)
from assistant import memory
from assistant.memory import about_food
from assistant.memory.search.topics import topic_of
from assistant.nodes.recall import _fact, heeded
from assistant.server.persistence.stores import make_store

DATA = Path(__file__).resolve().parent / "data" / "heed" / "messages.json"
USER = "heed-user"
FACTS = [
    ("My daughter Lily is allergic to peanuts", "constraint"),
    ("Lives in Porto", "location"),
    ("Works as a nurse at the city hospital", "identity"),
    ("Has a golden retriever named Toby", "other"),
    ("Likes hiking on weekends", "preference"),
    ("Sister Ana is moving to Kyoto next month", "other"),
    ("Plays the cello in a community orchestra", "preference"),
]


async def main() -> None:
    started = time.perf_counter()
    messages = json.loads(DATA.read_text(encoding="utf-8"))["messages"]
    store = make_store()
    for content, category in FACTS:
        await memory.save_memory(store, USER, content, category=category)
    counts = {name: {True: 0, False: 0} for name in ("rank", "rank or food", "topic")}
    misses: list[str] = []
    for message in messages:
        text, food = message["text"], bool(message["food"])
        found = await memory.recall(store, USER, text, limit=len(FACTS))
        shown = [_fact(item) for item in found]  # a small memory: the prompt shows it whole
        topic = await topic_of(store, text)
        said_food = await about_food(store, text)
        for name, noted in (
            ("rank", heeded(found, shown=shown)),
            ("rank or food", heeded(found, shown=shown, food=said_food)),
        ):
            counts[name][food] += bool(noted)
        counts["topic"][food] += said_food
        if said_food != food:
            misses.append(f"  {'food' if food else 'other'} read as {topic}: {text}")
    foods = sum(1 for m in messages if m["food"])
    others = len(messages) - foods
    languages = sorted({m["lang"] for m in messages})
    print(
        f"Constraint notes on {len(messages)} labelled messages ({foods} about food, {others} "
        f"not) in {len(languages)} languages ({', '.join(languages)}); one user, "
        f"{len(FACTS)} facts, a peanut allergy the one hard constraint; bundled e5"
    )
    print()
    print(f"{'rule':<22} | {'food messages noted':>20} | {'other messages noted':>20}")
    print("-" * 70)
    for name, label in (
        ("rank", "rank (before)"),
        ("rank or food", "rank or food (now)"),
        ("topic", "the topic alone"),
    ):
        food_share = f"{counts[name][True]}/{foods} ({counts[name][True] / foods:.0%})"
        other_share = f"{counts[name][False]}/{others} ({counts[name][False] / others:.0%})"
        print(f"{label:<22} | {food_share:>20} | {other_share:>20}")
    print()
    print("where the topic was wrong:")
    print("\n".join(misses) or "  none")
    print(f"\nrun time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
