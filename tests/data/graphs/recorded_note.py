"""The write-note demo with a writing tool that records each execution in ``executions.log``.

``read`` (allowed) and ``note`` (asks) run at once; the note is observed and delivered. A replay of
this run must leave ``executions.log`` as the live run left it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import WorkerContext, graph

LOG = "executions.log"
NOTE = "note.md"


def record_note_tool(workspace: Path) -> Tool:
    """Write ``text`` to ``note.md`` through the sandbox, after noting the call in ``executions.log``."""

    async def execute(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        call_id = context.approval.call_id if context.approval is not None else "unapproved"
        fd = os.open(workspace / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{call_id}\n".encode())
        finally:
            os.close(fd)
        context.services.sandbox.write_text(NOTE, args["text"])
        return {"status": "success", "content": f"Wrote {len(args['text'])} characters to {NOTE}"}

    return Tool(
        name="record_note",
        description="Write the note, recording the execution.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        effects=["write"],
        requires_approval=True,
        execute_fn=execute,
    )


def _deliver(_input: Any, deps: Mapping[str, Any]) -> dict[str, Any]:
    return {"deliveryId": "note:1", "message": deps["observe"].message}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """``read`` beside ``note`` → ``observe`` → ``output``."""
    plan = (
        graph("recorded-note")
        .node(
            "read",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {
                "call": {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}
            },
        )
        .node(
            "note",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {
                "call": {
                    "id": "note-1",
                    "name": "record_note",
                    "arguments": {"text": "# Note\n\nRecorded.\n"},
                }
            },
        )
        .node("observe", "INTERACTION.OBSERVE", ["note"], lambda _i, deps: {"result": deps["note"]})
        .node("output", "INTERACTION.OUTPUT", ["observe"], _deliver)
    )
    return Program(
        name="recorded-note",
        description=__doc__ or "",
        plan=plan,
        tools=(read_text_tool, record_note_tool(workspace)),
    )
