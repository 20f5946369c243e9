"""A write of a 10 KB multi-line text with hidden characters over an existing file."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import write_text_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph

LONG_TEXT = "line one\nline two\u202e\u200b" + "x" * 10_000 + "END"


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """One ``write_text`` call replacing ``long.txt``."""
    arguments = {"path": "long.txt", "text": LONG_TEXT}
    plan = graph("long-write").node(
        "write",
        "INTERACTION.ACT.TOOL",
        [],
        lambda _i, _d: {"call": {"id": "long-1", "name": "write_text", "arguments": arguments}},
    )
    return Program(name="long-write", description=__doc__ or "", plan=plan, tools=(write_text_tool,))
