"""Which file a tool call writes, and with what text: what an approval shows as a diff, in any front end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FileWrite", "file_write", "mcp_file_write"]

_TEXT_FIELDS = ("text", "content")
_PATH_FIELDS = ("path", "file", "filename", "file_path", "name")


@dataclass(frozen=True, kw_only=True)
class FileWrite:
    """A call that replaces a file: the path it names, the whole new text, and the workspace files
    that path may be (``targets``, most likely first; for a local tool just ``path``).

    ``guessed`` marks an MCP call, whose server decides where it really writes: the diff is a best guess
    from the argument names.
    """

    path: str
    text: str
    targets: tuple[str, ...] = ()
    guessed: bool = False


def file_write(effects: tuple[str, ...], arguments: Mapping[str, Any]) -> FileWrite | None:
    """The file a call writes, when it declares the ``write`` effect and has ``path`` and ``text``."""
    path = arguments.get("path")
    text = _first_string(arguments, _TEXT_FIELDS)
    if "write" not in effects or not isinstance(path, str) or text is None:
        return None
    return FileWrite(path=path, text=text, targets=(path,))


def mcp_file_write(annotations: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> FileWrite | None:
    """The file an MCP call likely writes: a tool the server does not call read-only, with a string
    argument named like a path (``path``, ``file``, ``filename``, ``file_path``, ``name``) and one with
    the text (``text``, ``content``). ``targets`` are left for the caller to map into the workspace."""
    if annotations and annotations.get("readOnlyHint") is True:
        return None
    path = _first_string(arguments, _PATH_FIELDS)
    text = _first_string(arguments, _TEXT_FIELDS)
    if path is None or text is None:
        return None
    return FileWrite(path=path, text=text, guessed=True)


def _first_string(arguments: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    return next((arguments[name] for name in names if isinstance(arguments.get(name), str)), None)
