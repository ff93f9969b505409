"""The README and docs say what the code does: settings, variables, commands and links.

The README stays short (a newcomer reads it in minutes); the rest lives in ``docs/`` and
``bench/RESULTS.md``. What they name is checked here, so a renamed setting or a moved
section fails the tests rather than a reader.
"""

import dataclasses
import re
from pathlib import Path

import pytest

from assistant.config.environment import env_names
from assistant.config.settings import GROUPS, SERVER_ENV
from assistant.run.context import Context

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS, ROOT / "ARCHITECTURE.md", ROOT / "bench" / "RESULTS.md"]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
DECLARED = {name for group in GROUPS for name in env_names(group)}
"""Every variable the code reads, from the settings' one declaration."""


def documented_fields() -> dict[str, str]:
    section = CONFIGURATION.split("Environment (", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.MULTILINE))


def test_every_context_field_is_documented_and_nothing_else() -> None:
    assert set(documented_fields()) == {field.name for field in dataclasses.fields(Context)}


def test_documented_defaults_match_the_code() -> None:
    documented = documented_fields()
    for field in dataclasses.fields(Context):
        default = field.default
        if isinstance(default, int | float) or (isinstance(default, str) and len(default) < 40):
            assert documented[field.name].strip() == f"`{default!r}`".replace("'", '"'), field.name


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


INTERNAL = {"ASSISTANT_STORAGE"}
"""Set by the config `make dev` generates, not by users: no line in .env.example."""


def _named_variables(text: str) -> set[str]:
    return set(re.findall(r"\bASSISTANT_[A-Z0-9_]*[A-Z0-9]\b", text))


def test_every_variable_the_docs_name_is_read_by_the_code_and_in_env_example() -> None:
    named = set().union(*(_named_variables(p.read_text(encoding="utf-8")) for p in PAGES))
    example = _named_variables((ROOT / ".env.example").read_text(encoding="utf-8"))
    unknown = named - DECLARED
    assert not unknown, f"the docs name variables no code reads: {sorted(unknown)}"
    assert named - INTERNAL <= example, f"not in .env.example: {sorted(named - INTERNAL - example)}"


def test_every_variable_the_code_reads_is_in_the_configuration_doc() -> None:
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]*[A-Z0-9])`", CONFIGURATION))
    missing = (DECLARED - set(SERVER_ENV) | INTERNAL) - documented
    assert not missing, f"docs/configuration.md does not document {sorted(missing)}"


def test_every_make_command_the_docs_name_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.MULTILINE))
    named = {
        target
        for page in PAGES
        for target in re.findall(r"`make ([\w-]+)", page.read_text(encoding="utf-8"))
    }
    assert named and named <= targets, f"no such make target: {sorted(named - targets)}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_the_pages_leads_somewhere(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"
