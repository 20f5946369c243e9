"""ADVERSARIAL V-01: a write to ditto-tui's own control files always asks a person.

A trusted workspace's ``ditto.yaml``, ``graphs/**``, ``.ditto/**``, ``.git/**`` and the user's config and
state directories decide what ditto-tui runs next: no mode, grant, batch or rule lets a call write them
unasked, no answer but a person's approves it, and no grant is written from it. An ordinary file is
still written without asking in auto-edit mode (the legitimate path).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ToolCall
from ditto_tui.home import config_dir, state_dir
from ditto_tui.interaction import McpRegistry, Tool, create_interaction_worker
from ditto_tui.runtime import ApprovalResolved, ExecutionEvent, Runtime, WorkerContext, create_ditto
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    QueueApprover,
    StaticApprover,
)
from ditto_tui.supervise.grants import GrantStore, suggest_match
from ditto_tui.supervise.modes import Mode, ModeSwitch
from ditto_tui.supervise.protected import ControlFiles
from tests.mcp.mcp_helpers import sandbox as mcp_sandbox
from tests.mcp.test_mcp_registry_drift import Server


class Writer:
    """A workspace file write (declared effects ``write``), recording the paths it was let write."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.tool = Tool(
            name="write_text",
            description="Write a workspace file",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                "required": ["path"],
            },
            effects=["write"],
            requires_approval=True,
            execute_fn=self.execute,
        )

    async def execute(self, args: Mapping[str, Any], _context: WorkerContext) -> Any:
        self.written.append(str(args["path"]))
        return {"status": "success", "content": "written"}


def setup(
    root: Path,
    approver: Any = None,
    *,
    mode: Mode = "ask",
    rules: Sequence[Mapping[str, Any]] = (),
    grants: GrantStore | None = None,
) -> tuple[Runtime, ApprovalGate, Writer, list[ExecutionEvent]]:
    writer = Writer()
    gate = ApprovalGate(
        policy=ApprovalPolicy(rules),
        approver=approver,
        mode=ModeSwitch(mode),
        grants=grants,
    )
    runtime = create_ditto(
        sandbox={"tools": ["write_text"]},
        workspace=root,
        workers=[create_interaction_worker(tools=[writer.tool], approval=gate)],
    )
    events: list[ExecutionEvent] = []
    runtime.subscribe(events.append)
    return runtime, gate, writer, events


def write(path: str, call_id: str = "w-1") -> dict[str, Any]:
    return {"call": {"id": call_id, "name": "write_text", "arguments": {"path": path, "text": "x"}}}


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in ("graphs", ".git/hooks", ".ditto", "notes"):
        (root / folder).mkdir(parents=True)
    (root / "ditto.yaml").write_text("sandbox: {}\n", encoding="utf-8")
    return root


CONTROL_PATHS = [
    "ditto.yaml",
    "./ditto.yaml",
    "graphs/react_agent.py",
    "graphs/helper.py",
    ".git/hooks/pre-commit",
    ".ditto/runs/x.jsonl",
    "notes/../ditto.yaml",
    "DITTO.YAML",
    "vendor/.git/hooks/post-checkout",
]


async def _asked(runtime: Runtime, inbox: QueueApprover, call: dict[str, Any]) -> tuple[ApprovalRequest, Any]:
    running = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", call))
    for _ in range(500):
        if inbox.pending() or running.done():
            break
        await asyncio.sleep(0.002)
    assert not running.done(), f"{call} ran without asking: {running.result()}"
    (request,) = inbox.pending()
    return request, running


@pytest.mark.parametrize("path", CONTROL_PATHS)
async def test_v01_auto_edit_asks_before_writing_a_control_file(tmp_path: Path, path: str) -> None:
    inbox = QueueApprover()
    runtime, _gate, writer, _events = setup(workspace(tmp_path), inbox, mode="auto-edit")
    request, running = await _asked(runtime, inbox, write(path))
    assert request.protected == (path,)
    inbox.resolve(request.request_id, ApprovalDecision(kind="deny", reason="no"))
    result = await running
    assert result.status == "failed" and writer.written == []


