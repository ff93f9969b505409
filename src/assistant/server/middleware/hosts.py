"""Under ``langgraph dev`` only this machine's names, or listed ones, are served: `KnownHosts`."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.types import Scope

from assistant.config.settings import AuthSettings
from assistant.server.middleware.base import (
    Refusal,
    ScopeCheck,
    request_headers,
)

__all__ = ["KnownHosts", "is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (no port) names this machine.

    >>> [is_loopback_host(h) for h in ("localhost", "127.0.0.1", "::1", "app.localhost")]
    [True, True, True, True]
    >>> is_loopback_host("evil.example") or is_loopback_host("10.0.0.1")
    False
    """
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    return urlsplit(f"//{host_header}").hostname or ""


class KnownHosts(ScopeCheck):
    """Under ``langgraph dev``, a ``Host`` that is not loopback or listed answers 403."""

    def refusal(self, scope: Scope, settings: AuthSettings) -> Refusal | None:
        """Forbidden for another host's name (DNS rebinding)."""
        host = request_headers(scope).get("host", "")
        name = _host_name(host)
        if not settings.local_dev or not host or is_loopback_host(name):
            return None
        if name in settings.allowed_hosts:
            return None
        return Refusal(
            403,
            f"Host {host!r} is not this server's. Under `langgraph dev` only loopback "
            "names are served; add others to ASSISTANT_ALLOWED_HOSTS.",
        )
