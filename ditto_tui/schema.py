"""Input schemas: a validator compiled once per schema, and the violations of a value, as text.

The approval gate checks edited arguments with it (for tools and MCP tools alike, whoever the approver
is), and the TUI's forms check as the person types. Compiling costs about 40 µs and validating with a
compiled validator far less than ``jsonschema.validate`` (1.6 ms a call), so validators are cached by the
schema's canonical JSON. Remote ``$ref`` targets are never fetched; a schema too deep to compile safely
is not compiled, and only the tool checks then.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema takes about 0.1 s to import: loaded with the first validator compiled
    import jsonschema
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
    import jsonschema

    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, f"the input schema is invalid: {exc.message}"
    except RecursionError:
        return None, "the input schema nests too deeply to be checked here"
    return cls(schema, format_checker=_format_checker(cls)), None


# The string formats the installed jsonschema checks only with optional packages (rfc3339-validator,
# rfc3987, fqdn, isoduration): MCP elicitation asks for ``uri`` and ``date-time``, so they are checked
# here with the standard library. ASCII digits only (``\d`` would take any script's digits).
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))")
_URI_TEXT = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:" + _URI_TEXT)
_URI_REFERENCE = re.compile(_URI_TEXT)
_HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_DURATION = re.compile(
    r"P(?=[0-9]|T)(?:[0-9]+Y)?(?:[0-9]+M)?(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+S)?)?"
    r"|P[0-9]+W"
)


def _clock(hour: str, minute: str, second: str, offset_hour: str | None, offset_minute: str | None) -> bool:
    """An RFC 3339 time of day: second 60 is a leap second; an offset is at most 23:59."""
    if int(hour) > 23 or int(minute) > 59 or int(second) > 60:
        return False
    return offset_hour is None or (int(offset_hour) <= 23 and int(offset_minute or "0") <= 59)


def is_date_time(text: str) -> bool:
    """RFC 3339 ``date-time`` (``2025-01-31T09:30:00Z``, ``2025-01-31t09:30:00.5+01:00``)."""
    found = _DATE_TIME.fullmatch(text)
    if found is None:
        return False
    year, month, day, *clock = found.groups()
    try:
        datetime.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return _clock(*clock)


def is_time(text: str) -> bool:
    """RFC 3339 ``full-time``: a time of day with its offset (``09:30:00Z``)."""
    found = _TIME.fullmatch(text)
    return found is not None and _clock(*found.groups())


def is_uri(text: str) -> bool:
    """An RFC 3986 URI: a scheme, then only characters a URI may hold (``%`` only as ``%XX``)."""
    return _URI.fullmatch(text) is not None


def is_uri_reference(text: str) -> bool:
    """An RFC 3986 URI reference: a URI or a relative reference."""
    return _URI_REFERENCE.fullmatch(text) is not None


def is_hostname(text: str) -> bool:
    """An RFC 1123 host name: dot-separated labels of 1–63 letters, digits and inner hyphens, 253 in all."""
    name = text[:-1] if text.endswith(".") else text
    if not name or len(name) > 253:
        return False
    return all(_HOST_LABEL.fullmatch(label) for label in name.split("."))


def is_duration(text: str) -> bool:
    """An ISO 8601 duration (RFC 3339 appendix A): ``P1DT2H``, ``PT30M``, ``P2W``; units in order, a
    ``T`` before hours, minutes and seconds, and weeks alone."""
    return _DURATION.fullmatch(text) is not None


_ADDED_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": is_date_time,
    "time": is_time,
    "uri": is_uri,
    "uri-reference": is_uri_reference,
    "hostname": is_hostname,
    "duration": is_duration,
}


@functools.cache
def _format_checker(cls: type[Validator]) -> jsonschema.FormatChecker:
    """The draft's own format checker, with :data:`_ADDED_FORMATS` for those it does not check."""
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    for name, check in _ADDED_FORMATS.items():
        if name not in checker.checkers:
            checker.checks(name)(_strings_only(check))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[object], bool]:
    """A format applies to strings only: any other value passes (JSON Schema's rule)."""

    def checked(instance: object) -> bool:
        return not isinstance(instance, str) or check(instance)

    return checked


def schema_errors(validator: Validator, arguments: Mapping[str, Any]) -> list[str]:
    """Every schema violation of ``arguments``, as ``path: message`` lines in document order."""
    import referencing.exceptions  # loaded with jsonschema, which the validator comes from

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
