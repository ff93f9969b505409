"""Whether a reply suggests what an allergy it was told to heed rules out.

`respond` writes the hard constraints most relevant to a message under it
(`assistant.run.prompts.HEED_NOTE`), yet Qwen2.5-Coder-1.5B, asked for snacks for a family
whose daughter is allergic to peanuts, still listed "peanut-butter trail mix", and once
answered "can you make a peanut cake?" with the recipe. Nothing in the prompt makes a small
model reliable here, so the reply is read: a sentence that names the allergen without a
word that sets it apart ("without", "peanut-free", "avoid", "instead", the allergy itself,
in the languages users write most) goes against the allergy. Only allergies are read so
(the thing is named after "allergic to", "对…过敏", "…アレルギー"); a diet ("vegetarian")
has no single word to look for.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from assistant.run.state import RecalledFact

__all__ = ["allergens", "unheeded"]

_OBJECT = r"(?:the\s+|a\s+|an\s+|la\s+|le\s+|les\s+|l'|el\s+|los\s+|las\s+|o\s+|os\s+|as\s+)?"
_WORDS = r"([^\W\d_][\w'’-]*(?:\s+[^\W\d_][\w'’-]*){0,2}?)"
_STOP = r"(?=\s*(?:$|[,.;:!?()]|\s(?:and|or|so|but|because|since|e|y|et|und|und|и)\b))"

ALLERGY_TO = re.compile(
    r"(?:allergic|allergy|allergies|intolerant|intolerance)\s+(?:to|of)\s+"
    + _OBJECT
    + _WORDS
    + _STOP
    + r"|al[eé]rgic[oa]s?\s+(?:a|ao|à|aos|às|al|a\s+l[oa]s)\s+"
    + _OBJECT
    + _WORDS
    + _STOP
    + r"|allergiques?\s+(?:à|au|aux|a)\s+"
    + _OBJECT
    + _WORDS
    + _STOP
    + r"|allergisch\s+(?:gegen|auf)\s+"
    + _WORDS
    + _STOP
    + r"|allergic[oa]\s+(?:a|al|alle|ai)\s+"
    + _WORDS
    + _STOP
    + r"|аллерги[яюи]\s+на\s+"
    + _WORDS
    + _STOP
    + r"|对([^，。,\s]{1,6}?)(?:严重)?过敏|對([^，。,\s]{1,6}?)過敏"
    + r"|([^\s、。,，のはがも]{1,8})(?:の)?アレルギー|([^\s,.]{1,8}?)\s*(?:알레르기|알러지)",
    re.IGNORECASE,
)
"""The thing an allergy is to, in the languages users write most."""

APART = re.compile(
    r"\b(?:no|not|non|without|free|avoid\w*|never|instead|allerg\w*|don['’]?t|can['’]?t|cannot"
    r"|isn['’]?t|aren['’]?t|won['’]?t|skip|substitut\w*|replac\w*|sem|sin|não|nunca|evit\w*"
    r"|al[eé]rg\w*|em\s+vez|en\s+lugar|sans|pas|jamais|évit\w*|remplac\w*|au\s+lieu|ohne"
    r"|kein\w*|nicht|nie|vermeid\w*|ersetz\w*|statt|senza|mai|invece|без|не|нет|никогда"
    r"|избега\w*|аллерг\w*|вместо|alternativ\w*|альтернатив\w*)\b"
    r"|-free\b|不|没|無|无|别|避免|过敏|過敏|代替|替代|ない|避け|アレルギー|代わり|없|않|피하|알레르기|대신",
    re.IGNORECASE,
)
"""Words that set a mention of the allergen apart from a suggestion of it."""

_PRONOUNS = frozenset(
    "it them this that these those something anything everything ele ela eles elas isso isto"
    " el ella ellos ellas eso esto lui elle eux elles ca cela ihn sie es ihm ihnen das esso essa"
    " essi esse questo quello lo la li le ему ей им это".split()
)
"""What an allergy may be "to" without naming the thing ("…because Lily is allergic to them")."""

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")

_SENTENCE = re.compile(r"[^\n.!?。！？]+[.!?。！？]*")


def _fold(text: str) -> str:
    """Lower case without accents or umlauts, so "Erdnüsse" and "Erdnuss" compare."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def allergens(content: str) -> list[str]:
    """What a fact says someone is allergic to, as the folded stems a reply is read for.

    A word's stem is its start (plurals and genders aside); a phrase's is its last word's.

    >>> allergens("My daughter Lily is allergic to peanuts, so we never keep them at home.")
    ['peanu']
    >>> allergens("Lily ist allergisch gegen Erdnüsse"), allergens("女儿莉莉对花生过敏")
    (['erdnus'], ['花生'])
    >>> allergens("Alérgica a los cacahuetes"), allergens("Allergic to tree nuts")
    (['cacahuet'], ['nut'])
    >>> allergens("我对花生和坚果过敏"), allergens("Alérgica a amendoim")
    (['花生', '坚果'], ['amendo'])
    >>> allergens("We never keep peanuts at home because Lily is allergic to them.")
    []
    >>> allergens("Lives in Porto")
    []
    """
    found = []
    for match in ALLERGY_TO.finditer(content):
        thing = next((group for group in match.groups() if group), "")
        if _CJK.search(thing):  # "花生和坚果": each thing on its own
            stems = [part for part in re.split(r"[和、与及跟或/]", thing) if part]
        else:
            words = _fold(thing).split()
            last = words[-1].strip("'’-") if words else ""
            stems = [last[: max(3, len(last) - 2)]] if last and last not in _PRONOUNS else []
        found += [stem for stem in stems if stem not in found]
    return found


def unheeded(reply: str, heed: Sequence[RecalledFact]) -> list[RecalledFact]:
    r"""The allergies among ``heed`` that a sentence of ``reply`` goes against.

    >>> fact = RecalledFact(id="1", content="Lily is allergic to peanuts", category="constraint")
    >>> [f["id"] for f in unheeded("1. Apple slices\n2. Peanut-butter trail mix", [fact])]
    ['1']
    >>> unheeded("Try peanut-free granola bars. Avoid peanuts, of course.", [fact])
    []
    >>> unheeded("Sure! Here are three snacks: apples, popcorn and cheese.", [fact])
    []
    """
    sentences = [_fold(s) for s in _SENTENCE.findall(reply)]
    broken = []
    for fact in heed:
        stems = allergens(fact["content"])
        if any(stem in s and not APART.search(s) for stem in stems for s in sentences):
            broken.append(fact)
    return broken
