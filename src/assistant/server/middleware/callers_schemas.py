"""Studio's settings form offers a caller only the settings it may choose: `CallersSchemas`."""

from __future__ import annotations

import json
import re

from starlette.types import Receive, Scope, Send

from assistant.config.constants import ADMIN_PERMISSION
from assistant.config.settings import custom_auth_configured, get_auth_settings
from assistant.run.policy import callers_context_schema, parse_run_settings
from assistant.server.auth import request_caller
from assistant.server.middleware.base import HttpOnly, request_headers, rewritten_body, route_path

__all__ = ["CallersSchemas"]

_SCHEMAS_PATH = re.compile(r"^/assistants/[^/]+/schemas$")
"""An assistant's schemas: input, output, state and the context Studio's form is built from."""


class CallersSchemas(HttpOnly):
    """An assistant's schemas offer a caller only the settings it may set.

    Both ``context_schema`` and ``config_schema`` (the same fields, as ``configurable``).
    """

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; for a caller's schemas, keep only its own settings."""
        if not self._for_a_caller(scope):
            await self.app(scope, receive, send)
            return
        rules = parse_run_settings(get_auth_settings().run_settings)

        def offered(body: bytes) -> bytes:
            try:
                schemas = json.loads(body)
            except ValueError:
                return body
            if not isinstance(schemas, dict):
                return body
            # The context's fields are offered twice: as the context and as `configurable`.
            for name in ("context_schema", "config_schema"):
                if isinstance(schema := schemas.get(name), dict):
                    schemas[name] = callers_context_schema(schema, rules)
            return json.dumps(schemas).encode()

        await self.app(scope, receive, rewritten_body(send, offered))

    @staticmethod
    def _for_a_caller(scope: Scope) -> bool:
        """A ``GET`` of schemas by someone other than the maintenance token, under auth."""
        if scope.get("method") != "GET" or not _SCHEMAS_PATH.match(route_path(scope)):
            return False
        if not custom_auth_configured():
            return False
        # `RequireToken`, outside this middleware, has refused a request without a valid token.
        caller = request_caller(request_headers(scope), get_auth_settings())
        return ADMIN_PERMISSION not in caller.get("permissions", [])
