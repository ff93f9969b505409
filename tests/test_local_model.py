"""`examples/local_model.py run`: stopped by a process manager, it leaves nothing running.

``make dev MODEL=local`` runs the server under ``local_model.py run``, which starts the
model's ``llama-server`` beside it. Stopped with SIGTERM (``kill``, a process manager, a CI
job's end), the wrapper used to die at once and leave both the model's server and the
command running. The model's server here is a stand-in process (no model is needed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

WRAPPER = """
import subprocess, sys
sys.path.insert(0, {examples!r})
import local_model

def start(port=0):
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    server = subprocess.Popen(sleeper)
    open({pids!r} + ".server", "w").write(str(server.pid))
    return local_model.LocalModel(process=server, port=port)

local_model.start = start
command = (
    "import os, time; open({pids!r} + '.command', 'w').write(str(os.getpid())); time.sleep(120)"
)
sys.exit(local_model.main(["run", "--", sys.executable, "-c", command]))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but was not yet reaped by its (stopped) parent is a zombie.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigterm_stops_the_command_and_the_models_server(tmp_path: Path) -> None:
    pids = str(tmp_path / "pid")
    script = WRAPPER.format(examples=str(EXAMPLES), pids=pids)
    wrapper = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while not (Path(pids + ".server").exists() and Path(pids + ".command").exists()):
        assert time.monotonic() < deadline, "the wrapper did not start both processes"
        assert wrapper.poll() is None, "the wrapper exited early"
        time.sleep(0.1)
    time.sleep(0.3)  # the pid files are written; let the handlers be in place
    server = int(Path(pids + ".server").read_text())
    command = int(Path(pids + ".command").read_text())

    wrapper.send_signal(signal.SIGTERM)
    wrapper.wait(timeout=30)

    deadline = time.monotonic() + 10
    while (_alive(server) or _alive(command)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [name for name, pid in (("server", server), ("command", command)) if _alive(pid)]
    for pid in (server, command):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"left running after SIGTERM: {left}"
