"""ADVERSARIAL V-12: the state several processes share (grants, trust) is one SQLite database.

Real processes write at once and none loses a change; a reader never sees half of one; the JSON files of
earlier versions are migrated once and never read again; the file is private, in WAL mode, and never
opened through a link. Each test has its own ``DITTO_TUI_HOME`` (tests/conftest.py), seen by the
processes it starts.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ditto_tui.home import StateDirError, config_dir
from ditto_tui.state_db import LEGACY_GRANTS, LEGACY_TRUST, StateDB, state_db_file
from ditto_tui.supervise import grant_rows
from ditto_tui.supervise.grants import GrantStore
from ditto_tui.trust import is_trusted, trust, trust_state, trusted_workspaces
from ditto_tui.workspace import resolve_config

WRITERS = 4
CHANGES = 20

WRITER = """
import os, sys, time
from pathlib import Path
from ditto_tui.supervise.grants import GrantStore
from ditto_tui.trust import trust
workspace, index, count = sys.argv[1], sys.argv[4], int(sys.argv[5])
folders, go = Path(sys.argv[2]), Path(sys.argv[3])
store = GrantStore(workspace)
store.grants()
go.with_name(f"ready-{os.getpid()}").touch()
while not go.exists():
    time.sleep(0.002)
for n in range(count):
    store.add(tool=f"tool-{index}-{n}", tool_digest="d", lifetime="project")
    folder = folders / f"{index}-{n}"
    folder.mkdir()
    trust(folder)
"""

PAIRS = """
import sys
from ditto_tui.state_db import StateDB
db, count = StateDB(), int(sys.argv[1])
for n in range(count):
    with db.changing() as connection:  # one change: two rows, both or neither
        for half in ("a", "b"):
            connection.execute(
                "INSERT INTO grants VALUES (?, 'pairs', ?, NULL, NULL, '{}')", (f"{n}-{half}", float(n))
            )
