"""Workspace trust: the folders whose ``ditto.yaml`` and graphs the user has allowed, pinned to their content.

A workspace is untrusted until the user trusts it (``ditto-tui trust DIR`` or ``ditto-tui init``): only
then may its ``ditto.yaml`` set policy, start servers, or its graphs run. Trust is kept by each folder's
real path, so a link or a renamed copy of a trusted folder is a different, untrusted folder. It is pinned
to content: trusting records the sha256 of every file it covers (:func:`covered_files`: ``ditto.yaml``
and each ``graphs/**/*.py``) with its text (up to :data:`KEPT_BYTES` a file), and a file edited, added
or removed since is not used until the folder is trusted again (:func:`trust_state`); what changed can be
shown against the text that was trusted. The store is the state database (:mod:`ditto_tui.state_db`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.state_db import LEGACY_TRUST, StateDB, state_db_file

TRUST_FILE = LEGACY_TRUST
"""The JSON file earlier versions kept the trusted folders in (migrated once into the state database)."""
CONFIG_NAME = "ditto.yaml"
GRAPHS_DIR = "graphs"
KEPT_BYTES = 256 * 1024
"""The most of one file's text kept to show what changed; a longer file keeps only its digest."""
KEPT_TOTAL = 4 * 1024 * 1024
"""The most text kept for one folder, files taken in name order."""
MAX_FILES = 1000
"""The most files one folder can be trusted with."""
_CHUNK = 1024 * 1024

FileChangeKind = Literal["edited", "added", "removed"]


@dataclass(frozen=True, kw_only=True)
class TrustedWorkspace:
    """One trusted folder: its real path and when it was trusted (seconds since the epoch)."""

    path: str
    trusted_at: float


@dataclass(frozen=True, kw_only=True)
class PinnedFile:
    """A file as it was trusted: its name in the folder (``graphs/react_agent.py``), sha256 and size, and
    its bytes when they were kept (``None`` past :data:`KEPT_BYTES` or :data:`KEPT_TOTAL`)."""

    name: str
    digest: str
    size: int
    content: bytes | None = None


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """A covered file that is not as it was trusted: ``edited``, ``added`` (not among the files trusted)
    or ``removed``; ``trusted`` is the file as it was trusted (``None`` for an added one)."""

    name: str
    kind: FileChangeKind
    trusted: PinnedFile | None = None


@dataclass(frozen=True, kw_only=True)
class TrustState:
    """Whether a folder is trusted, and which of the files trust covers differ from what was trusted.

    ``pinned`` is False for a folder an earlier version trusted, before trust was pinned to content: all
    its files count as added.
    """

    trusted: bool
    pinned: bool = True
    changes: tuple[FileChange, ...] = ()

    def uses(self, name: str) -> bool:
        """Whether the file ``name`` may be used as it is now (trusted, and unchanged since)."""
        return self.trusted and all(change.name != name for change in self.changes)

    def graphs_unchanged(self) -> bool:
        """Whether the folder is trusted and no file under ``graphs/`` changed since."""
        prefix = GRAPHS_DIR + "/"
        return self.trusted and not any(change.name.startswith(prefix) for change in self.changes)


def listed(names: Sequence[str], shown: int = 10) -> str:
    """``a, b, c and 4 more``: the first ``shown`` of ``names``, and how many are left out."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    """Where the trust store lives: the state database."""
    return state_db_file(env)


def real_path(directory: str | os.PathLike[str]) -> str:
    """The key of a folder in the store: its real path (links resolved)."""
    return os.path.realpath(directory)


@contextlib.contextmanager
def _store(env: Mapping[str, str] | None) -> Iterator[StateDB]:
    db = StateDB(env)
    try:
        yield db
    finally:
        db.close()


def trusted_workspaces(env: Mapping[str, str] | None = None) -> list[TrustedWorkspace]:
    """Every trusted folder, in the order they were trusted (a damaged store trusts nothing)."""
    try:
        with _store(env) as db, db.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                "SELECT path, trusted_at FROM trusted ORDER BY trusted_at, rowid"
            ).fetchall()
    except DittoError:
        return []
    return [TrustedWorkspace(path=str(path), trusted_at=float(at)) for path, at in rows]


def is_trusted(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether the user has trusted ``directory`` (by its real path), whatever its files hold now: which of
    them may be used is :func:`trust_state`'s to say."""
    return _trust_row(real_path(directory), env) is not None


