"""Project grants as rows of the state database: read at each decision, each change one transaction.

A row holds the grant as JSON (:meth:`~ditto_tui.supervise.grants.Grant.record`) with what is left of it
(``uses_left``: ``NULL`` for no limit), keyed by id and found by the workspace's real path. A use
counts down the row that is there, and a revocation deletes it: a grant revoked by another process is
gone at the next read, and no use writes it back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ditto_tui.state_db import StateDB

GONE: Literal["gone"] = "gone"
"""What :func:`take_use` says of a grant no longer in the database (revoked, used up or expired)."""


@dataclass(frozen=True, kw_only=True)
class GrantRow:
    """One stored project grant: its id, its JSON record and the uses it has left (``None``: no limit)."""

    id: str
    record: str
    uses_left: int | None


def read_rows(db: StateDB, workspace: str) -> list[GrantRow]:
    """The project grants of ``workspace`` as the database holds them now, oldest first."""
    with db.reading() as connection:
        if connection is None:
            return []
        rows = connection.execute(
            "SELECT id, record, uses_left FROM grants WHERE workspace = ? ORDER BY created_at, rowid",
            (workspace,),
        ).fetchall()
    return [GrantRow(id=gid, record=record, uses_left=_count(left)) for gid, record, left in rows]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def insert(db: StateDB, workspace: str, record: Mapping[str, Any], uses_left: int | None) -> None:
    """Store a new project grant of ``workspace``."""
    with db.changing() as connection:
        connection.execute(
            "INSERT INTO grants (id, workspace, created_at, expires_at, uses_left, record)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                record["id"],
                workspace,
                record.get("created_at", 0.0),
                record.get("expires_at"),
                uses_left,
                json.dumps(dict(record), sort_keys=True),
            ),
        )


def take_use(db: StateDB, grant_id: str) -> int | None | Literal["gone"]:
    """Count one use of ``grant_id``: the uses left after it (the row is deleted at 0), ``None`` for a
    grant without a limit, or :data:`GONE` when the grant is no longer there (nothing is counted)."""
    with db.reading() as connection:
        row = None if connection is None else _uses_row(connection, grant_id)
    if row is None:
        return GONE
    if _count(row[0]) is None:
        return None
    with db.changing() as connection:
        row = _uses_row(connection, grant_id)
        if row is None:
            return GONE
        left = int(row[0]) - 1
        if left <= 0:
            connection.execute("DELETE FROM grants WHERE id = ?", (grant_id,))
        else:
            connection.execute("UPDATE grants SET uses_left = ? WHERE id = ?", (left, grant_id))
    return left


def _uses_row(connection: sqlite3.Connection, grant_id: str) -> tuple[Any, ...] | None:
    row = connection.execute("SELECT uses_left FROM grants WHERE id = ?", (grant_id,)).fetchone()
    return tuple(row) if row is not None else None


def delete(db: StateDB, grant_ids: Iterable[str]) -> int:
    """Delete the grants ``grant_ids``; how many were still there."""
    ids = [(gid,) for gid in grant_ids]
    if not ids:
        return 0
    with db.changing() as connection:
        before = connection.total_changes
        connection.executemany("DELETE FROM grants WHERE id = ?", ids)
        return connection.total_changes - before


__all__ = ["GONE", "GrantRow", "delete", "insert", "read_rows", "take_use"]
