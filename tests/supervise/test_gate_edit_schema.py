"""Edited arguments are checked in the core, whoever edits them: against the input schema (a compiled
validator, the one the forms use), then by the tool's own ``validate``; MCP edits against the server's
input schema. A refused edit ends the call ``APPROVAL_EDIT_INVALID`` and nothing executes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.interaction import Tool, create_interaction_worker, open_mcp_servers
from ditto_tui.runtime import WorkerContext, create_ditto
from ditto_tui.schema import check_against_schema, compile_validator
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 10}},
    "required": ["text"],
    "additionalProperties": False,
}


class Edits:
    """A headless-style approver that approves each request with the next scripted arguments."""

    def __init__(self, *arguments: Mapping[str, Any]) -> None:
        self.arguments = list(arguments)
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(kind="approve", arguments=self.arguments.pop(0))


async def test_a_tool_edit_that_breaks_the_input_schema_is_refused(tmp_path: Path) -> None:
    ran: list[Mapping[str, Any]] = []

    async def execute(arguments: Mapping[str, Any], _context: WorkerContext) -> dict[str, Any]:
        ran.append(arguments)
        return {"status": "success", "content": "ok"}

    tool = Tool(
        name="note", input_schema=SCHEMA, execute_fn=execute, effects=("write",), requires_approval=True
    )
    approver = Edits({"text": 5}, {"text": "far too long for it"}, {"text": "fine"})
    gate = ApprovalGate(policy=ApprovalPolicy(), approver=approver)
    worker = create_interaction_worker(tools=[tool], approval=gate)
    async with create_ditto(sandbox={"tools": ["note"]}, workspace=tmp_path, workers=[worker]) as runtime:
        results = [
            await runtime.invoke(
                "INTERACTION.ACT.TOOL", {"call": {"id": f"c{n}", "name": "note", "arguments": {"text": "a"}}}
            )
            for n in range(3)
        ]
    assert [result.status for result in results] == ["failed", "failed", "success"]
    assert {result.error.code for result in results[:2]} == {"APPROVAL_EDIT_INVALID"}
    assert "text: 5 is not of type 'string'" in results[0].error.message
    assert ran == [{"text": "fine"}]


async def test_an_mcp_edit_is_checked_against_the_servers_input_schema(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    approver = Edits({"name": "edited"}, {"name": "edited", "text": "checked\n"})
    policy = ApprovalPolicy([{"mcp": "demo:*", "decision": "ask"}])
    async with open_mcp_servers({"demo": demo_server_entry(notes)}, log_dir=tmp_path / "logs") as registry:
        gate = ApprovalGate(policy=policy, approver=approver)
        worker = create_interaction_worker(mcp=registry, approval=gate)
        async with create_ditto(sandbox={"mcp": ["demo"]}, workspace=tmp_path, workers=[worker]) as runtime:
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "demo"})
            call = {"name": "write_note", "arguments": {"name": "edited", "text": "as asked\n"}}
            missing = await runtime.invoke(
                "INTERACTION.ACT.MCP", {"operation": "invoke", "server": "demo", "call": {"id": "m1", **call}}
            )
            assert not (notes / "edited.md").exists()  # the server was never called
            valid = await runtime.invoke(
                "INTERACTION.ACT.MCP", {"operation": "invoke", "server": "demo", "call": {"id": "m2", **call}}
            )
    assert missing.result.status == "failed" and missing.result.error.code == "APPROVAL_EDIT_INVALID"
    assert "'text' is a required property" in missing.result.error.message
    assert valid.result.status == "success" and (notes / "edited.md").read_text() == "checked\n"


def test_validators_are_compiled_once_per_schema() -> None:
    first, _ = compile_validator(dict(SCHEMA))
    again, _ = compile_validator({**SCHEMA})
    assert first is not None and first is again
    assert check_against_schema(None, {"anything": 1}) == []
    assert check_against_schema({"type": "nonsense"}, {})[0].startswith("the input schema is invalid")
