"""How to start the bundled demo MCP server: its ``mcpServers`` entry, without importing the server."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

DEMO_SERVER = "demo"
"""The name the demo server goes by in ``ditto.yaml`` and in MCP sources (``demo:read_note``)."""

SAMPLE_NOTES = Path(__file__).resolve().parent / "notes"
"""The sample notes shipped with the package; a new notes folder starts as a copy of them."""

MODULE = "ditto_tui.demo.mcp_server"


def demo_server_args(
    notes: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    catalogue: int = 0,
    http_port: int | None = None,
    sse_port: int | None = None,
) -> list[str]:
    """Command-line arguments of the demo server (after ``python``); stdio unless a port is given.

    With ``root`` a relative ``notes`` is found inside it, never through a link out of it.
    """
    args = ["-m", MODULE]
    if root is not None:
        args += ["--root", os.fspath(root)]
    args += ["--notes", os.fspath(notes)]
    if catalogue:
        args += ["--catalogue", str(catalogue)]
    if http_port is not None:
        args += ["--http", str(http_port)]
    if sse_port is not None:
        args += ["--sse", str(sse_port)]
    return args


def demo_server_entry(
    notes: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, catalogue: int = 0
) -> dict[str, Any]:
    """The ``mcpServers``-shaped stdio entry that starts the demo server on the notes folder ``notes``.

    It runs on the same Python as ditto-tui, so it works inside a virtual environment that is not active.
    ``root`` confines a relative ``notes`` to that folder; ``catalogue`` adds that many generated tools,
    listed in pages of 100.
    """
    return {"command": sys.executable, "args": demo_server_args(notes, root=root, catalogue=catalogue)}