async def test_v01_auto_edit_still_writes_an_ordinary_file_without_asking(tmp_path: Path) -> None:
    inbox = QueueApprover()
    runtime, _gate, writer, events = setup(workspace(tmp_path), inbox, mode="auto-edit")
    result = await runtime.invoke("INTERACTION.ACT.TOOL", write("notes/settings.yaml"))
    assert result.status == "success" and writer.written == ["notes/settings.yaml"]
    assert inbox.pending() == []
    (decision,) = [event for event in events if isinstance(event, ApprovalResolved)]
    assert (decision.decision, decision.decided_by) == ("approve", "mode")


async def test_v01_a_link_into_git_is_a_control_file(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    os.symlink(root / ".git" / "hooks", root / "notes" / "hooks")
    inbox = QueueApprover()
    runtime, _gate, _writer, _events = setup(root, inbox, mode="auto-edit")
    request, running = await _asked(runtime, inbox, write("notes/hooks/pre-commit"))
    assert request.protected == ("notes/hooks/pre-commit",)
    running.cancel()


async def test_v01_a_rule_that_allows_writes_still_asks_for_a_control_file(tmp_path: Path) -> None:
    inbox = QueueApprover()
    rules = [{"tool": "write_*", "decision": "allow"}]
    runtime, _gate, writer, _events = setup(workspace(tmp_path), inbox, rules=rules)
    request, running = await _asked(runtime, inbox, write("graphs/react_agent.py"))
    inbox.resolve(request.request_id, ApprovalDecision(kind="approve"))
    assert (await running).status == "success" and writer.written == ["graphs/react_agent.py"]
    ordinary = await runtime.invoke("INTERACTION.ACT.TOOL", write("notes/a.md", "w-2"))
    assert ordinary.status == "success" and inbox.pending() == []  # the rule allows an ordinary file


async def test_v01_a_deny_rule_still_denies_a_control_file(tmp_path: Path) -> None:
    rules = [{"tool": "write_*", "decision": "deny"}]
    runtime, _gate, writer, _events = setup(workspace(tmp_path), QueueApprover(), rules=rules)
    result = await runtime.invoke("INTERACTION.ACT.TOOL", write("ditto.yaml"))
    assert result.error is not None and result.error.code == "APPROVAL_DENIED" and writer.written == []


async def test_v01_no_grant_covers_a_control_file_and_none_is_written_from_one(tmp_path: Path) -> None:
    inbox = QueueApprover()
    grants = GrantStore()
    runtime, gate, writer, events = setup(workspace(tmp_path), inbox, grants=grants)
    request, running = await _asked(runtime, inbox, write("ditto.yaml"))
    inbox.resolve(
        request.request_id, ApprovalDecision(kind="approve_always", scope="tool", lifetime="session")
    )
    assert (await running).status == "success"
    assert grants.grants() == []  # approved this once; no grant was written
    assert await gate.written_grant(request.request_id, 1.0) is None
    (decision,) = [
        e for e in events if isinstance(e, ApprovalResolved) and e.request_id == request.request_id
    ]
    assert decision.decision == "approve" and "no grant covers a control file" in (decision.reason or "")
    # a tool grant made from an ordinary write covers ordinary writes, never the control file
    request, running = await _asked(runtime, inbox, write("notes/a.md", "w-2"))
    inbox.resolve(
        request.request_id, ApprovalDecision(kind="approve_always", scope="tool", lifetime="session")
    )
    assert (await running).status == "success" and len(grants.grants()) == 1
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", write("notes/b.md", "w-3"))).status == "success"
    request, running = await _asked(runtime, inbox, write(".git/hooks/pre-commit", "w-4"))
    assert gate.covered(grants.grants()[0]) == []  # nor does applying it to the queue
    assert gate.apply_grant(grants.grants()[0].id) == 0 and inbox.pending() == [request]
    running.cancel()
    assert writer.written == ["ditto.yaml", "notes/a.md", "notes/b.md"]


async def test_v01_an_answer_no_person_gave_never_approves_a_control_file(tmp_path: Path) -> None:
    runtime, _gate, writer, events = setup(workspace(tmp_path), StaticApprover("allow"))
    result = await runtime.invoke("INTERACTION.ACT.TOOL", write("ditto.yaml"))
    assert result.status == "failed" and result.error is not None and result.error.code == "APPROVAL_DENIED"
    assert "only a person approves it" in result.error.message and writer.written == []
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", write("notes/a.md", "w-2"))).status == "success"
    assert any(isinstance(e, ApprovalResolved) and e.decision == "deny" for e in events)


def test_v01_the_user_config_and_state_directories_are_control_files(tmp_path: Path) -> None:
    files = ControlFiles.of(workspace(tmp_path))
    assert files.named_by({"path": str(config_dir() / "ditto.yaml")})
    assert files.named_by({"target": {"nested": [str(state_dir() / "state.db")]}})
    assert files.named_by({"path": str(tmp_path / "repo" / "ditto.yaml")})  # absolute, inside the workspace
    assert not files.named_by({"path": "notes/ditto.yaml.md", "text": "graphs are nice"})
    assert not files.named_by({"path": ".ditto/notes/summary.md"})  # the agent's notes: nothing reads them
    assert files.named_by({"path": ".ditto/notes/../state.db"})
    assert not files.named_by({"path": str(tmp_path / "elsewhere" / "ditto.yaml")})
    assert files.named_by({"paths": ["a"] * 300})  # too many strings to look at: asked, not let through


@pytest.mark.parametrize(
    ("path", "suggested"),
    [
        ("settings.yaml", "settings.yaml"),  # not *.yaml: that would cover ditto.yaml
        ("graphs/helper.py", None),  # graphs/** is itself a control folder
        (".git/hooks/pre-commit", None),
        ("ditto.yaml", None),
        ("sub/.git/config", None),  # a nested repository's folder is a control folder too
        ("a/.git/hooks/pre-commit", None),
        ("a.YAML", "a.YAML"),  # not *.YAML: the gate compares without case, so it covers DITTO.YAML
        ("Graphs/x.py", None),
        (".DITTO/state.db", None),
        (".ditto/notes/summary.md", ".ditto/notes/**"),  # the packaged agent's notes are not
        ("notes/a/b.md", "notes/a/**"),  # the legitimate generalisation stays
        ("todo.md", "*.md"),
    ],
)
def test_v01_no_suggested_grant_glob_covers_a_control_file(path: str, suggested: str | None) -> None:
    match = suggest_match({"path": path})
    assert (match["args"]["path"] if match else None) == suggested


async def test_v01_an_mcp_call_naming_a_control_file_asks_even_when_a_rule_allows_it(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    registry, fake = McpRegistry(), Server()
    fake.tools[0]["annotations"] = {"readOnlyHint": True}  # the server's claim: never trusted to allow
    registry.register("s", fake)
    box = mcp_sandbox(root, "s")
    await registry.discover("s", box)
    inbox = QueueApprover()
    gate = ApprovalGate(policy=ApprovalPolicy([{"mcp": "s:*", "decision": "allow"}]), approver=inbox)
    target = str(root / ".git" / "hooks" / "pre-commit")
    call = ToolCall(id="m-1", name="search", arguments={"q": "x", "file": target})
    running = asyncio.ensure_future(gate.invoke_mcp(registry, "s", call, box, None, None))
    for _ in range(500):
        if inbox.pending() or running.done():
            break
        await asyncio.sleep(0.002)
    (request,) = inbox.pending()
    assert request.protected == (target,) and fake.calls == []
    inbox.resolve(request.request_id, ApprovalDecision(kind="deny", reason="no hooks"))
    assert (await running).status == "failed" and fake.calls == []
    ordinary = ToolCall(id="m-2", name="search", arguments={"q": "x", "file": str(root / "notes" / "a.md")})
    assert (await gate.invoke_mcp(registry, "s", ordinary, box, None, None)).status == "success"
