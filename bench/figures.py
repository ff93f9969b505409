"""Regenerate every benchmark figure in bench/RESULTS.md from the current code, or check them.

``python bench/figures.py`` (``make bench``) runs each benchmark in `BENCHES`, writes its
output into bench/RESULTS.md between ``<!-- bench:NAME ... -->`` and ``<!-- /bench:NAME -->``
with the commit it ran on, and, for the deterministic ones, runs a small fixed slice and
keeps its output in ``bench/expected/NAME.txt``, with that output's digest in the
marker.

``python bench/figures.py --check`` (run by the test suite) only runs the slices. It fails
when a slice prints something else than its expected file, or when RESULTS.md's marker
names another digest: the code changed what the benchmark prints, or RESULTS.md was not
regenerated with it. Timing benchmarks are regenerated but never checked. The recall slice
reads its texts' e5 vectors from ``bench/expected/recall_vectors.npz`` (written when
regenerating): e5's last bits differ between processors, enough to reorder near-ties.

While it runs it prints each target a benchmark names (its line with "met", "meets",
"missed" or "misses"), marked met or MISSED, and at the end how many were met and missed.

``--only NAME[,NAME]`` limits either mode to some benchmarks.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
"""Where the figures go (the README links to it and shows a few headline ones)."""
EXPECTED = ROOT / "bench" / "expected"
OUTPUTS = (":(exclude)bench/RESULTS.md", ":(exclude)bench/expected")
"""What this command writes, as git pathspecs that leave it out."""

VERDICT = re.compile(r"\b(?P<met>met|meets)\b|\b(?P<missed>missed|misses)\b", re.IGNORECASE)
"""How a benchmark says whether a target was reached, in the line that names the target."""

VOLATILE = re.compile(r"^(run time:|  \[\w+\] turn \d+/\d+|ingest \(s|network attempts:)")
"""Lines that vary between runs of a deterministic benchmark (timings, progress)."""


@dataclass(frozen=True)
class Bench:
    """One benchmark as RESULTS.md shows it."""

    name: str
    """Its RESULTS.md marker."""
    command: tuple[str, ...]
    """The full run whose output RESULTS.md shows (script and arguments)."""
    slice: tuple[str, ...] | None = None
    """A small deterministic run checked in CI; None for a timing benchmark."""
    keep: tuple[str, ...] = ()
    """Show only the paragraphs of the output whose first line starts with one of these;
    empty shows it all."""
    refresh: tuple[str, ...] = ()
    """Arguments added to the slice when regenerating (not when checking): the slice writes
    what it reads in CI (the e5 vectors of its texts) from this machine's run first."""


BENCHES: tuple[Bench, ...] = (
    Bench("locomo", ("bench/locomo.py", "--ablation")),
    Bench("locomo_product", ("bench/locomo_product.py",)),
    Bench("conversations", ("bench/conversations.py",)),
    Bench("extraction", ("bench/extraction.py",)),
    Bench("locomo_answers", ("bench/locomo_answers.py", "--sessions", "2")),
    Bench(
        "recall",
        ("bench/recall.py", "--calibrate"),
        (
            "bench/recall.py",
            "--users",
            "3",
            "--no-peers",
            "--no-timing",
            "--vectors",
            "bench/expected/recall_vectors.npz",
        ),
        keep=("system", "calibration"),
        refresh=("--write-vectors",),
    ),
    Bench(
        "tokens",
        ("bench/tokens.py",),
        ("bench/tokens.py", "--turns", "60", "--variants", "ours,full"),
        keep=("Reply-call prompt tokens", "Goals"),
    ),
    Bench(
        "calls",
        ("bench/calls.py", "--experiment", "all"),
        ("bench/calls.py", "--turns", "60", "--experiment", "none"),
        keep=("Per user turn", "Goal", "EXPERIMENT"),
    ),
    Bench("relevance_floor", ("bench/relevance_floor.py", "--sweep")),
    Bench("gate", ("bench/gate.py",)),
    Bench("gate_test", ("bench/gate.py", "--split", "test")),
    Bench("heed", ("bench/heed.py",)),
    Bench("recall_stores", ("bench/recall_stores.py",)),
    Bench("concurrency", ("bench/concurrency.py",)),
    Bench("overhead", ("bench/overhead.py", "--sizes", "1000", "10000")),
    Bench("load", ("bench/load.py",), keep=("phase", "throughput ratio")),
    Bench(
        "load_postgres",
        ("bench/load.py", "--storage", "postgres"),
        keep=("phase", "throughput ratio"),
    ),
    Bench("scale", ("bench/scale.py",)),
    Bench("mcp_latency", ("bench/mcp_latency.py",)),
    Bench("noisy_neighbour", ("bench/noisy_neighbour.py",)),
    Bench("threads", ("bench/threads.py",)),
    Bench("e5_engine", ("bench/e5_engine.py",)),
    Bench("query_encoder", ("bench/query_encoder.py",)),
)


def run(arguments: tuple[str, ...]) -> str:
    """The stdout of ``python ARGUMENTS`` from the repository root; fails loudly."""
    done = subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def stable(output: str) -> str:
    """``output`` without the lines that vary from run to run."""
    return "".join(line for line in output.splitlines(True) if not VOLATILE.match(line))


