"""The tree is the architecture: each folder of ``src/assistant`` imports only the ones below it.

A module's place is the folder right under ``src/assistant`` that holds it (``server`` for
``server/middleware/guard.py``), or, for a module directly in the package, its own name
(the package's ``__init__``, which exports the graph, belongs with ``graph``). Every import
of every module is read with `ast`, those inside functions and under ``TYPE_CHECKING``
included, and a place may import itself and the places of the rows below its own, never a
place of its own row or above. ``cli/`` talks to a server over HTTP and imports only the
configuration. There is no list of exceptions: a new import against the layering fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "assistant"

LAYERS: list[set[str]] = [
    {"graph", "server"},  # what LangGraph Server loads: the graph, auth, routes, storage
    {"nodes"},  # one file per node, and the chat's memory tools
    {"extraction"},  # what memory learns from a message: gate, extraction, held messages
    {"run"},  # what one run reads and builds: scope, context, policy, state, prompts
    {"memory"},  # the life of a fact behind UserMemory; its search engine in memory/search
    {"inference"},  # the chat model's seam, provider quirks, the embedder and its queue
    {"config", "compat"},  # settings and the environment; library internals
]
"""The places, highest row first."""

CLI_MAY_IMPORT = {"cli", "config"}

MAX_MODULES_AT_TOP = 8
MAX_MODULES_IN_A_FOLDER = 15


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("assistant", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _place(module: str) -> str:
    """``assistant.server.middleware.guard`` -> ``server``; ``assistant`` -> ``graph``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "graph"


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it."""

    def resolve(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(resolve(a.name) for a in node.names if a.name.startswith("assistant"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("assistant"):
            assert node.level == 0, f"{path}: use absolute imports"
            module = str(node.module)
            for alias in node.names:
                whole = f"{module}.{alias.name}"
                found.add(whole if whole in modules else resolve(module))
    return found


def _may_import() -> dict[str, set[str]]:
    """Each place and the places it may import (itself included)."""
    allowed = {"cli": CLI_MAY_IMPORT}
    for row, places in enumerate(LAYERS):
        below = set().union(*LAYERS[row + 1 :])
        for place in places:
            allowed[place] = below | {place}
    return allowed


def test_every_module_has_a_place() -> None:
    allowed = _may_import()
    assert {_place(module) for module in _module_files()} - set(allowed) == set()


def test_no_module_imports_its_own_row_or_above() -> None:
    modules = _module_files()
    allowed = _may_import()
    wrong = sorted(
        f"{module} imports {other}"
        for module, path in modules.items()
        for other in _imports(path, modules)
        if _place(other) not in allowed[_place(module)]
    )
    assert wrong == []


def test_the_layering_is_read_from_the_imports() -> None:
    modules = _module_files()
    store_api = _imports(modules["assistant.server.store_api"], modules)
    assert {_place(module) for module in store_api} >= {"memory", "inference"}
    assert _place("assistant.server.middleware.guard") == "server"
    assert _place("assistant") == _place("assistant.graph") == "graph"
    allowed = _may_import()
    assert "memory" in allowed["run"] and "run" not in allowed["memory"]
    assert "server" not in allowed["graph"] and "graph" not in allowed["server"]
    assert allowed["config"] == {"config"}


def test_the_tree_stays_readable() -> None:
    """A few modules at the top, and no folder a newcomer has to scroll through."""
    at_top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(at_top) <= MAX_MODULES_AT_TOP, at_top
    for folder in sorted({path.parent for path in PACKAGE.rglob("*.py")}):
        inside = sorted(path.name for path in folder.glob("*.py"))
        assert len(inside) <= MAX_MODULES_IN_A_FOLDER, (folder.name, inside)
