"""A thread's prefilled state is for the maintenance token only: `NoPrefilledState`."""

from __future__ import annotations

import json

from starlette.types import Scope

from assistant.config.constants import ADMIN_PERMISSION
from assistant.config.settings import custom_auth_configured, get_auth_settings
from assistant.server.auth import request_caller
from assistant.server.middleware.base import (
    BodyCheck,
    Refusal,
    request_headers,
    route_path,
)

__all__ = ["NoPrefilledState"]


class NoPrefilledState(BodyCheck):
    """``POST /threads`` with ``supersteps`` answers 403 unless the caller is the admin."""

    def reads(self, scope: Scope) -> bool:
        """Only thread creation is read."""
        return scope.get("method") == "POST" and route_path(scope).rstrip("/") == "/threads"

    def refusal(self, scope: Scope, body: bytes) -> Refusal | None:
        """Forbidden for a user's prefilled state."""
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError:
            payload = {}
        if not isinstance(payload, dict) or not payload.get("supersteps"):
            return None
        if custom_auth_configured():
            caller = request_caller(request_headers(scope), get_auth_settings())
            if ADMIN_PERMISSION in caller.get("permissions", []):
                return None
        return Refusal(
            403,
            "A thread's state is written by the assistant: create the thread without "
            "supersteps and send messages as runs.",
        )
