"""A file write shown as a unified diff against the file as it is now, read through the sandbox."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from ditto_tui.errors import DittoError
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.tui.text import render_untrusted
from ditto_tui.tui.widgets.inline import one_line

_LINE_STYLES = {"+": "green", "-": "red", "@": "cyan"}
_TEXT_FIELDS = ("text", "content")


@dataclass(frozen=True, kw_only=True)
class FileWrite:
    """A call that replaces a workspace file: where, and the whole new text."""

    path: str
    text: str


def file_write(effects: tuple[str, ...], arguments: Mapping[str, Any]) -> FileWrite | None:
    """The file a call writes, when it declares the ``write`` effect and has ``path`` and ``text``."""
    path = arguments.get("path")
    text = next((arguments[name] for name in _TEXT_FIELDS if isinstance(arguments.get(name), str)), None)
    if "write" not in effects or not isinstance(path, str) or text is None:
        return None
    return FileWrite(path=path, text=text)


def write_diff(write: FileWrite, read_text: Callable[[str], str]) -> Text:
    """The unified diff from the current file (``read_text(path)``, empty if missing) to the new text.

    Every line is untrusted text: hidden characters show as markers, one diff line per screen line.
    """
    try:
        current = read_text(write.path)
        heading = f"Diff against the current {write.path}"
    except DittoError as exc:
        if exc.code != "not_found":
            reason = sanitize_public_message(exc.message) or exc.title
            return Text.assemble(("The current file cannot be read: ", "bold"), one_line(reason))
        current, heading = "", f"{write.path} does not exist yet: the whole file is new"
    lines = list(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            write.text.splitlines(keepends=True),
            fromfile=f"a/{write.path}",
            tofile=f"b/{write.path}",
        )
    )
    out = one_line(heading, style="bold")
    if not lines:
        out.append("\nNo change: the file already has exactly this text.")
    for line in lines:
        body = line[:-1] if line.endswith("\n") else line
        out.append("\n")
        out.append_text(one_line(body, style=_LINE_STYLES.get(body[:1], "")))
        if not line.endswith("\n") and not line.startswith(("---", "+++", "@@")):
            out.append(" (no newline at end)", style="dim italic")
    return out


def unified_diff_text(diff: str) -> Text:
    """A unified diff with added and removed lines coloured; the lines themselves stay untrusted text."""
    lines = []
    for line in diff.split("\n"):
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        lines.append(render_untrusted(line, style=style))
    return Text("\n").join(lines)
