"""Writing the journal: one line per event, decisions durable before execution, links, CLI wiring."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.__main__ import main
from ditto_tui.headless import run_headless
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runtime import ExecutionEvent, WorkerContext, create_ditto, graph
from ditto_tui.session import build_runtime
from ditto_tui.supervise import (
    ApprovalGate,
    ApprovalPolicy,
    RunJournal,
    StaticApprover,
    read_journal,
)
from ditto_tui.supervise.audit import call_records
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.run import RunScreen
from tests.journal.journal_fixtures import (
    NOTE_CONFIG,
    NOTE_GRAPH,
    STEPS_CONFIG,
    STEPS_GRAPH,
    RecordingFile,
    executions,
    headless_steps,
    journals,
    load,
    make_workspace,
    wait_until,
)
from tests.typed import graph_plan


def _raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_every_event_of_a_headless_run_is_one_journal_line(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    out = io.StringIO()
    assert await run_headless(program, config, root, approve="allow", out=out) == 0
    printed = [json.loads(line) for line in out.getvalue().splitlines()]
    (path,) = journals(root)
    header, *lines = _raw_lines(path)
    assert header["kind"] == "journal" and header["run_id"] == printed[0]["run_id"] == path.stem
    assert header["program"] == "recorded-steps" and header["approver"] == "fixed answer (--approve allow)"
    # Each rule as written, and where: the provenance a decision names (issue 16).
    source = {"file": str(root / "ditto.yaml"), "line": 6, "layer": "config"}
    assert header["policy"] == [{"tool": "record_*", "decision": "ask", "source": source}]
    assert header["tools"]["record_step"]["requiresApproval"] is True
    for line in lines:
        line.pop("links", None)
    assert lines == printed
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def _recording_runtime(directory: Path, log: list[tuple[str, str]]) -> tuple[Any, RunJournal]:
    """The wiring of ``build_runtime`` with a journal whose writes and fsyncs are noted in ``log``."""

    async def execute(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        assert context.approval is not None
        log.append(("execute", context.approval.call_id))
        return {"status": "success", "content": "done"}

    tool = Tool(
        name="step",
        input_schema={"type": "object"},
        effects=["write"],
        requires_approval=True,
        execute_fn=execute,
    )
    gate = ApprovalGate(policy=ApprovalPolicy(), approver=StaticApprover("allow"))
    journal = RunJournal(directory, opener=lambda path: RecordingFile(path, log))
    gate.recorder = journal
    worker = create_interaction_worker(tools=[tool], approval=gate)
    runtime = create_ditto(sandbox={"tools": ["step"], "write": True}, workers=[worker])
    journal.attach(runtime)
    return runtime, journal


def _three_steps() -> Any:
    plan = graph("three-steps")
    for number in (1, 2, 3):
        call = {"call": {"id": f"s-{number}", "name": "step", "arguments": {"n": number}}}
        plan = plan.node(
            f"s{number}", "INTERACTION.ACT.TOOL", [f"s{number - 1}"] if number > 1 else [], _given(call)
        )
    return plan


def _given(value: Any) -> Any:
    return lambda _input, _deps: value


async def test_each_decision_is_written_and_fsynced_before_its_call_executes(tmp_path: Path) -> None:
    log: list[tuple[str, str]] = []
    runtime, _journal = _recording_runtime(tmp_path / "runs", log)
    async with runtime:
        await runtime.run(_three_steps())
    executed = [index for index, (what, _) in enumerate(log) if what == "execute"]
    assert [log[index][1] for index in executed] == ["s-1", "s-2", "s-3"]
    for index in executed:
        call_id = log[index][1]
        written = next(
            at
            for at, (what, data) in enumerate(log[:index])
            if what == "write" and '"kind":"approval_resolved"' in data and f'"call_id":"{call_id}"' in data
        )
        assert ("sync", "") in log[written:index], f"{call_id} executed before its decision was fsynced"


async def test_fsync_happens_only_for_decisions_and_at_run_end(tmp_path: Path) -> None:
    log: list[tuple[str, str]] = []
    runtime, _journal = _recording_runtime(tmp_path / "runs", log)
    async with runtime:
        await runtime.run(_three_steps())
    syncs = [index for index, (what, _) in enumerate(log) if what == "sync"]
    assert len(syncs) == 3 + 1
    last_write = max(index for index, (what, _) in enumerate(log) if what == "write")
    assert '"kind":"run_finished"' in log[last_write][1] and syncs[-1] == last_write + 1


async def test_the_decision_is_on_disk_when_the_approved_tool_starts(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, _ = load(root, STEPS_GRAPH)
    seen: list[str] = []

    async def execute(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        (path,) = journals(root)
        seen.extend(
            line["decision"]
            for line in _raw_lines(path)
            if line["kind"] == "approval_resolved" and line["call_id"] == "on-disk-1"
        )
        return {"status": "success", "content": "checked"}

    tool = Tool(
        name="record_step",
        input_schema={"type": "object"},
        effects=["write"],
        requires_approval=True,
        execute_fn=execute,
    )
    call = {"call": {"id": "on-disk-1", "name": "record_step", "arguments": {}}}
    program = Program(
        name="on-disk",
        description="",
        plan=graph("on-disk").node("a", "INTERACTION.ACT.TOOL", [], _given(call)),
        tools=(tool,),
    )
    runtime, _gate = build_runtime(program, config, root, StaticApprover("allow"))
    async with runtime:
        await runtime.run(graph_plan(program))
    assert seen == ["approve"]


async def test_receipt_and_run_end_are_written_before_the_run_is_reported_finished(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    on_disk_at_finish: list[list[dict[str, Any]]] = []

    def later_subscriber(event: ExecutionEvent) -> None:
        if event.kind == "run_finished":
            (path,) = journals(root)
            on_disk_at_finish.append(_raw_lines(path))

    runtime, _gate = build_runtime(program, config, root, StaticApprover("allow"))
    runtime.subscribe(later_subscriber)
    async with runtime:
        await runtime.run(graph_plan(program))
    (lines,) = on_disk_at_finish
    assert lines[-1]["kind"] == "run_finished"
    receipts = [line for line in lines if line["kind"] == "node_finished" and line["node_id"] == "output"]
    assert receipts and receipts[0]["output"] == {"deliveryId": "steps:1", "status": "accepted"}


async def test_links_read_one_call_as_approval_execution_observation_receipt(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    assert await run_headless(program, config, root, approve="allow", out=io.StringIO()) == 0
    journal = read_journal(journals(root)[0])
    trail = [
        (entry.event.kind, getattr(entry.event, "node_id", None))
        for entry in journal.entries
        if entry.call_id == "step-6"
    ]
    assert trail == [
        ("node_started", "step6"),
        ("approval_requested", "step6"),
        ("approval_resolved", None),
        ("node_finished", "step6"),
        ("node_started", "observe"),
        ("node_finished", "observe"),
    ]
    delivered = [entry.event.kind for entry in journal.entries if entry.delivery_id == "steps:1"]
    assert delivered == ["node_started", "node_finished"]
    record = call_records(journal)[-1]
    assert (record.call_id, record.decision, record.outcome) == ("step-6", "approve", "success")
    assert (record.observation, record.delivery, record.digest_check) == (
        "success",
        "steps:1 accepted",
        "verified",
    )


def test_every_cli_run_is_journaled_unless_no_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    common = headless_steps(root)
    assert main([*common, "--no-journal"]) == 0
    assert journals(root) == []
    assert main([*common, "--approve", "allow"]) == 0
    (path,) = journals(root)
    assert executions(root) == [f"step-{n}" for n in range(1, 7)]
    finished = read_journal(path).finished
    assert finished is not None and finished.status == "succeeded"
    capsys.readouterr()


@pytest.mark.parametrize("journal", [False, True])
async def test_a_tui_run_is_journaled_unless_turned_off(tmp_path: Path, journal: bool) -> None:
    root = make_workspace(tmp_path, NOTE_CONFIG.replace("decision: ask", "decision: allow"))
    config, program = load(root, NOTE_GRAPH)
    app = DittoApp(RunSpec(config=config, workspace=root, program=program, journal=journal))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.model.finished)
    assert len(journals(root)) == int(journal)
    assert executions(root) == ["note-1"]
