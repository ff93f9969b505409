"""Who a bearer token proves the caller is: `assistant.server.auth.authenticate_token`, offline.

Every refusal is an HTTP 401 whose detail says what was wrong, so a client developer
can fix the request. The server wiring (thread filters, store confinement) is covered
end to end in ``tests/e2e/test_security_e2e.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from typing import Any

import jwt
import pytest
from langgraph_sdk import Auth

from assistant.config.settings import (
    AUTH_ENV,
    GRAPH_ASSISTANT_NAMESPACE,
    AuthSettings,
    get_auth_settings,
)
from assistant.server.auth import authenticate_token

SECRET = "unit-test-secret-0123456789-abcdefghijklmnop"
"""At least 32 bytes: PyJWT warns about shorter HS256 keys, and warnings are errors here."""

OTHER_SECRET = "another-unit-test-secret-9876543210-zyxwvut"

JWT = AuthSettings(jwt_secret=SECRET)
"""A deployment that accepts signed user tokens only."""


@pytest.fixture(autouse=True)
def _no_auth_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not decide how these tests authenticate."""
    for name in AUTH_ENV:  # every variable the auth settings read
        monkeypatch.delenv(name, raising=False)


def token(secret: str = SECRET, *, expires_in: float = 3600, **claims: Any) -> str:
    """An HS256 token for ``claims``; ``sub="alice"`` and an ``exp`` unless overridden.

    Pass ``exp=None`` or ``sub=None`` to leave that claim out.
    """
    body: dict[str, Any] = {"sub": "alice", "exp": int(time.time() + expires_in), **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, secret, algorithm="HS256")


def bearer(value: str) -> str:
    return f"Bearer {value}"


def identity(authorization: str | None, settings: AuthSettings) -> str:
    return str(authenticate_token(authorization, settings)["identity"])


def refused(authorization: str | None, settings: AuthSettings) -> str:
    """The detail of the 401 that ``authorization`` gets; fails if it is accepted."""
    with pytest.raises(Auth.exceptions.HTTPException) as info:
        authenticate_token(authorization, settings)
    assert info.value.status_code == 401, info.value
    assert info.value.headers == {"WWW-Authenticate": "Bearer"}
    return str(info.value.detail)


# --------------------------------------------------------------------------- JWT


def test_a_valid_token_proves_its_subject() -> None:
    user = authenticate_token(bearer(token(sub="alice")), JWT)
    assert user == {"identity": "alice", "permissions": ["memory:own"]}


def test_the_scheme_is_case_insensitive_and_spaces_are_forgiven() -> None:
    assert identity(f"  bearer   {token(sub='bob')}  ", JWT) == "bob"


def test_an_expired_token_is_refused() -> None:
    assert refused(bearer(token(expires_in=-60)), JWT) == "Token expired."


def test_a_token_signed_with_another_key_is_refused() -> None:
    detail = refused(bearer(token(OTHER_SECRET)), JWT)
    assert detail == "Invalid token: Signature verification failed."


@pytest.mark.parametrize("claim", ["exp", "sub"])
def test_a_token_without_a_required_claim_is_refused(claim: str) -> None:
    detail = refused(bearer(token(**{claim: None})), JWT)  # type: ignore[arg-type]
    assert detail == f'Invalid token: Token is missing the "{claim}" claim.'


def test_a_token_that_is_not_valid_yet_is_refused() -> None:
    detail = refused(bearer(token(nbf=int(time.time()) + 600)), JWT)
    assert detail.startswith("Invalid token: The token is not yet valid"), detail


def test_only_hs256_is_accepted() -> None:
    unsigned = jwt.encode({"sub": "bob", "exp": int(time.time()) + 60}, None, algorithm="none")  # type: ignore[arg-type]
    assert (
        refused(bearer(unsigned), JWT) == "Invalid token: The specified alg value is not allowed."
    )
    hs512 = jwt.encode({"sub": "bob", "exp": int(time.time()) + 60}, SECRET * 2, algorithm="HS512")
    assert refused(bearer(hs512), JWT) == "Invalid token: The specified alg value is not allowed."


