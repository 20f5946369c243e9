"""Where in the workspace an MCP call that names a file most likely writes (U-11, the approval diff).

An MCP server decides for itself where a ``name`` or ``path`` argument lands; ditto can only guess, and
the approval view says so. The guess looks in the folders the server's own entry in ``ditto.yaml``
points at (the value of ``--notes``, ``--folder``, ``--dir``, ``--directory``, ``--path``, ``--root``
or ``cwd``, a relative one found inside ``--root`` as the bundled demo server does), then in the
workspace itself. Only paths that stay inside the workspace by the sandbox's lexical rules are kept:
the file is then read through the sandbox, which never follows a link out of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ditto_tui.config import McpServerConfig
from ditto_tui.errors import PathError
from ditto_tui.sandbox.paths import validate_workspace_path

__all__ = ["ROOT_FLAGS", "server_roots", "write_targets"]

ROOT_FLAGS = ("--notes", "--folder", "--dir", "--directory", "--path", "--root")
"""Command-line options of a stdio server whose value is taken as a folder it keeps files in."""


def _flag_values(args: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(flag, value)`` for each ``--flag VALUE`` or ``--flag=VALUE`` of :data:`ROOT_FLAGS`."""
    found = []
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag not in ROOT_FLAGS:
            continue
        if equals:
            found.append((flag, value))
        elif index + 1 < len(args):
            found.append((flag, args[index + 1]))
    return found


def _inside(folder: str, workspace: Path) -> str | None:
    """``folder`` (absolute) relative to ``workspace``, or ``None`` when it lies outside it."""
    relative = os.path.relpath(os.path.normpath(folder), os.path.abspath(workspace))
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative.replace(os.sep, "/")


def server_roots(entry: McpServerConfig | None, workspace: Path) -> list[str]:
    """The workspace folders ``entry``'s server keeps files in, most specific first, then ``"."``."""
    roots: list[str] = []
    if entry is not None:
        values = _flag_values(entry.args)
        base = next((value for flag, value in values if flag == "--root"), None)
        top = os.path.abspath(workspace)
        base_dir = os.path.join(top, base) if base else top
        folders = [os.path.join(base_dir, value) for flag, value in values if flag != "--root"]
        folders += [base_dir] if base else []
        folders += [os.path.join(top, entry.cwd)] if entry.cwd else []
        for folder in folders:
            relative = _inside(folder, workspace)
            if relative is not None and relative not in roots:
                roots.append(relative)
    if "." not in roots:
        roots.append(".")
    return roots


def write_targets(path: str, roots: list[str], workspace: Path) -> list[str]:
    """The workspace files ``path`` may be under ``roots`` (with ``.md`` added to a bare name, as note
    servers do), each valid by the sandbox's lexical rules; none when ``path`` cannot be inside."""
    if os.path.isabs(path):
        relative = _inside(path, workspace)
        names = [] if relative is None else [relative]
        roots = ["."]
    else:
        names = [path] if os.path.splitext(path)[1] else [path, f"{path}.md"]
    targets: list[str] = []
    for root in roots:
        for name in names:
            try:
                target = validate_workspace_path(name if root == "." else f"{root}/{name}")
            except PathError:
                continue
            if target not in targets:
                targets.append(target)
    return targets
