"""Which user messages a model reads: every message that may state a durable fact.

The extraction model is the judge of what is worth keeping (`assistant.extraction`); this
gate only spares it the messages that cannot hold a fact, and it errs towards sending: a
fact that never reaches the model is lost without a word, while a needless call costs one
small request. It reads signals that hold in every language the embeddings cover:

1. **No words**: only punctuation, emoji or symbols ("👍", "?!").
2. **An acknowledgement**: a short thanks, yes, okay or greeting, in about 20 languages.
3. **Only about memory**: every sentence asks what the assistant remembers or to forget
   something (English and Chinese); the memory tools answer those, and extracting from
   "forget that I live in Hangzhou" would only store again what is being forgotten.
4. **The classifier**: a logistic regression on the message's multilingual-e5 query vector
   (the vector recall computes for the message anyway), taking the best of the whole
   message and of each of its statement sentences, with quoted and fenced material left
   out. Below ``hold_threshold`` (set so that nearly every fact in its training data
   reaches it) the message is skipped; from ``extract_threshold`` it is extracted at once;
   in between it is held, to be extracted together with other messages (one call for
   several). It is trained on labelled messages in 14 languages (``bench/gate.py
   --train`` writes ``gate_classifier.json`` beside this module) and measured on a
   separate labelled set (``bench/data/heard/``).

A message longer than the classifier reads is extracted. The verdict carries its reason,
which the turn's metrics and the user's record of what was heard show
(`assistant.memory.heard`).

>>> screen("👍👍").reason
'no words'
>>> screen("Thanks a lot!").reason
'an acknowledgement'
>>> screen("Please forget that I live in Hangzhou.").reason
'only about memory: the memory tools answer it'
>>> screen("Allergic to shellfish, fyi. Do you remember my address?") is None
True
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from assistant import models

__all__ = ["CLASSIFIER", "Classifier", "Decision", "Verdict", "fact_score", "judge", "screen"]

MAX_JUDGED_CHARS = 2000
"""The classifier reads the vector of the message's first this-many characters (what
recall embeds as its query); a longer message is sent without a score."""


Decision = Literal["extract", "hold", "skip"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Whether a message goes to extraction, and why."""

    decision: Decision
    """``extract``: the model reads it in this turn; ``hold``: it reads it with the next
    messages of the thread, within `assistant.context.Context.extraction_hold_s`;
    ``skip``: no model reads it."""
    reason: str
    """Why, in a few words a user can read (in the turn's metrics and the console)."""
    score: float | None = None
    """The classifier's probability that the message states a fact, when it was asked."""

    @property
    def send(self) -> bool:
        """Whether the extraction model reads the message, now or with a batch."""
        return self.decision != "skip"


# --------------------------------------------------------------------------- signals

