"""A fact's words: compared with case, width, punctuation and spacing aside, and redacted.

Forgetting a fact takes its words out of every text the memory layer keeps (`assistant.memory.
user_actions`); these are the rules for when a text says a fact. The last part reads what an
allergy is to ("allergic to peanuts", "peanut allergy", "对花生过敏", "…アレルギー"; a list gives
each thing; an allergy "to them" or a diet names nothing), as stems a text is read for.

>>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from assistant.inference.tokens import is_cjk_text
from assistant.memory.records import FORGOTTEN
from assistant.memory.search.lexical import CJK_LETTER, tokenize

__all__ = [
    "MIN_QUOTED_CHARS",
    "SAME_THING",
    "SENTENCE",
    "allergens",
    "fold",
    "read_for",
    "says",
    "drops_names",
    "bare_names",
    "foreign_script",
    "names_a_word_of",
    "names_an_allergy",
    "new_names",
    "normalize_fact",
    "quotes_fact",
    "redact_text",
    "related",
    "replaces_name",
]


def normalize_fact(content: str) -> str:
    """Fold case, width, punctuation and spacing so trivially different wordings compare equal.

    >>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
    True
    >>> normalize_fact("住在杭州。") == normalize_fact("住在杭州")
    True
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


MIN_QUOTED_CHARS = 8
"""Shortest normalised fact (4 for Chinese, Japanese or Korean) that :func:`quotes_fact`
looks for inside a longer text; a shorter one only matches a text that says exactly it,
so that forgetting "Is 30" does not touch every text holding "this 30"."""


def _shortest(fact: str) -> int:
    return MIN_QUOTED_CHARS // 2 if is_cjk_text(fact) else MIN_QUOTED_CHARS


def quotes_fact(text: str, fact: str) -> bool:
    """Whether ``text`` says ``fact`` word for word (case, width, punctuation and spacing aside).

    >>> quotes_fact("I said: lives in  Hangzhou!", "Lives in Hangzhou")
    True
    >>> quotes_fact("我现在住在杭州了", "住在杭州"), quotes_fact("this 30", "Is 30")
    (True, False)
    """
    wanted, found = normalize_fact(fact), normalize_fact(text)
    if not wanted:
        return False
    return wanted in found if len(wanted) >= _shortest(fact) else wanted == found


def redact_text(text: str, facts: Iterable[str]) -> str:
    """``text`` with every word-for-word occurrence of each of ``facts`` replaced.

    Case and spacing are ignored, and so is a fact's final full stop; a fact shorter than
    :data:`MIN_QUOTED_CHARS` (after normalising) is left alone, as in :func:`quotes_fact`.

    >>> redact_text("The user lives in  Hangzhou and likes tea.", ["Lives in Hangzhou."])
    'The user [forgotten] and likes tea.'
    """
    for fact in sorted(facts, key=len, reverse=True):  # "X, near Y" before "X"
        words = fact.strip().rstrip(".。!！").split()
        if not words or len(normalize_fact(fact)) < _shortest(fact):
            continue
        pattern = r"\s+".join(re.escape(word) for word in words)
        text = re.sub(pattern, FORGOTTEN, text, flags=re.IGNORECASE)
    return text


SENTENCE = re.compile(r"[^\n.!?。！？]+[.!?。！？]*")
"""A sentence, or a line: text up to a full stop, question or exclamation mark (Latin or
Chinese/Japanese) or a line break, with its closing marks. How a message is read for requests
(`assistant.extraction.gate`) and a reply for allergens (`assistant.nodes.heeding`).

>>> SENTENCE.findall("1. Apples\nNo nuts! 不含花生。OK")
['1.', ' Apples', 'No nuts!', ' 不含花生。', 'OK']
"""


_NAME = re.compile(r"(?<![\w'])(?:[^\W\d_a-z][\w'-]+|\d[\d.,:/-]*)")
"""A capitalised word (a name, a place, or a sentence's first word) or a number."""

MIN_KEPT_WIDE_SHARE = 0.6
"""A CJK fact reworded keeping less than this share of its characters says something else."""


_WORD = re.compile(r"[^\W_][\w'’-]*")
"""A word: letters or digits, with any apostrophes and hyphens inside it."""