def _trust_row(
    key: str, env: Mapping[str, str] | None, *, content: bool = False
) -> tuple[bool, dict[str, PinnedFile]] | None:
    """Whether ``key`` was trusted with its files pinned, and the pins (their bytes too if ``content``);
    ``None`` when it is not trusted."""
    try:
        with _store(env) as db, db.reading() as connection:
            if connection is None:
                return None
            row = connection.execute("SELECT pinned FROM trusted WHERE path = ?", (key,)).fetchone()
            if row is None:
                return None
            kept = "content" if content else "NULL"
            pins = connection.execute(
                f"SELECT name, digest, size, {kept} FROM trusted_files WHERE workspace = ?", (key,)
            ).fetchall()
    except DittoError:
        return None
    return bool(row[0]), {name: _pin(name, digest, size, content) for name, digest, size, content in pins}


def _pin(name: str, digest: str, size: int, content: bytes | None) -> PinnedFile:
    return PinnedFile(
        name=name, digest=digest, size=int(size), content=bytes(content) if content else content
    )


def covered_files(directory: str | os.PathLike[str]) -> dict[str, Path]:
    """The files trust covers, by name: ``ditto.yaml`` and every ``graphs/**/*.py`` that is a file (links
    to folders are not followed), in name order."""
    root = Path(real_path(directory))
    found = {CONFIG_NAME: root / CONFIG_NAME} if _is_file(root / CONFIG_NAME) else {}
    for folder, folders, files in os.walk(root / GRAPHS_DIR):
        folders.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") and _is_file(path):
                found[path.relative_to(root).as_posix()] = path
    return found


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def trust_state(
    directory: str | os.PathLike[str], env: Mapping[str, str] | None = None, *, content: bool = False
) -> TrustState:
    """Whether ``directory`` is trusted, and which of the files it covers changed since it was trusted
    (with the bytes that were trusted, when they were kept, if ``content``)."""
    key = real_path(directory)
    row = _trust_row(key, env, content=content)
    if row is None:
        return TrustState(trusted=False)
    pinned, pins = row
    now = covered_files(key)
    changes = [
        change
        for name in sorted(set(now) | set(pins))
        if (change := _change(name, now.get(name), pins.get(name))) is not None
    ]
    return TrustState(trusted=True, pinned=pinned, changes=tuple(changes))


def _change(name: str, path: Path | None, pin: PinnedFile | None) -> FileChange | None:
    if path is None:
        return FileChange(name=name, kind="removed", trusted=pin)
    if pin is None:
        return FileChange(name=name, kind="added")
    if _digest_of(path) != pin.digest:
        return FileChange(name=name, kind="edited", trusted=pin)
    return None


