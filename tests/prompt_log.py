"""Reading what the scripted model saw: its call log and the blocks of a system prompt.

Shared by the end-to-end tests (a real server's log) and the in-process long-thread test.
The blocks are the tags the README documents (``<user_profile>``, ``<user_facts>``,
``<past_conversations>``, ``<summary>``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.inference.tokens import TOKENS_PER_MESSAGE, count_text_tokens


def thread_tokens(messages: list[dict[str, Any]]) -> int:
    """Tokens the thread's messages (as get_state returns them) add to a prompt."""
    return sum(TOKENS_PER_MESSAGE + count_text_tokens(str(m["content"])) for m in messages)


# --------------------------------------------------------------------------- prompts


def section(text: str, tag: str) -> str | None:
    """The stripped text inside ``<tag>…</tag>``, or None when the tag is absent."""
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1).strip() if match else None


def block_lines(system: str, tag: str) -> list[str]:
    """The ``- `` lines of the ``<tag>`` block of a system prompt, in order (it must exist)."""
    block = section(system, tag)
    assert block is not None, f"no <{tag}> block in the system prompt:\n{system}"
    return [line.removeprefix("- ").strip() for line in block.splitlines() if line.strip()]


def prompt_profile(system: str) -> list[str]:
    """The pinned facts listed in the ``<user_profile>`` block of a system prompt, in order."""
    return block_lines(system, "user_profile")


def prompt_facts(system: str) -> list[str]:
    """The facts listed in the ``<user_facts>`` block of a system prompt, in order."""
    return block_lines(system, "user_facts")


def prompt_episodes(system: str) -> str | None:
    """The text of the ``<past_conversations>`` block, or None when the prompt has none."""
    return section(system, "past_conversations")


def message_tokens(call: dict[str, Any]) -> int:
    """Tokens of the conversation messages in a logged `respond` call (all but the system)."""
    return int(call["prompt_tokens"]) - TOKENS_PER_MESSAGE - count_text_tokens(call["system"])


@dataclass(frozen=True)
class ScriptedLog:
    """The scripted model's call log: one JSON object per model call, oldest first.

    Kinds: ``respond`` (keys ``system``, ``messages``, ``prompt_tokens``, ``latest``),
    ``extract`` (``operations``: ``[action, content]`` pairs) and ``summarize``
    (``summary``).
    """

    path: Path

    def entries(self) -> list[dict[str, Any]]:
        """Every call logged so far."""
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def mark(self) -> int:
        """The current length of the log, to pass to :meth:`since`."""
        return len(self.entries())

    def since(self, mark: int, kind: str | None = None) -> list[dict[str, Any]]:
        """Calls logged after ``mark``, optionally only those of ``kind``."""
        return [entry for entry in self.entries()[mark:] if kind in (None, entry["kind"])]

    def respond_call(self, marker: str) -> dict[str, Any]:
        """The one `respond` call whose latest user message contains ``marker``."""
        calls = [
            entry
            for entry in self.entries()
            if entry["kind"] == "respond" and marker in entry["latest"]
        ]
        assert len(calls) == 1, (
            f"expected one respond call for {marker!r}, found {len(calls)} in {self.path}"
        )
        return calls[0]
