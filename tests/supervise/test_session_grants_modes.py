"""Grants and modes through the session a program runs in: what they approve or deny, what the journal
and ``audit`` say decided, what lasts past a restart, and what applies to the queue."""

from __future__ import annotations

import asyncio
import contextlib
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ditto_tui.__main__ import main
from ditto_tui.config import RuntimeConfig, load_runtime_config_file
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.program import Program
from ditto_tui.runs_cli import print_audit
from ditto_tui.runtime import ApprovalResolved, ExecutionEvent, Graph, graph
from ditto_tui.session import build_runtime
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest, Inbox, read_journal
from ditto_tui.supervise.audit import call_records, decided_by
from ditto_tui.supervise.journal import list_runs
from ditto_tui.supervise.modes import MODE_DENIED

DATA = Path(__file__).resolve().parents[1] / "data"


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    shutil.copy(DATA / "ditto.tui.yaml", root / "ditto.yaml")
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    return root


def _config(root: Path) -> RuntimeConfig:
    return load_runtime_config_file(root / "ditto.yaml", {})


def _writes(*paths: str, parallel: bool = False) -> Program:
    """A graph of ``write_text`` calls, one node per path (each after the one before, unless parallel)."""
    plan = graph("writes")
    before: list[str] = []
    for index, path in enumerate(paths):
        call = {
            "call": {"id": f"w-{index}", "name": "write_text", "arguments": {"path": path, "text": "x\n"}}
        }
        plan = plan.node(f"n{index}", "INTERACTION.ACT.TOOL", [] if parallel else before, _given(call))
        before = [f"n{index}"]
    return Program(name="writes", description="", plan=plan, tools=(read_text_tool, write_text_tool))


def _given(value: Any) -> Callable[[Any, Any], Any]:
    return lambda _input, _deps: value


class Person:
    """Answers each approval request with the next decision (approve once when they run out)."""

    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.decisions.pop(0) if self.decisions else ApprovalDecision(kind="approve")


async def _run(program: Program, root: Path, approver: Any, **session: Any) -> dict[str, Any]:
    runtime, gate = build_runtime(program, _config(root), root, approver, **session)
    async with runtime:
        assert isinstance(program.plan, Graph)
        return await runtime.run(program.plan, None)


