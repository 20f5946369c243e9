"""ADVERSARIAL V-03: project grants are shared by every session of a workspace, as the database holds them.

Two ``GrantStore``s in one workspace are two sessions. A revocation (in a session, or ``ditto-tui grants
--revoke`` in another process) stops the grant in every session before its next decision, and no later
use writes it back; two sessions adding grants keep both; uses counted by several sessions (processes
too) are all counted. The legitimate path holds: an unrevoked grant still approves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ditto_tui.supervise.grants import Grant, GrantStore
from ditto_tui.supervise.matching import Call

USERS = 3
USES_EACH = 5

USER = """
import os, sys, time
from pathlib import Path
from ditto_tui.supervise.grants import GrantStore
from ditto_tui.supervise.matching import Call
workspace, go, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
store = GrantStore(workspace)
call = Call(tool="write_text", effects=("write",), arguments={"path": "a.md"})
assert store.find(call, "d1", None) is not None
go.with_name(f"ready-{os.getpid()}").touch()
while not go.exists():
    time.sleep(0.002)
for _ in range(count):
    grant = store.find(call, "d1", None)
    assert grant is not None and store.use(grant)
"""


def _write(path: str = "a.md") -> Call:
    return Call(tool="write_text", effects=("write",), arguments={"path": path, "text": "x"})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _project_grant(store: GrantStore, uses: int | None = None) -> Grant:
    return store.add(tool="write_text", tool_digest="d1", lifetime="project", uses=uses)


def test_v03_an_unrevoked_grant_of_another_session_approves(workspace: Path) -> None:
    first, second = GrantStore(workspace), GrantStore(workspace)
    grant = _project_grant(first)
    found = second.find(_write(), "d1", None)
    assert found == grant and second.use(found)


def test_v03_a_revocation_in_another_process_reaches_a_running_session(workspace: Path) -> None:
    running = GrantStore(workspace)  # a session already open when the grant is revoked
    grant = _project_grant(GrantStore(workspace))
    assert running.find(_write(), "d1", None) == grant
    revoke = [
        sys.executable,
        "-m",
        "ditto_tui",
        "grants",
        "--revoke",
        grant.id,
        "--workspace",
        str(workspace),
    ]
    done = subprocess.run(revoke, capture_output=True, text=True, timeout=60, check=False, env=os.environ)
    assert done.returncode == 0 and f"revoked {grant.id}" in done.stdout, done.stderr
    assert running.find(_write(), "d1", None) is None
    assert running.use(grant) is False  # the call it had found before is not approved by it
    assert running.grants() == [] and GrantStore(workspace).grants() == []


def test_v03_a_use_never_writes_a_revoked_grant_back(workspace: Path) -> None:
    running, other = GrantStore(workspace), GrantStore(workspace)
    grant = _project_grant(running, uses=3)
    found = running.find(_write(), "d1", None)
    assert found is not None and running.use(found)
    assert other.revoke(grant.id) == grant
    assert running.use(found) is False
    assert GrantStore(workspace).grants() == []  # a later session does not load it again
    assert running.find(_write(), "d1", None) is None


def test_v03_two_sessions_saving_grants_keep_both(workspace: Path) -> None:
    first, second = GrantStore(workspace), GrantStore(workspace)
    one = first.add(tool="write_text", tool_digest="d1", lifetime="project")
    two = second.add(tool="read_text", tool_digest="d2", lifetime="project")
    assert [grant.id for grant in GrantStore(workspace).grants()] == [one.id, two.id]
    assert (
        {grant.id for grant in first.grants()} == {grant.id for grant in second.grants()} == {one.id, two.id}
    )


def test_v03_uses_counted_in_two_sessions_are_all_counted(workspace: Path) -> None:
    first, second = GrantStore(workspace), GrantStore(workspace)
    grant = _project_grant(first, uses=5)
    for store in (first, second, first, second):
        found = store.find(_write(), "d1", None)
        assert found is not None and store.use(found)
    [state] = GrantStore(workspace).states()
    assert state.grant.id == grant.id and state.uses_left == 1
    found = second.find(_write(), "d1", None)
    assert found is not None and second.use(found)
    assert first.find(_write(), "d1", None) is None and first.use(grant) is False


def test_v03_uses_counted_by_processes_at_once_are_all_counted(workspace: Path, tmp_path: Path) -> None:
    grant = _project_grant(GrantStore(workspace), uses=USERS * USES_EACH + 2)
    go = tmp_path / "go"
    users = [
        subprocess.Popen(
            [sys.executable, "-c", USER, str(workspace), str(go), str(USES_EACH)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(USERS)
    ]
    _when_ready(tmp_path, users)
    go.touch()
    for user in users:
        _out, err = user.communicate(timeout=120)
        assert user.returncode == 0, err
    [state] = GrantStore(workspace).states()
    assert state.grant.id == grant.id and state.uses_left == 2


def _when_ready(folder: Path, processes: list[subprocess.Popen[str]]) -> None:
    """Wait until every process has made its store and said so (a file ``ready-PID`` in ``folder``)."""
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < len(processes):
        assert time.monotonic() < deadline and all(p.poll() is None for p in processes), "a process failed"
        time.sleep(0.01)


def test_v03_find_reads_the_database_quickly(workspace: Path) -> None:
    store = GrantStore(workspace)
    for n in range(50):
        store.add(tool=f"tool_{n}", tool_digest="d1", lifetime="project")
    _project_grant(store)
    session = GrantStore(workspace)
    assert session.find(_write(), "d1", None) is not None
    rounds = 500
    started = time.perf_counter()
    for _ in range(rounds):
        session.find(_write(), "d1", None)
    each = (time.perf_counter() - started) / rounds * 1e6
    print(f"find with 51 project grants: {each:.0f} µs")
    assert each < 5_000
