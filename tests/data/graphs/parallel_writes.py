"""Two notes written at the same time: both calls wait for approval together, in one queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph


def _write(call_id: str, path: str, text: str) -> Any:
    return lambda _input, _deps: {
        "call": {"id": call_id, "name": "write_text", "arguments": {"path": path, "text": text}}
    }


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """``left`` and ``right`` in parallel, then ``read`` of the left note."""
    plan = (
        graph("parallel-writes")
        .node("left", "INTERACTION.ACT.TOOL", [], _write("w-left", "left.md", "left\n"))
        .node("right", "INTERACTION.ACT.TOOL", [], _write("w-right", "right.md", "right\n"))
    )
    return Program(
        name="parallel-writes", description=__doc__ or "", plan=plan, tools=(read_text_tool, write_text_tool)
    )
