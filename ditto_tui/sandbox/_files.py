"""Race-resistant file access: every component is opened relative to a held directory descriptor."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from ditto_tui.errors import PathError, ValidationError
from ditto_tui.sandbox._walk import Kind, walk
from ditto_tui.sandbox.paths import root_components, split_workspace_path, validate_workspace_path

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_PROBE = _O_PATH | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16


def _refuse(code: str, message: str) -> PathError:
    return PathError(message, code=code)


def _inaccessible(error: OSError) -> PathError:
    if error.errno == errno.ELOOP:
        return _refuse("path_changed", "path changed while it was being opened")
    return _refuse("inaccessible", "path cannot be accessed")


class _FdCursor:
    """A cursor holding one descriptor per directory below the root, so swapped names cannot redirect it."""

    def __init__(self, root_fd: int) -> None:
        self._root_fd = root_fd
        self._stack: list[int] = []

    @property
    def depth(self) -> int:
        return len(self._stack)

    @property
    def fd(self) -> int:
        """The descriptor of the directory the cursor stands in."""
        return self._stack[-1] if self._stack else self._root_fd

    def step(self, name: str, *, enter: bool) -> Kind:
        try:
            fd = os.open(name, _PROBE, dir_fd=self.fd)
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        except OSError as error:
            if error.errno == errno.ELOOP:
                return "symlink"
            raise _inaccessible(error) from error
        mode = os.fstat(fd).st_mode
        if enter and stat.S_ISDIR(mode):
            self._stack.append(fd)
            return "directory"
        os.close(fd)
        if stat.S_ISLNK(mode):
            return "symlink"
        return "directory" if stat.S_ISDIR(mode) else "other"

    def readlink(self, name: str) -> str:
        try:
            return os.readlink(name, dir_fd=self.fd)
        except OSError as error:
            raise _refuse("path_changed", "path changed while it was being opened") from error

    def leave(self) -> None:
        os.close(self._stack.pop())

    def to_root(self) -> None:
        while self._stack:
            self.leave()


@contextlib.contextmanager
def _at_root(root: Path) -> Iterator[_FdCursor]:
    """A cursor standing in the workspace root, every descriptor it opens closed on exit."""
    try:
        root_fd = os.open(root, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise _refuse("workspace_unavailable", "workspace directory cannot be opened") from error
    cursor = _FdCursor(root_fd)
    try:
        yield cursor
    finally:
        cursor.to_root()
        os.close(root_fd)


@contextlib.contextmanager
def _walk_to_parent(root: Path, path: str, *, follow_final: bool) -> Iterator[tuple[int, str | None]]:
    """Yield the descriptor of the directory holding the final component, and that component's name."""
    parts = split_workspace_path(validate_workspace_path(path))
    with _at_root(root) as cursor:
        final = walk(cursor, parts, root_components(root), follow_final=follow_final)
        yield cursor.fd, final


