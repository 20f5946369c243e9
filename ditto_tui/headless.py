"""Headless runs: the same runtime and events as the UI, printed as one JSON object per line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal, TextIO

from ditto_tui.config import RuntimeConfig
from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.errors import DittoError
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runtime import ExecutionEvent, Graph, Runtime, create_ditto
from ditto_tui.sandbox import create_local_sandbox_executor
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy, StaticApprover


def _default(value: Any) -> Any:
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    return repr(value)


def event_json(event: ExecutionEvent) -> str:
    """One event as one line of JSON (contracts in their camelCase wire form)."""
    return json.dumps(dict(event), default=_default, ensure_ascii=False, separators=(",", ":"))


class PrintSink:
    """An output sink that accepts every delivery; the events already show what was delivered."""

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        """Accept the delivery."""
        return OutputReceipt(delivery_id=input.delivery_id, status="accepted", artifacts=input.artifacts)


def build_runtime(
    program: Program, config: RuntimeConfig, workspace: Path, approver: Any
) -> tuple[Runtime, ApprovalGate]:
    """The runtime a program runs on: config sandbox, local executor, INTERACTION worker with its gate."""
    gate = ApprovalGate(
        policy=ApprovalPolicy(rule.model_dump(exclude_none=True) for rule in config.approval.rules),
        approver=approver,
        timeout=config.approval.timeout_seconds,
    )
    worker = create_interaction_worker(
        tools=list(program.tools), output=program.output or PrintSink(), approval=gate
    )
    runtime = create_ditto(
        config=config,
        workspace=workspace,
        sandbox_executor=create_local_sandbox_executor(workspace),
        workers=[worker],
    )
    return runtime, gate


async def run_headless(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    *,
    approve: Literal["allow", "deny"] = "deny",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run ``program``, print every event as JSON; 0 when the run finishes, 1 with a reason when not."""
    out = out or sys.stdout
    err = err or sys.stderr
    runtime, _gate = build_runtime(program, config, workspace, StaticApprover(approve))
    runtime.subscribe(lambda event: print(event_json(event), file=out, flush=True))
    try:
        async with runtime:
            if isinstance(program.plan, Graph):
                await runtime.run(program.plan, program.initial)
            else:
                await runtime.loop(program.plan, program.initial)
    except (DittoError, Exception) as exc:
        print(f"ditto-tui: run failed: {public_message_from_exception(exc, workspace=workspace)}", file=err)
        return 1
    return 0
