"""What ``make dev`` runs: ``langgraph dev``, its reloader watching the code (``src/``) only.

``langgraph dev`` reloads the server when a Python file changes, and its reloader
(uvicorn's, with watchfiles) watches the whole working directory, where the server keeps
its data: the embedded Postgres (``.assistant_data/postgres``) and the dev runtime's
records (``.langgraph_api/``, rewritten about every 10 s). Each write there is reported as
"N changes detected", 140-170 times a session. The CLI has no flag for the folders to
watch; uvicorn has (``reload_dirs``), and the CLI's ``dev`` hands extra keyword arguments
of langgraph-api's ``run_server`` on to ``uvicorn.run``. So this runs the CLI unchanged,
its ``run_server`` given ``reload_dirs=[src/]``: a code change still reloads the server,
and the data, outside ``src/``, is never watched.

Checked against langgraph-cli 0.4.40 and langgraph-api 0.16.7
(``tests/test_storage.py::test_make_dev_watches_only_the_code`` fails if they change).

    python examples/watch_code.py --port 2025 --config .langgraph_dev.json  # as `langgraph dev`
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import langgraph_api.cli

__all__ = ["CODE_DIR", "main"]

CODE_DIR = Path(__file__).resolve().parents[1] / "src"
"""The one folder the reloader watches: the package's code."""


def _watching_code(run_server: Any) -> Any:
    """``run_server`` with uvicorn's reloader watching `CODE_DIR` only."""

    def run(*args: Any, **kwargs: Any) -> Any:
        return run_server(*args, **{**kwargs, "reload_dirs": [str(CODE_DIR)]})

    return run


def main(argv: list[str] | None = None) -> None:
    """Run ``langgraph dev`` with ``argv``, its reloader watching `CODE_DIR`."""
    langgraph_api.cli.run_server = _watching_code(langgraph_api.cli.run_server)
    from langgraph_cli.cli import cli  # after the patch, however it imports run_server

    cli.main(args=["dev", *(sys.argv[1:] if argv is None else argv)], prog_name="langgraph")


if __name__ == "__main__":
    main()
