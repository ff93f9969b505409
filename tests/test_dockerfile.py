"""`langgraph dockerfile` turns langgraph.json into the production image's Dockerfile.

The CLI only reads langgraph.json and writes text (no Docker, no network), so this
runs offline. It checks that every part of the deployment config survives into the
image: the graph, the store's vector index, auth, the custom routes and checkpoint TTLs.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).with_name("langgraph")
APP_DIR = f"/deps/{REPO_ROOT.name}"  # langgraph names it after the checkout's folder
"""Where the image puts the project (the ``.`` dependency)."""

QUIET_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Dockerfile the CLI generates from the repository's langgraph.json."""
    if not CLI.exists():
        pytest.skip(f"the langgraph CLI is not installed next to {sys.executable}")
    target = tmp_path_factory.mktemp("docker") / "Dockerfile"
    result = subprocess.run(
        [str(CLI), "dockerfile", "-c", "langgraph.json", str(target)],
        cwd=REPO_ROOT,
        env={**os.environ, **QUIET_ENV},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"langgraph dockerfile failed:\n{result.stdout}{result.stderr}"
    return target.read_text(encoding="utf-8")


def env_json(dockerfile: str, name: str) -> Any:
    """The JSON value of ``ENV name='...'`` in the Dockerfile."""
    match = re.search(rf"^ENV {name}='(.*)'$", dockerfile, re.MULTILINE)
    assert match, f"no ENV {name} line in:\n{dockerfile}"
    return json.loads(match.group(1))


def in_repo(image_path: str) -> Path:
    """The repository file an image path (absolute under /deps/main, or relative) names."""
    path = image_path.split(":", 1)[0]
    return REPO_ROOT / path.removeprefix(APP_DIR + "/").removeprefix("./")


def test_base_image_is_langgraph_api_on_python_311(dockerfile: str) -> None:
    first = dockerfile.lstrip().splitlines()[0]
    assert first == "FROM langchain/langgraph-api:3.11"


def test_the_project_is_added_and_installed(dockerfile: str) -> None:
    assert f"ADD . {APP_DIR}" in dockerfile.splitlines()
    assert "pip install --system --no-cache-dir -c /api/constraints.txt -e ." in dockerfile
    workdirs = re.findall(r"^WORKDIR (.+)$", dockerfile, re.MULTILINE)
    assert workdirs[-1] == APP_DIR  # relative paths in the config resolve against it


def test_graph_is_served_as_assistant(dockerfile: str) -> None:
    graphs = env_json(dockerfile, "LANGSERVE_GRAPHS")
    assert graphs == {"assistant": f"{APP_DIR}/src/assistant/graph.py:graph"}
    assert in_repo(graphs["assistant"]).is_file()


def test_store_keeps_the_vector_index(dockerfile: str) -> None:
    store = env_json(dockerfile, "LANGGRAPH_STORE")
    index = store["index"]
    assert index["dims"] == 384
    assert index["fields"] == ["content"]
    assert index["embed"].endswith("src/assistant/server/embeddings.py:embeddings")
    assert in_repo(index["embed"]).is_file()
    assert store["ttl"] == {"refresh_on_read": True, "sweep_interval_minutes": 60}


def test_custom_auth_is_configured_without_studio_bypass(dockerfile: str) -> None:
    auth = env_json(dockerfile, "LANGGRAPH_AUTH")
    assert auth == {
        "path": f"{APP_DIR}/src/assistant/server/auth.py:auth",
        "disable_studio_auth": True,
    }
    assert in_repo(auth["path"]).is_file()


def test_custom_routes_are_mounted_behind_auth(dockerfile: str) -> None:
    http = env_json(dockerfile, "LANGGRAPH_HTTP")
    assert http == {
        "app": f"{APP_DIR}/src/assistant/server/webapp.py:app",
        "enable_custom_route_auth": True,
    }
    assert in_repo(http["app"]).is_file()


def test_checkpoints_expire(dockerfile: str) -> None:
    checkpointer = env_json(dockerfile, "LANGGRAPH_CHECKPOINTER")
    assert checkpointer == {
        "ttl": {"strategy": "keep_latest", "default_ttl": 43200, "sweep_interval_minutes": 60}
    }


def test_no_secrets_are_baked_in(dockerfile: str) -> None:
    """langgraph.json's ``env: .env`` is for `langgraph dev`; the image must not copy it."""
    for secret in ("OPENAI_API_KEY", "ASSISTANT_JWT_SECRET", "ASSISTANT_DEV_TOKENS"):
        assert secret not in dockerfile


@pytest.mark.parametrize(
    "local_only", [".env", ".venv", ".langgraph_api", ".assistant_data", ".langgraph_dev.json"]
)
def test_build_context_leaves_out_local_secrets_and_dev_data(local_only: str) -> None:
    ignore_file = REPO_ROOT / ".dockerignore"
    assert ignore_file.is_file(), "no .dockerignore next to langgraph.json"
    patterns = [
        line.strip().strip("/").removeprefix("**/")
        for line in ignore_file.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "!"))
    ]
    assert any(fnmatch.fnmatchcase(local_only, pattern) for pattern in patterns)