def test_a_subject_that_is_not_a_string_is_refused() -> None:
    assert refused(bearer(token(sub=123)), JWT) == "Invalid token: Subject must be a string."


@pytest.mark.parametrize("garbage", ["not-a-jwt", "a.b.c", "é", "x" * 5000])
def test_garbage_tokens_are_refused(garbage: str) -> None:
    assert refused(bearer(garbage), JWT).startswith("Invalid token: ")


# --------------------------------------------------------------------------- aud / iss

WITH_AUDIENCE = AuthSettings(jwt_secret=SECRET, jwt_audience="assistant-api")
WITH_ISSUER = AuthSettings(jwt_secret=SECRET, jwt_issuer="https://login.example.com")


def test_the_configured_audience_is_required() -> None:
    assert identity(bearer(token(aud="assistant-api")), WITH_AUDIENCE) == "alice"
    assert refused(bearer(token(aud="another-api")), WITH_AUDIENCE) == (
        "Invalid token: Audience doesn't match."
    )
    assert refused(bearer(token()), WITH_AUDIENCE) == (
        'Invalid token: Token is missing the "aud" claim.'
    )


def test_the_configured_issuer_is_required() -> None:
    assert identity(bearer(token(iss="https://login.example.com")), WITH_ISSUER) == "alice"
    assert refused(bearer(token(iss="https://evil.example.com")), WITH_ISSUER) == (
        "Invalid token: Invalid issuer."
    )
    assert refused(bearer(token()), WITH_ISSUER) == (
        'Invalid token: Token is missing the "iss" claim.'
    )


def test_audience_and_issuer_are_ignored_when_not_configured() -> None:
    # Documented behaviour: without ASSISTANT_JWT_AUDIENCE/ISSUER any aud/iss passes.
    assert identity(bearer(token(aud="anything", iss="anyone")), JWT) == "alice"


# --------------------------------------------------------------------------- header shape


@pytest.mark.parametrize(
    "authorization",
    [None, "", "   ", "Bearer", "Bearer   ", "Token x", "Basic YWxpY2U6cHc=", "tok-alice"],
    ids=["none", "empty", "blank", "bearer-only", "bearer-blank", "token-x", "basic", "bare"],
)
def test_a_malformed_authorization_header_is_refused(authorization: str | None) -> None:
    detail = refused(authorization, JWT)
    assert detail == "Missing bearer token: send 'Authorization: Bearer <token>'."


def test_a_valid_jwt_under_another_scheme_is_refused() -> None:
    refused(f"Token {token()}", JWT)


# --------------------------------------------------------------------------- user ids


@pytest.mark.parametrize(
    "sub", ["a.b", "langgraph-x", "has space", "", "x" * 129, "tab\there", "*", "a%b", "a/b"]
)
def test_a_subject_that_cannot_be_a_user_id_is_refused(sub: str) -> None:
    detail = refused(bearer(token(sub=sub)), JWT)
    assert f"Invalid user_id={sub!r}" in detail, detail


def test_a_dev_token_for_an_invalid_user_id_is_refused() -> None:
    settings = AuthSettings(dev_tokens={"t1": "langgraph-admin", "t2": "*"}, local_dev=True)
    assert "Invalid user_id='langgraph-admin'" in refused(bearer("t1"), settings)
    assert "Invalid user_id='*'" in refused(bearer("t2"), settings)


# --------------------------------------------------------------------------- dev tokens

DEV_TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


def test_dev_tokens_work_under_langgraph_dev() -> None:
    settings = AuthSettings(dev_tokens=DEV_TOKENS, local_dev=True)
    assert identity(bearer("tok-alice"), settings) == "alice"
    assert identity(bearer("tok-bob"), settings) == "bob"
    assert refused(bearer("tok-carol"), settings) == "Unknown token."
    assert refused(None, settings).startswith("Missing bearer token")


