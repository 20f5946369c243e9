"""Steps that each need approval and record their own execution: a trail to check against the journal.

``record_step`` appends the call id its approval binds to ``executions.log`` before anything else (one
``os.write``, so the line survives a killed process), then takes ``STEP_SECONDS``. Six steps run one
after the other; the last one is observed and delivered.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import WorkerContext, graph

STEPS = 6
STEP_SECONDS = 0.03
LOG = "executions.log"


def record_step_tool(workspace: Path) -> Tool:
    """The tool: record the execution in ``<workspace>/executions.log``, wait, succeed."""
    log = workspace / LOG

    async def execute(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        call_id = context.approval.call_id if context.approval is not None else "unapproved"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{call_id}\n".encode())
        finally:
            os.close(fd)
        await asyncio.sleep(STEP_SECONDS)
        return {"status": "success", "content": f"step {args['step']} done"}

    return Tool(
        name="record_step",
        description="Record one step of work.",
        input_schema={
            "type": "object",
            "properties": {"step": {"type": "integer"}},
            "required": ["step"],
            "additionalProperties": False,
        },
        effects=["write"],
        requires_approval=True,
        execute_fn=execute,
    )


def _step(number: int) -> Any:
    return lambda _input, _deps: {
        "call": {"id": f"step-{number}", "name": "record_step", "arguments": {"step": number}}
    }


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """``step1`` → … → ``step6`` → ``observe`` → ``output``."""
    plan = graph("recorded-steps")
    for number in range(1, STEPS + 1):
        deps = [f"step{number - 1}"] if number > 1 else []
        plan = plan.node(f"step{number}", "INTERACTION.ACT.TOOL", deps, _step(number))
    last = f"step{STEPS}"
    plan = plan.node("observe", "INTERACTION.OBSERVE", [last], lambda _i, deps: {"result": deps[last]})
    plan = plan.node(
        "output",
        "INTERACTION.OUTPUT",
        ["observe"],
        lambda _i, deps: {"deliveryId": "steps:1", "message": deps["observe"].message},
    )
    return Program(
        name="recorded-steps", description=__doc__ or "", plan=plan, tools=(record_step_tool(workspace),)
    )
