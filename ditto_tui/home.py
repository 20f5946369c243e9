"""Where ditto-tui keeps its own files: the user config and state directories, outside any workspace.

``DITTO_TUI_HOME``, when set, holds everything (``config/`` and ``state/``); otherwise the XDG
directories: ``$XDG_CONFIG_HOME/ditto-tui`` (default ``~/.config/ditto-tui``) and
``$XDG_STATE_HOME/ditto-tui`` (default ``~/.local/state/ditto-tui``). The journals and server logs of a
workspace go under ``state/workspaces/<name>-<hash of its real path>/``.

Every directory is created, and every file opened, without following a symbolic link: a link planted
where ditto-tui writes (by a cloned repository, or anyone else) is refused with :class:`StateDirError`,
never followed.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from ditto_tui.errors import DittoError

APP = "ditto-tui"
HOME_VARIABLE = "DITTO_TUI_HOME"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_CHARS = 32


class StateDirError(DittoError):
    """A directory or file ditto-tui writes is a symbolic link, or not a directory, or cannot be made."""

    title = "State directory"
    code = "STATE_DIR_ERROR"


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user config directory: the user's ``ditto.yaml`` and OAuth tokens."""
    return _base(env, "config", "XDG_CONFIG_HOME", ".config")


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user state directory: the state database (trust, grants) and, per workspace, journals and logs."""
    return _base(env, "state", "XDG_STATE_HOME", ".local/state")


def _base(env: Mapping[str, str] | None, part: str, xdg: str, default: str) -> Path:
    env = os.environ if env is None else env
    home = env.get(HOME_VARIABLE)
    if home:
        return Path(home).expanduser().absolute() / part
    root = env.get(xdg)
    if root and Path(root).is_absolute():
        return Path(root) / APP
    return Path.home() / default / APP


def workspace_key(workspace: str | os.PathLike[str]) -> str:
    """``<name>-<hash>``: the folder name of a workspace's state, from its real path."""
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = _SAFE_NAME.sub("_", os.path.basename(real) or "root")[:_NAME_CHARS].strip("._") or "root"
    return f"{name}-{digest}"


def workspace_state_dir(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Path:
    """``state/workspaces/<name>-<hash>/`` of ``workspace`` (not created)."""
    return state_dir(env) / "workspaces" / workspace_key(workspace)


def runs_dir(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Path:
    """Where the runs of ``workspace`` are journaled (not created)."""
    return workspace_state_dir(workspace, env) / "runs"


def logs_dir(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Path:
    """Where the MCP server logs of ``workspace`` go (not created)."""
    return workspace_state_dir(workspace, env) / "logs"


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents (mode 0700), refusing any component that is a link.

    An existing component must be a real directory: a symbolic link on the way (``runs`` planted as a
    link to ``/etc``, say) raises :class:`StateDirError` instead of being followed. Every component below
    ditto-tui's own config or state directory is checked, and the nearest existing ancestor of ``path``
    anywhere. The base directories themselves, and what lies above them (``/tmp`` on some systems, a
    home or a dotfiles folder the user linked on purpose), are taken as they are.
    """
    target = Path(os.path.abspath(path))
    missing: list[Path] = []
    probe = target
    while not os.path.lexists(probe):
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for existing in _owned_ancestors(probe):
        _require_directory(existing)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StateDirError(f"cannot create {str(directory)!r}: {exc.strerror}") from None
        _require_directory(directory)
    return target


def _owned_ancestors(probe: Path) -> list[Path]:
    """``probe`` and its ancestors strictly below the ditto-tui base directory that holds it, if any."""
    bases = [base for base in (state_dir(), config_dir()) if probe == base or base in probe.parents]
    if not bases:
        return [probe]
    base = bases[0]
    chain = [probe, *[parent for parent in probe.parents if base in parent.parents]]
    return [path for path in chain if path != base]


def _require_directory(path: Path) -> None:
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise StateDirError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise StateDirError(f"{str(path)!r} is a symbolic link; refusing to write through it")
    if not stat.S_ISDIR(info.st_mode):
        raise StateDirError(f"{str(path)!r} is not a directory")


def open_private(path: str | os.PathLike[str], *, append: bool = False, exclusive: bool = False) -> int:
    """Open ``path`` for writing (mode 0600), never through a link; returns the descriptor.

    Its directory is created as :func:`ensure_dir` does. ``append`` keeps what the file holds, otherwise it
    is truncated; ``exclusive`` refuses a file that already exists. A link or a non-regular file at
    ``path`` raises :class:`StateDirError`.
    """
    target = Path(path)
    ensure_dir(target.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    flags |= os.O_APPEND if append else 0
    flags |= os.O_EXCL if exclusive else 0
    try:
        fd = os.open(target, flags, 0o600)
    except OSError as exc:
        if os.path.islink(target):
            raise StateDirError(f"{str(target)!r} is a symbolic link; refusing to write through it") from None
        raise StateDirError(f"cannot open {str(target)!r}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StateDirError(f"{str(target)!r} is not a regular file")
    if not append and not exclusive:
        os.ftruncate(fd, 0)
    return fd


def append_private(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` (UTF-8) to the private file ``path``, opened as :func:`open_private` does."""
    fd = open_private(path, append=True)
    try:
        view = memoryview(text.encode("utf-8", "replace"))
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the contents of ``path`` with ``data`` atomically (a new file renamed over it, mode 0600)."""
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = open_private(temp, exclusive=False)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if os.path.islink(target):
        os.unlink(temp)
        raise StateDirError(f"{str(target)!r} is a symbolic link; refusing to write through it")
    os.replace(temp, target)