def test_dev_tokens_are_refused_in_a_deployment() -> None:
    settings = AuthSettings(dev_tokens=DEV_TOKENS, local_dev=False)
    assert refused(bearer("tok-alice"), settings) == "Unknown token."


def test_dev_tokens_are_refused_in_a_deployment_that_also_takes_jwts() -> None:
    settings = AuthSettings(jwt_secret=SECRET, dev_tokens=DEV_TOKENS, local_dev=False)
    assert refused(bearer("tok-alice"), settings).startswith("Invalid token: ")
    assert identity(bearer(token(sub="carol")), settings) == "carol"


def test_dev_tokens_and_jwts_work_side_by_side_under_langgraph_dev() -> None:
    settings = AuthSettings(jwt_secret=SECRET, dev_tokens=DEV_TOKENS, local_dev=True)
    assert identity(bearer("tok-bob"), settings) == "bob"
    assert identity(bearer(token(sub="carol")), settings) == "carol"


# --------------------------------------------------------------------------- single user


def test_single_user_mode_under_langgraph_dev_ignores_the_header() -> None:
    settings = AuthSettings(local_dev=True)
    for authorization in (None, "", "Bearer whatever", bearer(token(sub="bob"))):
        assert identity(authorization, settings) == "default-user"
    assert identity(None, AuthSettings(local_dev=True, default_user="carol")) == "carol"


def test_single_user_mode_is_refused_in_a_deployment() -> None:
    for authorization in (None, bearer(token(sub="bob"))):
        detail = refused(authorization, AuthSettings(local_dev=False))
        assert "ASSISTANT_JWT_SECRET" in detail, detail
        assert "langgraph dev" in detail, detail


def test_an_invalid_default_user_is_refused_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_DEFAULT_USER", "a.b")
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")
    try:
        settings = get_auth_settings()
    except ValueError as error:
        assert "ASSISTANT_DEFAULT_USER" in str(error)
        return
    assert "Invalid user_id='a.b'" in refused(None, settings)


# --------------------------------------------------------------------------- admin token

ADMIN_TOKEN = "maintenance-token-0123456789-abcdefghijklmnop"
WITH_ADMIN = AuthSettings(jwt_secret=SECRET, admin_token=ADMIN_TOKEN)


def test_the_admin_token_carries_the_admin_permission_and_nothing_else_does() -> None:
    assert authenticate_token(bearer(ADMIN_TOKEN), WITH_ADMIN) == {
        "identity": "langgraph-maintenance",
        "permissions": ["admin"],
    }
    # No user can take the maintenance identity: user ids may not start with "langgraph".
    assert refused(bearer(token(sub="langgraph-maintenance")), WITH_ADMIN).startswith(
        "Invalid user_id='langgraph-maintenance'"
    )
    for near_miss in (ADMIN_TOKEN[:-1], ADMIN_TOKEN + "x", ADMIN_TOKEN.upper()):
        assert refused(bearer(near_miss), WITH_ADMIN).startswith("Invalid token: ")
    assert refused(f"Token {ADMIN_TOKEN}", WITH_ADMIN).startswith("Missing bearer token")
    assert refused(ADMIN_TOKEN, WITH_ADMIN).startswith("Missing bearer token")


def test_without_an_admin_token_configured_nothing_is_admin() -> None:
    assert refused(bearer(""), JWT).startswith("Missing bearer token")
    assert refused(bearer(ADMIN_TOKEN), JWT).startswith("Invalid token: ")


def test_a_non_ascii_token_is_refused_when_an_admin_token_is_set() -> None:
    assert refused(bearer("é"), WITH_ADMIN).startswith("Invalid token: ")


# --------------------------------------------------------------------------- settings


