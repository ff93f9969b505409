"""What the command line prints: consoles, tables of facts, threads and metrics.

Text from the server (facts, episodes, messages, the audit trail, error details) is shown
through `terminal_safe` (or `plain_text`, `escape_markup` and `terminal_safe_json`, which
use it), so a stored fact cannot move the cursor, clear the screen, retitle the window or
plant a link: the terminal gets no escape sequence or control character from it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

out = Console(highlight=False, emoji=False, soft_wrap=True)
"""Standard output (replies, tables); resolves ``sys.stdout`` at each write. Lines of text
are left for the terminal to wrap, so a pasted error or reply has no inserted breaks."""
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)
"""Standard error (errors and notes)."""


_ESCAPE_SEQUENCES = re.compile(
    r"""
      (?:\x1b\[|\x9b) [0-?]* [ -/]* [@-~]                  # CSI: colours, cursor, clear screen
    | (?:\x1b[]PX^_]|[\x90\x98\x9d-\x9f]) .*? (?:\x07|\x1b\\|\x9c|$)  # OSC, DCS, SOS, PM, APC
    | \x1b [ -/]* [0-~]?                                  # any other escape (ESC c resets)
    """,
    re.VERBOSE | re.DOTALL,
)
"""Terminal escape sequences, whole: CSI ones, and strings (an OSC sets the window title or
plants a hyperlink) up to their terminator or the end of the text."""

_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL, but for tab and newline (``\r`` rewrites a line)."""


def terminal_safe(text: object) -> str:
    r"""``text`` as a string a terminal only prints: no escape sequences, no control characters.

    Tabs and newlines stay; every other control character (BEL, backspace, ``\r``, C1 codes)
    goes, and so does every escape sequence, whole.

    >>> terminal_safe("Lives in \x1b[2J\x1b[31mParis\x1b[0m\r\x07")
    'Lives in Paris'
    >>> terminal_safe("\x1b]0;pwned\x07Likes \x1b]8;;http://evil.example\x1b\\tea\x1b]8;;\x1b\\")
    'Likes tea'
    >>> terminal_safe("two\nlines\tand a tab\x9b6n")
    'two\nlines\tand a tab'
    """
    return _CONTROL_CHARACTERS.sub("", _ESCAPE_SEQUENCES.sub("", str(text)))


def plain_text(value: object, style: str = "") -> Text:
    """``value`` as a Rich `Text`: never markup, and `terminal_safe`."""
    return Text(terminal_safe(value), style=style)


def escape_markup(text: str) -> str:
    """Text with Rich markup characters made literal, and `terminal_safe`."""
    return escape(terminal_safe(text))


def terminal_safe_json(data: Any) -> str:
    r"""``data`` as indented JSON that a terminal only prints, and that loads back the same.

    JSON escapes C0 control characters itself; DEL and C1 ones (``\x9b`` starts a CSI on
    some terminals) are escaped here too.

    >>> print(terminal_safe_json({"content": "a\x1b[2J\x9b2Jb"}))
    {
      "content": "a\u001b[2J\u009b2Jb"
    }
    """
    text = json.dumps(data, ensure_ascii=False, indent=2)
    return re.sub(r"[\x7f-\x9f]", lambda match: f"\\u{ord(match.group()):04x}", text)


def _date(value: Any) -> str:
    """The date part of an ISO 8601 timestamp."""
    return str(value or "")[:10]


def _short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def facts_table(
    facts: list[dict[str, Any]], *, title: str, history: bool = False, scores: bool = False
) -> Table:
    """A table of facts: key, content, category, profile pin, status, when learned.

    With ``history``, each fact also lists its earlier wordings, and a superseded fact
    names the fact that replaced it. With ``scores``, a first column shows each fact's
    match score (a search's).
    """
    by_key = {str(fact.get("key")): fact for fact in facts}
    table = Table(title=title, title_justify="left")
    if scores:
        table.add_column("Match", justify="right", no_wrap=True)
    table.add_column("Key", style="dim", no_wrap=True)
    table.add_column("Fact", overflow="fold")
    table.add_column("Category")
    table.add_column("Profile")
    table.add_column("Status")
    table.add_column("Learned", no_wrap=True)
    for fact in facts:
        current = fact.get("status", "current") != "superseded"
        content = plain_text(fact.get("content", ""), style="" if current else "dim strike")
        if history:
            for entry in fact.get("history") or []:
                if entry.get("event") == "superseded":
                    successor = by_key.get(str(entry.get("by")), {}).get("content", entry.get("by"))
                    line = f"\n  replaced {_date(entry.get('at'))} by {terminal_safe(successor)!r}"
                else:
                    event, when = entry.get("event"), _date(entry.get("at"))
                    line = f"\n  {event} {when}, was {terminal_safe(entry.get('content'))!r}"
                content.append(terminal_safe(line), style="dim")
        score = fact.get("score")
        table.add_row(
            *([f"{score:.2f}" if isinstance(score, int | float) else ""] if scores else []),
            plain_text(str(fact.get("key", ""))[:8]),
            content,
            plain_text(fact.get("category", "")),
            "pinned" if fact.get("pinned") else "",
            "current" if current else "superseded",
            _date(fact.get("created_at")),
        )
    return table


