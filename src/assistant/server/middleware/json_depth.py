"""JSON nested too deep for a parser is refused: `LimitJsonDepth`."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope

from assistant.server.middleware.base import (
    BodyCheck,
    Refusal,
)

__all__ = ["MAX_JSON_DEPTH", "LimitJsonDepth", "json_too_deep"]

MAX_JSON_DEPTH = 64
"""Deepest nesting of objects and arrays a JSON body may have (a run's input needs about
six). Parsers recurse on nesting: thousands of levels fail some of them with a 500."""


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body``, read as JSON, nests objects and arrays more than ``limit`` deep.

    A body that is not JSON is not too deep: the route answers it as it does any bad body.
    A body with no more brackets than ``limit`` is not even parsed.

    >>> json_too_deep(b'{"messages": [{"content": "[[[[[["}]}', limit=3)  # strings don't count
    False
    >>> json_too_deep(b"[" * 5000 + b"]" * 5000), json_too_deep(b"not json [[[[", limit=2)
    (True, False)
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    try:
        payload = json.loads(body)
    except RecursionError:
        return True
    except ValueError:
        return False
    containers: list[tuple[dict[str, Any] | list[Any], int]] = []
    if isinstance(payload, dict | list):
        containers.append((payload, 1))
    while containers:
        value, depth = containers.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        containers.extend((item, depth + 1) for item in children if isinstance(item, dict | list))
    return False


class LimitJsonDepth(BodyCheck):
    """A JSON body nested deeper than `MAX_JSON_DEPTH` answers 422."""

    def refusal(self, scope: Scope, body: bytes) -> Refusal | None:
        """Unprocessable when the body nests too deep."""
        if json_too_deep(body):
            return Refusal(422, f"JSON nested more than {MAX_JSON_DEPTH} levels deep is refused.")
        return None