def test_auth_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_JWT_SECRET", f"  {SECRET}  ")
    monkeypatch.setenv("ASSISTANT_JWT_AUDIENCE", "assistant-api")
    monkeypatch.setenv("ASSISTANT_JWT_ISSUER", "https://login.example.com")
    monkeypatch.setenv("ASSISTANT_DEV_TOKENS", " tok-alice = alice , tok-bob=bob,, ")
    monkeypatch.setenv("ASSISTANT_DEFAULT_USER", "carol")
    monkeypatch.setenv("ASSISTANT_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")
    assert get_auth_settings() == AuthSettings(
        jwt_secret=SECRET,
        jwt_audience="assistant-api",
        jwt_issuer="https://login.example.com",
        dev_tokens={"tok-alice": "alice", "tok-bob": "bob"},
        default_user="carol",
        admin_token=ADMIN_TOKEN,
        local_dev=True,
    )


def test_auth_settings_default_to_a_deployment_with_nothing_configured() -> None:
    assert get_auth_settings() == AuthSettings()
    assert get_auth_settings().local_dev is False


@pytest.mark.parametrize("variant", ["", "licensed", "LOCAL_DEV", "local_dev_x"])
def test_only_the_exact_local_dev_variant_means_langgraph_dev(
    monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", variant)
    assert get_auth_settings().local_dev is False


@pytest.mark.parametrize("pair", ["tok-alice", "=alice", "tok-alice=", " = "])
def test_a_malformed_dev_token_list_is_an_error_naming_the_pair(
    monkeypatch: pytest.MonkeyPatch, pair: str
) -> None:
    monkeypatch.setenv("ASSISTANT_DEV_TOKENS", f"tok-bob=bob,{pair}")
    with pytest.raises(ValueError, match="ASSISTANT_DEV_TOKENS must look like") as info:
        get_auth_settings()
    assert repr(pair.strip()) in str(info.value)


def test_a_jwt_secret_shorter_than_32_bytes_refuses_every_token() -> None:
    short = AuthSettings(jwt_secret="too-short")
    detail = refused(bearer(token(sub="alice")), short)
    assert "ASSISTANT_JWT_SECRET must be at least 32 bytes" in detail


class _User:
    identity = "alice"
    display_name = "alice"
    is_authenticated = True
    permissions = ("memory:own",)


@pytest.mark.parametrize(
    ("assistant_id", "prefetched"),
    [
        ("assistant", True),
        ("echo", False),
        (str(uuid.uuid5(GRAPH_ASSISTANT_NAMESPACE, "echo")), False),  # echo's default assistant
        ("0b8e5f4e-1c1e-4c55-9a63-6a1f0e2a9d11", True),  # an assistant made by hand
    ],
)
async def test_a_run_of_this_graph_starts_embedding_its_query_when_created(
    assistant_id: str, prefetched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query is embedded while the run queues; runs of the server's other graphs are left."""
    from assistant.server import auth as auth_module

    monkeypatch.setenv("LANGSERVE_GRAPHS", '{"assistant": "a.py:graph", "echo": "e.py:graph"}')
    seen: list[Any] = []
    monkeypatch.setattr(auth_module, "prefetch_query", seen.append)
    run_input = {"messages": [{"role": "user", "content": "Where do I live?"}]}
    value: Any = {"assistant_id": assistant_id, "kwargs": {"input": run_input}}
    user: Any = _User()
    ctx = Auth.types.AuthContext(
        permissions=["memory:own"], user=user, resource="threads", action="create_run"
    )
    assert await auth_module.on_run_create(ctx=ctx, value=value) == {"owner": "alice"}
    assert seen == ([run_input] if prefetched else [])


def test_the_auth_middleware_loads_no_node_and_not_the_graph() -> None:
    """Auth runs on every request: it prefetches the run's query without loading the nodes."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, assistant.server.auth, assistant.server.middleware.guard;"
            " print(' '.join(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert "assistant.run.recall_query" in loaded
    assert [name for name in loaded if name.startswith("assistant.nodes")] == []
    assert {"assistant.graph", "assistant.extraction.extract", "assistant.nodes.tools"}.isdisjoint(
        loaded
    )