ACKNOWLEDGEMENTS = frozenset(
    """thanks|thank you|thx|ty|tysm|thanks a lot|thank you so much|many thanks|cheers|ok|okay|k|
    kk|okey|alright|all right|sure|yes|yep|yeah|yup|no|nope|nah|got it|cool|nice|great|
    awesome|perfect|sounds good|good|lol|lmao|haha|hahaha|hehe|wow|hi|hello|hey|hiya|yo|bye|
    goodbye|good night|good morning|see you|see you later|np|no problem|you're welcome|
    makes sense|ok thanks|ok thank you|great thanks|perfect thanks|
    谢谢|多谢|谢啦|谢了|感谢|谢谢你|非常感谢|好|好的|好吧|嗯|嗯嗯|哦|噢|行|可以|收到|明白|懂了|
    知道了|哈哈|哈哈哈|你好|您好|嗨|早|早上好|晚安|再见|拜拜|不客气|没问题|对|是的|不错|太好了|
    好的谢谢|謝謝|多謝|好喔|了解|
    ありがとう|ありがとうございます|どうも|はい|うん|いいえ|了解です|わかりました|なるほど|
    こんにちは|おはよう|おはようございます|こんばんは|おやすみ|おやすみなさい|いいね|
    감사합니다|고마워|고마워요|고맙습니다|네|예|응|아니요|알겠습니다|알겠어요|좋아요|안녕|
    안녕하세요|ㅋㅋ|ㅋㅋㅋ|ㅎㅎ|
    gracias|muchas gracias|vale|si|sí|claro|perfecto|genial|hola|buenas|adiós|buenas noches|
    de nada|entendido|ok gracias|jaja|jajaja|
    merci|merci beaucoup|d'accord|oui|non|parfait|super|salut|bonjour|bonsoir|bonne nuit|
    au revoir|de rien|ça marche|mdr|
    danke|danke schön|vielen dank|ja|nein|genau|hallo|tschüss|gute nacht|alles klar|passt|
    obrigado|obrigada|valeu|sim|não|beleza|perfeito|oi|olá|tchau|boa noite|kkk|kkkk|
    grazie|grazie mille|sì|perfetto|ciao|buonanotte|prego|va bene|
    спасибо|спс|ок|да|нет|хорошо|понятно|ясно|отлично|привет|пока|спокойной ночи|ага|угу|
    круто|
    شكرا|شكراً|شكرا جزيلا|نعم|لا|تمام|حسنا|مرحبا|أهلا|مع السلامة|تصبح على خير|
    धन्यवाद|शुक्रिया|हाँ|हां|नहीं|ठीक है|अच्छा|नमस्ते|
    teşekkürler|teşekkür ederim|sağol|sağ ol|tamam|evet|hayır|merhaba|iyi geceler|
    cảm ơn|cám ơn|vâng|dạ|được|chào|
    dank je|dank u|bedankt|oké|hoi|doei|dzięki|dziękuję|tak|nie|dobra|cześć""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
"""Whole messages that only acknowledge, greet or agree (compared without punctuation,
emoji or case)."""

_MEMORY_REQUEST = re.compile(
    r"^(?:please\s+|can you\s+|could you\s+)?(?:forget|delete)\b"
    r"|what (?:do|did|else do) you (?:remember|know|recall) about me"
    r"|(?:do|can|could) you (?:still )?(?:remember|recall)\b"
    r"|\btell me (?:what you know|everything you know) about me"
    r"|^(?:请)?(?:忘掉|忘记|删掉|删除)"
    r"|你(?:还)?(?:记得|知道|记住了)(?:关于)?(?:我|些什么|什么)|你对我(?:有多少)?了解",
    re.IGNORECASE,
)
"""A sentence that asks about the user's memory or asks to forget (English and Chinese)."""

_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")


def _words(text: str) -> str:
    """``text`` lower-cased, with only letters, digits, apostrophes and single spaces.

    >>> _words("OK, thanks!! 🙏")
    'ok thanks'
    """
    kept = (
        char if unicodedata.category(char)[0] in "LNM" or char == "'" else " "
        for char in text.lower()
    )
    return " ".join("".join(kept).split())


def screen(text: str) -> Verdict | None:
    """A skip verdict when a signal that holds in any language says there is no fact.

    None means the signals cannot tell, and the classifier decides (`judge`).
    """
    words = _words(text)
    if not words:
        return Verdict(decision="skip", reason="no words")
    if words in ACKNOWLEDGEMENTS:
        return Verdict(decision="skip", reason="an acknowledgement")
    sentences = [s.strip() for s in _SENTENCE.findall(text) if _words(s)]
    if sentences and all(_MEMORY_REQUEST.search(sentence) for sentence in sentences):
        return Verdict(decision="skip", reason="only about memory: the memory tools answer it")
    return None


# --------------------------------------------------------------------------- classifier


@dataclass(frozen=True, kw_only=True)
class Classifier:
    """Logistic regression on an e5 query vector: P(the message states a durable fact)."""

    weights: tuple[float, ...]
    bias: float
    hold_threshold: float
    """Below it a message is skipped; chosen so that nearly every fact reaches it."""
    extract_threshold: float
    """From it a message is extracted at once; between the two it is held for a batch."""
    about: dict[str, Any]
    """How it was trained and measured (written by ``bench/gate.py --train``)."""

    def score(self, vector: Sequence[float]) -> float:
        """The probability that the message behind ``vector`` states a fact."""
        logit = self.bias + math.fsum(w * x for w, x in zip(self.weights, vector, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Classifier:
        """Read what ``bench/gate.py --train`` wrote."""
        return cls(
            weights=tuple(float(w) for w in data["weights"]),
            bias=float(data["bias"]),
            hold_threshold=float(data["hold_threshold"]),
            extract_threshold=float(data["extract_threshold"]),
            about=dict(data.get("about", {})),
        )


CLASSIFIER = Classifier.from_json(
    json.loads(
        resources.files("assistant").joinpath("gate_classifier.json").read_text(encoding="utf-8")
    )
)
"""The shipped classifier, read once at import (file reads inside a run would block)."""

MAX_SENTENCES_SCORED = 4
"""A message of several sentences is also scored sentence by sentence, up to this many."""

_QUESTION_END = ("?", "？", "؟", ";")
"""How a question ends in the scripts the embeddings cover (``;`` is the Greek mark)."""


def statements(text: str) -> list[str]:
    """The sentences of a message of several, that do not end as questions; else none.

    A fact followed by a request ("I work night shifts. Can you suggest a lunch?") reads as
    a request as a whole; its first sentence alone reads as the fact it is.

    >>> statements("I work night shifts. Can you suggest a quick lunch?")
    ['I work night shifts.']
    >>> statements("Allergic to shellfish.")
    []
    """
    found = [s.strip() for s in _SENTENCE.findall(text) if len(_words(s).split()) > 1 or _cjk(s)]
    if len(found) < 2:
        return []
    return [s for s in found if not s.endswith(_QUESTION_END)][:MAX_SENTENCES_SCORED]


def _cjk(text: str) -> bool:
    """Whether ``text`` has a CJK or kana/hangul letter (words there are not space-separated)."""
    return any(
        unicodedata.name(char, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))
        for char in text
    )


_MATERIAL = re.compile(
    r"```.*?(?:```|$)|“[^”]{12,}”|「[^」]{12,}」|『[^』]{12,}』|«[^»]{12,}»|„[^“”]{12,}[“”]"
    r"|\"[^\"]{12,}\"",
    re.DOTALL,
)
"""Quoted or fenced text of some length: material handed over to work on (to translate,
polish, debug), not something the user says about themselves."""


def own_words(text: str) -> str:
    """``text`` with quoted and fenced material replaced by "…".

    >>> own_words('Translate this: "my brother lives in Paris and works at a bank"')
    'Translate this: …'
    >>> own_words('Call me "Bo".')
    'Call me "Bo".'
    """
    return _MATERIAL.sub("…", text)


async def fact_score(text: str, *, classifier: Classifier = CLASSIFIER) -> float:
    """The classifier's score: the message as a whole, or its best statement sentence.

    Quoted and fenced material is left out (`own_words`), unless nothing else is left.
    """
    text = own_words(text) if _words(own_words(text)) else text
    embeddings = models.E5Embeddings()
    scores = [classifier.score(await embeddings.aembed_query(text))]
    for sentence in statements(text):
        scores.append(classifier.score(await embeddings.aembed_query(sentence)))
    return max(scores)


async def judge(text: str, *, classifier: Classifier = CLASSIFIER) -> Verdict:
    """What happens to ``text``: the signals first, then the classifier's score."""
    skipped = screen(text)
    if skipped is not None:
        return skipped
    if len(text) > MAX_JUDGED_CHARS:
        return Verdict(decision="extract", reason="a long message: the model reads it")
    score = await fact_score(text, classifier=classifier)
    if score >= classifier.extract_threshold:
        return Verdict(decision="extract", reason="may state a fact", score=score)
    if score >= classifier.hold_threshold:
        return Verdict(decision="hold", reason="might state a fact: held for a batch", score=score)
    return Verdict(decision="skip", reason="no fact likely", score=score)
