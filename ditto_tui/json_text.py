"""JSON typed by a person (an edited input, a skip's output, a redacted result, a grant's rule): parsed
once, with one way of saying where it is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ditto_tui.errors import ValidationError


def parse_json_text(text: str, what: str, *, require_object: bool = False) -> Any:
    """``text`` as JSON, or :class:`ValidationError` naming ``what`` and where it is wrong: ``the edited
    input is not valid JSON: Expecting value (line 1, column 1)``. Empty text is refused (``null`` is the
    JSON for nothing); ``require_object`` refuses anything but a JSON object."""
    if not text.strip():
        raise ValidationError(f"write {what} as JSON first (null for nothing)")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValidationError(f"{what} is nested too deeply") from None
    if require_object and not isinstance(value, dict):
        raise ValidationError(f"{what} must be a JSON object")
    return value


def json_option(given: str, flag: str, *, require_object: bool = False) -> Any:
    """A command-line option's JSON: the text itself, or ``@FILE`` for a file's; ValidationError naming
    ``flag`` when the file cannot be read or the text is not JSON (or, ``require_object``, not an object)."""
    text = given
    if given.startswith("@"):
        try:
            text = Path(given[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{flag} {given!r}: cannot read the file ({exc})") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{flag} is not JSON: {exc}") from None
    if require_object and not isinstance(value, dict):
        raise ValidationError(f"{flag} must be a JSON object")
    return value


__all__ = ["json_option", "parse_json_text"]
