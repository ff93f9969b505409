"""A fact's words: compared with case, width, punctuation and spacing aside, and redacted.

Forgetting a fact takes its words out of every text the memory layer keeps (`assistant.memory.
user_actions`); these are the rules for when a text says a fact.

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
    "drops_names",
    "bare_names",
    "foreign_script",
    "names_a_word_of",
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
