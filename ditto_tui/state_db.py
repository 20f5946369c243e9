"""The state database: what several ditto-tui processes share, in one SQLite file in the state directory.

Project grants and trusted folders (with the digest and text of each file a folder was trusted with) are
kept in ``state.db`` in the user state directory (:func:`ditto_tui.home.state_dir`), mode 0600, never
opened through a link. It is in WAL mode, so a reader sees the database as a committed change left it,
never half a change, and does not wait for a writer; each change is one transaction begun ``IMMEDIATE``,
so two processes changing it at once both keep their change (the second waits for the first, up to
:data:`BUSY_TIMEOUT_MS`). The runs are not in it: each run's journal is a file of its own, written by one
process, and ``ditto-tui runs`` reads the journals themselves.

The JSON files earlier versions kept in the config directory (:data:`LEGACY_GRANTS`,
:data:`LEGACY_TRUST`) are copied in once, when the database is made, and renamed ``*.migrated``: they are
never read again. A folder trusted in the old file comes over trusted with no file pinned (its files were
never pinned), so none of them is used until the folder is trusted again.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ditto_tui.errors import DittoError
from ditto_tui.home import StateDirError, config_dir, ensure_dir, state_dir

STATE_DB = "state.db"
LEGACY_GRANTS = "grants.json"
"""Where earlier versions kept project grants (in the config directory); migrated once."""
LEGACY_TRUST = "trusted-workspaces.json"
"""Where earlier versions kept the trusted folders (in the config directory); migrated once."""
MIGRATED_SUFFIX = ".migrated"
BUSY_TIMEOUT_MS = 10_000
"""How long a change waits for another process's change to end before it fails."""
SCHEMA_VERSION = 3
_LEGACY_LIMIT = 16 * 1024 * 1024
_RETRY_SECONDS = 0.01
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS grants (
        id TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL,
        uses_left INTEGER,
        record TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS grants_by_workspace ON grants (workspace, created_at)",
    """CREATE TABLE IF NOT EXISTS trusted (
        path TEXT PRIMARY KEY,
        trusted_at REAL NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 1
    )""",
    """CREATE TABLE IF NOT EXISTS trusted_files (
        workspace TEXT NOT NULL REFERENCES trusted (path) ON DELETE CASCADE,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        size INTEGER NOT NULL,
        content BLOB,
        PRIMARY KEY (workspace, name)
    )""",
    """CREATE TABLE IF NOT EXISTS durable_server (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        address TEXT NOT NULL,
        ui TEXT,
        pid INTEGER NOT NULL,
        process_started TEXT,
        started_at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS web_server (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        origin TEXT NOT NULL,
        pid INTEGER NOT NULL,
        process_started TEXT,
        started_at REAL NOT NULL
    )""",
)


class StateDBError(DittoError):
    """The state database cannot be read or changed (damaged, locked too long, or the disk refused)."""

    title = "State database"
    code = "STATE_DB_ERROR"


def state_db_file(env: Mapping[str, str] | None = None) -> Path:
    """``state.db`` in the user state directory."""
    return state_dir(env) / STATE_DB


class StateDB:
    """The state database of one process: one connection, opened when first needed, used under a lock.

    :meth:`reading` gives a consistent snapshot (``None`` while there is no database and nothing to
    migrate, so reading never makes one); :meth:`changing` one transaction that is committed whole or
    not at all. Errors of SQLite raise :class:`StateDBError`, a link where a file should be
    :class:`~ditto_tui.home.StateDirError`.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.path = state_db_file(env)
        self.legacy = config_dir(env)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._closer: weakref.finalize[[], StateDB] | None = None

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection | None]:
        """A snapshot to read from, or ``None`` when nothing has ever been stored."""
        with self._lock:
            if self._connection is None and not self._stored():
                yield None
                return
            with self._transaction("BEGIN") as connection:
                yield connection

    @contextlib.contextmanager
    def changing(self) -> Iterator[sqlite3.Connection]:
        """One change: a transaction that holds the write lock, committed when the block ends."""
        with self._lock, self._transaction("BEGIN IMMEDIATE") as connection:
            yield connection

    def close(self) -> None:
        """Close the connection (the next use opens it again); a store that is dropped closes it too."""
        with self._lock:
            if self._closer is not None:
                self._closer()
            self._connection = self._closer = None

    def _stored(self) -> bool:
        return any(os.path.lexists(path) for path in (self.path, *self._legacy_files()))

    def _legacy_files(self) -> tuple[Path, Path]:
        return self.legacy / LEGACY_GRANTS, self.legacy / LEGACY_TRUST

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        try:
            connection.execute(begin)
        except sqlite3.Error as exc:
            raise _failed("use", self.path, exc) from None
        try:
            yield connection
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(connection)
            raise _failed("use", self.path, exc) from None
        except BaseException:
            _rollback(connection)
            raise

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._open()
            self._closer = weakref.finalize(self, self._connection.close)
        return self._connection

    def _open(self) -> sqlite3.Connection:
        _make_private(self.path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise _failed("open", self.path, exc) from None
        try:
            moved = self._set_up(connection)
        except sqlite3.Error as exc:
            connection.close()
            raise _failed("open", self.path, exc) from None
        for legacy in moved:
            _retire(legacy)
        return connection

    def _set_up(self, connection: sqlite3.Connection) -> list[Path]:
        """WAL mode, the tables and the migration, tried again while another process holds the lock:
        switching to WAL does not always wait for the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                _configure(connection)
                return self._prepare(connection)
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(_RETRY_SECONDS)

    def _prepare(self, connection: sqlite3.Connection) -> list[Path]:
        """Make the tables and migrate the JSON files, once (the first process to get the lock does it)."""
        if _version(connection) >= SCHEMA_VERSION:
            return []
        connection.execute("BEGIN IMMEDIATE")
        try:
            if _version(connection) >= SCHEMA_VERSION:
                connection.execute("COMMIT")
                return []
            for statement in _SCHEMA:
                connection.execute(statement)
            moved = _migrate(connection, *self._legacy_files())
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            _rollback(connection)
            raise
        return moved


