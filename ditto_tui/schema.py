"""Input schemas: a validator compiled once per schema, and the violations of a value, as text.

The approval gate checks edited arguments with it (for tools and MCP tools alike, whoever the approver
is), and the TUI's forms check as the person types. Compiling costs about 40 µs and validating with a
compiled validator far less than ``jsonschema.validate`` (1.6 ms a call), so validators are cached by the
schema's canonical JSON. Remote ``$ref`` targets are never fetched; a schema too deep to compile safely
is not compiled, and only the tool checks then.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import referencing.exceptions
from jsonschema.protocols import Validator

MAX_VALIDATED_DEPTH = 64
"""A schema whose JSON nests deeper than this is not compiled into a validator: checking it against the
metaschema recurses once per level and could exhaust the stack. The tool still checks the arguments."""

_CACHED = 512


def nesting_depth(value: object, limit: int) -> int:
    """How many levels of objects and arrays ``value`` nests (a scalar is 0), counted up to ``limit + 1``.

    Iterative, so a hostile structure of any depth is measured without recursion; the walk stops as soon
    as it is known to be deeper than ``limit``.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            members: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            members = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        stack.extend((member, depth + 1) for member in members)
    return deepest


def compile_validator(schema: Mapping[str, Any]) -> tuple[Validator | None, str | None]:
    """A validator for ``schema`` (its draft from ``$schema``, 2020-12 by default), or why not.

    The schema is checked against its metaschema first. A schema deeper than :data:`MAX_VALIDATED_DEPTH`
    gives ``(None, None)``: not checked here at all.
    """
    if nesting_depth(schema, MAX_VALIDATED_DEPTH) > MAX_VALIDATED_DEPTH:
        return None, None
    try:
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None, "the input schema is not JSON"
    return _compiled(text)


@functools.lru_cache(maxsize=_CACHED)
def _compiled(text: str) -> tuple[Validator | None, str | None]:
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, f"the input schema is invalid: {exc.message}"
    except RecursionError:
        return None, "the input schema nests too deeply to be checked here"
    return cls(schema, format_checker=cls.FORMAT_CHECKER), None


def schema_errors(validator: Validator, arguments: Mapping[str, Any]) -> list[str]:
    """Every schema violation of ``arguments``, as ``path: message`` lines in document order."""
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda error: list(map(str, error.path)))
    except referencing.exceptions.Unresolvable as exc:
        return [f"the input schema has a reference that cannot be resolved: {exc}"]
    except RecursionError:  # a recursive schema walking a deep value: refuse rather than crash
        return ["(arguments): nested too deeply to check against the input schema"]
    lines = []
    for error in errors:
        where = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
        lines.append(f"{where}: {error.message}")
    return lines


def check_against_schema(schema: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> list[str]:
    """The violations of ``arguments`` against ``schema`` (none when there is no schema to check)."""
    if not schema:
        return []
    validator, problem = compile_validator(schema)
    if validator is None:
        return [] if problem is None else [problem]
    return schema_errors(validator, arguments)
