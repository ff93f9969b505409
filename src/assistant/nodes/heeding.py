"""Whether a reply suggests what an allergy it was told to heed rules out.

`respond` writes the hard constraints most relevant to a message under it
(`assistant.run.prompts.HEED_NOTE`), yet Qwen2.5-Coder-1.5B, asked for snacks for a family
whose daughter is allergic to peanuts, still listed "peanut-butter trail mix", and once
answered "can you make a peanut cake?" with the recipe. Nothing in the prompt makes a small
model reliable here, so the reply is read: a sentence that names the allergen
(`assistant.memory.wording`) goes against the allergy unless the allergy itself is in the
sentence (an explanation) or a word just before or after the allergen sets it apart
("without peanuts", "no peanuts", "peanut-free", "sem amendoim", "不含花生"). A safety note
that names the allergen otherwise ("check labels for peanut traces") is read as a suggestion:
the cost is one more model call and the allergy written under the answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assistant.memory.wording import SENTENCE, fold, names_an_allergy, read_for, says
from assistant.run.state import RecalledFact

__all__ = ["unheeded"]

BEFORE = re.compile(
    r"(?:\b(?:no|not|non|without|avoid\w*|never|free\s+(?:of|from)|skip|sem|sin|não|nunca"
    r"|evit\w*|sans|pas\s+de|jamais|ohne|kein\w*|nicht|senza|niente|без|не|нет)\b|不含|不要|无|無|別|别"
    r"|避免|不能吃|不吃)(?:\s+[\w'’]+)?\s*$",
    re.IGNORECASE,
)
"""Words that, just before the allergen, keep it out ("without peanuts", "不含花生")."""

AFTER = re.compile(r"^[\w]*(?:-free|\s+free|-frei|\s+frei|\s+libre|-libre|フリー|프리|不含)")
"""Words that, just after it, keep it out ("peanut-free", "glutenfrei" aside)."""


def unheeded(reply: str, heed: Sequence[RecalledFact]) -> list[RecalledFact]:
    r"""The allergies among ``heed`` that a sentence of ``reply`` goes against.

    >>> fact = RecalledFact(id="1", content="Lily is allergic to peanuts", category="constraint")
    >>> [f["id"] for f in unheeded("1. Apple slices\n2. Peanut-butter trail mix", [fact])]
    ['1']
    >>> unheeded("Try peanut-free granola bars. Lily's allergy rules out peanuts.", [fact])
    []
    >>> [f["id"] for f in unheeded("Instead of chips, pack peanut butter crackers.", [fact])]
    ['1']
    >>> unheeded("Great for nutrition on a vacation: apples and cheese.", [fact])
    []
    >>> [f["id"] for f in unheeded("No-bake peanut balls. None without any peanuts?", [fact])]
    ['1']
    >>> [f["id"] for f in unheeded("Que tal um bolo de amendoim?", [fact])]
    ['1']
    """
    sentences = [fold(sentence) for sentence in SENTENCE.findall(reply)]
    return [
        fact
        for fact in heed
        if any(
            _suggests(sentence, stem)
            for stem in read_for(fact["content"])
            for sentence in sentences
        )
    ]


def _suggests(sentence: str, stem: str) -> bool:
    """Whether ``sentence`` names ``stem`` with nothing that keeps it out.

    A sentence that names the allergy explains it; it suggests nothing.
    """
    if names_an_allergy(sentence):
        return False
    return any(
        not BEFORE.search(sentence[:start]) and not AFTER.match(sentence[end:])
        for start, end in says(sentence, stem)
    )
