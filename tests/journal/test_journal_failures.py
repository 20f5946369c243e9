"""A journal that cannot be written: the failure is reported, the run does not crash, and no call whose
approval cannot be recorded executes (the run fails closed)."""

from __future__ import annotations

import errno
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ditto_tui.errors import GraphExecutionError
from ditto_tui.headless import run_headless
from ditto_tui.home import runs_dir
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.runtime import CustomEvent, ExecutionEvent, NodeInfo, RunStarted, create_ditto
from ditto_tui.session import PrintSink
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    JournalError,
    RunJournal,
    StaticApprover,
    read_journal,
)
from ditto_tui.supervise.journal import DiskFile
from tests.journal.journal_fixtures import (
    NOTE_CONFIG,
    NOTE_GRAPH,
    STEPS_CONFIG,
    STEPS_GRAPH,
    executions,
    full_disk_opener,
    journals,
    load,
    make_workspace,
)
from tests.typed import graph_plan


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every journal file on disk accepts ``room[0]`` bytes in all, then fails as a full disk does."""
    room = [0]
    write = DiskFile.write

    def limited(self: DiskFile, data: bytes) -> None:
        if len(data) > room[0]:
            write(self, data[: room[0]])
            room[0] = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        room[0] -= len(data)
        write(self, data)

    monkeypatch.setattr(DiskFile, "write", limited)
    yield room


def _printed(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_a_full_disk_refuses_the_approved_call_and_fails_the_run_closed(
    tmp_path: Path, full_disk: list[int]
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    full_disk[0] = 1200  # the disk fills up before the first decision can be recorded
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(program, config, root, approve="allow", out=out, err=err)
    assert code == 1
    assert "run failed" in err.getvalue() and "No space left on device" in err.getvalue()
    assert executions(root) == []
    events = _printed(out)
    reports = [event for event in events if event["kind"] == "custom" and event["name"] == "journal_failed"]
    assert len(reports) == 1
    data = reports[0]["data"]
    assert isinstance(data, dict) and data["run_id"] == events[0]["run_id"]
    assert "cannot write the run journal" in str(data["error"])
    assert str(tmp_path) not in json.dumps(data)
    failed = [event for event in events if event["kind"] == "node_failed"]
    assert failed[0]["node_id"] == "step1" and failed[0]["error_type"] == "JournalError"
    assert events[-1]["kind"] == "run_finished" and events[-1]["status"] == "failed"
    journal = read_journal(journals(root)[0])
    assert journal.truncated_tail and journal.finished is None


async def test_after_a_failure_calls_that_need_approval_are_refused_before_anyone_is_asked(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path, NOTE_CONFIG)
    config, program = load(root, NOTE_GRAPH)
    asked: list[str] = []

    class CountingApprover(StaticApprover):
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request.call.id)
            return await super().decide(request)

    gate = ApprovalGate(
        policy=ApprovalPolicy([{"tool": "record_*", "decision": "ask"}]), approver=CountingApprover("allow")
    )
    journal = RunJournal(tmp_path / "runs", opener=full_disk_opener(0))
    gate.recorder = journal
    worker = create_interaction_worker(tools=list(program.tools), output=PrintSink(), approval=gate)
    runtime = create_ditto(config=config, workspace=root, workers=[worker])
    events: list[ExecutionEvent] = []
    journal.attach(runtime)
    runtime.subscribe(events.append)
    async with runtime:
        with pytest.raises(GraphExecutionError, match="note"):
            await runtime.run(graph_plan(program))
    assert asked == [] and executions(root) == []
    failure = journal.failure(events[0].run_id)
    assert isinstance(failure, JournalError) and "No space left on device" in failure.message
    read = [
        event for event in events if event.kind == "node_finished" and getattr(event, "node_id", "") == "read"
    ]
    assert read, "a call that needs no approval goes on"


async def test_a_failure_in_a_run_that_needs_no_approval_is_reported_and_the_run_goes_on(
    tmp_path: Path, full_disk: list[int]
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG.replace("decision: ask", "decision: deny"))
    config, program = load(root, STEPS_GRAPH)
    full_disk[0] = 100
    out = io.StringIO()
    assert await run_headless(program, config, root, out=out) == 0
    events = _printed(out)
    assert [event["name"] for event in events if event["kind"] == "custom"] == ["journal_failed"]
    assert events[-1]["kind"] == "run_finished" and events[-1]["status"] == "succeeded"


async def test_an_always_grant_that_cannot_be_recorded_is_withdrawn(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)

    class AlwaysApprover(StaticApprover):
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            return ApprovalDecision(kind="approve_always")

    gate = ApprovalGate(
        policy=ApprovalPolicy([{"tool": "record_*", "decision": "ask"}]), approver=AlwaysApprover("allow")
    )
    journal = RunJournal(tmp_path / "runs", opener=full_disk_opener(1500))
    gate.recorder = journal
    worker = create_interaction_worker(tools=list(program.tools), output=PrintSink(), approval=gate)
    runtime = create_ditto(config=config, workspace=root, workers=[worker])
    journal.attach(runtime)
    async with runtime:
        with pytest.raises(GraphExecutionError, match="was approved but not executed"):
            await runtime.run(graph_plan(program))
    assert gate.always_approved() == [] and executions(root) == []


async def test_a_journal_directory_that_cannot_be_created_is_a_failure_too(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    runs_dir(root).parent.mkdir(parents=True)
    runs_dir(root).write_text("a file where the runs directory should be", encoding="utf-8")
    config, program = load(root, STEPS_GRAPH)
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(program, config, root, approve="allow", out=out, err=err) == 1
    assert "cannot create the run journal" in err.getvalue() and executions(root) == []


def test_an_event_that_cannot_be_encoded_stops_the_journal_instead_of_vanishing(tmp_path: Path) -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    journal = RunJournal(tmp_path / "runs")
    base = {"run_id": "run-odd", "at": 1.0}
    journal(RunStarted.trusted({**base, "seq": 1, "plan": "odd", "nodes": (NodeInfo(id="a", type="X.Y"),)}))
    journal(CustomEvent.trusted({**base, "seq": 2, "name": "odd", "data": Unprintable()}))
    failure = journal.failure("run-odd")
    assert failure is not None and failure.message.startswith("cannot encode an event for the run journal")
    assert [event.kind for event in read_journal(tmp_path / "runs" / "run-odd.jsonl").events] == [
        "run_started"
    ]
