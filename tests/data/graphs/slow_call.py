"""A call that runs until it is cancelled, beside a quick read: cancelling one call leaves the other."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import WorkerContext, graph


async def _wait_for_cancel(_args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    await context.signal.wait()
    return {"status": "cancelled", "error": {"code": "CANCELLED", "message": "Stopped on request"}}


WAIT_FOR_CANCEL = Tool(
    name="wait_for_cancel",
    description="Wait until the call is cancelled.",
    input_schema={"type": "object", "additionalProperties": False},
    effects=[],
    execute_fn=_wait_for_cancel,
)


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """``wait`` runs until cancelled; ``read`` finishes at once."""
    plan = (
        graph("slow-call")
        .node(
            "wait",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {"call": {"id": "wait-1", "name": "wait_for_cancel", "arguments": {}}},
        )
        .node(
            "read",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {"call": {"id": "read-1", "name": "read_text", "arguments": {"path": "note.md"}}},
        )
    )
    return Program(
        name="slow-call", description=__doc__ or "", plan=plan, tools=(read_text_tool, WAIT_FOR_CANCEL)
    )
