"""Which user messages a model reads: every message that may state a durable fact.

The extraction model is the judge of what is worth keeping (`assistant.extraction.extract`); this
gate only spares it the messages that cannot hold a fact, and it errs towards sending: a
fact that never reaches the model is lost without a word, while a needless call costs one
small request. It reads signals that hold in every language the embeddings cover:

1. **No words**: only punctuation, emoji or symbols ("👍", "?!").
2. **An acknowledgement**: a short thanks, yes, okay or greeting, in about 20 languages.
3. **Only about memory**: every sentence asks what the assistant remembers or to forget
   something (English and Chinese); the memory tools answer those, and extracting from
   "forget that I live in Hangzhou" would only store again what is being forgotten.
4. **The classifier**: on the message's multilingual-e5 query vector (the vector recall
   computes for the message anyway), the mean of a logistic regression and of the labels
   of the message's nearest labelled neighbours; it takes the best of the whole message and
   of each of its statement sentences, with quoted and fenced material left out. Below
   ``hold_threshold`` (set so that nearly every fact in its training data reaches it) the
   message is skipped; from ``extract_threshold`` it is extracted at once; in between it is
   held, to be extracted together with other messages (one call for several). It is trained
   on labelled messages in 24 languages (``bench/gate.py --train`` writes
   ``gate_classifier.json`` and ``gate_neighbours.npz`` beside this module) and measured on
   separate labelled sets (``bench/data/heard/``).

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

import io
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from assistant.inference import models
from assistant.memory.wording import SENTENCE

__all__ = [
    "CLASSIFIER",
    "Classifier",
    "Decision",
    "Neighbours",
    "Verdict",
    "fact_score",
    "judge",
    "screen",
]

MAX_JUDGED_CHARS = 2000
"""The classifier reads the vector of the message's first this-many characters (what
recall embeds as its query); a longer message is sent without a score."""


Decision = Literal["extract", "hold", "skip"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Whether a message goes to extraction, and why."""

    decision: Decision
    """``extract``: the model reads it in this turn; ``hold``: it reads it with the next
    messages of the thread, within `assistant.run.context.Context.extraction_hold_s`;
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
    sentences = [s.strip() for s in SENTENCE.findall(text) if _words(s)]
    if sentences and all(_MEMORY_REQUEST.search(sentence) for sentence in sentences):
        return Verdict(decision="skip", reason="only about memory: the memory tools answer it")
    return None


# --------------------------------------------------------------------------- classifier


@dataclass(frozen=True, kw_only=True, eq=False)
class Neighbours:
    """Labelled messages' e5 vectors: the share of facts among the nearest ones."""

    vectors: npt.NDArray[np.float32]
    """One unit-length row per labelled message."""
    facts: npt.NDArray[np.float32]
    """1.0 where that message states a fact, else 0.0."""
    k: int
    """How many nearest messages vote."""
    sharpness: float
    """Votes weigh ``exp(sharpness * (similarity - best similarity))``: nearer counts more."""

    def share(self, vector: Sequence[float] | npt.NDArray[np.float64]) -> float:
        """The weighted share of facts among the ``k`` messages nearest ``vector``."""
        query = np.asarray(vector, dtype=np.float32)
        similarity = self.vectors @ (query / (np.linalg.norm(query) or 1.0))
        k = min(self.k, len(similarity))
        nearest = np.argpartition(-similarity, k - 1)[:k]
        votes = np.exp(self.sharpness * (similarity[nearest] - similarity[nearest].max()))
        return float(votes @ self.facts[nearest] / votes.sum())

    @classmethod
    def from_npz(cls, data: bytes, *, k: int, sharpness: float) -> Neighbours:
        """Read what ``bench/gate.py --train`` wrote: int8 vectors, a scale, the labels."""
        with np.load(io.BytesIO(data)) as saved:
            vectors = saved["vectors"].astype(np.float32) * np.float32(saved["scale"])
            facts = saved["facts"].astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return cls(vectors=vectors, facts=facts, k=k, sharpness=sharpness)


@dataclass(frozen=True, kw_only=True)
class Classifier:
    """P(the message states a durable fact) from its e5 query vector.

    The logistic regression alone, or, with ``neighbours``, the mean of it and of the
    nearest labelled messages' share of facts (which catches the phrasings a linear model
    on the vector misses: a request about a pasted text, a momentary state).
    """

    weights: tuple[float, ...]
    bias: float
    hold_threshold: float
    """Below it a message is skipped; chosen so that nearly every fact reaches it."""
    extract_threshold: float
    """From it a message is extracted at once; between the two it is held for a batch."""
    about: dict[str, Any]
    """How it was trained and measured (written by ``bench/gate.py --train``)."""
    neighbours: Neighbours | None = None

    @cached_property
    def _weights(self) -> npt.NDArray[np.float64]:
        return np.asarray(self.weights, dtype=np.float64)

    def score(self, vector: Sequence[float]) -> float:
        """The probability that the message behind ``vector`` states a fact."""
        query = np.asarray(vector, dtype=np.float64)
        if query.shape != self._weights.shape:
            raise ValueError(f"a {len(query)}-dim vector for a {len(self.weights)}-dim gate")
        logit = self.bias + float(self._weights @ query)  # on every turn: numpy, not a loop
        linear = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))
        if self.neighbours is None:
            return linear
        return (linear + self.neighbours.share(query)) / 2

    @classmethod
    def from_json(cls, data: dict[str, Any], neighbours: bytes | None = None) -> Classifier:
        """Read what ``bench/gate.py --train`` wrote (``neighbours``: the ``.npz`` file)."""
        voting = data.get("neighbours")
        return cls(
            weights=tuple(float(w) for w in data["weights"]),
            bias=float(data["bias"]),
            hold_threshold=float(data["hold_threshold"]),
            extract_threshold=float(data["extract_threshold"]),
            about=dict(data.get("about", {})),
            neighbours=Neighbours.from_npz(
                neighbours, k=int(voting["k"]), sharpness=float(voting["sharpness"])
            )
            if neighbours is not None and voting
            else None,
        )