def threads_table(threads: list[dict[str, Any]], *, current: str | None = None) -> Table:
    """A table of threads: id, last update, message count, first message."""
    table = Table(title="Threads", title_justify="left")
    table.add_column("Thread", no_wrap=True)
    table.add_column("Updated", no_wrap=True)
    table.add_column("Messages", justify="right")
    table.add_column("Started with", overflow="ellipsis")
    for thread in threads:
        values = thread.get("values") if isinstance(thread.get("values"), dict) else {}
        messages = list((values or {}).get("messages") or [])
        first = next((m for m in messages if m.get("type") == "human"), None)
        thread_id = str(thread["thread_id"])
        marker = " ←" if thread_id == current else ""
        table.add_row(
            plain_text(thread_id + marker),
            plain_text(str(thread.get("updated_at", ""))[:16].replace("T", " ")),
            str(len(messages)),
            plain_text(_short(message_text(first.get("content"))) if first else ""),
        )
    return table


OUTCOME_WORDS = {
    "kept": "kept",
    "nothing": "nothing to keep",
    "held": "held for a batch",
    "skipped": "skipped",
    "failed": "failed",
    "done": "extracted",
}
"""What memory made of a message, in words (``done`` is what older turns recorded)."""

OUTCOME_STYLES = {"kept": "green", "held": "yellow", "skipped": "dim", "failed": "bold red"}


def outcome_words(outcome: Any) -> str:
    """An extraction outcome (see `assistant.memory.heard`) in words.

    >>> outcome_words("nothing"), outcome_words("skipped"), outcome_words("new")
    ('nothing to keep', 'skipped', 'new')
    """
    return OUTCOME_WORDS.get(str(outcome or ""), str(outcome or ""))


def heard_table(entries: list[dict[str, Any]], *, title: str) -> Table:
    """A table of what memory made of the latest messages: when, the message, outcome, why.

    Every piece of text from the server is a `plain_text`, never markup.
    """
    table = Table(title=title, title_justify="left")
    table.add_column("When (UTC)", no_wrap=True)
    table.add_column("Message", overflow="fold")
    table.add_column("Outcome", no_wrap=True)
    table.add_column("Reason", overflow="fold")
    for entry in entries:
        outcome = str(entry.get("outcome", ""))
        table.add_row(
            plain_text(str(entry.get("at", ""))[:16].replace("T", " ")),
            plain_text(entry.get("excerpt", "")),
            plain_text(outcome_words(outcome), style=OUTCOME_STYLES.get(outcome, "")),
            plain_text(entry.get("reason", ""), style="dim"),
        )
    return table


def print_messages(messages: list[dict[str, Any]]) -> None:
    """The thread's messages, one speaker label each; tool traffic dimmed."""
    for message in messages:
        kind = message.get("type")
        text = message_text(message.get("content"))
        if kind == "human":
            out.print(Text("you> ", style="bold cyan") + plain_text(text))
        elif kind == "ai":
            for call in message.get("tool_calls") or []:
                called = _short(f"{call.get('name')} {call.get('args')}", 100)
                out.print(plain_text(f"  (called {called})", style="dim"))
            if text:
                out.print(Text("assistant> ", style="bold green") + plain_text(text))
        elif kind == "tool":
            out.print(plain_text(f"  ({message.get('name')}: {_short(text, 100)})", style="dim"))


def metrics_table(metrics: dict[str, Any]) -> Table:
    """What memory did in the thread's last turn (see `assistant.run.state.TurnMetrics`)."""
    table = Table(title="Last turn", title_justify="left", show_header=False)
    table.add_column("", style="dim")
    table.add_column("")
    rows = [
        ("profile facts", len(metrics.get("profile_fact_ids") or [])),
        ("recalled facts", len(metrics.get("recalled_fact_ids") or [])),
        ("episodes", len(metrics.get("episode_thread_ids") or [])),
        ("memory tokens", metrics.get("memory_tokens", 0)),
        ("prompt tokens", metrics.get("prompt_tokens", 0)),
        ("extraction", outcome_words(metrics.get("extraction"))),
        ("extraction reason", metrics.get("extraction_reason", "")),
        ("added", len(metrics.get("added") or [])),
        ("updated", len(metrics.get("updated") or [])),
        ("superseded", len(metrics.get("superseded") or [])),
        ("confirmed", len(metrics.get("confirmed") or [])),
        ("compressed", "yes" if metrics.get("compressed") else "no"),
    ]
    for name, value in rows:
        table.add_row(name, plain_text(value))
    return table


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of content blocks.

    >>> message_text([{"type": "text", "text": "Hello"}, {"type": "image_url"}, " world"])
    'Hello world'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        )
    return ""