def _require_regular(mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise _refuse("is_directory", "path is a directory")
    if not stat.S_ISREG(mode):
        raise _refuse("not_regular_file", "path is not a regular file")


def _open_regular(parent_fd: int, name: str) -> int:
    """Open a regular file; FIFOs and devices are refused before they are opened, and again after."""
    try:
        _require_regular(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
        fd = os.open(name, _READ, dir_fd=parent_fd)
    except (FileNotFoundError, NotADirectoryError) as error:
        raise _refuse("not_found", "file does not exist") from error
    except OSError as error:
        raise _inaccessible(error) from error
    try:
        _require_regular(os.fstat(fd).st_mode)
    except PathError:
        os.close(fd)
        raise
    return fd


def _read_capped(fd: int, max_bytes: int) -> bytes:
    if os.fstat(fd).st_size > max_bytes:
        raise ValidationError(f"file is larger than {max_bytes} bytes", code="file_too_large")
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, min(_CHUNK, max_bytes + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise ValidationError(f"file is larger than {max_bytes} bytes", code="file_too_large")
    return b"".join(chunks)


def read_bytes(root: Path, path: str, max_bytes: int) -> bytes:
    """Read a regular file below ``root`` without ever following a symlink out of it."""
    with _walk_to_parent(root, path, follow_final=True) as (parent_fd, name):
        if name is None:
            raise _refuse("is_directory", "path is a directory")
        fd = _open_regular(parent_fd, name)
    try:
        return _read_capped(fd, max_bytes)
    finally:
        os.close(fd)


def _existing_mode(parent_fd: int, name: str) -> int | None:
    """Permission bits of the file being replaced; refuses a final symlink, directory or special file."""
    try:
        mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _inaccessible(error) from error
    if stat.S_ISLNK(mode):
        raise _refuse("is_symlink", "refusing to write through a symbolic link")
    if stat.S_ISDIR(mode):
        raise _refuse("is_directory", "path is a directory")
    if not stat.S_ISREG(mode):
        raise _refuse("not_regular_file", "path is not a regular file")
    return stat.S_IMODE(mode)


def _write_temp(parent_fd: int, data: bytes, mode: int | None) -> str:
    temp = f".ditto-{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, _CREATE, 0o666, dir_fd=parent_fd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp, dir_fd=parent_fd)
        raise
    os.close(fd)
    return temp


def write_bytes(root: Path, path: str, data: bytes) -> None:
    """Atomically replace or create a file below ``root``: write a sibling temp file, then rename it."""
    with _walk_to_parent(root, path, follow_final=False) as (parent_fd, name):
        if name is None:
            raise _refuse("is_directory", "path is a directory")
        mode = _existing_mode(parent_fd, name)
        try:
            temp = _write_temp(parent_fd, data, mode)
        except OSError as error:
            raise _refuse("write_failed", "file could not be written") from error
        try:
            os.replace(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except OSError as error:
            os.unlink(temp, dir_fd=parent_fd)
            if isinstance(error, IsADirectoryError):
                raise _refuse("is_directory", "path is a directory") from error
            raise _refuse("write_failed", "file could not be written") from error


def make_directories(root: Path, path: str) -> None:
    """Create the folder ``path`` below ``root`` and its missing parents, never through a link.

    Each component is opened relative to the one before it; a component that is a symbolic link or not
    a directory is refused (``not_a_directory``), so a link planted in the workspace cannot make this
    create folders elsewhere.
    """
    parts = split_workspace_path(validate_workspace_path(path))
    with _at_root(root) as cursor:
        for name in parts:
            kind = cursor.step(name, enter=True)
            if kind == "missing":
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=cursor.fd)
                kind = cursor.step(name, enter=True)
            if kind != "directory":
                raise _refuse("not_a_directory", f"{name!r} is a link or not a directory")


def _folder_refusal(kind: Kind) -> PathError:
    if kind == "symlink":
        return _refuse(
            "folder_is_link", "a folder on the way is a symbolic link; refusing to write through it"
        )
    if kind == "other":
        return _refuse("not_a_folder", "a part of the path is not a folder")
    return _refuse("folder_not_created", "a folder on the way cannot be created")


def _enter_or_make(cursor: _FdCursor, name: str) -> None:
    """Stand in the folder ``name``, made when missing; a link or a file of that name is refused."""
    kind = cursor.step(name, enter=True)
    if kind == "missing":
        try:
            os.mkdir(name, dir_fd=cursor.fd)
        except FileExistsError:
            pass  # made meanwhile: looked at again below, like any name found in place
        except OSError as error:
            raise _folder_refusal("missing") from error
        kind = cursor.step(name, enter=True)
    if kind != "directory":
        raise _folder_refusal(kind)


def _existing_name(parent_fd: int, name: str) -> PathError:
    """Why ``name`` could not be created: what is already there (looked at only to say so)."""
    try:
        mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        message = "a file of that name already exists (a symbolic link); refusing to write through it"
    elif stat.S_ISDIR(mode):
        message = "a folder of that name already exists"
    else:
        message = "a file of that name already exists"
    return _refuse("file_exists", message)


def _create_exclusive(parent_fd: int, name: str) -> int:
    """A new regular file ``name``: ``O_EXCL`` refuses any existing name, a dangling link included."""
    try:
        return os.open(name, _CREATE, 0o666, dir_fd=parent_fd)
    except FileExistsError as error:
        raise _existing_name(parent_fd, name) from error
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise _refuse("path_too_long", "the file name is too long for this file system") from error
        raise _refuse("write_failed", "the file cannot be created there") from error


def _fill(parent_fd: int, name: str, fd: int, data: bytes) -> None:
    """Write ``data`` to the new file; on failure remove it, if the name still is that file."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as error:
        made = os.fstat(fd)
        with contextlib.suppress(OSError):
            there = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if (there.st_dev, there.st_ino) == (made.st_dev, made.st_ino):
                os.unlink(name, dir_fd=parent_fd)
        raise _refuse("write_failed", "file could not be written") from error


def create_new_file(root: Path, path: str, data: bytes) -> str:
    """Create the new file ``path`` below ``root`` holding ``data``; returns the normalised path.

    Each folder on the way is opened relative to the one before it without following a link, and made
    there when missing; the file is created relative to the last folder's descriptor with
    ``O_CREAT | O_EXCL | O_NOFOLLOW``. So neither a link planted in the workspace nor a folder swapped
    for one while this runs can send a byte elsewhere, and an existing name (a file, a folder, a link,
    dangling or not) is refused (``file_exists``). A link on the way is ``folder_is_link``; the path
    rules of :func:`validate_workspace_path` apply first.
    """
    relative = validate_workspace_path(path)
    parts = split_workspace_path(relative)
    if not parts:
        raise _refuse("is_directory", "name a file, not the workspace itself")
    with _at_root(root) as cursor:
        for name in parts[:-1]:
            _enter_or_make(cursor, name)
        fd = _create_exclusive(cursor.fd, parts[-1])
        try:
            _fill(cursor.fd, parts[-1], fd, data)
        finally:
            os.close(fd)
    return relative
