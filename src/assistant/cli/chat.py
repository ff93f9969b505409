"""The interactive chat loop (``assistant chat``) and its slash commands."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import httpx

from assistant.cli.client import CliError, RunFailedError, Server, explain
from assistant.cli.render import (
    err,
    escape_markup,
    facts_table,
    out,
    plain_text,
    terminal_safe,
    threads_table,
)

CHAT_HELP = (
    "/new starts a thread, /threads lists yours, /memories lists what I remember, "
    "/forget <text> forgets a fact, /quit (or Ctrl-D) leaves."
)


def best_match(server: Server, target: str) -> dict[str, Any]:
    """The fact ``target`` names: by key (or a key prefix of 8+), else the best text match.

    A target that looks like a key is only ever a key, so a mistyped key never deletes
    whichever fact happens to match best; a text only finds a fact that matches it (the
    server's relevance floor), never the least unrelated one. Keys reach superseded facts
    too (an old address can be forgotten); text matches only current ones, as recall does.

    Raises:
        CliError: The user has no fact that matches.
    """
    target = target.strip()
    if not target:
        raise CliError("Say which fact: a key from `assistant memories list`, or some of its text.")
    if len(target) >= 8 and all(c in "0123456789abcdef" for c in target.lower()):
        facts = server.facts(include_superseded=True)
        keyed = [fact for fact in facts if str(fact.get("key", "")).startswith(target.lower())]
        if len(keyed) != 1:
            found = "matches several facts" if keyed else "matches no fact"
            raise CliError(f"The key {target!r} {found} (see `assistant memories list`).")
        return keyed[0]
    matches = server.facts(query=target)
    if not matches:
        raise CliError(
            f"No stored fact matches {target!r} for user {server.user_id!r}; nothing was "
            "forgotten (see `assistant memories list`)."
        )
    return matches[0]


def match_note(fact: dict[str, Any]) -> str:
    """How well a fact found by text matched, for the question before forgetting it.

    >>> match_note({"score": 0.1234}), match_note({})
    (' (match 0.12)', '')
    """
    score = fact.get("score")
    return f" (match {score:.2f})" if isinstance(score, int | float) else ""


# --------------------------------------------------------------------------- chat


def memory_line(metrics: dict[str, Any]) -> str:
    """What memory made of the turn's message, when it kept something or skipped it.

    >>> memory_line({"extraction": "kept", "added": ["k1"]})
    'kept 1 fact'
    >>> memory_line({"extraction": "kept", "added": ["k1"], "superseded": ["k0"]})
    'kept 2 facts'
    >>> memory_line({"extraction": "skipped", "extraction_reason": "an acknowledgement"})
    'skipped (an acknowledgement)'
    >>> memory_line({"extraction": "nothing", "extraction_reason": "already known 1"})
    'nothing new to keep (already known 1)'
    >>> memory_line({"extraction": "held"})
    'held, to be read with your next messages'
    """
    outcome, reason = metrics.get("extraction"), str(metrics.get("extraction_reason") or "")
    if outcome == "kept":
        count = sum(len(metrics.get(name) or []) for name in ("added", "updated", "superseded"))
        return f"kept {count} fact{'' if count == 1 else 's'}"
    if outcome == "held":
        return "held, to be read with your next messages"
    if outcome in ("skipped", "nothing"):
        words = "skipped" if outcome == "skipped" else "nothing new to keep"
        return f"{words} ({reason})" if reason else words
    return ""


def show_extraction(metrics: dict[str, Any]) -> None:
    """What memory made of the turn's message: a failure in yellow, else `memory_line`."""
    if metrics.get("extraction") == "failed":
        reason = str(metrics.get("extraction_reason") or "the server log says why")
        err.print(
            plain_text(
                f"  memory: nothing was saved from this message (extraction failed: {reason})",
                style="yellow",
            )
        )
    elif heard := memory_line(metrics):
        out.print(plain_text(f"  memory: {heard}", style="dim"))


def read_line(prompt: str) -> str:
    """One line of input after ``prompt`` (Rich markup); raises EOFError at end of input.

    Input that does not come from a terminal (a pipe, a test) is echoed after the prompt,
    so the transcript reads like a conversation.
    """
    line = out.input(prompt)
    if not sys.stdin.isatty():
        out.print(line, markup=False)
    return line


@dataclass(kw_only=True)
class ChatSession:
    """The chat loop: read a line, stream the reply, show what memory did; or run a command."""

    server: Server
    """The server to talk to."""
    thread_id: str
    """The thread messages go to; ``/new`` replaces it."""

    def run(self) -> None:
        """Chat until ``/quit``, Ctrl-D or Ctrl-C at the prompt."""
        banner = plain_text(f"Chatting as {self.server.user_id}", style="bold")
        where = f" in thread {self.thread_id} on {self.server.connection.url}.\n"
        banner.append(terminal_safe(where))
        banner.append(CHAT_HELP, style="dim")
        out.print(banner)
        while True:
            try:
                line = read_line("[bold cyan]you>[/] ").strip()
            except (EOFError, KeyboardInterrupt):
                out.print()
                return
            if not line:
                continue
            try:
                if line.startswith("/"):
                    if not self.command(line):
                        return
                else:
                    self.turn(line)
            except httpx.HTTPStatusError as error:
                connection = self.server.connection
                reason = explain(error, url=connection.url, token=connection.token)
                err.print(f"[red]{escape_markup(reason)}[/]")
            except CliError as error:
                err.print(f"[red]{escape_markup(str(error))}[/]")

    def turn(self, text: str) -> None:
        """Send one message, print the reply as it streams, then the facts it drew on."""
        out.print("[bold green]assistant>[/] ", end="")
        try:
            for piece in self.server.stream_reply(self.thread_id, text):
                out.print(terminal_safe(piece), end="", markup=False)
        except KeyboardInterrupt:
            out.print("\n[dim](stopped)[/]")
            return
        except RunFailedError as error:
            out.print()
            err.print(f"[red]The run failed: {escape_markup(str(error))}[/]")
            return
        out.print()
        self.show_memory()

    def show_memory(self) -> None:
        """The facts recalled into this turn's prompt, and what the turn stored (dimmed)."""
        values = self.server.thread_values(self.thread_id)
        recalled = [*(values.get("profile") or []), *(values.get("recalled") or [])]
        contents = [str(fact.get("content", "")) for fact in recalled]
        out.print(plain_text(f"  recalled: {' · '.join(contents) or 'nothing'}", style="dim"))
        metrics = values.get("metrics") or {}
        show_extraction(metrics)
        messages = values.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        warning = (last.get("response_metadata") or {}).get("memory_warning")
        if warning:
            err.print(plain_text(f"  warning: {warning}", style="yellow"))
        self.show_changed(metrics)

    def show_changed(self, metrics: dict[str, Any]) -> None:
        """The facts the turn remembered, updated or replaced, by their text (dimmed)."""
        changed = {
            label: list(metrics.get(name) or [])
            for name, label in (
                ("added", "remembered"),
                ("updated", "updated"),
                ("superseded", "replaced"),
            )
        }
        if not any(changed.values()):
            return
        facts = {f["key"]: f for f in self.server.facts(include_superseded=True)}
        for label, keys in changed.items():
            if keys:
                texts = [str(facts.get(key, {}).get("content", key)) for key in keys]
                out.print(plain_text(f"  {label}: {' · '.join(texts)}", style="dim"))

    def command(self, line: str) -> bool:
        """Run one ``/command``; False means leave the chat."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/new":
            self.thread_id = self.server.new_thread()
            out.print(terminal_safe(f"New thread {self.thread_id}."), markup=False)
        elif name == "/threads":
            threads = self.server.threads()
            out.print(threads_table(threads, current=self.thread_id) if threads else "No threads.")
        elif name == "/memories":
            facts = self.server.facts()
            title = escape_markup(f"What I remember about {self.server.user_id}")
            out.print(facts_table(facts, title=title) if facts else "Nothing remembered yet.")
        elif name == "/forget":
            self.forget(rest)
        elif name == "/help":
            out.print(CHAT_HELP)
        else:
            out.print(f"Unknown command {name!r}. {CHAT_HELP}", markup=False)
        return True

    def forget(self, text: str) -> None:
        """Find the fact ``text`` describes, ask, and forget it."""
        if not text:
            out.print("Say what to forget: /forget <some of the fact's text>.")
            return
        fact = best_match(self.server, text)
        content = terminal_safe(fact.get("content", ""))
        if "score" in fact:  # found by text: say what matched, and how well
            out.print(plain_text(f"Best match: {content!r}{match_note(fact)}"))
        try:
            answer = read_line(f"Forget {escape_markup(repr(content))}? \\[y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            out.print("Kept it.")
            return
        self.server.forget(str(fact["key"]))
        out.print(plain_text(f"Forgotten: {content}"))


# --------------------------------------------------------------------------- commands
