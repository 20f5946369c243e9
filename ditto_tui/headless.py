"""Headless runs: the same runtime and events as the UI, printed as one JSON object per line."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TextIO

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import DittoError, GraphExecutionError
from ditto_tui.interaction import McpRegistry, McpServerStatus
from ditto_tui.program import Program
from ditto_tui.runtime import ExecutionEvent, Graph
from ditto_tui.sanitize import escape_unprintable, public_message_from_exception
from ditto_tui.session import open_runtime
from ditto_tui.supervise import StaticApprover
from ditto_tui.supervise.journal import wire_form
from ditto_tui.supervise.modes import Mode


def event_json(event: ExecutionEvent) -> str:
    """One event as one line of JSON (contracts in their camelCase wire form).

    Characters a terminal could act on or hide (C1 controls such as an OSC 52 sequence, bidi overrides,
    zero-width characters) are written as JSON escapes (``\\u202e``): the line shows literally and
    parses to the same event.
    """
    line = json.dumps(dict(event), default=wire_form, ensure_ascii=False, separators=(",", ":"))
    return escape_unprintable(line)


def report_servers(mcp: McpRegistry, err: TextIO) -> None:
    """Tell ``err`` about every MCP server that fails to start, now or later in the run."""

    def report(status: McpServerStatus) -> None:
        if status.state == "failed":
            print(_failure_line(status), file=err)

    for status in mcp.statuses():
        report(status)
    mcp.on_status(report)


def _failure_line(status: McpServerStatus) -> str:
    """Why a server failed to start, in one line; one that needs a sign-in says only how to sign in."""
    # Only a server that was started gets here, so the MCP client (and its SDK) is loaded already.
    from ditto_tui.interaction.mcp.oauth import SignInRequired

    needed = SignInRequired(status.server).message
    if status.error is not None and status.error.startswith(needed):
        return f"ditto-tui: {needed}"
    return f"ditto-tui: MCP server {status.server!r} failed to start: {status.error}"


async def run_headless(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    *,
    approve: Literal["allow", "deny"] = "deny",
    out: TextIO | None = None,
    err: TextIO | None = None,
    journal: bool = True,
    breakpoints: Sequence[str] = (),
    mode: Mode = "ask",
) -> int:
    """Run ``program``, print every event as JSON; 0 when the run finishes, 1 with a reason when not.

    The run is journaled in the user's state directory (``ditto-tui runs``) unless ``journal`` is False.
    ``breakpoints`` (``--break NODE_GLOB``) need a person to ask: headless, with only ``--approve`` to
    answer, the run refuses to start and says so. ``mode`` (``--mode``) is the session's mode.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        approver = StaticApprover(approve)
        async with open_runtime(
            program,
            config,
            workspace,
            approver,
            journal=journal,
            notice=lambda line: print(line, file=err),
            mode=mode,
        ) as session:
            report_servers(session.mcp, err)
            runtime = session.runtime
            runtime.subscribe(lambda event: print(event_json(event), file=out, flush=True))
            if session.journal is not None:
                session.journal.next_input(program.initial)
            if isinstance(program.plan, Graph):
                await runtime.run(program.plan, program.initial, breakpoints=breakpoints or None)
            else:
                await runtime.loop(program.plan, program.initial, breakpoints=breakpoints or None)
    except (DittoError, Exception) as exc:
        print(f"ditto-tui: run failed: {_failure(exc, workspace)}", file=err)
        return 1
    return 0


def _failure(exc: BaseException, workspace: Path) -> str:
    """Why the run failed, in words: the node that failed and its own error, when a node failed."""
    cause = exc.__cause__
    if isinstance(exc, GraphExecutionError) and cause is not None:
        return f"node {exc.node_id!r} failed: {public_message_from_exception(cause, workspace=workspace)}"
    return public_message_from_exception(exc, workspace=workspace)
