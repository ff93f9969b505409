"""The dev runtime's routes outside auth do not exist: `HiddenRoutes`."""

from __future__ import annotations

from starlette.types import Scope

from assistant.config.settings import AuthSettings
from assistant.server.middleware.base import (
    Refusal,
    ScopeCheck,
    route_path,
)

__all__ = ["HIDDEN_PREFIXES", "HiddenRoutes"]

HIDDEN_PREFIXES = ("/internal/", "/deploy")
"""The dev runtime's routes outside auth; they must not be reachable at all."""


class HiddenRoutes(ScopeCheck):
    """``/internal/*`` and ``/deploy*`` answer 404, whatever the auth mode."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Not Found for the dev runtime's routes outside auth."""
        if route_path(scope).startswith(HIDDEN_PREFIXES):
            return Refusal(404, "Not Found")
        return None
