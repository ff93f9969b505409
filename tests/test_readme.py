"""The README's configuration table says what the Context dataclass says."""

import dataclasses
import re
from pathlib import Path

from assistant.context import Context

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def documented_fields() -> dict[str, str]:
    section = README.split("## Configuration", 1)[1].split("Environment (", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.MULTILINE))


def test_every_context_field_is_documented_and_nothing_else() -> None:
    assert set(documented_fields()) == {field.name for field in dataclasses.fields(Context)}


def test_documented_defaults_match_the_code() -> None:
    documented = documented_fields()
    for field in dataclasses.fields(Context):
        default = field.default
        if isinstance(default, int | float) or (isinstance(default, str) and len(default) < 40):
            assert documented[field.name].strip() == f"`{default!r}`".replace("'", '"'), field.name
