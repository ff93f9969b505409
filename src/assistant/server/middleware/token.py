"""With custom auth on, every route but the open ones needs credentials: `RequireToken`."""

from __future__ import annotations

from langgraph_sdk import Auth
from starlette.types import Scope

from assistant.config.constants import ADMIN_PERMISSION, CONSOLE_PATH, HEALTH_PATHS
from assistant.config.settings import AuthSettings, custom_auth_configured
from assistant.server.auth import request_caller
from assistant.server.middleware.base import (
    Refusal,
    ScopeCheck,
    request_headers,
    route_path,
)

__all__ = ["ADMIN_PATHS", "RequireToken"]

ADMIN_PATHS = frozenset({"/metrics"})
"""Routes only the maintenance token may read when the server has several users: the
metrics count every user's requests."""


class RequireToken(ScopeCheck):
    """With custom auth, a request without valid credentials answers 401 on any route."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Unauthorized without a valid token; forbidden for a user on an admin route."""
        path, method = route_path(scope), scope.get("method", "GET")
        if not custom_auth_configured() or path in HEALTH_PATHS or method == "OPTIONS":
            return None
        if method == "GET" and path == CONSOLE_PATH:
            return None
        try:
            caller = request_caller(request_headers(scope), settings)
        except Auth.exceptions.HTTPException as error:
            headers = tuple((error.headers or {}).items())
            return Refusal(error.status_code, str(error.detail), headers)
        several_users = bool(settings.jwt_secret or settings.dev_tokens)
        if path in ADMIN_PATHS and several_users:
            if ADMIN_PERMISSION not in caller.get("permissions", []):
                return Refusal(403, f"{path} is for the maintenance token only.")
        return None
