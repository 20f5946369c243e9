"""Discover the demo MCP server's tools, search its notes, and ask to write one.

ACT.MCP discover → ACT.MCP invoke ``search_notes`` (allowed by the approval rules) → OBSERVE → OUTPUT,
and beside it ACT.MCP invoke ``write_note``, which asks for approval first. Needs the ``demo`` server of
``ditto.yaml`` (granted by ``sandbox.mcp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.servers import DEMO_SERVER
from ditto_tui.program import Program
from ditto_tui.runtime import graph

NOTE = "from-graph"


def _invoke(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "operation": "invoke",
        "server": DEMO_SERVER,
        "call": {"id": call_id, "name": name, "arguments": arguments},
    }


def _search(_input: Any, deps: Mapping[str, Any]) -> dict[str, Any]:
    names = {capability.name for capability in deps["discover"].capabilities}
    if "search_notes" not in names:
        raise RuntimeError(f"server {DEMO_SERVER!r} has no search_notes tool")
    return _invoke("search-1", "search_notes", {"query": "approval"})


def _write(_input: Any, _deps: Mapping[str, Any]) -> dict[str, Any]:
    return _invoke("write-1", "write_note", {"name": NOTE, "text": "# From a graph\n\nWritten over MCP.\n"})


def _deliver(_input: Any, deps: Mapping[str, Any]) -> dict[str, Any]:
    found = deps["observe"]
    write = deps["write"].result
    written = "written" if write.status == "success" else f"not written ({write.error.code})"
    summary = {
        "tools": len(deps["discover"].capabilities),
        "matches": (found.structured_content or {}).get("count"),
        "note": written,
    }
    return {"deliveryId": "mcp-notes:1", "message": {"role": "assistant", "content": summary}}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """Discover, search and (with approval) write notes on the demo MCP server."""
    plan = (
        graph("mcp-notes")
        .node(
            "discover",
            "INTERACTION.ACT.MCP",
            [],
            lambda _i, _d: {"operation": "discover", "server": DEMO_SERVER},
        )
        .node("search", "INTERACTION.ACT.MCP", ["discover"], _search)
        .node(
            "observe", "INTERACTION.OBSERVE", ["search"], lambda _i, deps: {"result": deps["search"].result}
        )
        .node("write", "INTERACTION.ACT.MCP", ["discover"], _write)
        .node("output", "INTERACTION.OUTPUT", ["observe", "write", "discover"], _deliver)
    )
    return Program(name="mcp-notes", description=__doc__ or "", plan=plan)
