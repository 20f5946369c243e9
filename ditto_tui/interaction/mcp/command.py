"""What a stdio server runs: its program found only in safe places, Python without the cwd on ``sys.path``.

The workspace is untrusted (a cloned repository), so nothing in it may choose the program: a relative
command (``./x``, ``bin/x``) is refused, a bare name is searched beside the running Python and then only in
the absolute ``PATH`` entries outside the workspace (never ``.``, ``node_modules/.bin`` or
``W/.venv/bin``), and the child's own ``PATH`` loses the same entries. A Python interpreter gets ``-P``,
so ``python -m module`` imports the installed module, never a same-named package in its working directory.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable

from ditto_tui.errors import DittoError

SAFE_PATH_FLAG = "-P"
"""Python's "safe path" option (3.11+): neither the working directory nor the script's folder on sys.path."""

_PYTHON = re.compile(r"python(?:(?P<major>\d+)(?:\.(?P<minor>\d+))?)?")


class McpCommandError(DittoError):
    """A stdio server's command that cannot be run safely: relative, or found only in unsafe places."""

    title = "MCP server command"
    code = "MCP_COMMAND_REFUSED"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def safe_path_entries(path: str, workspace: str | None) -> list[str]:
    """The entries of a ``PATH`` value that are absolute and, when ``workspace`` is known, outside it."""
    real_workspace = None if workspace is None else os.path.realpath(workspace)
    entries = []
    for entry in path.split(os.pathsep):
        if not os.path.isabs(entry):
            continue  # "", "." and "node_modules/.bin" mean the working directory, whatever it is
        if real_workspace is not None and _inside(os.path.realpath(entry), real_workspace):
            continue
        entries.append(entry)
    return entries


def safe_environment(env: dict[str, str], workspace: str | None) -> dict[str, str]:
    """``env`` with its ``PATH`` cut to :func:`safe_path_entries` (the server's own children search it)."""
    if "PATH" not in env:
        return dict(env)
    return env | {"PATH": os.pathsep.join(safe_path_entries(env["PATH"], workspace))}


def _search(command: str, directories: Iterable[str]) -> str | None:
    for directory in directories:
        found = shutil.which(command, path=directory)
        if found is not None:
            return found
    return None


def resolve_command(command: str, env: dict[str, str], *, workspace: str | None = None) -> str:
    """The absolute program of ``command``; raises :class:`McpCommandError` when it is not safe to run.

    An absolute path is used as written (the user named it). A bare name is searched first beside the
    running Python (its virtual environment), then in the safe entries of ``env``'s ``PATH``. A relative
    path, or a name found nowhere safe, is refused with the reason.
    """
    if os.path.isabs(command):
        return command
    if "/" in command or command in ("", ".", ".."):
        raise McpCommandError(
            f"command {command!r} is a relative path: give an absolute path or a program name on PATH"
        )
    path = env.get("PATH", os.defpath)
    found = _search(command, [os.path.dirname(sys.executable), *safe_path_entries(path, workspace)])
    if found is not None:
        return found
    if _search(command, path.split(os.pathsep)) is not None:
        raise McpCommandError(
            f"command {command!r} was found only in a relative PATH entry or in the workspace, "
            "which are never searched"
        )
    raise McpCommandError(f"command {command!r} was not found")


def _older_than_311(program: str) -> bool:
    """Whether ``program``'s name (or its link target's) says it is a Python without ``-P``."""
    for name in (os.path.basename(program), os.path.basename(os.path.realpath(program))):
        match = _PYTHON.fullmatch(name)
        if match and match["major"]:
            version = (int(match["major"]), int(match["minor"] or 99))
            if version < (3, 11):
                return True
    return False


def python_args(program: str, args: list[str]) -> list[str]:
    """``args`` with :data:`SAFE_PATH_FLAG` first when ``program`` is a Python interpreter (3.11 or later)."""
    if not _PYTHON.fullmatch(os.path.basename(program)) or _older_than_311(program):
        return list(args)
    return [SAFE_PATH_FLAG, *args]
