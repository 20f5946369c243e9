"""Read a saved web page from the demo MCP server, with its result held for your review first.

The page (the demo server's ``saved-page`` note) hides instructions for an AI assistant below a release
checklist. ``read_note`` is allowed by the rules (once discovery has shown the server marks it
read-only), but this graph asks for its results to be reviewed:
the review view opens before OBSERVE or the delivery sees anything, with the injected lines marked.
Pass it, redact the injected lines (``r``, edit, ``ctrl+s``, ``r``), or fail it (``f``); the delivery
shows what went on. Needs the ``demo`` server of ``ditto.yaml`` (granted by ``sandbox.mcp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.servers import DEMO_SERVER
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from ditto_tui.supervise.review import result_text

PAGE = "saved-page"


def _read(_input: Any, _deps: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "operation": "invoke",
        "server": DEMO_SERVER,
        "call": {"id": "read-page", "name": "read_note", "arguments": {"name": PAGE}},
    }


def _deliver(_input: Any, deps: Mapping[str, Any]) -> dict[str, Any]:
    result = deps["read"].result
    if result.status == "success":
        content: Any = {"page": PAGE, "text": result_text(result)}
    else:
        content = {"page": PAGE, "refused": result.error.code if result.error else result.status}
    return {"deliveryId": "review-result:1", "message": {"role": "assistant", "content": content}}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """Read the demo server's saved page and deliver what the review let through."""
    plan = (
        graph("review-result")
        .node(
            "discover",
            "INTERACTION.ACT.MCP",
            [],
            lambda _i, _d: {"operation": "discover", "server": DEMO_SERVER},
        )
        .node("read", "INTERACTION.ACT.MCP", ["discover"], _read)
        .node("observe", "INTERACTION.OBSERVE", ["read"], lambda _i, deps: {"result": deps["read"].result})
        .node("output", "INTERACTION.OUTPUT", ["observe", "read"], _deliver)
    )
    return Program(
        name="review-result",
        description=__doc__ or "",
        plan=plan,
        reviews=(f"{DEMO_SERVER}:read_note",),
    )
