"""bench/RESULTS.md's deterministic benchmark figures come from the current code.

`bench/figures.py --check` runs a small fixed slice of each deterministic benchmark and
compares it with the output `make bench` kept beside it and named in bench/RESULTS.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_benchmark_figures_are_not_stale() -> None:
    done = subprocess.run(
        [sys.executable, "bench/figures.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
