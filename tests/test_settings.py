"""Each setting is declared once, and that declaration is what the docs and the errors say."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from assistant.config import settings
from assistant.config.environment import Variable, env_names

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def _declared() -> dict[str, tuple[Variable, Any]]:
    """Each variable an operator sets: its declaration and its field's default."""
    found: dict[str, tuple[Variable, Any]] = {}
    for group in settings.GROUPS:
        for item in dataclasses.fields(group):
            var = item.metadata["env"]
            if var.name not in settings.SERVER_ENV:
                default = item.default_factory() if callable(item.default_factory) else item.default
                found[var.name] = (var, default)
    return found


def _shown(var: Variable, default: Any) -> str:
    """A default as docs/configuration.md writes it."""
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, tuple):
        return ",".join(default)
    if not default:
        return var.fallback
    return str(default)


def _documented_defaults() -> dict[str, str]:
    found: dict[str, str] = {}
    for names, defaults in re.findall(r"^\| (`[A-Z][^|]*?) \| ([^|]*?) ?\|", CONFIGURATION, re.M):
        variables = re.findall(r"`(\w+)`", names)
        values = [value.strip(" `") for value in defaults.split(",")] if defaults.strip() else []
        found.update(zip(variables, [*values, *[""] * len(variables)], strict=False))
    return found


def test_every_field_of_every_group_names_its_variable() -> None:
    for group in settings.GROUPS:
        for item in dataclasses.fields(group):
            assert isinstance(item.metadata.get("env"), Variable), f"{group.__name__}.{item.name}"


def test_the_documented_defaults_are_the_declared_ones() -> None:
    documented = _documented_defaults()
    for name, (var, default) in _declared().items():
        assert documented[name] == _shown(var, default), name


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ASSISTANT_MODEL_TIMEOUT_S", "soon", "ASSISTANT_MODEL_TIMEOUT_S must be a positive "),
        ("ASSISTANT_MODEL_TIMEOUT_S", "0", "positive number of seconds, got '0'"),
        ("ASSISTANT_MODEL_MAX_RETRIES", "-1", "must be a whole number, got '-1'"),
        (
            "ASSISTANT_DEV_TOKENS",
            "a=alice,bob",
            "must look like 'token1=alice,token2=bob', got 'bob'",
        ),
        ("ASSISTANT_JWT_LEEWAY_S", "1.5", "must be a whole number of seconds, got '1.5'"),
        ("ASSISTANT_MAX_BODY_BYTES", "big", "must be a whole number of bytes, got 'big'"),
        (
            "ASSISTANT_MAX_BODY_BYTES",
            "100",
            "ASSISTANT_MAX_BODY_BYTES must be at least 1024, got 100",
        ),
        ("ASSISTANT_GC_THRESHOLD", "some", "must be a whole number, or off, got 'some'"),
        ("ASSISTANT_GC_THRESHOLD", "0", "ASSISTANT_GC_THRESHOLD must be at least 1, or off, got 0"),
        ("ASSISTANT_AUDIT_DAYS", "0", "ASSISTANT_AUDIT_DAYS must be at least 1 day, got 0"),
        ("ASSISTANT_AUDIT_DAYS", "a year", "must be a whole number of days, got 'a year'"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable_and_the_value(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    group = next(group for group in settings.GROUPS if name in env_names(group))
    getter = {
        settings.ModelSettings: settings.get_model_settings,
        settings.AuthSettings: settings.get_auth_settings,
        settings.ProcessSettings: settings.get_process_settings,
        settings.RetentionSettings: settings.get_retention_settings,
    }[group]
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        getter()


def test_blank_is_unset_none_empties_a_list_and_the_embeddings_fall_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (*settings.AUTH_ENV, *settings.EMBEDDINGS_ENV, "ASSISTANT_GC_THRESHOLD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSISTANT_DEFAULT_USER", "   ")
    monkeypatch.setenv("ASSISTANT_CORS_ORIGINS", "None")
    monkeypatch.setenv("ASSISTANT_WEBHOOK_HOSTS", "Hooks.Example.com/, other")
    monkeypatch.setenv("ASSISTANT_GC_THRESHOLD", "OFF")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    auth = settings.get_auth_settings()
    assert auth.default_user == "default-user" and auth.run_settings == "user_id"
    assert auth.cors_origins == () and auth.webhook_hosts == ("hooks.example.com", "other")
    assert settings.get_process_settings().gc_threshold is None
    assert settings.get_embedding_settings().base_url == "http://localhost:11434/v1"
    monkeypatch.setenv("ASSISTANT_EMBEDDINGS_BASE_URL", "http://embed:8080/v1")
    assert settings.get_embedding_settings().base_url == "http://embed:8080/v1"
