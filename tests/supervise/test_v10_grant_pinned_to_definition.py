"""ADVERSARIAL V-10 (grants): a grant is pinned to the whole MCP tool definition, annotations and title
included. Once a person accepts a changed definition (a tool that now says it is destructive), the
grant made for the old one no longer approves; an unchanged definition's grant still does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.interaction import McpRegistry
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, QueueApprover
from tests.mcp.mcp_helpers import sandbox
from tests.mcp.test_mcp_registry_drift import Server


async def _call(gate: ApprovalGate, registry: McpRegistry, box: Any, call_id: str) -> tuple[Any, Any]:
    """Start the call; returns (its pending request or None once it ended, the running call)."""
    call = ToolCall(id=call_id, name="search", arguments={"q": "x"})
    running = asyncio.ensure_future(gate.invoke_mcp(registry, "s", call, box, None, None))
    for _ in range(500):
        if gate.pending() or running.done():
            break
        await asyncio.sleep(0.002)
    return (gate.pending()[0] if gate.pending() else None), running


async def test_v10_an_accepted_change_of_annotations_is_not_covered_by_the_old_grant(tmp_path: Path) -> None:
    registry, fake = McpRegistry(), Server()
    fake.tools[0]["annotations"] = {"readOnlyHint": True}
    registry.register("s", fake)
    box = sandbox(tmp_path, "s")
    inbox = QueueApprover()
    gate = ApprovalGate(approver=inbox)
    await registry.discover("s", box)
    request, running = await _call(gate, registry, box, "c-1")
    assert request is not None
    always = ApprovalDecision(kind="approve_always", scope="tool", lifetime="session")
    inbox.resolve(request.request_id, always)
    assert (await running).status == "success"
    request, running = await _call(gate, registry, box, "c-2")
    assert request is None and (await running).status == "success"  # the grant approves the same tool

    fake.tools[0]["annotations"] = {"readOnlyHint": False, "destructiveHint": True}
    await registry.discover("s", box)
    assert registry.accept_changes("s") == ["search"]  # the person accepted the new definition
    request, running = await _call(gate, registry, box, "c-3")
    assert request is not None, "the grant of the old definition approved the changed tool"
    inbox.resolve(request.request_id, ApprovalDecision(kind="deny", reason="not destructive things"))
    result: ExternalResult = await running
    assert result.status == "failed" and fake.calls == ["search", "search"]
    assert request.grant_pin != request.tool_digest  # pinned to the whole definition, not the API digest


async def test_v10_a_changed_title_alone_is_a_change_to_accept_and_a_new_definition(tmp_path: Path) -> None:
    registry, fake = McpRegistry(), Server()
    registry.register("s", fake)
    box = sandbox(tmp_path, "s")
    await registry.discover("s", box)
    gate = ApprovalGate(approver=QueueApprover())
    first, running = await _call(gate, registry, box, "c-1")
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    fake.tools[0]["title"] = "Delete everything"
    await registry.discover("s", box)
    ((_server, change),) = registry.pending_changes()
    assert change.fields == ("title",)  # the words a person reads changed: blocked until accepted
    registry.accept_changes("s")
    second, running = await _call(gate, registry, box, "c-2")
    running.cancel()
    assert first is not None and second is not None
    assert first.grant_pin != second.grant_pin and first.tool_digest == second.tool_digest
