"""What a caller may send: a run's input, command, context and webhook; a store request's size.

`assistant.server.auth` calls these from its handlers, before the platform acts on a request;
each refusal is an HTTP error (4xx) that names the field and, where it helps, the value.
They hold for every user; the maintenance token (``admin``) may send a run's other input
and commands, but is held to the webhook hosts and the store's limits like everyone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from langgraph_sdk import Auth

from assistant.config.settings import get_auth_settings
from assistant.memory import FACTS_NAMESPACE, MAX_FACT_CHARS
from assistant.run.policy import RunSettingError, check_run_context, parse_run_settings
from assistant.run.recall_query import MAX_QUERY_CHARS, USER_ROLES

__all__ = [
    "CONTROL_CHARACTERS",
    "INDEXED_FIELDS",
    "INPUT_KEYS",
    "MAX_EPISODE_CHARS",
    "MAX_NAMESPACE_DEPTH",
    "MAX_STORE_LIMIT",
    "MAX_STORE_OFFSET",
    "MAX_STORE_VALUE_CHARS",
    "check_run_request",
    "check_store_request",
    "check_webhook",
    "forbidden",
    "unprocessable",
]


def forbidden(detail: str) -> Auth.exceptions.HTTPException:
    """A 403 saying ``detail``."""
    return Auth.exceptions.HTTPException(status_code=403, detail=detail)


def unprocessable(detail: str) -> Auth.exceptions.HTTPException:
    """A 422 saying ``detail``."""
    return Auth.exceptions.HTTPException(status_code=422, detail=detail)


# --------------------------------------------------------------------------- runs

INPUT_KEYS = frozenset({"messages"})
"""What a client may put in a run's input: the graph's input schema."""


def check_run_request(kwargs: Mapping[str, Any], *, admin: bool = False) -> None:
    """Refuse a run whose input, command, context or webhook a caller may not send.

    >>> check_run_request({"input": {"messages": []}, "context": {}})
    >>> check_run_request({"input": {"messages": [], "summary": 123}})
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: ...
    """
    run_input = kwargs.get("input")
    if run_input is not None:
        if not isinstance(run_input, Mapping):
            raise unprocessable(f"A run's input must be an object, got {run_input!r:.80}.")
        extra = sorted(set(run_input) - INPUT_KEYS)
        if extra and not admin:
            raise unprocessable(
                f"A run's input may only carry 'messages'; {', '.join(extra)} belong to the "
                "assistant and cannot be sent."
            )
        if not admin:
            _check_user_messages(run_input.get("messages"))
    check_webhook(kwargs.get("webhook"), get_auth_settings().webhook_hosts)
    command = kwargs.get("command")
    if command and not admin:
        extra = sorted(set(command) - {"resume"}) if isinstance(command, Mapping) else ["?"]
        if extra:
            raise forbidden(f"A run's command may only resume; {', '.join(extra)} cannot be sent.")
    try:
        check_run_context(
            kwargs.get("context") or {},
            parse_run_settings(get_auth_settings().run_settings),
            admin=admin,
        )
    except RunSettingError as error:
        raise Auth.exceptions.HTTPException(
            status_code=error.status_code, detail=str(error)
        ) from error


def _check_user_messages(messages: object) -> None:
    """Refuse input messages that are not the user's own.

    A system prompt, an assistant turn or a ``RemoveMessage`` (which would delete the
    thread's messages) belong to the assistant.
    """
    if not isinstance(messages, list):
        return  # a plain string is a user message; anything else fails the run cleanly
    for message in messages:
        if isinstance(message, str):
            continue
        kind = message.get("role") or message.get("type") if isinstance(message, dict) else None
        if kind not in USER_ROLES:
            raise unprocessable(
                f"A run's input may only carry the user's own messages, got one of "
                f"role/type {kind!r}."
            )


def check_webhook(webhook: object, hosts: tuple[str, ...]) -> None:
    """Refuse a run's ``webhook`` unless its host is one the operator listed.

    The server would call it from inside the operator's network (a blind request to any
    private address a caller names), so webhooks are off until ``ASSISTANT_WEBHOOK_HOSTS``
    lists the hosts they may reach; the admin is held to the same list.

    >>> check_webhook(None, ())
    >>> check_webhook("https://hooks.example.com/run-done", ("hooks.example.com",))
    >>> check_webhook("http://10.0.0.5/hook", ("hooks.example.com",))
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: ...
    """
    if not webhook:
        return
    if not hosts:
        raise forbidden(
            "Webhooks are off on this server; an operator can allow some hosts with "
            "ASSISTANT_WEBHOOK_HOSTS."
        )
    host = (urlsplit(str(webhook)).hostname or "").lower()
    if host not in hosts:
        raise forbidden(f"Webhook host {host!r} is not one this server may call.")


# --------------------------------------------------------------------------- the store API

MAX_STORE_LIMIT = 1000
"""Most items one store search may ask for (as many as the memory layer lists at once)."""

MAX_STORE_OFFSET = 1_000_000
"""Furthest offset a store search may ask for."""

MAX_EPISODE_CHARS = 4000
"""Longest episode a client may put through the store API (embedding grows with text)."""

MAX_STORE_VALUE_CHARS = 16_000
"""Longest a stored item's value may be in all, as JSON: every field of it, not only its
content, is kept, copied and read back (a fact's own fields are held tighter still,
`assistant.memory.client_facts`)."""

MAX_NAMESPACE_DEPTH = 100
"""Largest ``max_depth`` a namespace listing may ask for (the memory's namespaces have two
labels; Postgres fails on one that does not fit its integers)."""

INDEXED_FIELDS = ("content",)
"""What a put may ask the store to embed: the field whose length is checked (langgraph.json's
``store.index.fields``). Any other field could hold a megabyte of text."""

CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What a store key or namespace label may not hold: NUL (which Postgres cannot store),
every other control character, and the Unicode line and paragraph separators (a key is
printed in lines that agents read: MCP's `list_memories`)."""

