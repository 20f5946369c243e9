"""Control files: the files whose content decides what ditto-tui itself runs, which no setting lets a call
write without a person.

A trusted workspace's ``ditto.yaml`` starts MCP servers and sets policy; its ``graphs/`` is code the next
run imports; ``.ditto/`` holds its state; a repository's ``.git/`` holds hooks that git runs; the user
config and state directories hold the user's own config, trust, grants and tokens. A call that may write
and names one of them (in any string argument, after links are followed) is a *protected* call: the
approval gate asks a person about it whatever the mode, grant, batch or rule says (a rule that denies
still denies), an answer that no person gave does not approve it, and no grant is written from it.

``.ditto/notes/`` is the one exception: the packaged agent's notes, which nothing of ditto-tui reads.

The check errs on the side of asking: every string argument of a call is looked at (a tool may take its
path under any name), a component is compared without regard to case (``DITTO.YAML`` is ``ditto.yaml``
on a case-insensitive disk), and ``.git`` counts at any depth (a nested repository's hooks run too).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ditto_tui.home import config_dir, state_dir

CONFIG_FILE = "ditto.yaml"
CONTROL_FOLDERS = ("graphs", ".ditto")
"""Folders at the top of a workspace whose every file is a control file."""
GIT_FOLDER = ".git"
NOTES_FOLDER = (".ditto", "notes")
"""The one folder under ``.ditto/`` that is not a control file: the packaged agent writes its notes there,
and ditto-tui reads nothing from it."""

_MAX_STRINGS = 256
"""Strings looked at per call: past them the call is protected (a call that hides a path among
thousands of strings is asked about, not let through unlooked)."""
_MAX_PATH_CHARS = 4096


@dataclass(frozen=True, kw_only=True)
class ControlFiles:
    """Where the control files of one session are: a workspace (None: only the user's own folders and
    paths relative to the current directory) and the user's config and state directories."""

    workspace: Path | None = None
    user_dirs: tuple[Path, ...] = field(default_factory=tuple)

    @classmethod
    def of(
        cls, workspace: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None
    ) -> ControlFiles:
        """The control files of ``workspace`` and of the user (``DITTO_TUI_HOME`` or the XDG folders)."""
        real = Path(os.path.realpath(workspace)) if workspace is not None else None
        users = tuple(Path(os.path.realpath(folder)) for folder in (config_dir(env), state_dir(env)))
        return cls(workspace=real, user_dirs=users)

    def named_by(self, arguments: Mapping[str, Any] | None) -> tuple[str, ...]:
        """The control files ``arguments`` name, each as it was written (empty: none)."""
        named: list[str] = []
        for count, value in enumerate(_strings(arguments), start=1):
            if count > _MAX_STRINGS:
                return (*named, f"(more than {_MAX_STRINGS} strings in the arguments)")
            if value is _TOO_DEEP:
                return (*named, "(arguments nested too deep to look at)")
            if value not in named and self.is_control_file(value):
                named.append(value)
        return tuple(named)

    def is_control_file(self, value: str) -> bool:
        """Whether the path ``value`` (relative to the workspace, or absolute) is or is inside a control
        file, lexically or once its links are followed."""
        if not value or len(value) > _MAX_PATH_CHARS or "\x00" in value or "\n" in value:
            return False
        base = self.workspace or Path.cwd()
        path = Path(os.path.expanduser(value)) if value.startswith("~") else Path(value)
        joined = path if path.is_absolute() else base / path
        for candidate in {os.path.normpath(joined), _real(joined)}:
            if self._controls(Path(candidate), base):
                return True
        return False

    def _controls(self, path: Path, base: Path) -> bool:
        if any(_inside(path, folder) for folder in self.user_dirs):
            return True
        if not _inside(path, base):
            return any(part.casefold() == GIT_FOLDER for part in path.parts)
        parts = [part.casefold() for part in path.relative_to(base).parts]
        if not parts or GIT_FOLDER in parts:
            return bool(parts)
        if parts[:2] == list(NOTES_FOLDER):
            return False
        return parts == [CONFIG_FILE] or parts[0] in CONTROL_FOLDERS


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.normpath(path)


_TOO_DEEP = "\x00nested too deep"


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a JSON value (keys of objects are names, not paths), depth first; past 32 levels
    :data:`_TOO_DEEP` (the same object, compared by identity)."""
    if isinstance(value, str):
        yield value
    elif depth > 32:
        yield _TOO_DEEP
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for item in value:
            yield from _strings(item, depth + 1)


def protected_notice(named: Sequence[str]) -> str:
    """One line for a person: which control files the call writes, and why that matters."""
    listed = ", ".join(repr(name) for name in named[:3]) + (" …" if len(named) > 3 else "")
    return f"writes {listed}: a control file that changes what ditto-tui itself runs (always asked)"


__all__ = ["ControlFiles", "protected_notice"]
