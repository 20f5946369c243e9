"""Saving a resource's bytes under the workspace: a new file, never outside it, never through a link."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.errors import PathError
from ditto_tui.sandbox import create_new_file
from ditto_tui.sandbox.paths import MAX_COMPONENT_BYTES, MAX_PATH_BYTES

__all__ = ["save_under_workspace"]

_MESSAGES = {
    "empty_path": "type a file name",
    "nul_byte": "the name contains a NUL character",
    "control_character": "the name contains a control character (a line break, tab or escape)",
    "path_too_long": (
        f"the name is too long: at most {MAX_COMPONENT_BYTES} bytes a folder or file name, "
        f"{MAX_PATH_BYTES} in all"
    ),
}
"""The sandbox's refusals worded for a name typed in the save box (the others are shown as they are)."""


def save_under_workspace(workspace: Path, name: str, data: bytes) -> str:
    """Write ``data`` to the new file ``name`` (relative to ``workspace``); returns the relative path.

    The sandbox's descriptor walk does the work (:func:`create_new_file`): absolute paths, ``..``, links
    on the way and a name that already exists are refused with a :class:`PathError` whose message never
    echoes the name.
    """
    try:
        return create_new_file(workspace, name.strip(" "), data)
    except PathError as error:
        message = _MESSAGES.get(error.code)
        if message is None:
            raise
        raise PathError(message, code=error.code) from None
