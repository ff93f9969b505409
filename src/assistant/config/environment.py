"""How a setting is declared and read: :func:`env`, the parsers, and the one loader.

A settings group (`assistant.config.settings`, `assistant.config.server_env`) is a frozen dataclass
whose fields are declared with :func:`env`: the variable's name, the field's default and
how the variable's text is parsed; the field's type and its docstring say the rest, so
each setting is declared once. :func:`load` builds a group from a mapping of variables,
:func:`read` from the environment (the only place the assistant reads it), and
:func:`env_names` lists what a group reads. A parser raises :class:`ValueError` naming
the variable, the value and what it should look like.

>>> @dataclass(frozen=True, kw_only=True)
... class Example:
...     limit: int = env("EXAMPLE_LIMIT", 5, parse=whole())
...     url: str = env("EXAMPLE_URL", fallback="OTHER_URL")
>>> env_names(Example)
('EXAMPLE_LIMIT', 'EXAMPLE_URL', 'OTHER_URL')
>>> load(Example, {"EXAMPLE_LIMIT": " 7 ", "OTHER_URL": "http://h"})
Example(limit=7, url='http://h')
>>> load(Example, {"EXAMPLE_LIMIT": "many"})
Traceback (most recent call last):
...
ValueError: EXAMPLE_LIMIT must be a whole number, got 'many'
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

__all__ = [
    "Parse",
    "Variable",
    "between",
    "choice",
    "env",
    "env_names",
    "gc_threshold",
    "graph_ids",
    "hosts",
    "is_local_dev",
    "is_set",
    "items",
    "load",
    "names_a_path",
    "path",
    "read",
    "seconds",
    "text",
    "token_pairs",
    "whole",
]

_Group = TypeVar("_Group")

Parse = Callable[[str, str], Any]
"""How a variable's text becomes its value: ``parse(name, value)``, given the stripped,
non-blank text (as given, for a verbatim variable)."""


@dataclass(frozen=True)
class Variable:
    """Where a settings field's value comes from (kept in the field's metadata)."""

    name: str
    """The environment variable."""
    parse: Parse
    """Its text to the field's value."""
    fallback: str = ""
    """A variable read when ``name`` is unset or blank (the embeddings' endpoint and key)."""
    verbatim: bool = False
    """Its text is parsed as given (only an empty one is unset), not stripped."""


