"""The ``assistant`` command line: chat with the assistant and manage what it remembers.

It talks to a running server (``make dev``): threads and runs through langgraph-sdk, the
user's memory through the server's ``/memory/*`` API (`assistant.server.webapp`), so a fact
forgotten here lands in the same audit trail as one forgotten in the console::

    assistant chat                          # a new thread; /memories, /forget <text>, /quit
    assistant memories list --all           # facts, superseded ones with their history
    assistant memories forget Hangzhou      # asks first (--yes does not)
    assistant memories heard                # what memory made of your latest messages
    assistant memories export -o me.json    # facts, episodes, audit trail and what was heard
    assistant threads list | show ID | delete ID
    assistant mcp                           # your memory for a stdio MCP client

``--url`` and ``--token`` default to ASSISTANT_URL (http://127.0.0.1:2025) and
ASSISTANT_TOKEN. With auth on the server, the token says who you are; a server without
auth (``make demo``, the tests) takes ``--user`` instead, sent as the runs'
``context.user_id`` and the memory API's ``?user_id=``.
"""

from assistant.cli.chat import ChatSession
from assistant.cli.client import RunFailedError, Server, explain, reply_pieces
from assistant.cli.commands import app, main

__all__ = ["ChatSession", "RunFailedError", "Server", "app", "explain", "main", "reply_pieces"]
