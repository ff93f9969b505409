"""Start and stop a local `langgraph dev` server, for the demo and the end-to-end tests.

The server runs from its own working directory (where it keeps ``.langgraph_api/``),
on a free loopback port, with analytics, version checks, tracing and the browser off.
With ``scripted=True`` it serves the graph with :class:`scripted.ScriptedChatModel`
patched into the model seam, so it needs no API key and no network.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import assistant

__all__ = ["DevServer", "free_port", "group_stats"]

PACKAGE_DIR = Path(assistant.__file__).resolve().parent

EXAMPLES_DIR = Path(__file__).resolve().parent
"""Where this module and the scripted model live (outside the package)."""

SCRIPTED_APP = '''"""Serve the assistant graph with the scripted model in the model seam."""
import os

from assistant.inference import models
from scripted import ScriptedChatModel

_model = ScriptedChatModel(
    log_path=os.environ.get("ASSISTANT_SCRIPTED_LOG") or None,
    fail_on=os.environ.get("ASSISTANT_SCRIPTED_FAIL_ON") or None,
    slow_on=os.environ.get("ASSISTANT_SCRIPTED_SLOW_ON") or None,
    keep_calls=False,
)
models.get_chat_model = lambda model="": _model

from assistant.graph import graph  # noqa: E402

if _stall := os.environ.get("ASSISTANT_E2E_STALL_FORGET"):
    # "N:path": once N episodes have been rewritten, the next rewrite (a forget erasing the
    # fact's words) writes path and waits for ever, so a test can kill the server in the
    # middle of a forget on an event instead of a guessed delay.
    import asyncio
    from pathlib import Path

    from assistant.memory import writer as _writer

    _after, _mark = _stall.split(":", 1)
    _rewrite = _writer.Writer.put_episode
    _rewritten = []

    async def _stalling(self, thread_id, value):
        if len(_rewritten) >= int(_after):
            Path(_mark).write_text(str(len(_rewritten)), encoding="utf-8")
            await asyncio.Event().wait()
        _rewritten.append(thread_id)
        await _rewrite(self, thread_id, value)

    _writer.Writer.put_episode = _stalling

if _dump := os.environ.get("ASSISTANT_ROUTES_DUMP"):
    # Every route the running server answers, as it built them (the server's app exists by
    # the time it loads graphs), so tests can attack routes a future release adds.
    import json
    import sys

    def _walk(routes, prefix=""):
        for route in routes:
            path = prefix + getattr(route, "path", "")
            if getattr(route, "routes", None) is not None and not hasattr(route, "endpoint"):
                yield from _walk(route.routes, path)
            else:
                methods = sorted(getattr(route, "methods", None) or ["WEBSOCKET"])
                yield {"path": path or "/", "methods": methods}

    _app = sys.modules["langgraph_api.server"].app
    with open(_dump, "w", encoding="utf-8") as _file:
        json.dump(list(_walk(_app.routes)), _file)
'''

QUIET_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "PYTHONUNBUFFERED": "1",
}
"""Stops every network call `langgraph dev` would make by itself."""

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ASSISTANT_MODEL",
    "ASSISTANT_EMBEDDINGS_MODEL",
    "ASSISTANT_EMBEDDINGS_BASE_URL",
    "ASSISTANT_EMBEDDINGS_API_KEY",
    "LANGSMITH_API_KEY",
)
"""Provider settings a scripted server never inherits, so it needs no key and no network."""


def group_stats(pgid: int) -> list[tuple[str, list[str]]]:
    """``(pid, fields)`` of every live process in process group ``pgid`` (Linux).

    ``fields`` are ``/proc/PID/stat``'s after the command name: ``fields[2]`` is the
    group, ``fields[11]`` and ``fields[12]`` the user and system CPU ticks.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            found.append((entry.name, fields))
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(kw_only=True)
class DevServer:
    """A `langgraph dev` process serving the assistant graph from ``workdir``.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Stopping is
    clean (SIGINT), so the server flushes threads and the store to disk, and a new
    DevServer on the same ``workdir`` finds them again.
    """

    workdir: Path
    """Working directory; the server keeps its data in ``workdir/.langgraph_api``."""
    scripted: bool = True
    """Patch the scripted model into the seam; False serves the graph as deployed."""
    port: int = 0
    """Port to listen on; 0 picks a free one at start."""
    env: dict[str, str | None] = field(default_factory=dict)
    """Environment changes for the server process; a None value removes the variable."""
    auth: bool = False
    """Serve with the project's custom auth (`assistant.server.auth`), as langgraph.json does."""
    n_jobs_per_worker: int = 4
    """Runs the server executes at once."""
    startup_timeout_s: float = 120.0
    """How long to wait for the server to answer before giving up."""
    storage: Literal["memory", "postgres"] = "memory"
    """Where threads, checkpoints and the store live: the dev runtime's pickles
    (``memory``), or Postgres with pgvector (``postgres``, what ``make dev`` serves)."""
    postgres_uri: str | None = None
    """With ``storage="postgres"``: the Postgres to use; None starts the embedded one with
    its data in ``workdir/.assistant_data/postgres``."""
    inherit_settings: bool = True
    """Pass the shell's provider keys and ``ASSISTANT_*`` settings on to the server (a
    scripted server never gets the provider keys). False starts it with none of them, so
    ``env`` alone configures it, whatever the developer exports (the tests' servers)."""
    env_file: str | None = None
    """``langgraph.json``'s ``env``: a file, relative to ``workdir``, that the server
    applies over its environment (the project's own langgraph.json names ``.env``)."""

    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """The server's combined stdout and stderr."""
        return self.workdir / "server.log"

    @property
    def scripted_log_path(self) -> Path:
        """One JSON line per scripted-model call (when ``scripted``)."""
        return self.workdir / "scripted_calls.jsonl"

    def write_config(self) -> Path:
        """Write the langgraph.json (and the scripted app module) the server loads."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        graph = f"{PACKAGE_DIR / 'graph.py'}:graph"
        if self.scripted:
            app = self.workdir / "scripted_app.py"
            app.write_text(SCRIPTED_APP, encoding="utf-8")
            graph = f"{app}:graph"
        config: dict[str, Any] = {
            "dependencies": ["."],
            "graphs": {"assistant": graph},
            "store": {
                "index": {
                    "dims": 384,
                    "embed": f"{PACKAGE_DIR / 'server' / 'embeddings.py'}:embeddings",
                    "fields": ["content"],
                }
            },
        }
        config["http"] = {
            "app": f"{PACKAGE_DIR / 'server' / 'webapp.py'}:app",
            "enable_custom_route_auth": True,
        }
        if self.auth:
            config["auth"] = {
                "path": f"{PACKAGE_DIR / 'server' / 'auth.py'}:auth",
                "disable_studio_auth": True,
            }
        if self.env_file is not None:
            config["env"] = self.env_file
        if self.storage == "postgres":
            from assistant.server.persistence.storage import CHECKPOINTER_PATH, STORE_PATH

            config["checkpointer"] = {"path": CHECKPOINTER_PATH}
            config["store"]["path"] = STORE_PATH
        path = self.workdir / "langgraph.json"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        return path

    def start(self) -> DevServer:
        """Start the server and wait until it answers on ``/ok``."""
        config = self.write_config()
        self.port = self.port or free_port()
        env = {k: v for k, v in os.environ.items() if self._inherits(k)}
        env.update(QUIET_ENV)
        if self.scripted:
            env["ASSISTANT_SCRIPTED_LOG"] = str(self.scripted_log_path)
            # The scripted model lives beside this file, outside the package.
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(EXAMPLES_DIR), env.get("PYTHONPATH", "")])
            )
        env.pop("POSTGRES_URI", None)
        if self.storage == "postgres" and self.postgres_uri:
            env["POSTGRES_URI"] = self.postgres_uri
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        cli = Path(sys.executable).with_name("langgraph")
        command = [
            str(cli),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--config",
            str(config),
            "--n-jobs-per-worker",
            str(self.n_jobs_per_worker),
        ]
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_until_ready()
        return self

    def _inherits(self, name: str) -> bool:
        """Whether the server gets the shell's ``name`` (before ``env`` is applied)."""
        if name in PROVIDER_ENV:
            return self.inherit_settings and not self.scripted
        return self.inherit_settings or not name.startswith("ASSISTANT_")

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                code = self.process.returncode
                self.stop()
                raise RuntimeError(
                    f"langgraph dev exited with code {code}; log:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError(
            f"langgraph dev did not answer within {self.startup_timeout_s}s; "
            f"log:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the server log."""
        if not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server cleanly (SIGINT, so it flushes its data), or kill it."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """Crash the server: SIGKILL its whole process group, no chance to save anything."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> DevServer:
        """Start the server."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server cleanly."""
        self.stop()