MAX_BARE_NAMES = 4
"""A longer run of capitalised words is a title or a German sentence, not a bare name."""


def bare_names(fact: str) -> list[str]:
    """The words of a ``fact`` that is only a name, place or number, casefolded; else none.

    A small model asked for a fact sometimes writes only what it names: "München, Germany"
    for "Ich wohne seit letztem Jahr in München", which does not say that the user lives
    there. Chinese, Japanese and Korean facts have no capitals to tell and are never bare.

    >>> bare_names("München, Germany"), bare_names("Toby")
    (['münchen', 'germany'], ['toby'])
    >>> bare_names("Lives in München"), bare_names("住在杭州"), bare_names("")
    ([], [], [])
    """
    words = _WORD.findall(fact)
    if CJK_LETTER.search(fact) or not 0 < len(words) <= MAX_BARE_NAMES:
        return []
    if not all(word[0].isupper() or word[0].isdigit() for word in words):
        return []
    return [word.casefold() for word in words]


def drops_names(before: str, after: str) -> bool:
    """Whether ``after`` no longer says a name, place or number that ``before`` says.

    A small model asked to refine a fact sometimes rewrites it into another one ("I live
    in Lisbon" "refined" to "I live in Porto"): that is a replacement, whose old wording
    must stay as history (`assistant.memory.consolidate`). For Chinese, Japanese and Korean
    facts, which have no capitals, it is the share of characters kept.

    >>> drops_names("Lives in Lisbon with partner", "Lives in Porto with partner")
    True
    >>> drops_names("Works as a nurse", "Works as a senior nurse at Ruijin Hospital")
    False
    >>> drops_names("住在杭州", "住在成都"), drops_names("在医院当护士", "在医院当护士长")
    (True, False)
    """
    kept = after.casefold()
    if any(name.casefold() not in kept for name in _NAME.findall(before)):
        return True
    wide = CJK_LETTER.findall(before)
    return bool(wide) and sum(char in after for char in wide) < MIN_KEPT_WIDE_SHARE * len(wide)


def related(before: str, after: str) -> bool:
    """Whether two facts share a word (stemmed, English stop words aside).

    In Chinese, Japanese or Korean a shared word is two characters in a row; facts in
    different scripts cannot be compared by their words and count as related.

    A small model asked for the known fact a message refines or replaces sometimes names
    any known fact: "works as a nurse in Hangzhou" given as an update of "daughter Lily is
    allergic to peanuts" (`assistant.memory.consolidate`).

    >>> related("I live in Lisbon with my partner", "I live in Porto with my partner")
    True
    >>> related("My daughter Lily is allergic to peanuts", "I am a nurse in Hangzhou")
    False
    >>> related("住在北京", "住在上海"), related("Lives in Hangzhou", "住在成都")
    (True, True)
    """
    if is_cjk_text(before) != is_cjk_text(after):
        return True
    return bool(set(tokenize(before)) & set(tokenize(after)))


FUNCTION_WORDS = frozenset(
    """que qui une des les pas mon mes ton tes son ses sur par est moi pour dans avec mais plus
    der die das und ein mit für von den dem ist mir mich mein meine nicht dass
    los las una con por del mis tus sus para como pero uma com não meu dos das
    che non per mio mia sono""".split()
)
"""Words of French, German, Spanish, Portuguese and Italian too common to name a fact (the
search's stop words are English)."""


def names_a_word_of(text: str, fact: str) -> bool:
    """Whether ``text`` says a word of ``fact``, or the two cannot be compared.

    `related`, stricter: function words and words under three letters do not count. A word
    is stemmed, and in Chinese, Japanese or Korean two characters in a row; a fact in one of
    those scripts and a message in another script cannot be compared.

    Asked about "Oublie que j'ai un chat, s'il te plaît." with no cat remembered,
    Qwen2.5-Coder-1.5B chose both facts it was shown, "Camille lives in Lyon since 2019."
    and "Je suis végétarienne…", and both were deleted. A fact the message names nothing of
    is not forgotten (`assistant.nodes.requests`).

    >>> names_a_word_of("Oublie que j'ai un chat", "Je suis végétarienne, jamais de viande")
    False
    >>> names_a_word_of("Forget what I said about Lily's allergy", "Daughter Lily: peanuts")
    True
    >>> names_a_word_of("忘掉我住在哪里", "住在杭州")
    True
    >>> names_a_word_of("删掉", "Lives in Lyon")
    True
    """
    if is_cjk_text(text) != is_cjk_text(fact):
        return True
    return bool(_content_words(text) & _content_words(fact))


