"""What the command line prints: consoles, tables of facts, threads and metrics."""

from __future__ import annotations

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


def escape_markup(text: str) -> str:
    """Text with Rich markup characters made literal."""
    return escape(text)


def _date(value: Any) -> str:
    """The date part of an ISO 8601 timestamp."""
    return str(value or "")[:10]


def _short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def facts_table(facts: list[dict[str, Any]], *, title: str, history: bool = False) -> Table:
    """A table of facts: key, content, category, profile pin, status, when learned.

    With ``history``, each fact also lists its earlier wordings, and a superseded fact
    names the fact that replaced it.
    """
    by_key = {str(fact.get("key")): fact for fact in facts}
    table = Table(title=title, title_justify="left")
    table.add_column("Key", style="dim", no_wrap=True)
    table.add_column("Fact", overflow="fold")
    table.add_column("Category")
    table.add_column("Profile")
    table.add_column("Status")
    table.add_column("Learned", no_wrap=True)
    for fact in facts:
        current = fact.get("status", "current") != "superseded"
        content = Text(str(fact.get("content", "")), style="" if current else "dim strike")
        if history:
            for entry in fact.get("history") or []:
                if entry.get("event") == "superseded":
                    successor = by_key.get(str(entry.get("by")), {}).get("content", entry.get("by"))
                    line = f"\n  replaced {_date(entry.get('at'))} by {successor!r}"
                else:
                    event, when = entry.get("event"), _date(entry.get("at"))
                    line = f"\n  {event} {when}, was {entry.get('content')!r}"
                content.append(line, style="dim")
        table.add_row(
            str(fact.get("key", ""))[:8],
            content,
            Text(str(fact.get("category", ""))),
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
            thread_id + marker,
            str(thread.get("updated_at", ""))[:16].replace("T", " "),
            str(len(messages)),
            Text(_short(message_text(first.get("content"))) if first else ""),
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

    Every piece of text from the server is a `Text`, never markup.
    """
    table = Table(title=title, title_justify="left")
    table.add_column("When (UTC)", no_wrap=True)
    table.add_column("Message", overflow="fold")
    table.add_column("Outcome", no_wrap=True)
    table.add_column("Reason", overflow="fold")
    for entry in entries:
        outcome = str(entry.get("outcome", ""))
        table.add_row(
            str(entry.get("at", ""))[:16].replace("T", " "),
            Text(str(entry.get("excerpt", ""))),
            Text(outcome_words(outcome), style=OUTCOME_STYLES.get(outcome, "")),
            Text(str(entry.get("reason", "")), style="dim"),
        )
    return table


def print_messages(messages: list[dict[str, Any]]) -> None:
    """The thread's messages, one speaker label each; tool traffic dimmed."""
    for message in messages:
        kind = message.get("type")
        text = message_text(message.get("content"))
        if kind == "human":
            out.print(Text("you> ", style="bold cyan") + Text(text))
        elif kind == "ai":
            for call in message.get("tool_calls") or []:
                called = _short(f"{call.get('name')} {call.get('args')}", 100)
                out.print(Text(f"  (called {called})", style="dim"))
            if text:
                out.print(Text("assistant> ", style="bold green") + Text(text))
        elif kind == "tool":
            out.print(Text(f"  ({message.get('name')}: {_short(text, 100)})", style="dim"))


def metrics_table(metrics: dict[str, Any]) -> Table:
    """What memory did in the thread's last turn (see `assistant.state.TurnMetrics`)."""
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
        table.add_row(name, Text(str(value)))
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
