"""The seed's read-and-deliver loop: read each file, observe the result, deliver its content.

TOOL → OBSERVE → OUTPUT, iterated by a loop over two workspace files: the loop binds each path and
call id as the body graph's input; the tools and the sink are injected into the worker. The run's own
input is the loop's counter (0), so ``--input`` is refused unless it is a counter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.tools import read_text_tool
from ditto_tui.errors import ValidationError
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


def _bind(index: object) -> dict[str, Any]:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(PATHS):
        raise ValidationError(
            f"read-and-deliver reads {' and '.join(PATHS)} in turn: its input is the loop's counter, "
            f"0 to {len(PATHS) - 1}, not {json.dumps(index)[:80]}"
        )
    return {"path": PATHS[index], "id": f"read:{index}"}


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
            bind=_bind,
            update=lambda index: index + 1,
            done=lambda index: index == len(PATHS),
        ),
        initial=0,
        tools=(read_text_tool,),
    )
