"""Cancelling one in-flight call by execution id: that call ends, the rest of the run goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import (
    ApprovalResolved,
    ExecutionEvent,
    NodeStarted,
    Runtime,
    WorkerContext,
    create_ditto,
    graph,
)
from ditto_tui.supervise import ApprovalGate, QueueApprover


async def _wait_forever(_args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    await context.signal.wait()
    return {"status": "cancelled", "error": {"code": "CANCELLED", "message": "stopped on request"}}


async def _quick(_args: Mapping[str, Any], _context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": "done"}


def _tool(name: str, execute: Any, requires_approval: bool = False) -> Tool:
    return Tool(
        name=name,
        description=name,
        input_schema={"type": "object"},
        effects=[],
        requires_approval=requires_approval,
        execute_fn=execute,
    )


def _runtime(tmp_path: Path, approver: Any = None) -> tuple[Runtime, list[ExecutionEvent]]:
    tools = [_tool("slow", _wait_forever), _tool("quick", _quick), _tool("guarded", _quick, True)]
    worker = create_interaction_worker(tools=tools, approval=ApprovalGate(approver=approver))
    runtime = create_ditto(sandbox={"tools": [t.name for t in tools]}, workspace=tmp_path, workers=[worker])
    events: list[ExecutionEvent] = []
    runtime.subscribe(events.append)
    return runtime, events


def _plan(first: str) -> Any:
    def call(name: str) -> Any:
        return lambda _input, _deps: {"call": {"id": name, "name": name, "arguments": {}}}

    return (
        graph("two")
        .node("a", "INTERACTION.ACT.TOOL", [], call(first))
        .node("b", "INTERACTION.ACT.TOOL", [], call("quick"))
    )


async def _started(events: list[ExecutionEvent], node_id: str) -> str:
    for _ in range(500):
        for event in events:
            if isinstance(event, NodeStarted) and event.node_id == node_id:
                return event.execution_id
        await asyncio.sleep(0.002)
    raise AssertionError(f"node {node_id!r} never started")


async def test_cancel_call_stops_one_running_tool_and_the_run_goes_on(tmp_path: Path) -> None:
    runtime, events = _runtime(tmp_path)
    run = asyncio.ensure_future(runtime.run(_plan("slow")))
    execution_id = await _started(events, "a")
    assert runtime.cancel_call(execution_id) is True
    outputs = await run
    assert outputs["a"].status == "cancelled" and outputs["b"].status == "success"
    assert events[-1].status == "succeeded"  # type: ignore[attr-defined]
    assert runtime.cancel_call(execution_id) is False


async def test_cancel_call_settles_a_pending_approval_as_cancelled(tmp_path: Path) -> None:
    approver = QueueApprover()
    runtime, events = _runtime(tmp_path, approver)
    run = asyncio.ensure_future(runtime.run(_plan("guarded")))
    execution_id = await _started(events, "a")
    while not approver.pending():
        await asyncio.sleep(0.002)
    assert runtime.cancel_call(execution_id, "not now") is True
    outputs = await run
    assert (outputs["a"].status, outputs["a"].error.code) == ("cancelled", "APPROVAL_CANCELLED")
    resolved = [e for e in events if isinstance(e, ApprovalResolved)]
    asked = [e.decision for e in resolved if e.decided_by not in ("rule", "default")]
    assert asked == ["cancelled"]  # the other call's decision is the policy's default, on the record too
    assert [e.decision for e in resolved if e.decided_by == "default"] == ["approve"]
    assert approver.pending() == []


def test_cancel_call_of_an_unknown_execution_is_refused(tmp_path: Path) -> None:
    runtime, _events = _runtime(tmp_path)
    assert runtime.cancel_call("exec-404") is False
