"""Strict readers for command-tool arguments: exact keys, exact JSON types, exact ranges."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ditto_tui.errors import ToolValidationError
from ditto_tui.sandbox import validate_workspace_path

MAX_TEXT_CHARS = 1024
MAX_PATHS = 16
_LINE_BREAKS = frozenset("\x00\r\n")


def refuse(message: str, code: str) -> ToolValidationError:
    """The error every refused argument raises; ``code`` names the rule (``unknown_field``, ...)."""
    return ToolValidationError(message, code=code)


def _shown(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 40 else f"{text[:40]}..."


def exact_keys(args: object, allowed: Collection[str]) -> Mapping[str, Any]:
    """``args`` as a mapping holding no key outside ``allowed``."""
    if not isinstance(args, Mapping):
        raise refuse("arguments must be a JSON object", "invalid_arguments")
    for key in args:
        if key not in allowed:
            raise refuse(f"unknown field {_shown(key)}", "unknown_field")
    return args


def flag(args: Mapping[str, Any], key: str) -> bool:
    """An optional boolean, false when absent."""
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise refuse(f"{key} must be true or false", "invalid_type")
    return value


def integer(args: Mapping[str, Any], key: str, *, default: int, low: int, high: int) -> int:
    """An optional integer in ``low..high``; booleans and floats such as ``5.0`` are refused."""
    value = args.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise refuse(f"{key} must be an integer from {low} to {high}", "out_of_range")
    return value


def choice(args: Mapping[str, Any], key: str, options: Mapping[str, str], *, default: str) -> str:
    """The command-line letter of an optional enumerated value."""
    value = args.get(key, default)
    if not isinstance(value, str) or value not in options:
        raise refuse(f"{key} must be one of {', '.join(options)}", "invalid_choice")
    return options[value]


def text(args: Mapping[str, Any], key: str, *, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A required nonempty single-line string of at most ``max_chars`` characters."""
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise refuse(f"{key} must be a nonempty string", "invalid_type")
    if len(value) > max_chars:
        raise refuse(f"{key} must be at most {max_chars} characters", "too_long")
    if not _LINE_BREAKS.isdisjoint(value):
        raise refuse(f"{key} must be a single line without NUL", "control_character")
    return value


def path(args: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    """A workspace path, normalised (``a//b`` → ``a/b``); absent means ``default`` when there is one."""
    if key not in args:
        if default is None:
            raise refuse(f"{key} is required", "missing_field")
        return default
    return validate_workspace_path(args[key])


def paths(args: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A required list of 1..16 workspace paths, each normalised."""
    value = args.get(key)
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_PATHS:
        raise refuse(f"{key} must be a list of 1 to {MAX_PATHS} paths", "invalid_type")
    return tuple(validate_workspace_path(item) for item in value)
