"""Workspace file tools for the bundled graphs: read a text file, write one (approval required)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from ditto_tui.interaction import Tool
from ditto_tui.runtime import WorkerContext
from ditto_tui.sandbox import make_directories, validate_workspace_path

_PATH = {"type": "string", "description": "A relative POSIX path inside the workspace."}


def _require_fields(args: Mapping[str, Any], required: set[str]) -> None:
    unknown = set(args) - required
    if unknown:
        raise ValueError(f"unknown fields: {', '.join(sorted(unknown))}")
    for name in sorted(required):
        if not isinstance(args.get(name), str):
            raise ValueError(f"{name} must be a string")
    if not args["path"]:
        raise ValueError("path must not be empty")
    # The sandbox's own path rules, so a path it would refuse is refused before anyone approves it
    # (and an edited one when the edit is checked), not only when the call runs.
    validate_workspace_path(args["path"])


def _validate_read(args: Mapping[str, Any]) -> None:
    _require_fields(args, {"path"})


def _validate_write(args: Mapping[str, Any]) -> None:
    _require_fields(args, {"path", "text"})


async def _read(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": context.services.sandbox.read_text(args["path"])}


async def _write(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    # The folders on the way are made here, once the write was allowed, never before (opening a
    # workspace writes nothing into it); like the write itself, never through a link.
    sandbox = context.services.sandbox
    sandbox.check_write()
    folder = posixpath.dirname(args["path"])
    if folder:
        make_directories(sandbox.workspace, folder)
    sandbox.write_text(args["path"], args["text"])
    size = len(args["text"].encode("utf-8"))
    return {
        "status": "success",
        "content": f"Wrote {size} bytes to {args['path']}",
        "structured_content": {"path": args["path"], "bytes": size},
    }


read_text_tool = Tool(
    name="read_text",
    description="Read a UTF-8 text file of the workspace.",
    input_schema={
        "type": "object",
        "properties": {"path": _PATH},
        "required": ["path"],
        "additionalProperties": False,
    },
    effects=["read"],
    validate_fn=_validate_read,
    execute_fn=_read,
)

write_text_tool = Tool(
    name="write_text",
    description="Write (create or replace) a UTF-8 text file of the workspace.",
    input_schema={
        "type": "object",
        "properties": {
            "path": _PATH,
            "text": {"type": "string", "description": "The whole new file content."},
        },
        "required": ["path", "text"],
        "additionalProperties": False,
    },
    effects=["write"],
    requires_approval=True,
    validate_fn=_validate_write,
    execute_fn=_write,
)