def _statuses(outputs: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [
        (outputs[node].status, outputs[node].error.code if outputs[node].error else None)
        for node in sorted(outputs)
        if node.startswith("n")
    ]


def _journal_lines(root: Path) -> list[dict[str, Any]]:
    (summary,) = list_runs(root)[-1:]
    return [entry.event.model_dump(mode="json") for entry in read_journal(summary.path).entries]


async def test_a_grant_of_k_uses_approves_k_calls_then_the_next_one_asks(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    person = Person(ApprovalDecision(kind="approve_always", scope="tool", lifetime="session", uses=2))
    program = _writes("notes/a.md", "notes/b.md", "notes/c.md", "notes/d.md")
    outputs = await _run(program, root, person)
    assert _statuses(outputs) == [("success", None)] * 4
    # the first asked and wrote the grant; it approved the next two; the fourth asked again
    assert [request.call.arguments["path"] for request in person.asked] == ["notes/a.md", "notes/d.md"]
    lines = _journal_lines(root)
    by_grant = [
        line for line in lines if line["kind"] == "approval_resolved" and line["decided_by"] == "grant"
    ]
    assert len(by_grant) == 2 and all(line["reason"].startswith("grant g-") for line in by_grant)


async def test_a_rule_grant_covers_the_folder_it_names_and_nothing_else(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "other").mkdir()
    (root / "notes" / "deep").mkdir()
    grant = ApprovalDecision(kind="approve_always", scope="rule", match={"args": {"path": "notes/**"}})
    person = Person(grant)
    outputs = await _run(_writes("notes/a.md", "notes/deep/b.md", "other/c.md"), root, person)
    assert [status for status, _code in _statuses(outputs)] == ["success"] * 3
    assert [request.call.arguments["path"] for request in person.asked] == ["notes/a.md", "other/c.md"]


async def test_a_project_grant_lasts_past_a_restart_and_is_listed_and_revoked_by_the_cli(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path)
    first = Person(ApprovalDecision(kind="approve_always", scope="tool", lifetime="project"))
    await _run(_writes("notes/a.md"), root, first)
    assert len(first.asked) == 1
    later = Person()  # a new session: the project grant is read back from the user config dir
    outputs = await _run(_writes("notes/b.md"), root, later)
    assert _statuses(outputs) == [("success", None)] and later.asked == []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["grants", "--workspace", str(root)]) == 0
    assert "write_text: every call" in out.getvalue()
    records = [r for r in call_records(read_journal(list_runs(root)[-1].path))]
    header = read_journal(list_runs(root)[-1].path).header
    assert decided_by(header, records[0]).startswith("a grant (grant g-")
    grant_id = records[0].reason.split()[1].rstrip(":") if records[0].reason else ""
    assert main(["grants", "--revoke", grant_id, "--workspace", str(root)]) == 0
    again = Person()
    await _run(_writes("notes/c.md"), root, again)
    assert len(again.asked) == 1


async def test_read_only_mode_denies_a_write_without_asking_and_says_the_mode_decided(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    person = Person()
    outputs = await _run(_writes("notes/a.md"), root, person, mode="read-only")
    assert _statuses(outputs) == [("failed", MODE_DENIED)]
    assert person.asked == [] and not (root / "notes" / "a.md").exists()
    (resolved,) = [line for line in _journal_lines(root) if line["kind"] == "approval_resolved"]
    assert (resolved["decision"], resolved["decided_by"]) == ("deny", "mode")
    assert read_journal(list_runs(root)[-1].path).header["mode"] == "read-only"


async def test_plan_mode_tells_the_model_to_propose_a_plan(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    outputs = await _run(_writes("notes/a.md"), root, Person(), mode="plan")
    result = outputs["n0"]
    assert result.error.code == MODE_DENIED and "plan" in result.error.message.lower()


async def test_auto_edit_mode_runs_a_workspace_write_the_rules_ask_about_and_records_it_first(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path)
    person = Person()
    outputs = await _run(_writes("notes/a.md"), root, person, mode="auto-edit")
    assert _statuses(outputs) == [("success", None)] and person.asked == []
    records = call_records(read_journal(list_runs(root)[-1].path))
    header = read_journal(list_runs(root)[-1].path).header
    assert decided_by(header, records[0]).startswith("the mode (auto-edit mode")
    audit = io.StringIO()
    print_audit(read_journal(list_runs(root)[-1].path), audit)
    assert "the mode (auto-edit mode" in audit.getvalue()


async def test_a_mode_change_during_a_run_is_journaled_and_applies_to_the_next_call(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    program = _writes("notes/a.md", "notes/b.md")
    holder: dict[str, Any] = {}

    class SwitchingPerson(Person):
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            holder["gate"].mode.set("read-only")  # the person switches mode while the first call waits
            return await super().decide(request)

    person = SwitchingPerson()
    runtime, gate = build_runtime(program, _config(root), root, person)
    holder["gate"] = gate
    async with runtime:
        assert isinstance(program.plan, Graph)
        outputs = await runtime.run(program.plan, None)
    assert _statuses(outputs) == [("success", None), ("failed", MODE_DENIED)]
    lines = _journal_lines(root)
    changes = [(line["previous"], line["mode"]) for line in lines if line["kind"] == "mode_changed"]
    assert changes == [("ask", "read-only")]


async def test_a_grant_applied_to_the_queue_approves_the_pending_calls_it_covers(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    inbox = Inbox()
    program = _writes("notes/a.md", "notes/b.md", "README.md", parallel=True)
    runtime, gate = build_runtime(program, _config(root), root, inbox, inbox=inbox)
    seen: list[ExecutionEvent] = []
    runtime.subscribe(seen.append)
    async with runtime:
        assert isinstance(program.plan, Graph)
        running = asyncio.create_task(runtime.run(program.plan, None))
        while len(inbox.pending()) < 3:
            await asyncio.sleep(0.01)
        first = next(r for r in inbox.pending() if r.call.arguments["path"] == "notes/a.md")
        decision = ApprovalDecision(kind="approve_always", scope="rule", match={"args": {"path": "notes/**"}})
        assert inbox.resolve(first.request_id, decision)
        while not gate.grants.grants():
            await asyncio.sleep(0.01)
        (grant,) = gate.grants.grants()
        covered = gate.covered(grant)
        assert [r.call.arguments["path"] for r in covered] == ["notes/b.md"]
        assert gate.apply_grant(grant.id) == 1
        (left,) = inbox.pending()
        assert left.call.arguments["path"] == "README.md"
        inbox.resolve(left.request_id, ApprovalDecision(kind="deny", reason="not the readme"))
        outputs = await running
    assert [status for status, _code in _statuses(outputs)] == ["success", "success", "failed"]
    reasons = [e.reason for e in seen if isinstance(e, ApprovalResolved)]
    assert f"grant {grant.id} applied to the queue" in reasons
