"""Which run settings a caller may choose: the operator decides, per field and within bounds.

A run's ``context`` can change every `Context` field, and some of them cost the operator
money (``model``), change who the assistant is (``system_prompt``) or unbound the prompt
(``max_context_tokens``). So the server lets an ordinary caller set only the fields the
operator lists in ``ASSISTANT_RUN_SETTINGS``, each optionally bounded:

* ``recall_limit`` — any valid value;
* ``recall_limit<=10`` — a number no larger than 10;
* ``model=gpt-4o-mini|gpt-4o`` — one of the listed values.

The default is ``user_id`` alone (which the server ignores anyway once auth is on). A value
equal to the field's default is always accepted, since clients such as Studio send the
defaults back. The maintenance (admin) token may set anything. Every value is also checked
by `Context` itself, so an error names the field and the value.

>>> policy = parse_run_settings("recall_limit<=10, model=gpt-4o-mini|gpt-4o")
>>> check_run_context({"recall_limit": 8, "model": "gpt-4o"}, policy)
>>> check_run_context({"recall_limit": 11}, policy)
Traceback (most recent call last):
...
assistant.run.policy.RunSettingError: Context.recall_limit may be at most 10 per run, got 11.
>>> check_run_context({"system_prompt": "You are a pirate."}, policy)
Traceback (most recent call last):
...
assistant.run.policy.RunSettingError: Context.system_prompt is set by the operator ...
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assistant.run.context import Context

__all__ = [
    "DEFAULT_RUN_SETTINGS",
    "RunSettingError",
    "SettingRule",
    "callers_context_schema",
    "check_run_context",
    "parse_run_settings",
]

DEFAULT_RUN_SETTINGS = "user_id"
"""What an ordinary caller may set per run when ``ASSISTANT_RUN_SETTINGS`` is unset."""

_FIELDS = {field.name: field for field in dataclasses.fields(Context)}
_DEFAULTS = dataclasses.asdict(Context())
_ENTRY = re.compile(r"^(?P<name>[a-z_]+)\s*(?:(?P<op><=|=)\s*(?P<bound>.+))?$")


class RunSettingError(ValueError):
    """A run asked for a setting the caller may not choose, or an invalid value."""

    def __init__(self, message: str, *, status_code: int) -> None:
        """Keep the HTTP status the server should answer with (403 or 422)."""
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True, kw_only=True)
class SettingRule:
    """What a caller may do with one `Context` field."""

    name: str
    """The field."""
    at_most: float | None = None
    """For a number: the largest value a caller may ask for."""
    choices: frozenset[str] | None = None
    """For text: the only values a caller may ask for."""


def parse_run_settings(spec: str) -> dict[str, SettingRule]:
    """Read ``ASSISTANT_RUN_SETTINGS``: comma-separated ``field``, ``field<=N``, ``field=a|b``.

    >>> sorted(parse_run_settings("user_id, recall_limit<=10"))
    ['recall_limit', 'user_id']
    >>> parse_run_settings("colour")
    Traceback (most recent call last):
    ...
    ValueError: ASSISTANT_RUN_SETTINGS names an unknown Context field: 'colour'...
    """
    rules: dict[str, SettingRule] = {}
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        match = _ENTRY.match(entry)
        name = match["name"] if match else entry
        if match is None or name not in _FIELDS:
            raise ValueError(
                f"ASSISTANT_RUN_SETTINGS names an unknown Context field: {entry!r}. "
                f"Known fields: {', '.join(_FIELDS)}."
            )
        op, bound = match["op"], (match["bound"] or "").strip()
        if op == "<=":
            try:
                rules[name] = SettingRule(name=name, at_most=float(bound))
            except ValueError as error:
                raise ValueError(
                    f"ASSISTANT_RUN_SETTINGS: {entry!r} needs a number after '<='."
                ) from error
        elif op == "=":
            choices = frozenset(filter(None, (choice.strip() for choice in bound.split("|"))))
            rules[name] = SettingRule(name=name, choices=choices)
        else:
            rules[name] = SettingRule(name=name)
    return rules


def check_run_context(
    context: Mapping[str, Any], rules: Mapping[str, SettingRule], *, admin: bool = False
) -> None:
    """Raise `RunSettingError` unless the caller may run with ``context``.

    Keys that are not `Context` fields are left to the server. Values are validated by
    `Context` for everyone, the admin included.
    """
    if not isinstance(context, Mapping):
        raise RunSettingError(
            f"A run's context must be an object, got {context!r}.", status_code=422
        )
    chosen = {name: value for name, value in context.items() if name in _FIELDS}
    if not admin:
        for name, value in chosen.items():
            if value == _DEFAULTS[name] and type(value) is type(_DEFAULTS[name]):
                continue
            _check_rule(name, value, rules.get(name))
    try:
        Context(**chosen)
    except (TypeError, ValueError) as error:
        raise RunSettingError(str(error), status_code=422) from error


def _check_rule(name: str, value: Any, rule: SettingRule | None) -> None:
    if rule is None:
        raise RunSettingError(
            f"Context.{name} is set by the operator and cannot be changed per run "
            f"(got {value!r}). Operators allow it with ASSISTANT_RUN_SETTINGS.",
            status_code=403,
        )
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if rule.at_most is not None and number and value > rule.at_most:
        raise RunSettingError(
            f"Context.{name} may be at most {rule.at_most:g} per run, got {value!r}.",
            status_code=403,
        )
    if rule.choices is not None and value not in rule.choices:
        raise RunSettingError(
            f"Context.{name} must be one of {', '.join(sorted(rule.choices))} per run, "
            f"got {value!r}.",
            status_code=403,
        )


def callers_context_schema(
    schema: Mapping[str, Any], rules: Mapping[str, SettingRule]
) -> dict[str, Any]:
    """The context JSON schema as a caller may use it: only the fields ``rules`` let it set.

    Studio builds its settings form from the assistant's ``context_schema``; a field the
    operator keeps would be offered there and make every run fail with 403. A bound shows
    as the field's ``maximum`` or ``enum``.

    >>> schema = {"type": "object", "properties": {"user_id": {"type": "string"},
    ...     "model": {"type": "string"}, "recall_limit": {"type": "integer", "maximum": 50}},
    ...     "required": ["model"]}
    >>> callers_context_schema(schema, parse_run_settings("user_id,recall_limit<=10"))
    {'type': 'object', 'properties': {'user_id': {'type': 'string'}, 'recall_limit': {'type': 'integer', 'maximum': 10}}, 'required': []}
    """  # noqa: E501
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(schema)
    offered: dict[str, Any] = {}
    for name, field in properties.items():
        rule = rules.get(name)
        if rule is None:
            continue
        field = dict(field) if isinstance(field, Mapping) else field
        if isinstance(field, dict) and rule.at_most is not None:
            bound = rule.at_most
            most = field.get("maximum")
            field["maximum"] = int(bound) if bound.is_integer() else bound
            if isinstance(most, int | float) and most < bound:
                field["maximum"] = most
        if isinstance(field, dict) and rule.choices is not None:
            field["enum"] = sorted(rule.choices)
        offered[name] = field
    shown = {**schema, "properties": offered}
    if isinstance(schema.get("required"), list):
        shown["required"] = [name for name in schema["required"] if name in offered]
    return shown