MAX_STORE_NAME_CHARS = 256
"""The longest store key or namespace label (the memory's own keys are 32 characters; a
900,000-character key would ride into every prompt and state that shows it)."""

_WHOLE_NUMBERS = (
    ("limit", 1, MAX_STORE_LIMIT),
    ("offset", 0, MAX_STORE_OFFSET),
    ("max_depth", 1, MAX_NAMESPACE_DEPTH),
)
"""A store request's whole-number parameters and their bounds."""


def check_store_request(value: Mapping[str, Any]) -> None:
    r"""Refuse a store request whose work is unbounded or whose parameters are invalid.

    A search query is embedded, so it is held to what a run's query is
    (`assistant.run.recall_query.MAX_QUERY_CHARS`); a fact put through the API to what the
    memory layer stores (`assistant.memory.MAX_FACT_CHARS`), an episode to
    `MAX_EPISODE_CHARS`, and a put may index no field but those (`INDEXED_FIELDS`).
    ``limit``, ``offset`` and a listing's ``max_depth`` must be sensible whole numbers, keys
    and namespace labels may not hold control characters (`CONTROL_CHARACTERS`), and a value
    may not hold NUL (Postgres answers 500 to each of these).

    >>> check_store_request({"namespace": ("user_facts", "a"), "query": "tea", "limit": 10})
    >>> check_store_request({"query": "x" * 5000})
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: ...
    >>> check_store_request({"namespace": ("user_facts", "a"), "key": "k\x00"})
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: ...
    >>> check_store_request({"namespace": ("user_facts", "a"), "key": "k" * 900_000})
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: ...
    """
    _check_store_names(value)
    query = value.get("query")
    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        raise unprocessable(
            f"A store search query may be at most {MAX_QUERY_CHARS} characters, got {len(query)}."
        )
    for name, low, high in _WHOLE_NUMBERS:
        number = value.get(name)
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high
        ):
            raise unprocessable(f"A store {name} must be a whole number from {low} to {high}.")
    _check_store_index(value.get("index"))
    _check_store_content(value)


def _check_store_index(index: object) -> None:
    """Refuse a put that asks the store to embed a field other than `INDEXED_FIELDS`."""
    if index is None or index is False:
        return
    if not (isinstance(index, list | tuple) and tuple(index) == INDEXED_FIELDS):
        raise unprocessable(
            f"A store item is indexed by its content only: send index as null, false or "
            f"{list(INDEXED_FIELDS)}, got {index!r:.80}."
        )


def _check_store_content(value: Mapping[str, Any]) -> None:
    """Refuse a put whose content is longer than a fact (or an episode) may be."""
    item = value.get("value")
    if isinstance(item, Mapping):
        size = len(json.dumps(item, ensure_ascii=False, default=str))
        if size > MAX_STORE_VALUE_CHARS:
            raise unprocessable(
                f"A store item's value may be at most {MAX_STORE_VALUE_CHARS} characters as "
                f"JSON, every field counted, got {size}."
            )
    content = item.get("content") if isinstance(item, Mapping) else None
    if not isinstance(content, str):
        return
    namespace = tuple(value.get("namespace") or ())
    most = MAX_FACT_CHARS if namespace[:1] == (FACTS_NAMESPACE,) else MAX_EPISODE_CHARS
    if len(content) > most:
        raise unprocessable(
            f"Content put in {namespace[:1]} may be at most {most} characters, got {len(content)}."
        )


def _check_store_names(value: Mapping[str, Any]) -> None:
    """Refuse control characters in a store key or label, and NUL anywhere in a value.

    Postgres cannot store NUL; other control characters, such as newlines, are fine in a value.
    """
    labels = [*(value.get("namespace") or ()), *(value.get("suffix") or ())]
    for what, name in [("key", value.get("key")), *(("namespace label", x) for x in labels)]:
        if isinstance(name, str) and CONTROL_CHARACTERS.search(name):
            raise unprocessable(
                f"A store {what} may not contain control characters such as NUL, got {name!r:.80}."
            )
        if isinstance(name, str) and len(name) > MAX_STORE_NAME_CHARS:
            raise unprocessable(
                f"A store {what} may be at most {MAX_STORE_NAME_CHARS} characters, got {len(name)}."
            )
    pending: list[object] = [value.get("value")]
    while pending:
        part = pending.pop()
        if isinstance(part, str) and "\x00" in part:
            raise unprocessable(f"A store item's value may not contain NUL, got {part!r:.80}.")
        if isinstance(part, Mapping):
            pending.extend(part.keys())
            pending.extend(part.values())
        elif isinstance(part, list | tuple):
            pending.extend(part)
