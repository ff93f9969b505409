"""Whether a message is about food or drink, from the query embedding recall already made.

A food allergy or a diet bears on "what should I make for breakfast?", though the question
shares no word with "Lily is allergic to peanuts" and ranks it sixth of seven facts (the
local model then suggested peanut butter toast). Recall notes a hard constraint under the
message only when it is the fact most relevant to it (`assistant.nodes.recall.heeded`), so
a message about food gets every hard constraint noted besides.

The message is ranked against short descriptions of a dozen everyday subjects (:data:`TOPICS`,
embedded once per embedder as passages) and is about food when food ranks first: a rank,
never a threshold on e5's raw scores. The message is embedded as recall embeds it (the
query itself), so e5's cache answers and no turn pays a second embedding.
"""

from __future__ import annotations

import numpy as np
from langgraph.store.base import BaseStore

from assistant.memory.search.vectors import fixed_vectors, store_embeddings

__all__ = ["FOOD", "TOPICS", "about_food", "topic_of"]

FOOD = "food"

TOPICS: dict[str, str] = {
    FOOD: "Food and eating: meals, breakfast, lunch, dinner, snacks, cooking, recipes, baking, "
    "desserts, drinks, restaurants, ingredients.",
    "health": "Health: illness, symptoms, doctors, medicine, hospitals, pain, sleep, allergies.",
    "travel": "Travel: trips, flights, hotels, holidays, visiting cities and countries.",
    "work": "Work: jobs, careers, offices, colleagues, meetings, salaries.",
    "home": "Home: houses, flats, rent, moving, furniture, neighbours, chores.",
    "pets": "Pets and animals: dogs, cats, walks, vets.",
    "tech": "Technology: computers, software, programming, phones, apps.",
    "money": "Money: budgets, shopping, prices, bills, savings.",
    "people": "Family and friends: children, parents, partners, relationships.",
    "leisure": "Leisure: hobbies, sports, hiking, music, films, books, games.",
    "study": "Study: school, university, exams, courses, learning languages.",
    "weather": "Weather and time: rain, sun, temperature, dates, schedules.",
}
"""The subjects a message is ranked against, each a short description (English; e5 matches
other languages to it)."""


async def topic_of(store: BaseStore, text: str) -> str:
    """The subject of :data:`TOPICS` that ``text`` is closest to."""
    embeddings = store_embeddings(store)
    prototypes = await fixed_vectors(embeddings, tuple(TOPICS.values()))
    vector = np.asarray(await embeddings.aembed_query(text), dtype=np.float32)
    return list(TOPICS)[int(np.argmax(prototypes @ vector))]


async def about_food(store: BaseStore, text: str) -> bool:
    """Whether ``text`` asks about food or drink (food ranks first among :data:`TOPICS`)."""
    return bool(text.strip()) and await topic_of(store, text) == FOOD
