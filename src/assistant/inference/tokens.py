"""Offline token counting that is fair to Chinese.

``count_tokens_approximately`` in langchain-core assumes four characters per token,
which undercounts Chinese about fourfold. Here every CJK character (and full-width
punctuation) counts as one token and everything else as four characters per token,
which tracks the cl100k and o200k tokenizers within about 20 % on both languages
without downloading anything.

>>> count_text_tokens("hello world")
3
>>> count_text_tokens("我住在杭州")
5
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

__all__ = [
    "count_message_tokens",
    "count_messages_tokens",
    "count_text_tokens",
    "is_cjk_text",
]

# CJK ideographs, kana, hangul, CJK symbols and full-width forms: about one token each.
_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f"
    "\uff00-\uffef\U00020000-\U0002fa1f]"
)

TOKENS_PER_MESSAGE = 4
"""Overhead per message for its role and separators."""

TOKENS_PER_NON_TEXT_BLOCK = 85
"""What an image or file block costs; the same figure langchain-core uses for images."""


def count_text_tokens(text: str) -> int:
    """Estimate the tokens in ``text``: one per CJK character, four characters per token else."""
    if not text:
        return 0
    wide = len(_WIDE.findall(text))
    narrow = len(text) - wide
    return wide + math.ceil(narrow / 4)


_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def is_cjk_text(text: str) -> bool:
    """Whether ``text`` is mainly CJK: at least as many CJK characters as Latin words.

    >>> is_cjk_text("我的猫叫Mochi"), is_cjk_text("I live in 杭州"), is_cjk_text("")
    (True, False, False)
    """
    wide = len(_WIDE.findall(text))
    return wide > 0 and wide >= len(_LATIN_WORD.findall(text))


def count_message_tokens(message: BaseMessage) -> int:
    """Estimate the tokens one message adds to a prompt."""
    tokens = TOKENS_PER_MESSAGE + count_text_tokens(message.text)
    if isinstance(message.content, list):
        tokens += TOKENS_PER_NON_TEXT_BLOCK * sum(
            1
            for block in message.content
            if isinstance(block, dict) and block.get("type") not in ("text", None)
        )
    if isinstance(message, AIMessage) and message.tool_calls:
        tokens += count_text_tokens(json.dumps(message.tool_calls, ensure_ascii=False))
    return tokens


def count_messages_tokens(messages: Sequence[BaseMessage]) -> int:
    """Estimate the tokens a list of messages adds to a prompt."""
    return sum(count_message_tokens(message) for message in messages)
