"""Three notes written one after the other: whether a grant of K uses holds for K calls and no more."""

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
    """``first``, ``second``, ``third``, each a ``write_text`` call."""
    plan = (
        graph("three-writes")
        .node("first", "INTERACTION.ACT.TOOL", [], _write("w-1", "first.md", "one\n"))
        .node("second", "INTERACTION.ACT.TOOL", ["first"], _write("w-2", "second.md", "two\n"))
        .node("third", "INTERACTION.ACT.TOOL", ["second"], _write("w-3", "third.md", "three\n"))
    )
    return Program(
        name="three-writes", description=__doc__ or "", plan=plan, tools=(read_text_tool, write_text_tool)
    )
