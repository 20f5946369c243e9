"""Saving a resource's bytes under the workspace: a new file, never outside it, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ditto_tui.errors import PathError
from ditto_tui.home import StateDirError, open_private
from ditto_tui.sandbox.paths import split_workspace_path, validate_workspace_path

__all__ = ["save_under_workspace"]


def _refuse(message: str) -> PathError:
    return PathError(message, code="save_refused")


def _target(workspace: Path, name: str) -> Path:
    """Where ``name`` lands: every existing folder on the way must be a real folder (no link)."""
    relative = validate_workspace_path(name.strip())
    parts = split_workspace_path(relative)
    if not parts:
        raise _refuse("name a file, not the workspace itself")
    root = Path(os.path.realpath(workspace))
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue  # open_private creates the missing folders, each checked to be no link
        if stat.S_ISLNK(mode):
            raise _refuse("a folder on the way is a symbolic link; refusing to write through it")
        if not stat.S_ISDIR(mode):
            raise _refuse("a part of the path is not a folder")
    return root.joinpath(*parts)


def save_under_workspace(workspace: Path, name: str, data: bytes) -> str:
    """Write ``data`` to the new file ``name`` (relative to ``workspace``); returns the relative path.

    Absolute paths, ``..``, links on the way and a file that already exists are refused with a
    :class:`PathError` (or :class:`StateDirError`) whose message never echoes the name.
    """
    target = _target(workspace, name)
    try:
        fd = open_private(target, exclusive=True)
    except StateDirError as exc:
        if os.path.lexists(target):
            raise _refuse("a file of that name already exists (or is a link)") from None
        raise _refuse("the file cannot be created there") from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return str(target.relative_to(Path(os.path.realpath(workspace))))