def env(
    name: str,
    default: Any = "",
    *,
    parse: Parse | None = None,
    fallback: str = "",
    verbatim: bool = False,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """Declare a settings field read from the variable ``name``: its default is ``default``.

    ``parse`` turns the variable's text into the value (the text itself by default);
    ``factory`` makes a mutable default.
    """
    variable = {"env": Variable(name, parse or text, fallback, verbatim)}
    if factory is not None:
        return field(default_factory=factory, metadata=variable)
    return field(default=default, metadata=variable)


_VARIABLES: dict[type[Any], tuple[tuple[str, Variable], ...]] = {}
_NAMES: dict[type[Any], tuple[str, ...]] = {}


def _variables(group: type[Any]) -> tuple[tuple[str, Variable], ...]:
    """``group``'s fields read from the environment, with their variables.

    Found once per group: its fields never change, and every settings call reads them.
    """
    found = _VARIABLES.get(group)
    if found is None:
        found = tuple(
            (item.name, item.metadata["env"]) for item in fields(group) if "env" in item.metadata
        )
        _VARIABLES[group] = found
    return found


def env_names(group: type[Any]) -> tuple[str, ...]:
    """The variables ``group`` reads (fallbacks included), in declaration order."""
    found = _NAMES.get(group)
    if found is None:
        names = (name for _, var in _variables(group) for name in (var.name, var.fallback) if name)
        found = _NAMES[group] = tuple(dict.fromkeys(names))
    return found


def load(group: type[_Group], values: Mapping[str, str | None]) -> _Group:
    """``group`` from ``values``: each field parsed from its variable, or its default.

    Raises:
        ValueError: A variable's text cannot be parsed; the message names it.
    """
    given: dict[str, Any] = {}
    for attribute, var in _variables(group):
        raw = values.get(var.name) or ""
        value = raw if var.verbatim else raw.strip()
        if not value and var.fallback:
            value = (values.get(var.fallback) or "").strip()
        if value:
            given[attribute] = var.parse(var.name, value)
    return group(**given)


@lru_cache(maxsize=64)
def _parsed(group: Hashable, values: tuple[str | None, ...]) -> Any:
    assert isinstance(group, type)
    return load(group, dict(zip(env_names(group), values, strict=True)))


def read(group: type[_Group], *, unset: Mapping[str, str | None] | None = None) -> _Group:
    """``group`` as the environment sets it now, parsed once for each set of values.

    ``unset`` stands in for the variables that are unset or blank (a ``.env`` file's).
    A test that changes a variable sees the change.
    """
    names = env_names(group)
    values = tuple(os.environ.get(name) for name in names)
    if unset:
        values = tuple(
            value if (value or "").strip() else unset.get(name)
            for name, value in zip(names, values, strict=True)
        )
    settings: _Group = _parsed(cast(Hashable, group), values)  # a class is hashable
    return settings


# --------------------------------------------------------------------------- parsers


def text(name: str, value: str) -> str:
    """The text itself."""
    return value


def whole(
    what: str = "whole number", *, least: int = 0, least_text: str = ""
) -> Callable[[str, str], int]:
    """A whole number of at least ``least`` (said as ``least_text`` in the error).

    >>> whole("whole number of days", least=1, least_text="1 day")("DAYS", "0")
    Traceback (most recent call last):
    ...
    ValueError: DAYS must be at least 1 day, got 0
    """

    def parse(name: str, value: str) -> int:
        if not value.isdigit():
            raise ValueError(f"{name} must be a {what}, got {value!r}")
        if int(value) < least:
            raise ValueError(f"{name} must be at least {least_text or least}, got {int(value)}")
        return int(value)

    return parse


def choice(*allowed: str) -> Callable[[str, str], str]:
    """One of ``allowed``, in any case.

    >>> choice("auto", "bundled")("ENGINE", "Bundled")
    'bundled'
    >>> choice("auto", "bundled")("ENGINE", "fast")
    Traceback (most recent call last):
    ...
    ValueError: ENGINE must be one of auto, bundled, got 'fast'
    """

    def parse(name: str, value: str) -> str:
        if value.strip().lower() not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        return value.strip().lower()

    return parse


def seconds(name: str, value: str) -> float:
    """A positive number of seconds."""
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return number


def between(least: float, most: float) -> Callable[[str, str], float]:
    """A number from ``least`` to ``most``.

    >>> between(0, 2)("TEMPERATURE", "0.7")
    0.7
    >>> between(0, 2)("TEMPERATURE", "hot")
    Traceback (most recent call last):
    ...
    ValueError: TEMPERATURE must be a number from 0 to 2, got 'hot'
    """

    def parse(name: str, value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not least <= number <= most:
            raise ValueError(f"{name} must be a number from {least:g} to {most:g}, got {value!r}")
        return number

    return parse


def path(name: str, value: str) -> Path:
    """A file system path."""
    return Path(value)


def items(name: str, value: str) -> tuple[str, ...]:
    """A comma-separated list, each item without a trailing ``/``; ``none`` means empty.

    >>> items("ORIGINS", "http://a/, http://b"), items("ORIGINS", "None")
    (('http://a', 'http://b'), ())
    """
    if value.lower() == "none":
        return ()
    return tuple(part.strip().rstrip("/") for part in value.split(",") if part.strip())


def hosts(name: str, value: str) -> tuple[str, ...]:
    """:func:`items`, in lower case (host names)."""
    return tuple(host.lower() for host in items(name, value))


def token_pairs(name: str, value: str) -> dict[str, str]:
    """``token1=alice,token2=bob``: each token's user."""
    tokens: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in value.split(","))):
        token, sep, user = pair.partition("=")
        if not sep or not token.strip() or not user.strip():
            raise ValueError(f"{name} must look like 'token1=alice,token2=bob', got {pair!r}")
        tokens[token.strip()] = user.strip()
    return tokens


def is_set(name: str, value: str) -> bool:
    """True: the variable has a value."""
    return True


def is_local_dev(name: str, value: str) -> bool:
    """Whether the server's API variant is ``local_dev`` (`langgraph dev`)."""
    return value == "local_dev"


def graph_ids(name: str, value: str) -> frozenset[str]:
    """The keys of a JSON object (the server's graphs); none if it is not one."""
    try:
        graphs = json.loads(value)
    except ValueError:
        return frozenset()
    return frozenset(graphs) if isinstance(graphs, dict) else frozenset()


def names_a_path(name: str, value: str) -> bool:
    """Whether a JSON config names a ``path`` (langgraph.json's ``store.path``)."""
    return '"path"' in value


def gc_threshold(name: str, value: str) -> int | None:
    """A whole number of at least 1, or ``off`` (None)."""
    if value.lower() == "off":
        return None
    return whole("whole number, or off", least=1, least_text="1, or off")(name, value)


def thread_limit(name: str, value: str) -> int | None:
    """A number of threads of at least 1, or ``off`` (None: the libraries' own default)."""
    if value.lower() == "off":
        return None
    return whole("whole number, or off", least=1, least_text="1, or off")(name, value)