def _content_words(text: str) -> set[str]:
    """``text``'s search terms but function words and words under three letters.

    >>> sorted(_content_words("Oublie le nom de mon chat"))
    ['chat', 'nom', 'oubli']
    """
    return {
        term
        for term in tokenize(text)
        if term not in FUNCTION_WORDS
        and (len(term) > 2 or term.isdigit() or CJK_LETTER.match(term))
    }


def replaces_name(before: str, after: str, said: str) -> bool:
    """Whether ``after`` puts a name, place or number the user ``said`` where ``before`` has one.

    A small model that calls a message already known sometimes writes the new fact in its
    *skip* ("I live in Porto" against the known "I live in Lisbon"): that is a change, not
    a repeat. The new name must be one the user said, both facts must be in the same
    script (a known fact said again in another language is no change), and a sentence's
    first word is not taken for a name. For Chinese, Japanese and Korean, a name is a run
    of at least two characters.

    >>> replaces_name("I live in Lisbon", "I live in Porto", "we moved to Porto last week")
    True
    >>> replaces_name("Has a dog named Max", "Owns a dog, Max", "my dog Max is a beagle")
    False
    >>> replaces_name("Lives in Hangzhou", "住在杭州", "我住在杭州")
    False
    >>> replaces_name("住在北京", "住在上海", "我上个月搬到上海了")
    True
    >>> replaces_name("在医院当护士", "是护士", "我是护士")
    False
    """
    if is_cjk_text(before) != is_cjk_text(after):
        return False
    heard = said.casefold()
    added = any(name in heard for name in new_names(after, before))
    if is_cjk_text(after):
        return added and drops_names(before, after)
    later = after.casefold()
    return added and any(name not in later for name in _names(before))


def new_names(text: str, fact: str) -> list[str]:
    """The names, places and numbers ``text`` says that ``fact`` does not, casefolded.

    A sentence's first word is not taken for a name; in Chinese, Japanese and Korean, a
    name is a run of at least two characters that ``fact`` does not use, and a ``fact``
    in another script is not compared (none is returned).

    >>> new_names("We moved to Porto, no more Lisbon", "I live in Lisbon")
    ['porto']
    >>> new_names("我上个月搬到上海了", "住在北京"), new_names("我住在杭州", "Lives in Hangzhou")
    (['我上个月搬到上海了'], [])
    """
    if CJK_LETTER.search(text):
        if not CJK_LETTER.search(fact):
            return []
        wide = "".join(CJK_LETTER.findall(text))
        return re.findall(rf"[^{re.escape(fact)}]{{2,}}", wide)
    known = fact.casefold()
    return [name for name in _names(text) if name not in known]


def _names(text: str) -> list[str]:
    """``text``'s names and numbers but its first word, casefolded."""
    return [m.group().casefold() for m in _NAME.finditer(text) if m.start() > 0]


def foreign_script(fact: str, said: str) -> bool:
    """Whether ``fact`` is Chinese, Japanese or Korean while what was ``said`` has none of it.

    The model is asked to write a fact in the language of the message; a small one that
    answers a German message with "住在北京" has not read it but invented from the other
    facts it was shown.

    >>> foreign_script("住在北京", "Ich wohne in München"), foreign_script("住在杭州", "我住在杭州")
    (True, False)
    """
    return is_cjk_text(fact) and not CJK_LETTER.search(said)


# --------------------------------------------------------------------------- allergies
# What a fact says someone is allergic to, as stems a text can be read for: by consolidation
# (an allergy is changed only by a fact that still names what it is to) and by the reply's
# check against the allergies it was told to heed (`assistant.nodes.heeding`).

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
        if char.isascii() or CJK_LETTER.match(char):
            out.append(char)
            continue
        base = unicodedata.normalize("NFD", char)
        out.append(base[0] if base[0].isascii() else char)
    return "".join(out)


