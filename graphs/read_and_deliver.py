"""The seed's read-and-deliver loop: read each file, observe the result, deliver its content.

TOOL → OBSERVE → OUTPUT, iterated by a loop over two workspace files. Paths and call ids are graph
input; the tools and the sink are injected into the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph, loop

PATHS = ("README.md", "ditto.yaml")


def _read(input: Mapping[str, Any], _deps: Mapping[str, Any]) -> dict[str, Any]:
    return {"call": {"id": input["id"], "name": "read_text", "arguments": {"path": input["path"]}}}


def _deliver(input: Mapping[str, Any], deps: Mapping[str, Any]) -> dict[str, Any]:
    observation = deps["observe"]
    if observation.status != "success":
        raise RuntimeError(observation.error.code if observation.error else observation.status)
    return {
        "deliveryId": f"{input['id']}:delivery",
        "message": {"role": "assistant", "content": observation.message.content},
    }


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """Read README.md and ditto.yaml in turn and deliver each."""
    body = (
        graph("read-and-deliver")
        .node("read", "INTERACTION.ACT.TOOL", [], _read)
        .node("observe", "INTERACTION.OBSERVE", ["read"], lambda _input, deps: {"result": deps["read"]})
        .node("output", "INTERACTION.OUTPUT", ["observe"], _deliver)
    )
    return Program(
        name="read-and-deliver",
        description=__doc__ or "",
        plan=loop(
            graph=body,
            max_iterations=len(PATHS),
            bind=lambda index: {"path": PATHS[index], "id": f"read:{index}"},
            update=lambda index: index + 1,
            done=lambda index: index == len(PATHS),
        ),
        initial=0,
        tools=(read_text_tool,),
    )