def paragraphs(output: str, keep: tuple[str, ...]) -> str:
    """The paragraphs of ``output`` whose first line starts with one of ``keep``."""
    if not keep:
        return output
    chosen = [
        part
        for part in re.split(r"\n\s*\n", output)
        if part.strip() and part.lstrip().startswith(keep)
    ]
    return "\n\n".join(part.strip("\n") for part in chosen) + "\n"


def digest(text: str) -> str:
    """A short digest of a slice's output, as the RESULTS.md marker names it."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def commit() -> str:
    """The current commit, marked ``+changes`` when the tree has uncommitted edits.

    What this command writes itself (RESULTS.md and ``bench/expected/``) does not count,
    so a second run before those are committed still names the commit the code is at.
    """
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *OUTPUTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{sha}+changes" if dirty else sha


def block(name: str, text: str) -> re.Match[str]:
    """The RESULTS.md block of benchmark ``name`` (it must exist)."""
    pattern = rf"<!-- bench:{name}(?P<attrs>[^>]*)-->\n(?P<body>.*?)<!-- /bench:{name} -->"
    match = re.search(pattern, text, re.DOTALL)
    if match is None:
        raise SystemExit(
            f"bench/RESULTS.md has no <!-- bench:{name} --> ... <!-- /bench:{name} --> block"
        )
    return match


def targets(output: str) -> list[tuple[bool, str]]:
    r"""Each target line of ``output``, with whether it was met.

    >>> targets("Goal ≤ 1.4 calls/turn: 1.390 -> MET\nsome figure: 3")
    [(True, 'Goal ≤ 1.4 calls/turn: 1.390 -> MET')]
    >>> targets("ratio 0.53 (goal >= 0.8: misses by 0.27)")
    [(False, 'ratio 0.53 (goal >= 0.8: misses by 0.27)')]
    """
    found = []
    for line in output.splitlines():
        verdict = VERDICT.search(line)
        if verdict is not None:
            found.append((verdict["met"] is not None, line.strip()))
    return found


def regenerate(benches: list[Bench]) -> None:
    """Run every benchmark, rewrite its RESULTS.md block and expected slice, print its targets."""
    EXPECTED.mkdir(exist_ok=True)
    sha = commit()
    met = missed = 0
    for bench in benches:
        print(f"running {' '.join(bench.command)} ...", flush=True)
        full = stable(run(bench.command))
        for reached, line in targets(full):
            print(f"  {'met   ' if reached else 'MISSED'}  {line}", flush=True)
            met, missed = met + reached, missed + (not reached)
        output = paragraphs(full, bench.keep).rstrip() + "\n"
        attrs = f" commit={sha}"
        if bench.slice is not None:
            sliced = stable(run((*bench.slice, *bench.refresh)))
            (EXPECTED / f"{bench.name}.txt").write_text(sliced, encoding="utf-8")
            attrs += f" slice={digest(sliced)}"
        shown = f"`python {' '.join(bench.command)}` at commit {sha}:\n\n```text\n{output}```\n"
        # written after each, so a failure keeps the rest
        text = RESULTS.read_text(encoding="utf-8")
        match = block(bench.name, text)
        text = (
            text[: match.start()]
            + f"<!-- bench:{bench.name}{attrs} -->\n{shown}<!-- /bench:{bench.name} -->"
            + text[match.end() :]
        )
        RESULTS.write_text(text, encoding="utf-8")
    print(f"targets: {met} met, {missed} missed")


def check(benches: list[Bench]) -> list[str]:
    """The problems found: slices whose output or RESULTS.md digest is out of date."""
    problems: list[str] = []
    text = RESULTS.read_text(encoding="utf-8")
    for bench in benches:
        if bench.slice is None:
            continue
        expected_path = EXPECTED / f"{bench.name}.txt"
        expected = expected_path.read_text(encoding="utf-8") if expected_path.exists() else ""
        actual = stable(run(bench.slice))
        if actual != expected:
            diff = "".join(
                difflib.unified_diff(
                    expected.splitlines(True),
                    actual.splitlines(True),
                    f"bench/expected/{bench.name}.txt",
                    f"python {' '.join(bench.slice)}",
                )
            )
            problems.append(f"{bench.name}: the benchmark now prints something else\n{diff}")
        marked = re.search(r"slice=(\w+)", block(bench.name, text)["attrs"])
        if marked is None or marked.group(1) != digest(actual):
            problems.append(
                f"{bench.name}: bench/RESULTS.md shows figures from other code "
                f"(slice={marked.group(1) if marked else None}, now {digest(actual)})"
            )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the slices")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    args = parser.parse_args()
    names = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = names - {bench.name for bench in BENCHES}
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    benches = [bench for bench in BENCHES if not names or bench.name in names]
    if args.check:
        problems = check(benches)
        for problem in problems:
            print(problem)
        if problems:
            raise SystemExit("Benchmark figures are stale: run `make bench` and commit the result.")
        print(f"benchmark figures up to date: {', '.join(b.name for b in benches if b.slice)}")
        return
    regenerate(benches)


if __name__ == "__main__":
    main()