NAMES_AN_ALLERGY = re.compile(
    r"allerg|alerg|аллерг|алерг|过敏|過敏|アレルギー|알레르기|알러지|intoleran|unvertraglich"
    r"|不耐(?![烦煩])|celiac|coeliac|zoliak|\bdi ung\b|एलर्जी"
)
"""An allergy or intolerance, in the languages e5 covers best, in a `fold`-ed text
("alérgica", "Zöliakie", "dị ứng" read "alergica", "zoliakie", "di ung"); "不耐烦"
(impatient) is no intolerance."""


def names_an_allergy(text: str) -> bool:
    """Whether ``text`` names an allergy or intolerance (not necessarily what it is to).

    A fact that does is a hard constraint (`assistant.memory.consolidate`), and a sentence
    of a reply that does explains an allergy rather than going against it
    (`assistant.nodes.heeding`).

    >>> names_an_allergy("Lily es alérgica al maní"), names_an_allergy("Zöliakie seit 2019")
    (True, True)
    >>> names_an_allergy("孩子有点不耐烦"), names_an_allergy("Loves peanut butter")
    (False, False)
    """
    return NAMES_AN_ALLERGY.search(fold(text)) is not None


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
        if CJK_LETTER.search(things):
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
        "mani",  # Spanish "maní": read only as a whole word after a Spanish one (`SPANISH_MANI`)
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


_MANI_WORD = r"mani(?:e?s)?"
"""The Spanish "maní" and its plurals, folded."""

SPANISH_MANI = re.compile(
    rf"(?<![^\W\d_])(?:de|del|el|al|los|un|unos|con|sin|y)\s+({_MANI_WORD})(?![^\W\d_]|[-‐/]\w)"
)
""""mani" (Spanish "maní", a peanut, once folded) where it means a peanut.

Folded, the Spanish word is also English's "mani" ("mani-pedi", "a mani pedi", "get a
mani"), Italian's hands ("lavati le mani"), and the start of "manicure", "mania", "Manila"
and "Maniok" (cassava). The least surprising rule that keeps the Spanish word is to read it
as a Spanish noun: a whole word ("mani", "manis", "manies"), not half of a compound joined
by a hyphen or slash, just after a word that goes before a masculine Spanish noun ("de
maní", "el maní", "con maní", "pasas y maní"). Italian's feminine "le mani" and English's
"a mani" are not such words. A fact's allergy names the thing itself ("alérgica al maní"),
so there the whole word is enough; a Spanish reply that begins a line with it ("Maní
tostado") is missed, the cost of not reading every "mani" as a peanut. The accented form
cannot be the rule: texts are compared folded, and "manía" begins with "maní" anyway."""

_WHOLE_WORD_ONLY = frozenset({"mani"})
"""Names of `SAME_THING` that are not the start of a longer word's ("manicure", "Maniok")."""


def _the_same(stem: str) -> tuple[str, ...]:
    """``stem`` and its names in other languages, when it is a common allergen.

    >>> _the_same("mani")[:2], _the_same("maniok"), _the_same("manicur")
    (('mani', 'peanut'), ('maniok',), ('manicur',))
    """
    for names in SAME_THING:
        if any(
            stem == name
            or len(stem) >= 4
            and len(name) >= 4
            and name not in _WHOLE_WORD_ONLY
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
    if re.fullmatch(_MANI_WORD, word):  # "maní", "maníes": not "man" (`SPANISH_MANI`)
        return "mani"
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

    The Spanish "maní" is read as a Spanish noun only (`SPANISH_MANI`):

    >>> says("galletas de mani", "mani"), says("a mani-pedi", "mani"), says("le mani", "mani")
    ([(12, 16)], [], [])
    """
    if CJK_LETTER.search(stem):
        return [m.span() for m in re.finditer(re.escape(stem), text)]
    if stem == "mani":
        return [m.span(1) for m in SPANISH_MANI.finditer(text)]
    start = stem[:-1] if len(stem) >= 7 else stem  # "amendoim", "amendoins"
    more = "*" if len(start) >= 6 else "{0,1}" if len(start) <= 3 else "{0,3}"
    pattern = rf"(?<![^\W\d_]){re.escape(start)}[^\W\d_]{more}(?![^\W\d_])"
    return [m.span() for m in re.finditer(pattern, text)]