def _busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the lock (``SQLITE_BUSY`` and its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_BUSY


def _failed(doing: str, path: Path, exc: sqlite3.Error) -> StateDBError:
    name = getattr(exc, "sqlite_errorname", None)
    return StateDBError(f"cannot {doing} {str(path)!r}: {exc}" + (f" ({name})" if name else ""))


def _make_private(path: Path) -> None:
    """Make the database file 0600 (its -wal and -shm files take its mode), refusing links in its place.

    An existing file is never opened here: closing a descriptor of it would drop the locks SQLite holds
    on it through another connection of this process (POSIX locks belong to the process).
    """
    ensure_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise StateDirError(f"cannot create {str(path)!r}: {exc.strerror}") from None
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        linked = path.parent / name
        if os.path.islink(linked):
            raise StateDirError(f"{str(linked)!r} is a symbolic link; refusing to write through it")
    try:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
    except OSError as exc:
        raise StateDirError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if not regular:
        raise StateDirError(f"{str(path)!r} is not a regular file")


def _configure(connection: sqlite3.Connection) -> None:
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()
    if not mode or str(mode[0]).lower() != "wal":
        raise sqlite3.OperationalError("the database cannot be put in WAL mode")
    connection.execute("PRAGMA foreign_keys = ON")


def _version(connection: sqlite3.Connection) -> int:
    row = connection.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def _rollback(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        if connection.in_transaction:
            connection.execute("ROLLBACK")


def _migrate(connection: sqlite3.Connection, grants: Path, trusted: Path) -> list[Path]:
    """Copy the JSON files of earlier versions in; the files that were there (to rename once committed)."""
    moved = []
    if os.path.lexists(grants):
        _migrate_grants(connection, _legacy_json(grants))
        moved.append(grants)
    if os.path.lexists(trusted):
        _migrate_trust(connection, _legacy_json(trusted))
        moved.append(trusted)
    return moved


def _legacy_json(path: Path) -> dict[str, Any]:
    """A JSON file of an earlier version, read never through a link (damaged: an empty one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as file:
            data = json.loads(file.read(_LEGACY_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _migrate_grants(connection: sqlite3.Connection, data: dict[str, Any]) -> None:
    workspaces = data.get("workspaces")
    for workspace, entries in (workspaces if isinstance(workspaces, dict) else {}).items():
        for raw in entries if isinstance(entries, list) else []:
            row = _legacy_grant_row(str(workspace), raw)
            if row is not None:
                connection.execute("INSERT OR IGNORE INTO grants VALUES (?, ?, ?, ?, ?, ?)", row)


def _legacy_grant_row(workspace: str, raw: Any) -> tuple[object, ...] | None:
    """A row of the ``grants`` table from an entry of ``grants.json`` (checked when it is read back)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return None
    record = {key: value for key, value in raw.items() if key != "usesLeft"}
    left = raw.get("usesLeft")
    return (
        raw["id"],
        workspace,
        _number(raw.get("created_at")) or 0.0,
        _number(raw.get("expires_at")),
        left if isinstance(left, int) and not isinstance(left, bool) else None,
        json.dumps(record, sort_keys=True),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _migrate_trust(connection: sqlite3.Connection, data: dict[str, Any]) -> None:
    entries = data.get("workspaces")
    for raw in entries if isinstance(entries, list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("path"), str):
            at = _number(raw.get("trustedAt")) or 0.0
            connection.execute("INSERT OR IGNORE INTO trusted VALUES (?, ?, 0)", (raw["path"], at))


def _retire(legacy: Path) -> None:
    """Rename a migrated file ``*.migrated`` (it is never read again, renamed or not)."""
    with contextlib.suppress(OSError):
        os.replace(legacy, legacy.with_name(legacy.name + MIGRATED_SUFFIX))


__all__ = [
    "BUSY_TIMEOUT_MS",
    "LEGACY_GRANTS",
    "LEGACY_TRUST",
    "STATE_DB",
    "StateDB",
    "StateDBError",
    "state_db_file",
]
