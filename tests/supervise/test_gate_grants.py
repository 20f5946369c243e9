"""Revoking an "always" grant, and checking edited arguments before they are approved."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import ValidationError
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import Runtime, WorkerContext, create_ditto
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalRequest, QueueApprover


def _validate(args: Mapping[str, Any]) -> None:
    if set(args) != {"text"} or not isinstance(args["text"], str):
        raise ValueError("exactly one string field 'text' is accepted")


async def _execute(args: Mapping[str, Any], _context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": args["text"]}


NOTE = Tool(
    name="note",
    description="Keep a note.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    effects=[],
    requires_approval=True,
    validate_fn=_validate,
    execute_fn=_execute,
)


def _runtime(tmp_path: Path, approver: Any) -> tuple[Runtime, ApprovalGate]:
    gate = ApprovalGate(approver=approver)
    worker = create_interaction_worker(tools=[NOTE], approval=gate)
    return create_ditto(sandbox={"tools": ["note"]}, workspace=tmp_path, workers=[worker]), gate


def _call(text: Any) -> dict[str, Any]:
    return {"call": {"id": "n-1", "name": "note", "arguments": {"text": text}}}


class Always:
    """Answers "approve always" and counts the questions."""

    def __init__(self) -> None:
        self.asked = 0

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked += 1
        return ApprovalDecision(kind="approve_always")


async def test_revoke_ends_an_always_grant_and_the_next_call_asks_again(tmp_path: Path) -> None:
    approver = Always()
    runtime, gate = _runtime(tmp_path, approver)
    await runtime.invoke("INTERACTION.ACT.TOOL", _call("a"))
    await runtime.invoke("INTERACTION.ACT.TOOL", _call("b"))
    assert approver.asked == 1 and gate.always_approved() == ["note"]
    assert gate.revoke("note") is True
    assert gate.always_approved() == [] and gate.revoke("note") is False
    result = await runtime.invoke("INTERACTION.ACT.TOOL", _call("c"))
    assert result.status == "success" and approver.asked == 2


async def test_the_grant_an_approve_always_wrote_is_handed_to_whoever_asks_for_it_once(
    tmp_path: Path,
) -> None:
    """The screen that asked waits for the grant the gate writes after the decision is on the record:
    asked before the write (while deciding) or after it, it gets the grant once; a waiter that gives up
    first does not take it from another."""

    class Waiting(Always):
        def __init__(self, gate: ApprovalGate | None = None) -> None:
            super().__init__()
            self.gate = gate
            self.ids: list[str] = []
            self.waits: list[asyncio.Future[Any]] = []

        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            self.ids.append(request.request_id)
            if self.gate is not None:  # ask before the gate has written anything, twice
                self.waits.append(asyncio.ensure_future(self.gate.written_grant(request.request_id, 5)))
                impatient = asyncio.ensure_future(self.gate.written_grant(request.request_id, 0.01))
                assert await impatient is None  # gave up first, without taking it from the other
                assert not self.waits[-1].done()
            return await super().decide(request)

    approver = Waiting()
    runtime, gate = _runtime(tmp_path, approver)
    await runtime.invoke("INTERACTION.ACT.TOOL", _call("a"))
    grant = await gate.written_grant(approver.ids[0], timeout=1)  # asked after the write
    assert grant is not None and grant.tool == "note" and gate.always_approved() == ["note"]
    assert await gate.written_grant(approver.ids[0], timeout=0.05) is None  # handed over once

    early = Waiting()
    runtime, gate = _runtime(tmp_path, early)
    early.gate = gate
    await runtime.invoke("INTERACTION.ACT.TOOL", _call("b"))
    written = await early.waits[0]
    assert written is not None and written.tool == "note" and gate.always_approved() == ["note"]


def test_revoking_a_tool_without_a_grant_changes_nothing() -> None:
    assert ApprovalGate().revoke("anything") is False


async def test_check_arguments_runs_the_tools_own_validate_for_a_pending_request(tmp_path: Path) -> None:
    approver = QueueApprover()
    runtime, gate = _runtime(tmp_path, approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", _call("draft")))
    while not approver.pending():
        await asyncio.sleep(0.001)
    (request,) = approver.pending()
    gate.check_arguments(request.request_id, {"text": "final"})
    with pytest.raises(ValidationError, match="do not match the input schema: text: 3 is not of type"):
        gate.check_arguments(request.request_id, {"text": 3})
    # The schema allows other fields; the tool's own validate does not.
    with pytest.raises(ValidationError, match="exactly one string field"):
        gate.check_arguments(request.request_id, {"text": "final", "extra": 1})
    with pytest.raises(ValidationError, match="not JSON-compatible"):
        gate.check_arguments(request.request_id, {"text": float("nan")})
    approver.resolve(request.request_id, ApprovalDecision(kind="approve", arguments={"text": "final"}))
    result = await task
    assert result.content == "final"
    with pytest.raises(ValidationError, match="is not pending"):
        gate.check_arguments(request.request_id, {"text": "late"})
