"""ARCHITECTURE.md's layering holds: no module imports a layer above its own.

The layer block (the fenced block under "## Layers") names every module of
``src/assistant`` and its layer, highest first. Each module's imports are read with `ast`,
those inside functions included, and any import of a higher layer fails, as does a module
the block does not name. A package's ``__init__`` belongs to the layer of the modules it
holds (the root package's, which exports the graph lazily, to ``graph.py``'s), and
``cli/`` may import only what ARCHITECTURE.md says it imports.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "assistant"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"

KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}
"""(importer, imported) pairs that break the layering today, each with why and who ends it.
Empty this at the merge of issue 22: the test fails on a pair that no longer occurs."""

KNOWN_UNLISTED: dict[str, str] = {}
"""Modules the layer block does not name yet, each with why. Empty this at the merge too."""


def _layer_block() -> list[tuple[str, str]]:
    """The layer block's (layer, text) pairs, highest layer first."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1]
    block = section.split("```", 2)[1]
    layers: list[tuple[str, str]] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():  # a continuation of the layer above
            name, rest = layers[-1]
            layers[-1] = (name, f"{rest} · {line.strip()}")
        else:
            name, rest = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            layers.append((name, rest))
    return layers


def _modules_named(text: str) -> set[str]:
    """The modules a layer's text names: ``a.py``, ``dir/a.py``, and ``dir/: a · b (c + d)``.

    After ``dir/:`` every bare name is a module of ``dir``, and so is each name of a
    ``(c + d)`` group: the modules behind the one before it.

    >>> sorted(_modules_named("graph.py (nodes, edges) · memory/: facts · search (index + query)"))
    ['graph', 'memory.facts', 'memory.index', 'memory.query', 'memory.search']
    """
    named: set[str] = set()
    package = ""
    for item in text.split(" · "):
        item = item.strip()
        if match := re.match(r"(\w+)/:\s*(.*)", item):
            package, item = f"{match[1]}.", match[2]
        head = re.match(r"[\w/]+(?:\.py)?", item)
        assert head, f"cannot read a module in {item!r}"
        names = [head[0]]
        group = re.search(r"\(([^)]*)\)", item)
        if package and group and "+" in group[1]:
            names += [part.strip() for part in group[1].split("+")]
        for name in names:
            if name.endswith(".py"):
                named.add(name.removesuffix(".py").replace("/", "."))
            elif package:
                named.add(package + name)
    return named


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("assistant", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


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


def _layer_of_each_module(modules: dict[str, Path]) -> tuple[dict[str, int], list[str]]:
    """Each module's layer (0 is the highest), and the layer names."""
    layers = _layer_block()
    rank: dict[str, int] = {}
    for index, (_, text) in enumerate(layers):
        for name in _modules_named(text):
            assert f"assistant.{name}" not in rank, f"{name} is in two layers"
            rank[f"assistant.{name}"] = index
    rank["assistant"] = rank["assistant.graph"]
    for package in {name for name, path in modules.items() if path.name == "__init__.py"}:
        inside = {rank[m] for m in rank if m.startswith(f"{package}.")}
        if package != "assistant" and len(inside) == 1:
            rank[package] = inside.pop()
    return rank, [name for name, _ in layers]


def _cli_may_import() -> set[str]:
    """What ARCHITECTURE.md says ``cli/`` imports besides itself."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    sentence = re.search(r"`cli/`.*?imports only (.*?)\.", text, re.S)
    assert sentence, "ARCHITECTURE.md no longer says what cli/ imports"
    return {f"assistant.{name}" for name in re.findall(r"`(\w+)`", sentence[1])}


def _violations() -> tuple[dict[tuple[str, str], str], set[str]]:
    """Every import against the layering (with what is wrong), and every unlisted module."""
    modules = _module_files()
    rank, names = _layer_of_each_module(modules)
    cli_allowed = _cli_may_import()
    wrong: dict[tuple[str, str], str] = {}
    unlisted: set[str] = set()
    for module, path in modules.items():
        imported = _imports(path, modules) - {module}
        if module == "assistant.cli" or module.startswith("assistant.cli."):
            for other in imported - cli_allowed:
                if not other.startswith("assistant.cli"):
                    wrong[(module, other)] = "cli/ may import only " + ", ".join(cli_allowed)
            continue
        if module not in rank:
            unlisted.add(module)
            continue
        for other in imported:
            if other in rank and rank[other] < rank[module]:
                wrong[(module, other)] = f"{names[rank[module]]} imports {names[rank[other]]}"
    return wrong, unlisted


def test_every_module_is_in_a_layer() -> None:
    _, unlisted = _violations()
    assert unlisted == set(KNOWN_UNLISTED)


def test_no_module_imports_a_higher_layer() -> None:
    wrong, _ = _violations()
    assert {pair: wrong[pair] for pair in sorted(wrong) if pair not in KNOWN_VIOLATIONS} == {}
    stale = sorted(set(KNOWN_VIOLATIONS) - set(wrong))
    assert stale == [], f"fixed: remove {stale} from KNOWN_VIOLATIONS"


def test_the_check_reads_the_layer_block() -> None:
    modules = _module_files()
    rank, names = _layer_of_each_module(modules)
    assert names[0] == "server wiring" and names[-1] == "foundations"
    assert rank["assistant.graph"] < rank["assistant.nodes.recall"] < rank["assistant.scope"]
    assert rank["assistant.scope"] < rank["assistant.memory.facts"] < rank["assistant.settings"]
    assert rank["assistant.memory.index"] == rank["assistant.memory"]
    assert _cli_may_import() == {"assistant.constants", "assistant.settings"}
