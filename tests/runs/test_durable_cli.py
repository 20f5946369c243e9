"""Durable runs end to end, every step its own process as a user runs them: ``run --detach`` waits on an
approval; its worker is killed with SIGKILL; ``inbox --json`` lists the request from another process and
``decide`` answers it with no worker alive; a new worker applies it and the write happens exactly once.
An approval whose timer (6 s: long enough to be listed on a loaded machine) ran out while no worker was
alive ends timed out without executing."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from ditto_tui.runtime import ApprovalResolved, NodeFinished
from ditto_tui.supervise import read_journal
from tests.journal.journal_fixtures import journals
from tests.runs.workspace import NOTE, Workspace

TIMED = "approval:\n  rules:\n    - tool: write_text\n      decision: ask\n      timeoutSeconds: 6\n"
"""A policy (``--policy``) whose approvals of the write time out in 6 s."""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """One workspace and its local run server for the module's tests (each test its own runs)."""
    folder = tmp_path_factory.mktemp("durable")
    root = folder / "project"
    root.mkdir()
    given = Workspace(root, folder / "home")
    (folder / "timed.yaml").write_text(TIMED)
    yield given
    given.close()


@pytest.fixture(autouse=True)
def fresh(workspace: Workspace) -> Iterator[None]:
    """No worker of another test, no note written before."""
    yield
    workspace.stop_workers()
    (workspace.root / NOTE).unlink(missing_ok=True)


def test_a_detached_run_outlives_its_killed_worker_and_is_answered_from_another_process(
    workspace: Workspace,
) -> None:
    run_id = workspace.cli("run", "graphs/write_note.py", "--detach").stdout.strip()
    assert run_id.startswith("run-")
    first = workspace.worker()
    (waiting,) = workspace.waiting(run_id=run_id)
    assert (waiting["run_id"], waiting["tool"], waiting["call_id"]) == (run_id, "write_text", "write-1")
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert workspace.inbox() == [waiting]  # listed by another process, with no worker alive
    decided = workspace.cli("decide", str(waiting["request_id"]), "approve")
    assert "no worker is running" in decided.stdout and not (workspace.root / NOTE).exists()
    refused = workspace.cli("decide", "approval-forged-1", "approve", check=False)
    assert refused.returncode == 1 and "decision refused" in refused.stderr
    workspace.worker()
    assert workspace.run_status(run_id) == "succeeded"
    assert (workspace.root / NOTE).read_text().startswith("# Hello")
    assert workspace.waiting(count=0) == []
    _decision_journaled_before_the_write(workspace, run_id)  # V-07, by the worker that applied it
    again = workspace.cli("decide", str(waiting["request_id"]), "deny", check=False)
    assert again.returncode == 1 and "no longer pending" in again.stderr


def test_an_approval_whose_timer_ran_out_with_no_worker_alive_ends_timed_out_unexecuted(
    workspace: Workspace,
) -> None:
    timed = ("--policy", str(workspace.root.parent / "timed.yaml"))
    run_id = workspace.cli(*timed, "run", "graphs/write_note.py", "--detach").stdout.strip()
    first = workspace.worker(*timed)
    (waiting,) = workspace.waiting(run_id=run_id)
    assert isinstance(waiting["expires_at"], float)
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(max(0.0, float(waiting["expires_at"]) - time.time()) + 0.5)
    workspace.worker()
    assert workspace.run_status(run_id) == "succeeded"  # the graph delivers "not written: ..."
    assert not (workspace.root / NOTE).exists() and workspace.waiting(count=0, run_id=run_id) == []


def _decision_journaled_before_the_write(workspace: Workspace, run_id: str) -> None:
    """The worker's journal of the run holds the person's approval of the write before its result."""
    with workspace.home_env():
        parts = [path for path in journals(workspace.root) if path.name.startswith(run_id)]
    assert len(parts) == 2  # each worker's part: the killed one's, the one that applied the decision
    (applied,) = [path for path in parts if path.name == f"{run_id}.2.jsonl"]  # the second worker's
    events = read_journal(applied).events
    assert all(e.run_id == run_id for e in events)
    (resolved,) = [e for e in events if isinstance(e, ApprovalResolved) and e.call_id == "write-1"]
    assert (resolved.decision, resolved.decided_by, resolved.via) == ("approve", "human", "cli")
    written = next(i for i, e in enumerate(events) if isinstance(e, NodeFinished) and e.node_id == "write")
    assert events.index(resolved) < written
