"""The one symlink-resolution algorithm, shared by the path-based and the descriptor-based walks."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Literal, Protocol

from ditto_tui.errors import PathError

MAX_SYMLINK_HOPS = 40

Kind = Literal["directory", "symlink", "other", "missing"]


class Cursor(Protocol):
    """A position inside the workspace that the walk moves one component at a time."""

    @property
    def depth(self) -> int:
        """How many directories below the workspace root the cursor stands."""
        ...

    def step(self, name: str, *, enter: bool) -> Kind:
        """Look at ``name`` without following it; with ``enter``, descend when it is a directory."""
        ...

    def readlink(self, name: str) -> str:
        """Target of the symlink ``name`` in the current directory."""
        ...

    def leave(self) -> None:
        """Go up one directory (only called when ``depth`` is positive)."""
        ...

    def to_root(self) -> None:
        """Go back to the workspace root."""
        ...


def outside_error() -> PathError:
    """The error for any hop that leaves the workspace; it never names the target."""
    return PathError("path resolves outside workspace", code="outside_workspace")


def _components(text: str) -> list[str]:
    return [part for part in text.split("/") if part not in ("", ".")]


def _follow(cursor: Cursor, target: str, pending: deque[str], root_parts: Sequence[str]) -> None:
    """Queue a link target; an absolute one must name the root by components, never by string prefix."""
    parts = _components(target)
    if target.startswith("/"):
        if parts[: len(root_parts)] != list(root_parts):
            raise outside_error()
        cursor.to_root()
        parts = parts[len(root_parts) :]
    pending.extendleft(reversed(parts))


def walk(
    cursor: Cursor, parts: Sequence[str], root_parts: Sequence[str], *, follow_final: bool
) -> str | None:
    """Move ``cursor`` to the directory holding the last component of ``parts``, following symlinks.

    Returns that last component (which may be missing, a file, a directory or, without ``follow_final``,
    a symlink), or ``None`` when the path names the root itself. Every hop must stay inside the root.
    """
    pending = deque(parts)
    hops = 0
    while pending:
        name = pending.popleft()
        if name == "..":
            if cursor.depth == 0:
                raise outside_error()
            cursor.leave()
            continue
        last = not pending
        kind = cursor.step(name, enter=not last)
        if kind == "symlink" and (follow_final or not last):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise PathError("path has too many levels of symbolic links", code="symlink_loop")
            _follow(cursor, cursor.readlink(name), pending, root_parts)
        elif last:
            return name
        elif kind == "missing":
            raise PathError("a parent directory of the path does not exist", code="not_found")
        elif kind == "other":
            raise PathError("a parent component of the path is not a directory", code="not_a_directory")
    return None
