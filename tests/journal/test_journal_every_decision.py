"""U-14: every human decision is on the record before what it allows runs, whichever screen or API made it.

A call from the MCP browser is a journaled run of its own (``mcp-browser``), listed by ``ditto-tui runs``
and shown by ``audit``; a library ``runtime.invoke`` with a journal is journaled too; edited arguments are
recorded in full, and the audit shows what ran beside what was asked, with the diff. A record that cannot
be written stops the call before anyone is asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import load_runtime_config_file
from ditto_tui.errors import DittoError
from ditto_tui.home import runs_dir, workspace_state_dir
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runs_cli import audit_json
from ditto_tui.runtime import create_ditto, graph
from ditto_tui.session import open_runtime
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    RunJournal,
    read_journal,
)
from ditto_tui.supervise.journal import list_runs
from ditto_tui.tui.mcp_source import BROWSER_RUN, McpSource
from ditto_tui.workspace import BUILTIN_CONFIG

EDITED = "# Edited\n\nThe person changed this before it ran.\n"


class EditingApprover:
    """Approves each request with the note's text replaced, as a person editing the arguments would."""

    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(kind="approve", arguments={**request.arguments, "text": EDITED})


BROWSE = Program(name="browse", description="", plan=graph("browse").node("noop", "CONTEXT.UPDATE", [], None))


async def _browser_write(workspace: Path, approver: Any) -> Any:
    config = load_runtime_config_file(BUILTIN_CONFIG, {}, workspace=workspace)
    async with open_runtime(BROWSE, config, workspace, approver) as session:
        source = McpSource(
            runtime=session.runtime, registry=session.mcp, config=config, policy=session.gate.policy
        )
        return await source.invoke("demo", "write_note", {"name": "browser", "text": "as requested\n"})


async def test_u14_a_decision_in_the_mcp_browser_is_journaled_with_the_arguments_that_ran(
    tmp_path: Path,
) -> None:
    approver = EditingApprover()
    observation = await _browser_write(tmp_path, approver)
    assert observation.status == "success" and len(approver.requests) == 1
    assert (workspace_state_dir(tmp_path) / "demo-notes" / "browser.md").read_text() == EDITED
    runs = [summary for summary in list_runs(tmp_path) if summary.graph == BROWSER_RUN]
    assert len(runs) == 1 and runs[0].outcome == "succeeded" and runs[0].approvals == {"approve": 1}
    (call,) = audit_json(read_journal(runs[0].path))["calls"]
    assert call["tool"] == "demo:write_note" and call["decision"] == "approve" and call["edited"]
    assert call["arguments"]["text"] == "as requested\n"
    assert call["executedArguments"] == {"name": "browser", "text": EDITED}
    assert '-  "text": "as requested\\n"' in call["argumentsDiff"]
    assert call["digestCheck"].endswith("verified")


async def test_u14_a_browser_call_whose_decision_cannot_be_recorded_does_not_run(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    runs_dir(tmp_path).parent.mkdir(parents=True)
    runs_dir(tmp_path).symlink_to(outside)
    approver = EditingApprover()
    with pytest.raises(DittoError, match="cannot be recorded"):
        await _browser_write(tmp_path, approver)
    assert approver.requests == []  # nobody was asked in vain
    assert not (workspace_state_dir(tmp_path) / "demo-notes" / "browser.md").exists()
    assert list(outside.iterdir()) == []


async def test_u14_a_library_invoke_is_journaled_before_it_runs(tmp_path: Path) -> None:
    journal = RunJournal(tmp_path / "runs")
    on_disk_at_start: list[str] = []

    async def record(arguments: Mapping[str, Any], context: Any) -> dict[str, Any]:
        on_disk_at_start.extend(path.read_text() for path in (tmp_path / "runs").glob("*.jsonl"))
        return {"status": "success", "content": f"ran with {arguments['n']}"}

    tool = Tool(
        name="record",
        description="Records what was on disk when it ran.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        effects=("write",),
        requires_approval=True,
        execute_fn=record,
    )

    class EditsToTwo:
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            return ApprovalDecision(kind="approve", arguments={"n": 2})

    gate = ApprovalGate(policy=ApprovalPolicy(), approver=EditsToTwo(), recorder=journal)
    worker = create_interaction_worker(tools=[tool], approval=gate)
    sandbox = {"tools": ["record"], "write": True}
    async with create_ditto(sandbox=sandbox, workspace=tmp_path, workers=[worker]) as runtime:
        journal.attach(runtime)
        call = {"id": "c1", "name": "record", "arguments": {"n": 1}}
        result = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
    journal.close()
    assert result.status == "success" and result.content == "ran with 2"
    (text,) = on_disk_at_start  # when the tool ran, its decision was on disk with the edited arguments
    assert '"kind":"approval_resolved"' in text and '"arguments":{"n":2}' in text
    (path,) = (tmp_path / "runs").glob("invoke-*.jsonl")
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert read_journal(path).header["plan"] == "invoke"
    (summary,) = list_runs_in(tmp_path / "runs")
    assert summary.outcome == "recorded"  # a call outside any run has no run_finished to write


def list_runs_in(directory: Path) -> list[Any]:
    """The summaries of every journal in ``directory``."""
    from ditto_tui.supervise.journal._read import summarize

    return [summarize(read_journal(path)) for path in sorted(directory.glob("*.jsonl"))]
