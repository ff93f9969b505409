"""The extraction gate the project shipped before issue 19, kept as the baseline of bench/gate.py.

A rule-based reading of English and Chinese: a clause with a first-person subject or a fact
cue that is neither a question nor a request. It kept 6 of 35 ordinary facts end to end
(issue 19), so it is no longer in the product; it is measured here beside the gate that
replaced it.
"""

from __future__ import annotations

import re

_MEMORY_REQUEST = re.compile(
    r"(?:^|[.!?。！？]\s*)(?:please\s+|can you\s+|could you\s+)?(?:forget|delete)\b"
    r"|what (?:do|did|else do) you (?:remember|know|recall) about me"
    r"|(?:do|can|could) you (?:still )?(?:remember|recall)\b"
    r"|\b(?:remind me|tell me) (?:what|where|who|when|how|which|my)\b"
    r"|\btell me (?:what you know|everything you know) about me"
    r"|(?:^|[.!?。！？]\s*)(?:请)?(?:忘掉|忘记|删掉|删除)"
    r"|你(?:还)?(?:记得|知道|记住了)(?:关于)?(?:我|些什么|什么)|你对我(?:有多少)?了解"
    r"|(?:提醒|告诉)我(?:一下)?(?:我|什么|哪)",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_QUOTED = re.compile(
    r"“[^”]*”|「[^」]*」|『[^』]*』|\"[^\"]*\"|(?:^|(?<=[\s:：]))'[^']*'(?=[\s.,!?;:。，！？]|$)"
)
"""Quoted text: material to rewrite or translate, not something said about the user."""
_FENCED = re.compile(r"```.*?(?:```|$)", re.DOTALL)
"""A fenced block (code, a log): material to work on."""
_LEAD_IN = re.compile(r"[:：][ \t]*\n")
"""The end of a lead-in ("Polish this email:", "帮我润色一下这段话：") before pasted text."""
_CLAUSE = re.compile(r"[,，;；:：]\s*")
_SUBJECT = re.compile(
    r"\b(i|i'm|im|i've|i'd|i'll|my|mine|we|we're|we've|our|ours)\b"
    r"|(?<![帮给让教告诉跟替和问请发])(我|咱|本人)",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(please|can|could|would|will|help|write|draft|give|tell|show|explain|compare|make|"
    r"list|suggest|find|recommend|translate|summari[sz]e|check|fix|remind|let's|lets)\b"
    r"|^\s*(请|帮|麻烦|能不能|可以|给我|替我|告诉我|推荐|翻译|解释|写|列|提醒)",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"^\s*(how|what|what's|whats|why|which|where|where's|when|who|who's|whom|whose|"
    r"is|are|am|was|were|do|does|did|should|shall|isn't|aren't)\b"
    r"|什么(?![都也])|哪(?!儿都|里都|都)|谁|几(?:个|点|岁|号|月|年|天|次)|怎么|怎样|如何|多少|为什么|"
    r"是否|是不是|有没有|吗\s*$|呢\s*$|么\s*$",
    re.IGNORECASE,
)
_ONE_OFF = re.compile(
    r"\b(?:right now|at the moment|just now)\b|现在在|此刻|这会儿"
    r"|\bi (?:just )?(?:tried|made|cooked|baked|followed|used) your\b"
    r"|(?:照着|按照|按着|用了)你(?:的|说的|给的)",
    re.IGNORECASE,
)
"""Where the user is at this moment, or how the assistant's own suggestion worked out: the
context of a request ("I'm at the airport right now", "我刚照着你的方子做了…"), not a fact."""
_NEAR_DAY = re.compile(
    r"\b(?:today|tonight|tomorrow|this (?:morning|afternoon|evening|week)|next week|"
    r"(?:on|this|next) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b"
    r"|今天|今晚|明天|后天|这周|本周|下周|(?:周|星期|礼拜)[一二三四五六日天]",
    re.IGNORECASE,
)
_APPOINTMENT = re.compile(r"\b(?:call|meeting|appointment)s?\b|开会|会议|见面", re.IGNORECASE)
"""An appointment on a near day ("a call with my manager on Friday", "我下周要和经理开会"): an
entry for a calendar, not a durable fact (a deadline or a trip still counts)."""
_LASTING = re.compile(
    r"\b(?:remember|forget|live|lives|living|work|works|working|job|moved|moving|name|"
    r"allergic|prefer|like|love|hate|study|studying|learning)\b"
    r"|记住|别忘|住|工作|上班|上学|学|过敏|喜欢|讨厌|叫|搬",
    re.IGNORECASE,
)
"""Words of a lasting fact, which count even in a clause about this moment."""
_FACT_CUE = re.compile(
    r"\b(remember|don't forget|i am|i'm|i have|i've got|i live|i work|i moved|i prefer|"
    r"i like|i love|i hate|i can't|my name|my \w+ (is|are))\b|^call me \w+[.!]?$"
    r"|记住|别忘|我(是|叫|住|有|喜欢|不喜欢|对|搬|决定|养|在做)",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[tuple[str, bool]]:
    """The text's clauses, each with whether it ends a question (``?`` or ``？``).

    >>> _clauses("I have two cats, any name ideas? Thanks.")
    [('I have two cats', False), ('any name ideas?', True), ('Thanks.', False)]
    """
    found: list[tuple[str, bool]] = []
    for sentence in _SENTENCE.findall(text):
        parts = [part.strip() for part in _CLAUSE.split(sentence.strip()) if part.strip()]
        asks = sentence.rstrip().endswith(("?", "？"))
        found.extend((part, asks and index == len(parts) - 1) for index, part in enumerate(parts))
    return found


def worth_extracting(text: str) -> bool:
    r"""Whether a message may state a durable fact; requests and questions alone do not.

    The message is read clause by clause. Questions ("Where do I live?", "我叫什么名字？",
    a clause that starts like a question, or a Chinese question word) and requests to
    recall or forget memories never count: the memory tools answer those, and extracting
    from "forget that I live in Hangzhou" would only confirm the fact being forgotten.
    Any other clause counts when it carries a clear fact cue ("my name", "I'm allergic",
    "remember that", "我叫", "我对…过敏") or, unless it is a request ("Help me plan my
    trip", "帮我…"), a first-person subject. A statement next to a question still counts.
    A clause about this very moment, about an appointment in the next few days, or about
    how the assistant's own suggestion turned out ("I'm at the airport right now", "I have
    a call with my manager on Friday", "我下周要和经理开会", "I just tried your recipe") is
    the context of a request and does not count, unless it names something lasting (where
    they live or work, a name, an allergy, a liking). Material to work on is left out:
    quoted text, fenced blocks, and what a request pastes after its lead-in ("Polish this
    email:" and a line break).

    >>> worth_extracting("I moved to Chengdu last month")
    True
    >>> worth_extracting("My name is Alice, what's yours?")
    True
    >>> worth_extracting("Can you help me plan my trip to Kyoto?")
    False
    >>> worth_extracting("thanks!")
    False
    >>> worth_extracting("我对花生过敏")
    True
    >>> worth_extracting("帮我写一封邮件。")
    False
    >>> worth_extracting("Please forget that I live in Hangzhou")
    False
    >>> worth_extracting("Don't forget that I'm allergic to peanuts")
    True
    >>> worth_extracting("Why do I get KeyError when I delete keys? I use Python 3.12.")
    True
    >>> worth_extracting("Make this sound more professional: 'we kinda messed up the deploy'")
    False
    >>> [worth_extracting(t) for t in ("Where do I live?", "What is my name?", "我住在哪里？",
    ...                                "我叫什么名字？", "我有两只猫，你知道它们该叫什么吗？")]
    [False, False, False, False, True]
    >>> [worth_extracting(t) for t in ("I'm at the airport in Rome right now. Which bus?",
    ...     "我现在在机场，去市区怎么走？", "I just tried your curry recipe. It came out dry.",
    ...     "I'm working from home right now, I live in Oslo.", "我现在在一家银行工作。")]
    [False, False, False, True, True]
    >>> worth_extracting("Polish this email, please:\n\nWe moved our offices to Lyon.")
    False
    >>> worth_extracting("I'm vegetarian. Adapt this recipe:\n\nTwo eggs, one onion.")
    True
    """
    text = text.strip()
    if _MEMORY_REQUEST.search(text):
        return False
    for clause, asks in _clauses(_said_by_user(text)):
        if asks or _QUESTION.search(clause):
            continue
        one_off = _ONE_OFF.search(clause) or (
            _APPOINTMENT.search(clause) and _NEAR_DAY.search(clause)
        )
        if one_off and not _LASTING.search(clause):
            continue
        if _FACT_CUE.search(clause):
            return True
        if not _REQUEST.match(clause) and _SUBJECT.search(clause):
            return True
    return False


def _said_by_user(text: str) -> str:
    r"""``text`` without the material it hands over to work on, each piece replaced by "…".

    Fenced blocks and quoted text go, and so does everything after a lead-in that asks for
    something ("Please polish this email:" and a line break). A lead-in that only
    introduces ("About me:") keeps what follows.

    >>> _said_by_user("帮我润色一下这段话：\n我们计划下个月培训。")
    '帮我润色一下这段话 …'
    >>> _said_by_user("About me:\nI live in Oslo.")
    'About me:\nI live in Oslo.'
    """
    text = _FENCED.sub(" … ", text)
    lead_in = _LEAD_IN.search(text)
    if lead_in and any(_REQUEST.match(clause) for clause, _ in _clauses(text[: lead_in.start()])):
        text = text[: lead_in.start()] + " …"
    return _QUOTED.sub(" … ", text)
