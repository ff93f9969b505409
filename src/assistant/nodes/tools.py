"""Memory tools the assistant can call in conversation: look up, forget, correct.

Every tool works on the caller's own namespace, derived from the run's identity (the
authenticated user, or ``Context.user_id`` without auth). No tool takes a user id or a
namespace from the model, so a prompt-injected "forget Bob's facts" can only ever reach
the speaker's own memory. Deletions and corrections are written to the audit trail
(``("user_audit", user_id)``) with the thread they came from.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import Item

from assistant.memory import CHAT_VIA
from assistant.run.context import Context
from assistant.run.scope import tool_scope

__all__ = [
    "MEMORY_TOOLS",
    "asks_about_memory",
    "asks_what_is_known",
    "only_asks_what_is_known",
    "asks_to_forget",
    "asks_to_forget_everything",
    "correct_memory",
    "forget_memory",
    "search_memory",
]

SEARCH_LIMIT = 20
"""Most facts one search returns to the model."""


@tool
async def search_memory(query: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Look up what you remember about the user, with each fact's id.

    Use it to answer "what do you remember about me?" (an empty query lists
    everything) and to find the id of a fact before forgetting or correcting it. A query
    returns only the facts that match it, each with its match score; when none does,
    nothing the user described is stored, so there is nothing to forget.
    """
    memory = tool_scope(runtime).memory
    if query.strip():
        found = await memory.search(query, limit=SEARCH_LIMIT)
        if not found:
            return f"No stored fact matches {query.strip()!r}; nothing to forget or correct."
        return "\n".join(
            f"{item.key}: {item.value.get('content', '')} (match {item.score or 0.0:.2f})"
            for item in found
        )
    items: list[Item] = (await memory.facts())[:SEARCH_LIMIT]
    if not items:
        return "No facts are stored about this user."
    return "\n".join(f"{item.key}: {item.value.get('content', '')}" for item in items)


