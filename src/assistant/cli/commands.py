"""The ``assistant`` commands (Typer): chat, memories and threads."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import anyio
import httpx
import typer
from rich.panel import Panel
from typer.core import TyperGroup

from assistant.cli import bridge
from assistant.cli.chat import ChatSession, best_match, match_note
from assistant.cli.client import CliError, Connection, Server, explain
from assistant.cli.render import (
    err,
    escape_markup,
    facts_table,
    heard_table,
    metrics_table,
    out,
    plain_text,
    print_messages,
    terminal_safe,
    terminal_safe_json,
    threads_table,
)
from assistant.config.constants import PRIVATE_FILE_MODE


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]Error:[/] {escape_markup(message)}")
    raise typer.Exit(1)


class _ReportErrors(TyperGroup):
    """Turns expected failures into a one-line message and exit code 1, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as error:
            _fail(str(error))
        except httpx.HTTPError as error:
            connection = ctx.obj if isinstance(ctx.obj, Connection) else Connection.from_env()
            _fail(explain(error, url=connection.url, token=connection.token))


# --------------------------------------------------------------------------- the server


app = typer.Typer(
    cls=_ReportErrors,
    name="assistant",
    help="Chat with the memory assistant and manage what it remembers about you.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals would include the token
    add_completion=False,
)
memories_app = typer.Typer(
    help="List, search, forget and export your facts; see what memory made of your messages.",
    no_args_is_help=True,
)
threads_app = typer.Typer(help="List, show and delete your threads.", no_args_is_help=True)
app.add_typer(memories_app, name="memories")
app.add_typer(threads_app, name="threads")

UserOption = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        help="Your user id on a server without auth; with auth, the token decides.",
        show_default=False,
    ),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


@app.callback()
def connect(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            help="Server URL; default ASSISTANT_URL, else http://127.0.0.1:2025.",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Bearer token; default ASSISTANT_TOKEN.", show_default=False),
    ] = None,
    user: UserOption = None,
) -> None:
    """Chat with the memory assistant and manage what it remembers about you."""
    defaults = Connection.from_env()
    ctx.obj = Connection(
        url=(url or defaults.url).rstrip("/"),
        token=defaults.token if token is None else token,
        user=user,
    )


def _server(ctx: typer.Context, user: str | None) -> Server:
    """The server from the global options; a command's ``--user`` wins over the global one."""
    connection = ctx.find_root().obj
    assert isinstance(connection, Connection)
    if user:
        connection = Connection(url=connection.url, token=connection.token, user=user)
    server = Server(connection=connection)
    ctx.call_on_close(server.close)
    return server


@app.command()
def chat(
    ctx: typer.Context,
    user: UserOption = None,
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", help="Continue this thread.", show_default=False)
    ] = None,
    new: Annotated[bool, typer.Option("--new", help="Start a new thread (the default).")] = False,
) -> None:
    """Talk to the assistant; it remembers you across threads.

    In the chat: /new, /threads, /memories, /forget <text>, /quit (or Ctrl-D).
    """
    if thread and new:
        raise typer.BadParameter("pass --thread ID or --new, not both.", param_hint="--thread")
    server = _server(ctx, user)
    thread_id = str(server.thread(thread)["thread_id"]) if thread else server.new_thread()
    ChatSession(server=server, thread_id=thread_id).run()


LISTED_HEARD = 10
"""How many of the latest messages `memories list` shows after the facts."""


@memories_app.command("list")
def memories_list(
    ctx: typer.Context,
    user: UserOption = None,
    all_: Annotated[
        bool, typer.Option("--all", "-a", help="Include superseded facts, with their history.")
    ] = False,
) -> None:
    """List your facts, then what memory made of your last 10 messages."""
    server = _server(ctx, user)
    facts = server.facts(include_superseded=all_)
    if facts:
        title = escape_markup(f"Facts about {server.user_id}")
        out.print(facts_table(facts, title=title, history=all_))
    else:
        out.print(f"No facts stored for {server.user_id!r} yet.", markup=False)
    _print_heard(server, limit=LISTED_HEARD)


def _print_heard(server: Server, *, limit: int) -> None:
    """What memory made of the user's latest ``limit`` messages, newest first."""
    entries = server.heard(limit=limit)
    if not entries:
        out.print(f"Memory has heard no messages from {server.user_id!r} yet.", markup=False)
        return
    out.print(heard_table(entries, title="What memory heard (newest first)"))


@memories_app.command("heard")
def memories_heard(
    ctx: typer.Context,
    user: UserOption = None,
    limit: Annotated[
        int, typer.Option(min=1, help="How many of your latest messages to show.")
    ] = 20,
) -> None:
    """Show what memory made of your latest messages: kept, nothing to keep, skipped, failed."""
    _print_heard(_server(ctx, user), limit=limit)