def _digest_of(path: Path) -> str | None:
    """The sha256 of a file's bytes, ``None`` when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as file:
            while chunk := file.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def trusted_bytes(
    directory: str | os.PathLike[str], name: str, env: Mapping[str, str] | None = None
) -> bytes | None:
    """The bytes of the file ``name`` of ``directory`` when the folder is trusted and the file is as it was
    trusted, else ``None``. The file is read once, so what is checked is what the caller uses."""
    row = _trust_row(real_path(directory), env)
    pin = row[1].get(name) if row is not None else None
    if pin is None:
        return None
    path = Path(real_path(directory)) / name
    if not _is_file(path):
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == pin.digest else None


def trust(
    directory: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    *,
    only: Collection[str] | None = None,
) -> bool:
    """Trust ``directory`` with its files as they are now: every file it covers, or the ``only`` ones
    (the pins of its other files are kept). False when it already was, with those files unchanged. It must
    be an existing folder; more than :data:`MAX_FILES` files, or one that cannot be read, raise
    ``ValidationError``."""
    key = real_path(directory)
    if not os.path.isdir(key):
        raise NotADirectoryError(f"{str(directory)!r} is not a directory")
    files = covered_files(key)
    if only is not None:
        files = {name: path for name, path in files.items() if name in only}
    if len(files) > MAX_FILES:
        raise ValidationError(
            f"{key!r} has {len(files)} graph and config files; at most {MAX_FILES} are trusted"
        )
    pins = _pins_of(files)
    names = set(only) if only is not None else None
    with _store(env) as db, db.changing() as connection:
        return _save_pins(connection, key, pins, names)


def _pins_of(files: Mapping[str, Path]) -> list[PinnedFile]:
    """Each file's pin, its bytes kept while the folder's budget lasts."""
    pins, budget = [], KEPT_TOTAL
    for name, path in files.items():
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValidationError(f"cannot read {str(path)!r}: {exc.strerror}") from None
        keep = len(data) <= min(KEPT_BYTES, budget)
        budget -= len(data) if keep else 0
        digest = hashlib.sha256(data).hexdigest()
        pins.append(PinnedFile(name=name, digest=digest, size=len(data), content=data if keep else None))
    return pins


def _save_pins(
    connection: sqlite3.Connection, key: str, pins: list[PinnedFile], names: set[str] | None
) -> bool:
    """Record the pins of ``key`` (all of its pins, or those of ``names``); whether anything changed."""
    row = connection.execute("SELECT pinned FROM trusted WHERE path = ?", (key,)).fetchone()
    before = dict(connection.execute("SELECT name, digest FROM trusted_files WHERE workspace = ?", (key,)))
    after = {pin.name: pin.digest for pin in pins}
    if names is not None:
        after = {name: digest for name, digest in before.items() if name not in names} | after
    if row is not None and row[0] and before == after:
        return False
    connection.execute(
        "INSERT INTO trusted (path, trusted_at, pinned) VALUES (?, ?, 1)"
        " ON CONFLICT (path) DO UPDATE SET trusted_at = excluded.trusted_at, pinned = 1",
        (key, time.time()),
    )
    dropped = set(before) if names is None else set(before) & names
    connection.executemany(
        "DELETE FROM trusted_files WHERE workspace = ? AND name = ?", [(key, name) for name in dropped]
    )
    connection.executemany(
        "INSERT INTO trusted_files (workspace, name, digest, size, content) VALUES (?, ?, ?, ?, ?)",
        [(key, pin.name, pin.digest, pin.size, pin.content) for pin in pins],
    )
    return True


@contextlib.contextmanager
def rewriting(
    directory: str | os.PathLike[str], target: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> Iterator[None]:
    """Around ditto-tui's own write of ``target`` that the person asked for and confirmed (``mcp import``):
    when ``target`` is ``directory``'s ``ditto.yaml`` and it was used (trusted, unchanged) before, it is
    pinned again after, so it stays used. A file that had changed since it was trusted stays unpinned."""
    own = Path(real_path(directory)) / CONFIG_NAME
    used = real_path(target) == os.fspath(own) and trust_state(directory, env).uses(CONFIG_NAME)
    yield
    if used:
        trust(directory, env, only=(CONFIG_NAME,))


def untrust(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Stop trusting ``directory``; False when it was not trusted."""
    key = real_path(directory)
    with _store(env) as db, db.changing() as connection:
        return connection.execute("DELETE FROM trusted WHERE path = ?", (key,)).rowcount > 0


__all__ = [
    "CONFIG_NAME",
    "GRAPHS_DIR",
    "KEPT_BYTES",
    "KEPT_TOTAL",
    "MAX_FILES",
    "TRUST_FILE",
    "FileChange",
    "FileChangeKind",
    "PinnedFile",
    "TrustState",
    "TrustedWorkspace",
    "covered_files",
    "is_trusted",
    "listed",
    "real_path",
    "rewriting",
    "trust",
    "trust_file",
    "trust_state",
    "trusted_bytes",
    "trusted_workspaces",
    "untrust",
]
