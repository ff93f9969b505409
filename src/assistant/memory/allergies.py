"""What a fact says someone is allergic to, as stems a text can be read for.

Read by consolidation (an allergy is changed only by a fact that still names what it is to,
`assistant.memory.consolidate`) and by the reply's check against the allergies it was told
to heed (`assistant.nodes.heeding`). The thing is named after "allergic to", "allergy to",
"X allergy", "alérgico a", "allergique à", "allergisch gegen", "allergico a", "аллергия
на", "对…过敏", "…アレルギー", "…알레르기"; a list ("eggs and milk", "花生和坚果") gives
each thing. An allergy "to them", or a diet ("vegetarian"), names nothing to read for.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["SAME_THING", "allergens", "fold", "read_for", "says"]

_OBJECT = r"(?:the\s+|a\s+|an\s+|la\s+|le\s+|les\s+|l'|el\s+|los\s+|las\s+|o\s+|os\s+|as\s+)?"
_THINGS = r"([^\W\d_][\w'’-]*(?:(?:\s*,\s*|\s+)[^\W\d_][\w'’-]*){0,7}?)"
_STOP = (
    r"(?=\s*(?:$|[.;:!?()]|,\s*(?:so|but|because|since|which|and\s+(?:she|he|they|we|I)\b)"
    r"|\s(?:so|but|because|since|which|who|that)\b))"
)

ALLERGY_TO = re.compile(
    r"(?:allergic|allergy|allergies|intolerant|intolerance)\s+(?:to|of)\s+"
    + _OBJECT
    + _THINGS
    + _STOP
    + r"|\b(?!(?:severe|mild|serious|bad|strong|food|seasonal|known|real|terrible|slight"
    r"|life-threatening|an|the|my|her|his|their|our|your)\b)([^\W\d_]{3,})\s+"
    r"(?:allergy|allergies|intolerance)\b(?!\s+(?:to|of)\b)"
    + r"|al[eé]rgic[oa]s?\s+(?:a|ao|à|aos|às|al|a\s+l[oa]s)\s+"
    + _OBJECT
    + _THINGS
    + _STOP
    + r"|allergiques?\s+(?:à|au|aux|a)\s+"
    + _OBJECT
    + _THINGS
    + _STOP
    + r"|allergisch\s+(?:gegen|auf)\s+"
    + _THINGS
    + _STOP
    + r"|allergic[oa]\s+(?:a|al|alle|ai|agli)\s+"
    + _THINGS
    + _STOP
    + r"|аллерги[яюи]\s+на\s+"
    + _THINGS
    + _STOP
    + r"|对([^，。,\s]{1,12}?)(?:严重)?过敏|對([^，。,\s]{1,12}?)過敏"
    + r"|([^\s、。,，のはがも]{1,8})(?:の)?アレルギー|([^\s,.]{1,8}?)\s*(?:알레르기|알러지)",
    re.IGNORECASE,
)
"""The thing (or things) an allergy is to."""

_SEPARATOR = re.compile(r"\s*(?:,|\band\b|\bor\b|\be\b|\by\b|\bet\b|\bund\b|\bи\b|\bo\b)\s*")
_CJK_SEPARATOR = re.compile(r"[和、与及跟或/]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")

_PRONOUNS = frozenset(
    "it them this that these those something anything everything ele ela eles elas isso isto"
    " el ella ellos ellas eso esto lui elle eux elles ca cela ihn sie es ihm ihnen das esso essa"
    " essi esse questo quello lo la li le ему ей им это".split()
)
"""What an allergy may be "to" without naming the thing ("…because Lily is allergic to them")."""


def fold(text: str) -> str:
    """Lower case, with the accents of Latin letters taken off ("Erdnüsse" reads "erdnusse").

    Other scripts are kept whole: Hangul and kana are not split into their parts.

    >>> fold("Erdnüsse, AMÊNDOAS"), fold("땅콩버터"), fold("ざるそば")
    ('erdnusse, amendoas', '땅콩버터', 'ざるそば')
    """
    out = []
    for char in text.casefold():
        if char.isascii() or _CJK.match(char):
            out.append(char)
            continue
        base = unicodedata.normalize("NFD", char)
        out.append(base[0] if base[0].isascii() else char)
    return "".join(out)


def allergens(content: str) -> list[str]:
    """What ``content`` says someone is allergic to, as folded stems.

    A word's stem is its start without the usual plural or gender endings; a phrase's is its
    last word's.

    >>> allergens("My daughter Lily is allergic to peanuts, so we never keep them at home.")
    ['peanut']
    >>> allergens("Lily ist allergisch gegen Erdnüsse"), allergens("女儿莉莉对花生过敏")
    (['erdnuss'], ['花生'])
    >>> allergens("Alérgica a los cacahuetes"), allergens("Allergic to eggs, milk and tree nuts")
    (['cacahuet'], ['egg', 'milk', 'nut'])
    >>> allergens("我对花生和坚果过敏"), allergens("Has a severe peanut allergy")
    (['花生', '坚果'], ['peanut'])
    >>> allergens("I have a severe allergy to penicillin")
    ['penicillin']
    >>> allergens("We never keep peanuts at home because Lily is allergic to them.")
    []
    >>> allergens("Lives in Porto"), allergens("Works as an allergist")
    ([], [])
    """
    found: list[str] = []
    for match in ALLERGY_TO.finditer(content):
        things = next((group for group in match.groups() if group), "")
        if _CJK.search(things):
            stems = [part for part in _CJK_SEPARATOR.split(things) if part]
        else:
            stems = [_stem(part) for part in _SEPARATOR.split(fold(things)) if part]
        found += [stem for stem in stems if stem and stem not in found]
    return found


def read_for(content: str) -> list[str]:
    """The `allergens` of ``content``, each common one with its names in other languages.

    >>> read_for("Lily is allergic to peanuts")[:4], read_for("对芝麻过敏")[:3]
    (['peanut', 'amendoim', 'cacahuet', 'cacahuat'], ['芝麻', 'sesame', 'gergelim'])
    """
    found: list[str] = []
    for stem in allergens(content):
        found += [name for name in _the_same(stem) if name not in found]
    return found


SAME_THING: tuple[tuple[str, ...], ...] = (
    (
        "peanut",
        "amendoim",
        "cacahuet",
        "cacahuat",
        "mani",
        "arachide",
        "erdnuss",
        "arachid",
        "арахис",
        "花生",
        "ピーナッツ",
        "落花生",
        "땅콩",
    ),
    (
        "nut",
        "noz",
        "nozes",
        "nuez",
        "nueces",
        "noix",
        "nuss",
        "noci",
        "орех",
        "坚果",
        "堅果",
        "ナッツ",
        "견과",
    ),
    (
        "milk",
        "dairy",
        "leite",
        "leche",
        "lait",
        "milch",
        "latte",
        "молок",
        "牛奶",
        "奶",
        "乳製品",
        "牛乳",
        "우유",
    ),
    (
        "egg",
        "ovo",
        "ovos",
        "huevo",
        "oeuf",
        "œuf",
        "uov",
        "яйц",
        "鸡蛋",
        "蛋",
        "卵",
        "たまご",
        "달걀",
        "계란",
    ),
    ("fish", "peixe", "pescado", "poisson", "fisch", "pesce", "рыб", "鱼", "魚", "생선"),
    (
        "shellfish",
        "seafood",
        "shrimp",
        "prawn",
        "marisco",
        "frutos do mar",
        "fruits de mer",
        "crevett",
        "meeresfrücht",
        "garnel",
        "frutti di mare",
        "gamber",
        "морепродукт",
        "кревет",
        "海鲜",
        "虾",
        "甲殻",
        "エビ",
        "해산물",
        "새우",
    ),
    ("gluten", "wheat", "trigo", "blé", "ble", "weizen", "frumento", "пшениц", "麸质", "小麦"),
    ("soy", "soja", "soia", "сои", "соя", "大豆", "黄豆"),
    ("sesame", "gergelim", "sesamo", "sésamo", "sésame", "sesam", "кунжут", "芝麻", "ごま", "참깨"),
)
"""The common allergens in the languages users write most: an allergy told in one language
is read for in a reply in another ("Lily is allergic to peanuts", "um bolo de amendoim")."""


def _the_same(stem: str) -> tuple[str, ...]:
    """``stem`` and its names in other languages, when it is a common allergen."""
    for names in SAME_THING:
        if any(
            stem == name
            or len(stem) >= 4
            and len(name) >= 4
            and (stem.startswith(name) or name.startswith(stem))
            for name in names
        ):
            return (stem, *(fold(name) for name in names if name != stem))
    return (stem,)


def _stem(phrase: str) -> str:
    """The folded stem of a phrase's last word; empty for a pronoun."""
    words = phrase.split()
    word = words[-1].strip("'’-") if words else ""
    if not word or word in _PRONOUNS or len(word) < 3:
        return ""
    for ending in ("ies", "es", "s", "e", "i", "a", "o", "ами", "ов", "и", "ы", "а"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def says(text: str, stem: str) -> list[tuple[int, int]]:
    """Where ``text`` (folded) names ``stem``: spans of words that start with it.

    A Latin stem must begin the word: one of three letters may be followed by one more
    ("nuts", not "nutrition" or "Sunday"), one of four or five by three, a longer one by any
    ("Erdnussbutter"); a Chinese, Japanese or Korean one is found anywhere.

    >>> says("peanut-butter trail mix", "peanut"), says("great nutrition", "nut")
    ([(0, 6)], [])
    >>> says("来点花生酱吧", "花生")
    [(2, 4)]
    """
    if _CJK.search(stem):
        return [m.span() for m in re.finditer(re.escape(stem), text)]
    start = stem[:-1] if len(stem) >= 7 else stem  # "amendoim", "amendoins"
    more = "*" if len(start) >= 6 else "{0,1}" if len(start) <= 3 else "{0,3}"
    pattern = rf"(?<![^\W\d_]){re.escape(start)}[^\W\d_]{more}(?![^\W\d_])"
    return [m.span() for m in re.finditer(pattern, text)]