_PACKAGE = resources.files("assistant.extraction")
CLASSIFIER = Classifier.from_json(
    json.loads(_PACKAGE.joinpath("gate_classifier.json").read_text(encoding="utf-8")),
    _PACKAGE.joinpath("gate_neighbours.npz").read_bytes(),
)
"""The shipped classifier, read once at import (file reads inside a run would block)."""

MAX_SENTENCES_SCORED = 6
"""A message is also scored part by part (`statements`), up to this many parts."""

_QUESTION_END = ("?", "？", "؟", ";")
"""How a question ends in the scripts the embeddings cover (``;`` is the Greek mark)."""

_CLAUSE_BREAK = re.compile(r"[,，、،;؛]\s*")
"""Where a sentence breaks into clauses: commas and semicolons of the scripts covered."""


def statements(text: str) -> list[str]:
    """The parts of a message that may state something on their own, besides the whole.

    A fact followed by a request ("I work night shifts. Can you suggest a lunch?") reads as
    a request as a whole; its first sentence alone reads as the fact it is. So, in a
    message of several sentences, each one that does not end as a question counts; and in a
    question, each clause before its last ("Flying to Rome on the 3rd, what should I pack?").

    >>> statements("I work night shifts. Can you suggest a quick lunch?")
    ['I work night shifts.']
    >>> statements("Flying to Rome on the 3rd, what should I pack?")
    ['Flying to Rome on the 3rd']
    >>> statements("Allergic to shellfish.")
    []
    """
    sentences = [s.strip() for s in SENTENCE.findall(text) if _says_something(s)]
    found = [s for s in sentences if not s.endswith(_QUESTION_END)] if len(sentences) > 1 else []
    for question in (s for s in sentences if s.endswith(_QUESTION_END)):
        clauses = [c.strip() for c in _CLAUSE_BREAK.split(question)]
        found += [c for c in clauses[:-1] if _says_something(c)]
    return found[:MAX_SENTENCES_SCORED]


def _says_something(text: str) -> bool:
    """Whether ``text`` has two words, or a CJK letter (words there are not spaced)."""
    return len(_words(text).split()) > 1 or _cjk(text)


def _cjk(text: str) -> bool:
    """Whether ``text`` has a CJK or kana/hangul letter (words there are not space-separated)."""
    return any(
        unicodedata.name(char, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))
        for char in text
    )


_MATERIAL = re.compile(
    r"```.*?(?:```|$)|“[^”]{12,}”|「[^」]{12,}」|『[^』]{12,}』|«[^»]{12,}»|„[^“”]{12,}[“”]"
    r"|\"[^\"]{12,}\"|‘[^’]{12,}’|(?<!\w)'[^'\n]{12,}'(?!\w)",
    re.DOTALL,
)
"""Quoted or fenced text of some length: material handed over to work on (to translate,
polish, debug), not something the user says about themselves."""


def own_words(text: str) -> str:
    """``text`` with quoted and fenced material replaced by "…".

    >>> own_words('Translate this: "my brother lives in Paris and works at a bank"')
    'Translate this: …'
    >>> own_words("Fix the commas: 'my sister, who lives in Rome is a nurse'")
    'Fix the commas: …'
    >>> own_words('Call me "Bo".')
    'Call me "Bo".'
    >>> own_words("I'm vegan and don't eat honey, it's my kids' rule too.")
    "I'm vegan and don't eat honey, it's my kids' rule too."
    """
    return _MATERIAL.sub("…", text)


async def fact_score(text: str, *, classifier: Classifier = CLASSIFIER) -> float:
    """The classifier's score: the message as a whole, or its best statement sentence.

    Quoted and fenced material is left out (`own_words`), unless nothing else is left.
    """
    text = own_words(text) if _words(own_words(text)) else text
    # The whole message's vector is usually ready (recall's query, prefetched when the run
    # was created); its statements are embedded together, in one request.
    vectors = await models.E5Embeddings().aembed_queries([text, *statements(text)])
    return max(classifier.score(vector) for vector in vectors)


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
