"""Workspace path rules: lexical validation, then symlink-aware resolution that never leaves the root."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path

from ditto_tui.errors import PathError
from ditto_tui.sandbox._walk import Kind, walk

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
MAX_COMPONENTS = 256

_DRIVE_LETTER = re.compile(r"[A-Za-z]:")
_LINE_SEPARATORS = frozenset("\u2028\u2029")


def _refuse(code: str, message: str) -> PathError:
    return PathError(message, code=code)


def _check_characters(path: str) -> None:
    """Refuse NUL, control, invisible and unpaired-surrogate characters (no normalisation is applied)."""
    if "\x00" in path:
        raise _refuse("nul_byte", "path contains a NUL byte")
    for char in path:
        point = ord(char)
        if point < 0x20 or 0x7F <= point <= 0x9F or char in _LINE_SEPARATORS:
            raise _refuse("control_character", "path contains a control character")
        category = unicodedata.category(char)
        if category == "Cf":
            raise _refuse("invisible_character", "path contains an invisible or bidirectional character")
        if category == "Cs":
            raise _refuse("invalid_path", "path is not valid Unicode text")


def _check_shape(path: str) -> None:
    if "\\" in path:
        raise _refuse("backslash", "path contains a backslash")
    if path.startswith("/"):
        raise _refuse("absolute_path", "path must be relative to the workspace")
    if _DRIVE_LETTER.match(path):
        raise _refuse("drive_letter", "path starts with a drive letter")


def _too_long() -> PathError:
    return _refuse(
        "path_too_long",
        f"path exceeds the limits of {MAX_PATH_BYTES} bytes, {MAX_COMPONENT_BYTES} bytes per component "
        f"and {MAX_COMPONENTS} components",
    )


def _normalise(path: str) -> str:
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refuse("path_traversal", "path contains a '..' component")
    if len(parts) > MAX_COMPONENTS:
        raise _too_long()
    if any(len(part.encode("utf-8")) > MAX_COMPONENT_BYTES for part in parts):
        raise _too_long()
    return "/".join(parts) or "."


def validate_workspace_path(path: object) -> str:
    """Check a workspace-relative POSIX path lexically and return its normalised form.

    ``"a//b"``, ``"./a"``, ``"a/"`` and ``"a/./b"`` become ``"a/b"``, ``"a"``, ``"a"`` and ``"a/b"``;
    the root is ``"."``. Raises :class:`PathError` with a stable ``code``; messages never echo the path.
    """
    if not isinstance(path, str):
        raise _refuse("invalid_path", "path must be a string")
    if not path:
        raise _refuse("empty_path", "path is empty")
    if len(path) > MAX_PATH_BYTES:
        raise _too_long()
    _check_characters(path)
    _check_shape(path)
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise _too_long()
    return _normalise(path)


def split_workspace_path(path: str) -> list[str]:
    """The components of an already validated, normalised path (none for the root)."""
    return [] if path == "." else path.split("/")


def root_components(root: Path) -> list[str]:
    """The components of an absolute, canonical root, compared one by one against link targets."""
    return [part for part in str(root).split("/") if part]


class _LstatCursor:
    """A cursor that names real directories by their components below the root and probes with ``lstat``."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self.parts: list[str] = []

    @property
    def depth(self) -> int:
        return len(self.parts)

    def _path(self, name: str) -> Path:
        return self._root.joinpath(*self.parts, name)

    def step(self, name: str, *, enter: bool) -> Kind:
        try:
            mode = os.lstat(self._path(name)).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        except OSError as error:
            raise _refuse("inaccessible", "path cannot be accessed") from error
        if stat.S_ISLNK(mode):
            return "symlink"
        if not stat.S_ISDIR(mode):
            return "other"
        if enter:
            self.parts.append(name)
        return "directory"

    def readlink(self, name: str) -> str:
        try:
            return os.readlink(self._path(name))
        except OSError as error:
            raise _refuse("path_changed", "path changed while it was being resolved") from error

    def leave(self) -> None:
        self.parts.pop()

    def to_root(self) -> None:
        self.parts.clear()


def resolve_workspace_path(root: Path, path: str) -> str:
    """Resolve ``path`` below the canonical ``root``, following symlinks only while every hop stays inside.

    Returns the normalised workspace-relative real path (``"."`` for the root). A missing final component
    is allowed and returned as it would be; a missing parent raises ``not_found``, any hop outside
    ``outside_workspace`` and more than 40 hops ``symlink_loop``.
    """
    parts = split_workspace_path(validate_workspace_path(path))
    cursor = _LstatCursor(root)
    final = walk(cursor, parts, root_components(root), follow_final=True)
    resolved = cursor.parts if final is None else [*cursor.parts, final]
    return "/".join(resolved) or "."