@memories_app.command("search")
def memories_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in any language.")],
    user: UserOption = None,
) -> None:
    """Search your facts: only those that match, best first, with their match scores."""
    server = _server(ctx, user)
    facts = server.facts(query=query)
    if not facts:
        out.print(f"Nothing matches {query!r} in the memory of {server.user_id!r}.", markup=False)
        return
    title = escape_markup(f"Facts matching {query!r}")
    out.print(facts_table(facts, title=title, scores=True))


@memories_app.command("forget")
def memories_forget(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A fact's key, or some of its text.")],
    user: UserOption = None,
    yes: YesOption = False,
) -> None:
    """Forget one fact, by key or by the fact that best matches some text.

    The fact is shown before anything is deleted, with ``--yes`` too; a text that matches
    no fact (below the server's relevance floor) forgets nothing.
    """
    server = _server(ctx, user)
    fact = best_match(server, target)
    content = terminal_safe(fact.get("content", ""))
    if yes or "score" in fact:  # found by text: say what matched, and how well
        out.print(plain_text(f"Best match: {content!r}{match_note(fact)}"))
    if not yes and not typer.confirm(f"Forget {content!r}?", default=False):
        out.print("Kept it.")
        return
    server.forget(str(fact["key"]))
    out.print(plain_text(f"Forgotten: {content}"))


@memories_app.command("export")
def memories_export(
    ctx: typer.Context,
    user: UserOption = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", dir_okay=False, help="Write here instead of stdout."),
    ] = None,
) -> None:
    """Export your facts (superseded ones too), episodes, audit trail and what was heard."""
    server = _server(ctx, user)
    export = {
        "user_id": server.user_id,
        "server": server.connection.url,
        "exported_at": datetime.now(UTC).isoformat(),
        "facts": server.facts(include_superseded=True),
        "episodes": server.episodes(),
        "audit": server.audit(),
        "heard": server.heard(limit=100),
    }
    text = terminal_safe_json(export)
    if output is None:
        typer.echo(text)
        return
    write_private_text(output, text + "\n")
    out.print(
        f"Wrote {len(export['facts'])} facts, {len(export['episodes'])} episodes and "
        f"{len(export['audit'])} audit entries to {output}.",
        markup=False,
    )


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that only its owner can read it (0600).

    A file already there is truncated and made 0600 too, so an export never lands in a
    file that others could read.
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with open(descriptor, "w", encoding="utf-8") as file:
        os.fchmod(descriptor, PRIVATE_FILE_MODE)
        file.write(text)


@threads_app.command("list")
def threads_list(
    ctx: typer.Context,
    user: UserOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many to show.")] = 20,
) -> None:
    """List your threads, most recent first."""
    server = _server(ctx, user)
    threads = server.threads(limit=limit)
    out.print(
        threads_table(threads) if threads else f"No threads for {server.user_id!r}.", markup=False
    )


@threads_app.command("show")
def threads_show(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="The thread's id.")],
    user: UserOption = None,
) -> None:
    """Show a thread's messages, its running summary and its last turn's metrics."""
    server = _server(ctx, user)
    server.thread(thread_id)
    values = server.thread_values(thread_id)
    out.print(plain_text(f"Thread {thread_id}", style="bold"))
    print_messages(list(values.get("messages") or []))
    if summary := str(values.get("summary") or ""):
        out.print(
            Panel(plain_text(summary), title="Summary of earlier messages", title_align="left")
        )
    if metrics := values.get("metrics"):
        out.print(metrics_table(metrics))


@threads_app.command("delete")
def threads_delete(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="The thread's id.")],
    user: UserOption = None,
    yes: YesOption = False,
) -> None:
    """Delete a thread and its messages (facts learned in it stay)."""
    server = _server(ctx, user)
    server.thread(thread_id)
    if not yes and not typer.confirm(f"Delete thread {thread_id}?", default=False):
        out.print("Kept it.")
        return
    server.delete_thread(thread_id)
    out.print(f"Deleted thread {thread_id}.", markup=False)


@app.command("mcp")
def mcp_bridge(ctx: typer.Context, user: UserOption = None) -> None:
    """Serve your memory to an MCP client over stdio, through the server's /memory/mcp.

    For clients that only start local MCP servers: configure them to run `assistant mcp`
    (with ASSISTANT_URL and ASSISTANT_TOKEN in its environment). Messages go to the server
    unchanged, with your token; nothing but MCP is written to stdout.
    """
    server = _server(ctx, user)
    server.user_id  # noqa: B018 (a refused token or a server that is down fails here, readably)
    anyio.run(bridge.serve, server.connection)


def main() -> None:
    """Entry point of the ``assistant`` console script."""
    app()