"""


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err


def _when_ready(folder: Path, processes: list[subprocess.Popen[str]]) -> None:
    """Wait until every process is ready to start and said so (a file ``ready-PID`` in ``folder``)."""
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < len(processes):
        assert time.monotonic() < deadline and all(p.poll() is None for p in processes), "a process failed"
        time.sleep(0.01)


def test_v12_processes_writing_at_once_lose_no_change(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    folders = tmp_path / "folders"
    workspace.mkdir()
    folders.mkdir()
    go = tmp_path / "go"
    writers = [
        _python(WRITER, str(workspace), str(folders), str(go), str(index), str(CHANGES))
        for index in range(WRITERS)
    ]
    _when_ready(tmp_path, writers)
    go.touch()
    _finish(writers)
    tools = {grant.tool for grant in GrantStore(workspace).grants()}
    assert tools == {f"tool-{index}-{n}" for index in range(WRITERS) for n in range(CHANGES)}
    trusted = {Path(entry.path).name for entry in trusted_workspaces()}
    assert trusted == {f"{index}-{n}" for index in range(WRITERS) for n in range(CHANGES)}


def test_v12_a_reader_never_sees_half_a_change() -> None:
    db = StateDB()
    with db.changing():
        pass  # the database exists before the writer starts
    writer = _python(PAIRS, "300")
    seen = set()
    while writer.poll() is None:
        rows = grant_rows.read_rows(db, "pairs")
        assert len(rows) % 2 == 0, f"saw {len(rows)} rows: half of a change"
        seen.add(len(rows))
    _finish([writer])
    assert len(grant_rows.read_rows(db, "pairs")) == 600
    assert len(seen) > 1  # the reader did read while the writer wrote
    db.close()


def test_v12_the_database_is_private_in_wal_mode_and_in_the_state_directory(tmp_path: Path) -> None:
    store = GrantStore(tmp_path)
    store.add(tool="write_text", tool_digest="d1", lifetime="project")  # its connection stays open
    path = state_db_file()
    assert path.parent == Path(os.environ["DITTO_TUI_HOME"]) / "state"
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        assert oct((path.parent / name).stat().st_mode & 0o777) == "0o600"
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection.close()
    assert not list(config_dir().glob("*.json"))  # nothing of it in the config directory


def test_v12_a_linked_wal_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    path = state_db_file()
    path.parent.mkdir(parents=True)
    (path.parent / f"{path.name}-wal").symlink_to(victim)
    with pytest.raises(StateDirError, match="symbolic link"):
        trust(tmp_path)
    assert victim.read_text() == "keep" and not is_trusted(tmp_path)


def _legacy(tmp_path: Path, grants: int = 2) -> tuple[Path, Path]:
    """The JSON files of an earlier version: ``grants`` project grants of one folder, and its trust."""
    workspace = tmp_path / "old"
    workspace.mkdir()
    (workspace / "ditto.yaml").write_text("sandbox: {read: true}\n")
    key = os.path.realpath(workspace)
    entries = [
        {"id": f"g-{n:07d}", "tool": "write_text", "tool_digest": "d1", "lifetime": "project",
         "created_at": 1000.0 + n, "workspace": key, "usesLeft": 3 if n == 0 else None}
        for n in range(grants)
    ]  # fmt: skip
    config_dir().mkdir(parents=True)
    (config_dir() / LEGACY_GRANTS).write_text(json.dumps({"version": 1, "workspaces": {key: entries}}))
    trusted = {"version": 1, "workspaces": [{"path": key, "trustedAt": 999.0}]}
    (config_dir() / LEGACY_TRUST).write_text(json.dumps(trusted))
    return workspace, config_dir() / LEGACY_GRANTS


def test_v12_the_json_files_are_migrated_once_and_never_read_again(tmp_path: Path) -> None:
    workspace, legacy = _legacy(tmp_path)
    [first, second] = GrantStore(workspace).states()
    assert (first.grant.id, first.uses_left, second.uses_left) == ("g-0000000", 3, None)
    assert not legacy.exists() and legacy.with_name(LEGACY_GRANTS + ".migrated").exists()
    assert not (config_dir() / LEGACY_TRUST).exists()
    assert (config_dir() / (LEGACY_TRUST + ".migrated")).exists()
    # An old trust pinned nothing: the folder is still trusted, but none of its files is used.
    state = trust_state(workspace)
    assert is_trusted(workspace) and state.trusted and not state.pinned
    assert resolve_config(None, workspace).source == "built-in defaults"
    legacy.write_text(json.dumps({"workspaces": {os.path.realpath(workspace): []}}))
    assert len(GrantStore(workspace).grants()) == 2  # the file written again is not read


def test_v12_migration_runs_once_when_processes_open_the_database_at_once(tmp_path: Path) -> None:
    workspace, _ = _legacy(tmp_path, grants=1000)
    go = tmp_path / "go"
    wait = (
        f"import os, time, pathlib\ngo = pathlib.Path({str(go)!r})\n"
        "go.with_name(f'ready-{os.getpid()}').touch()\nwhile not go.exists(): time.sleep(0.002)\n"
    )
    grants = (
        f"from ditto_tui.supervise.grants import GrantStore\n{wait}GrantStore({str(workspace)!r}).grants()"
    )
    trusted = f"from ditto_tui.trust import is_trusted\n{wait}assert is_trusted({str(workspace)!r})"
    readers = [_python(code) for code in (grants, trusted, grants)]
    _when_ready(tmp_path, readers)
    go.touch()
    _finish(readers)
    assert len(GrantStore(workspace).grants()) == 1000
    assert [Path(entry.path) for entry in trusted_workspaces()] == [Path(os.path.realpath(workspace))]


def test_v12_migrating_a_thousand_grants_takes_a_moment(tmp_path: Path) -> None:
    _legacy(tmp_path, grants=1000)
    started = time.perf_counter()
    db = StateDB()
    with db.reading():
        pass
    took = time.perf_counter() - started
    db.close()
    print(f"migrated 1000 grants and 1 trusted folder in {took * 1000:.1f} ms")
    assert took < 5
