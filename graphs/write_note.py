"""Read a file, then write a note about it with ``write_text`` — a tool that needs approval.

Two branches run at once: the read (allowed) and the write (paused for approval). Headless, the write is
denied unless ``--approve allow`` is given; either way the decision is in the events and the run ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph

NOTE = ".ditto/notes/hello.md"


def _deliver(_input: Any, deps: Mapping[str, Any]) -> dict[str, Any]:
    write = deps["write"]
    content = write.content if write.status == "success" else f"not written: {write.error.code}"
    return {"deliveryId": "write-note:1", "message": {"role": "assistant", "content": content}}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """Read README.md and, in parallel, ask to write a note under .ditto/notes/."""
    plan = (
        graph("write-note")
        .node(
            "read",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {
                "call": {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}
            },
        )
        .node(
            "write",
            "INTERACTION.ACT.TOOL",
            [],
            lambda _i, _d: {
                "call": {
                    "id": "write-1",
                    "name": "write_text",
                    "arguments": {"path": NOTE, "text": "# Hello\n\nWritten by the write-note graph.\n"},
                }
            },
        )
        .node("observe", "INTERACTION.OBSERVE", ["write"], lambda _i, deps: {"result": deps["write"]})
        .node("output", "INTERACTION.OUTPUT", ["observe", "write"], _deliver)
    )
    return Program(
        name="write-note", description=__doc__ or "", plan=plan, tools=(read_text_tool, write_text_tool)
    )