@tool
async def forget_memory(fact_id: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Forget one stored fact about the user, by the id that search_memory gave.

    Only use it when the user asks you to forget or delete something.
    """
    scope = tool_scope(runtime)
    forgotten = await scope.memory.forget(
        fact_id.strip(), actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
    )
    if forgotten is None:
        return f"No fact has the id {fact_id!r}. Call search_memory to find the right id."
    return f"Forgotten: {forgotten.content}"


@tool
async def correct_memory(fact_id: str, corrected: str, runtime: ToolRuntime[Context, Any]) -> str:
    """Replace a stored fact the user says is wrong with the corrected fact.

    `corrected` is the whole fact as it should now read, one short sentence in the
    user's language. The old version is kept as history.
    """
    scope = tool_scope(runtime)
    try:
        await scope.memory.correct(
            fact_id.strip(), corrected, actor=scope.user_id, via=CHAT_VIA, thread_id=scope.thread_id
        )
    except KeyError:
        return f"No fact has the id {fact_id!r}. Call search_memory to find the right id."
    except ValueError as error:
        return f"Could not correct it: {error}"
    return f"Corrected to: {corrected.strip()}"


MEMORY_TOOLS: list[BaseTool] = [search_memory, forget_memory, correct_memory]
"""The tools `respond` binds to the chat model."""


ABOUT_MEMORY = re.compile(
    r"remember|recall|memor|forget|forgot|delete|erase|\bcorrect|\bwrong\b|you know about me"
    r"|记得|记住|记忆|忘|删|更正|纠正|改正|你知道我|記得|記住|記憶|刪"
    r"|覚え|忘れ|削除|記憶|訂正|기억|잊|삭제|정정"
    r"|erinner|vergiss|vergessen|lösch|gedächtnis|korrigier|merk dir|merkst"
    r"|souvien|souvenir|oubli|supprim|effac|mémoire|corrig"
    r"|recuerd|olvid|borra|elimin|memoria|lembr|esquec|apag|memória"
    r"|ricord|dimentic|cancell"
    r"|помни|помнишь|забудь|забыть|удали|памят|исправ"
    r"|onthoud|herinner|vergeet|verwijder|geheugen"
    r"|hatırla|unut|sil\b|pamięt|zapomnij|usuń|nhớ|quên|xóa|ingat|lupa|hapus"
    r"|تذكر|انس|احذف|याद|भूल|हटा",
    re.IGNORECASE,
)
"""Words that ask what the assistant remembers, or to forget or correct it, in the
languages our users write most. It errs towards yes: a word too many only offers the tools."""


WHAT_IS_KNOWN = re.compile(
    r"\bwhat (?:else )?(?:do|did|does|can|could) (?:you|u) (?:actually |really |still |even )?"
    r"(?:know|remember|recall) (?:about|of) me\b"
    r"|\b(?:do|did|can) (?:you|u) (?:know|remember) anything about me\b"
    r"|\bwhat have (?:you|u) (?:learned|learnt|remembered|stored|saved|got) (?:about|on) me\b"
    r"|\btell me (?:what|everything|all) (?:you|u) (?:know|remember) about me\b"
    r"|\bwhat(?:'s|’s| is) in your memory\b|\bwhat do (?:you|u) have (?:on|about) me\b"
    r"|你(?:还|還|都)?(?:记得|知道|记住了?|記得|記住了?)(?:关于|關於)?我(?:的)?"
    r"(?:什么|哪些|些什么|什麼|些什麼)(?!时候|時候|时间|時間|地方)"
    r"|你(?:对|對)我(?:有多少了解|了解(?:多少|什么|什麼|些什么|吗|嗎))"
    r"|(?:关于|關於)我你(?:都)?(?:知道|记得|記得)"
    r"|(?:私|僕|俺|わたし)(?:について|のこと)[、,\s]*(?:を)?(?:何|なに)(?:か|を)?"
    r"(?:知って|覚えて)(?!おい|おく)"
    r"|(?:나|저)에 대해(?:서)?\s*(?:뭘|뭐|무엇을|뭐를|어떤 걸|얼마나)\s*"
    r"(?:알고|기억|알아|아는|아세요)"
    r"|qu[eé] (?:es lo que )?(?:sabes|recuerdas|sabe|recuerda)(?: (?:tú|tu|usted))? "
    r"(?:de|sobre|acerca de) m(?:í|i(?=\s*[?!.,]|\s*$))"
    r"|o que (?:é que )?(?:(?:você|voce|vc|tu) )?(?:sabe|sabes|lembra|se lembra|lembras|"
    r"te lembras)(?: de)? (?:sobre |a respeito de |de )?mim\b"
    r"|(?:qu'est-ce que|que|ce que) (?:tu sais|vous savez|sais-tu|savez-vous|tu retiens|tu te "
    r"souviens|vous vous souvenez) (?:de|sur|à propos de) moi\b"
    r"|was (?:weißt|weisst|wisst|wissen) (?:du|ihr|sie) (?:eigentlich |alles |noch )*"
    r"(?:über|von) mi(?:ch|r)\b|was hast du (?:dir )?(?:über|von) mi(?:ch|r) "
    r"(?:gemerkt|gespeichert)"
    r"|(?:che )?cosa (?:sai|ricordi|sapete|ricordate) (?:di|su) me\b"
    r"|что (?:ты|вы) (?:знаешь|помнишь|знаете|помните) (?:обо|про|о) (?:мне|меня)\b"
    r"|wat (?:weet|onthoud) (?:je|jij|u) (?:over|van) mij\b",
    re.IGNORECASE,
)
"""A question of what the assistant knows about the user, in the languages our users write
most ("what do you remember about me?", "O que você sabe sobre mim?", "你记得我什么？"). A small
model with the user's facts in its system prompt has answered it with the question itself,
or with "I can't share information about your personal life": `respond` then lists the facts
shown under the message, as the user's own words."""


def asks_what_is_known(text: str) -> bool:
    """Whether a message asks what the assistant knows or remembers about the user.

    >>> asks_what_is_known("What do you actually remember about me?")
    True
    >>> asks_what_is_known("O que você sabe sobre mim?"), asks_what_is_known("你记得我什么？")
    (True, True)
    >>> asks_what_is_known("Was weißt du eigentlich über mich?")
    True
    >>> asks_what_is_known("What do you know about Lisbon?"), asks_what_is_known("我记得你")
    (False, False)
    """
    return any(not _quoted(text, match.start()) for match in WHAT_IS_KNOWN.finditer(text))


QUOTING = (":", "：", '"', "“", "«", "'", "「", "『")
"""What comes right before a question someone else asks ("a robot asks: what do you know
about me?"): the user quotes it, and asks nothing of the assistant's memory."""


def _quoted(text: str, start: int) -> bool:
    """Whether the question at ``start`` follows a colon or an opening quote."""
    return text[:start].rstrip().endswith(QUOTING)


def only_asks_what_is_known(text: str) -> bool:
    """Whether a message asks what is known about the user and nothing else of memory.

    Such a message needs no forget or correction, so a model without tools is not asked
    one (`assistant.nodes.requests`).

    >>> only_asks_what_is_known("What do you remember about me?")
    True
    >>> only_asks_what_is_known("What do you know about me? Forget my old address.")
    False
    """
    return asks_what_is_known(text) and not (
        ABOUT_MEMORY.search(WHAT_IS_KNOWN.sub(" ", text)) or asks_to_forget(text)
    )


def asks_about_memory(text: str) -> bool:
    """Whether a message may ask what is remembered, or to forget or correct a memory.

    `respond` offers the memory tools to a model that misuses them (see
    `assistant.inference.providers.ProviderProfile.tools_on_request`) only on such turns.

    >>> asks_about_memory("Please forget that I live in Lisbon.")
    True
    >>> asks_about_memory("你还记得我女儿叫什么吗？")
    True
    >>> asks_about_memory("Vergiss bitte meine alte Adresse.")
    True
    >>> asks_about_memory("My daughter Lily is allergic to peanuts.")
    False
    """
    return bool(ABOUT_MEMORY.search(text)) or asks_what_is_known(text)


ASKING = (
    r"(?:^|[.!?,;:¡¿]\s*|\b(?:please|pls|plz|can you|could you|would you|will you|just|and|"
    r"now|ok|okay|so|want you to|need you to|por favor|s'il te pla[iî]t|s'il vous pla[iî]t|"
    r"per favore|bitte|пожалуйста)\s+)"
)
"""Where a request starts: a sentence's start, or after a word that asks ("please", "can
you", "bitte" …). "I always forget my keys" and "I tend to forget names" ask nothing."""

FORGET_REQUEST = re.compile(
    ASKING + r"(?:forget\b(?!\s+(?:it|about\s+it)\s*(?:$|[,.!?;]))"
    r"|(?:delete|erase|remove)\b.{0,60}\b(?:memory|memories|fact|facts|what you know)\b"
    r"|vergiss\b(?!\s+(?:es\b|nicht|nie))|oublie(?:z)?\b(?!\s+(?:pas|ça\s*[.!]*$))"
    r"|olvida\b|olvídate\b|esque(?:ça|ce)\b|dimentica\b|забудь(?:те)?\b|vergeet\b(?!\s+niet))"
    r"|(?:^|[，。！？,.!?\s]|请|麻烦|帮我)\s*(?:忘掉|忘记)|把.{1,30}忘[掉了记]"
    r"|删[掉除].{0,20}(?:记忆|记住|记得)"
    r"|忘れて(?:ください|下さい|くれ|ほしい)|忘れろ|잊어\s*(?:줘|주세요|줄래)|잊어버려\s*(?:줘|주세요)",
    re.IGNORECASE | re.MULTILINE,
)
"""A request to forget, in the languages our users write most: not a reminder to keep
something in mind ("don't forget…", "别忘了…"), not a user who forgot ("我忘了带钥匙"), and
not "forget it" said to drop a topic, since what it sets off may delete a fact."""


def asks_to_forget(text: str) -> bool:
    """Whether a message asks the assistant to forget something it remembers.

    A model offered the tools may answer such a message in words, "Sure, I've forgotten
    that", and call nothing: `respond` then has the request carried out by a structured
    question (`assistant.nodes.requests`), since a forget must never be only said.

    >>> asks_to_forget("Please forget that I play the cello."), asks_to_forget("请忘掉我的地址")
    (True, True)
    >>> asks_to_forget("Vergiss bitte, dass ich Cello spiele."), asks_to_forget("把我的地址忘了")
    (True, True)
    >>> asks_to_forget("I always forget my keys"), asks_to_forget("我忘了带钥匙")
    (False, False)
    >>> asks_to_forget("Oh, forget it."), asks_to_forget("Oublie ça !")
    (False, False)
    >>> asks_to_forget("Don't forget that I'm allergic to peanuts."), asks_to_forget("别忘了我")
    (False, False)
    >>> asks_to_forget("Why do I get KeyError when I delete keys while iterating over a dict?")
    False
    >>> asks_to_forget("Delete the memory about my old address.")
    True
    """
    return bool(FORGET_REQUEST.search(text)) or asks_to_forget_everything(text)


_POLITE_START = (
    r"(?:(?:hi|hey|ok|okay|so|now|please|pls|can\s+you|could\s+you|would\s+you|will\s+you"
    r"|i\s+want\s+you\s+to|por\s+favor|pode|podes|puedes|bitte|s'il\s+te\s+pla[iî]t"
    r"|s'il\s+vous\s+pla[iî]t|per\s+favore|пожалуйста)[\s,!.]+)*"
)
_POLITE_END = (
    r"(?:[\s,.!]*(?:please|thanks|thank\s+you|por\s+favor|obrigad[oa]|gracias|bitte|danke"
    r"|merci|s'il\s+te\s+pla[iî]t|per\s+favore|grazie|пожалуйста|спасибо"
    r"|and\s+start\s+(?:fresh|over|again)))*[\s.!?。！？]*"
)
_YOU_KNOW = (
    r"(?:that\s+|what\s+)?(?:you|u)(?:'ve|\s+have)?\s+(?:know|remember|learned|learnt|stored"
    r"|saved|kept)"
)
_ABOUT_ME = r"(?:about|of|on)\s+me"
_LATIN_REQUEST = (
    # en
    r"(?:forget|delete|erase|wipe|clear|remove)\s+(?:"
    rf"(?:everything|all)(?:\s+(?:that\s+)?{_YOU_KNOW})?\s+{_ABOUT_ME}"
    rf"|(?:everything|all)\s+{_YOU_KNOW}"
    rf"|all\s+(?:the\s+)?(?:facts|things|memories|information|info)\s+(?:{_YOU_KNOW}\s+)?"
    rf"{_ABOUT_ME}"
    rf"|(?:all\s+)?your\s+(?:whole\s+|entire\s+)?(?:memory|memories)(?:\s+{_ABOUT_ME})?"
    rf"|what\s+{_YOU_KNOW}\s+{_ABOUT_ME})"
    # pt
    r"|(?:esquece|esqueça|esquecer|apaga|apague|apagar|exclui|exclua|deleta)\s+(?:"
    r"tudo\s+(?:o\s+)?que\s+(?:tu\s+|você\s+|vc\s+)?(?:sabes|sabe|lembras|lembra|guardaste"
    r"|guardou)\s+(?:sobre|de)\s+mim|tudo\s+(?:sobre|de)\s+mim|(?:a\s+)?(?:tua|sua)\s+memória)"
    # es
    r"|(?:olvida|olvídate\s+de|olvidate\s+de|borra|elimina)\s+(?:todo\s+lo\s+que\s+(?:sabes"
    r"|recuerdas)\s+(?:de|sobre)\s+m[ií]|todo\s+(?:de|sobre)\s+m[ií]|tu\s+memoria)"
    # fr
    r"|(?:oublie|oubliez|efface|effacez|supprime|supprimez)\s+(?:tout\s+ce\s+que\s+(?:tu\s+sais"
    r"|vous\s+savez)\s+(?:sur|de)\s+moi|tout\s+(?:sur|de)\s+moi|(?:ta|votre)\s+mémoire)"
    # de
    r"|(?:vergiss|lösch|lösche)\s+(?:bitte\s+)?(?:alles,?\s+was\s+du(?:\s+über\s+mich)?\s+"
    r"(?:weißt|weisst)(?:\s+über\s+mich)?|alles\s+über\s+mich|dein\s+gedächtnis)"
    # it
    r"|(?:dimentica|cancella)\s+(?:tutto\s+(?:quello\s+|ciò\s+)?che\s+sai\s+(?:di|su)\s+me"
    r"|tutto\s+(?:di|su\s+di|su)\s+me|la\s+tua\s+memoria)"
    # ru
    r"|(?:забудь|забудьте|удали|сотри)\s+(?:вс[её],?\s+что\s+(?:ты\s+)?(?:знаешь|помнишь)\s+"
    r"обо\s+мне|вс[её]\s+обо\s+мне|обо\s+мне\s+вс[её])"
)
_ABOUT_ME_ZH = r"(?:关于我的|有关我的|跟我有关的)"
_CJK_REQUEST = (
    r"(?:请|麻烦你?|你)?(?:忘掉|忘记|删除|删掉|清空|清除)你?(?:记住|知道|记得)?的?"
    + _ABOUT_ME_ZH
    + r"(?:一切|所有|全部)的?(?:事|事情|信息|记忆|内容)?吧?"
    r"|(?:请|麻烦你?|你)?(?:删除|删掉|清空|清除)你(?:记住|知道|记得)的"
    + _ABOUT_ME_ZH
    + r"?(?:所有|全部)(?:信息|事情|内容|记忆)吧?"
    r"|(?:请|麻烦你?|你)?(?:清空|清除|删除|删掉)你的(?:全部|所有)?记忆吧?"
    r"|(?:请|麻烦你?|你)?把" + _ABOUT_ME_ZH + r"(?:一切|所有|全部)的?(?:事|事情|信息|记忆|内容)?"
    r"都?(?:忘掉|删掉|删除|清空)吧?"
    r"|(?:私|僕|俺)(?:のこと|について)(?:を|は)?(?:全部|すべて|全て)(?:忘れて|削除して|消して)"
    r"(?:ください|下さい|くれ|ほしい)?"
    r"|(?:私|僕|俺)?(?:についての|に関する)(?:記憶|情報)を?(?:全部|すべて|全て)(?:消して|削除して)"
    r"(?:ください|下さい)?"
    r"|나에\s*(?:대해|관해|대한)\s*(?:기억하는|아는)?\s*(?:거|것|걸|정보|기억)?\s*(?:을|를)?\s*"
    r"(?:다|전부|모두)\s*(?:잊어|지워|삭제해)\s*(?:줘|주세요|줄래|버려)?"
)
FORGET_EVERYTHING = re.compile(
    rf"{_POLITE_START}(?:{_LATIN_REQUEST}){_POLITE_END}|(?:{_CJK_REQUEST})[\s。！!？?]*",
    re.IGNORECASE,
)
"""A whole message that asks to forget everything remembered about the user, and only that:
it names the memory ("everything you know about me", "tudo o que sabes sobre mim", "关于我的
一切", "私のことを全部"), since what it sets off deletes every fact. "Forget everything." alone,
a line of a longer message, "clear all", "delete everything in this folder" or "forget
everything I said about the trip" are not it."""


def asks_to_forget_everything(text: str) -> bool:
    r"""Whether a message asks the assistant to forget everything it remembers of the user.

    >>> asks_to_forget_everything("Please forget everything you know about me.")
    True
    >>> asks_to_forget_everything("Esquece tudo o que sabes sobre mim!")
    True
    >>> asks_to_forget_everything("请忘掉关于我的一切。"), asks_to_forget_everything(
    ...     "私のことを全部忘れて")
    (True, True)
    >>> asks_to_forget_everything("Never mind. Forget everything."), asks_to_forget_everything(
    ...     "Steps:\n1. Open the folder\n2. Delete everything you know about me")
    (False, False)
    >>> asks_to_forget_everything("Forget everything I said about the trip.")
    False
    >>> asks_to_forget_everything("I forget everything these days."), asks_to_forget_everything(
    ...     "我把一切都忘了")
    (False, False)
    """
    return FORGET_EVERYTHING.fullmatch(text.strip()) is not None
