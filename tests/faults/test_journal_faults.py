"""Fault injection, run journal: the disk fills up exactly when an approval decision must be recorded.

A decision the journal cannot make durable is not acted on: the approved call does not execute, the run
fails with a clear ``No space left on device`` error, a ``journal_failed`` event says so, and the
application stays up and shows it.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from ditto_tui.errors import GraphExecutionError
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.runtime import CustomEvent, ExecutionEvent, create_ditto
from ditto_tui.session import PrintSink
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy, RunJournal, StaticApprover
from ditto_tui.supervise.journal import DiskFile, open_journal_file
from ditto_tui.tui import DittoApp, RunSpec
from tests.faults.fault_fixtures import SIZE, finished_run, screen_text, still_answers, wait_until
from tests.journal.journal_fixtures import STEPS_CONFIG, STEPS_GRAPH, executions, load, make_workspace
from tests.typed import graph_plan

_DECISION = b'"kind":"approval_resolved"'
_WRITE = DiskFile.write


def _disk_full_at_decision(self: DiskFile, data: bytes) -> None:
    """``DiskFile.write`` on a disk that fills up when the first decision arrives: that write and every
    later one fail with ``ENOSPC``, part of the line reaching the disk first, as a short write does."""
    if _FULL or _DECISION in data:
        _FULL.append(True)
        _WRITE(self, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")
    _WRITE(self, data)


_FULL: list[bool] = []


class BrokenAtDecision:
    """A journal file object that breaks the ``JournalFile`` contract: at the decision it raises a
    ``ValueError`` (as a closed Python file would), not an ``OSError``."""

    def __init__(self, path: Path) -> None:
        self.file = open_journal_file(path)

    def write(self, data: bytes) -> None:
        if _DECISION in data:
            raise ValueError("I/O operation on closed file")
        self.file.write(data)

    def sync(self) -> None:
        self.file.sync()

    def close(self) -> None:
        self.file.close()


@pytest.fixture
def disk_full_at_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every journal file on disk fills up at the first decision, for the test."""
    monkeypatch.setattr(DiskFile, "write", _disk_full_at_decision)
    _FULL.clear()


async def _run_steps(root: Path, journal: RunJournal) -> tuple[GraphExecutionError, list[ExecutionEvent]]:
    """Run the recorded-steps graph, every step approved, with ``journal``; the run must fail."""
    config, program = load(root, STEPS_GRAPH)
    gate = ApprovalGate(
        policy=ApprovalPolicy([{"tool": "record_*", "decision": "ask"}]), approver=StaticApprover("allow")
    )
    gate.recorder = journal
    worker = create_interaction_worker(tools=list(program.tools), output=PrintSink(), approval=gate)
    runtime = create_ditto(config=config, workspace=root, workers=[worker])
    events: list[ExecutionEvent] = []
    journal.attach(runtime)
    runtime.subscribe(events.append)
    async with runtime:
        with pytest.raises(GraphExecutionError) as caught:
            await runtime.run(graph_plan(program))
    return caught.value, events


def _journal_failures(events: list[ExecutionEvent]) -> list[CustomEvent]:
    return [event for event in events if isinstance(event, CustomEvent) and event.name == "journal_failed"]


async def test_a_decision_the_journal_cannot_record_is_not_executed(
    tmp_path: Path, disk_full_at_decision: None
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    error, events = await _run_steps(root, RunJournal(root / ".ditto" / "runs"))
    assert error.node_id == "step1" and "No space left on device" in str(error)
    assert executions(root) == []
    assert len(_journal_failures(events)) == 1


async def test_a_journal_file_failing_with_any_exception_fails_closed_too(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    error, events = await _run_steps(root, RunJournal(root / ".ditto" / "runs", opener=BrokenAtDecision))
    assert error.node_id == "step1" and "closed file" in str(error)
    assert executions(root) == []
    (failure,) = _journal_failures(events)
    assert "cannot write the run journal" in str(failure.data)


async def test_the_ui_stays_up_and_shows_a_full_disk_at_the_decision(
    tmp_path: Path, disk_full_at_decision: None
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    app = DittoApp(RunSpec(config=config, workspace=root, program=program))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: app.desk.open is not None and app.desk.open.armed)
        await pilot.press("a")
        worker = await finished_run(pilot)
        assert isinstance(worker.error, GraphExecutionError)
        await wait_until(pilot, lambda: "Run failed" in screen_text(app))
        # The toast says why; read from it, since where its text wraps depends on the message's length.
        assert any("No space left on device" in note.message for note in app._notifications)
        await still_answers(pilot)
    assert executions(root) == []
