"""Headless runs: the same runtime and events as the UI, printed as one JSON object per line."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from ditto_tui.config import RuntimeConfig
from ditto_tui.context import create_context_worker
from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.errors import DittoError
from ditto_tui.home import logs_dir
from ditto_tui.infer import create_infer_worker, resolve_provider
from ditto_tui.interaction import McpRegistry, McpServerStatus, ToolRegistry, create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runtime import ExecutionEvent, Graph, Runtime, WorkerDefinition, create_ditto
from ditto_tui.sandbox import create_local_sandbox_executor
from ditto_tui.sanitize import escape_unprintable, public_message_from_exception
from ditto_tui.supervise import ApprovalGate, StaticApprover
from ditto_tui.supervise.journal import create_run_journal, wire_form


def event_json(event: ExecutionEvent) -> str:
    """One event as one line of JSON (contracts in their camelCase wire form).

    Characters a terminal could act on or hide (C1 controls such as an OSC 52 sequence, bidi overrides,
    zero-width characters) are written as ``\\uXXXX`` escapes: the line shows literally and parses to
    the same event.
    """
    line = json.dumps(dict(event), default=wire_form, ensure_ascii=False, separators=(",", ":"))
    return escape_unprintable(line)


class PrintSink:
    """An output sink that accepts every delivery; the events already show what was delivered."""

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        """Accept the delivery."""
        return OutputReceipt(delivery_id=input.delivery_id, status="accepted", artifacts=input.artifacts)


def build_runtime(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    approver: Any,
    *,
    mcp: McpRegistry | None = None,
    journal: bool = True,
) -> tuple[Runtime, ApprovalGate]:
    """The runtime a program runs on: config sandbox, local executor, INTERACTION worker with its gate.

    With ``mcp`` (connected servers, see :func:`open_runtime`) the worker also exposes INTERACTION.ACT.MCP.
    With ``journal`` every run is journaled in the user's state directory and a call whose approval the
    journal cannot record is not executed (``ditto_tui.supervise.journal``).
    """
    gate = ApprovalGate.from_config(config.approval, approver)
    tools = ToolRegistry(program.tools)
    run_journal = None
    if journal:
        run_journal = create_run_journal(
            workspace,
            program=program.name,
            gate=gate,
            tools=tools,
            approver=approver,
            secrets=config.secret_values(),
        )
    gate.recorder = run_journal
    worker = create_interaction_worker(
        tools=tools, output=program.output or PrintSink(), approval=gate, mcp=mcp
    )
    runtime = create_ditto(
        config=config,
        workspace=workspace,
        sandbox_executor=create_local_sandbox_executor(workspace),
        workers=[worker, *agent_workers(program, config, workspace)],
    )
    if run_journal is not None:
        run_journal.attach(runtime)
    return runtime, gate


def agent_workers(program: Program, config: RuntimeConfig, workspace: Path) -> list[WorkerDefinition]:
    """CONTEXT, INFER over the model of ``infer:`` (else the program's own), and the program's workers."""
    workers = [create_context_worker()]
    provider = resolve_provider(config.infer, workspace=workspace, default=program.provider)
    if provider is not None:
        workers.append(create_infer_worker(provider=provider))
    return [*workers, *program.workers]


@dataclass(frozen=True, kw_only=True)
class RunSession:
    """A runtime ready to run a program, with its approval gate and its connected MCP servers."""

    runtime: Runtime
    gate: ApprovalGate
    mcp: McpRegistry


@asynccontextmanager
async def open_runtime(
    program: Program, config: RuntimeConfig, workspace: Path, approver: Any, *, journal: bool = True
) -> AsyncIterator[RunSession]:
    """:func:`build_runtime` with the MCP servers of ``mcp.servers`` connected.

    Only servers the sandbox grants (``sandbox.mcp``) are started, concurrently, each in a neutral folder
    outside the workspace (unless its entry sets ``cwd``); their stderr goes to ``<server>.log`` in the
    workspace's state directory (:func:`ditto_tui.home.logs_dir`), never into the workspace. The run does
    not wait for them: an MCP call waits for its server to finish starting. On exit the runtime drains
    first, then every server is closed. A server that fails to start does not stop the run:
    ``session.mcp.status(name)`` says why.
    """
    async with _mcp_servers(config, workspace) as mcp:
        runtime, gate = build_runtime(program, config, workspace, approver, mcp=mcp, journal=journal)
        async with runtime:
            yield RunSession(runtime=runtime, gate=gate, mcp=mcp)


@asynccontextmanager
async def _mcp_servers(config: RuntimeConfig, workspace: Path) -> AsyncIterator[McpRegistry]:
    if not config.mcp.servers:  # no server: skip loading the MCP SDK
        yield McpRegistry(**config.mcp.registry_kwargs())
        return
    from ditto_tui.interaction import open_mcp_servers

    async with open_mcp_servers(
        config.mcp.servers,
        max_discovery_pages=config.mcp.max_discovery_pages,
        max_capabilities=config.mcp.max_capabilities,
        timeout=config.mcp.timeout_seconds,
        workspace=workspace,
        log_dir=logs_dir(workspace),
        allowed=config.sandbox.mcp,
        secrets=config.secret_values(),
        wait=False,
    ) as mcp:
        yield mcp


def _report_servers(mcp: McpRegistry, err: TextIO) -> None:
    """Tell ``err`` about every MCP server that fails to start, now or later in the run."""

    def report(status: McpServerStatus) -> None:
        if status.state == "failed":
            print(f"ditto-tui: MCP server {status.server!r} failed to start: {status.error}", file=err)

    for status in mcp.statuses():
        report(status)
    mcp.on_status(report)


async def run_headless(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    *,
    approve: Literal["allow", "deny"] = "deny",
    out: TextIO | None = None,
    err: TextIO | None = None,
    journal: bool = True,
) -> int:
    """Run ``program``, print every event as JSON; 0 when the run finishes, 1 with a reason when not.

    The run is journaled in the user's state directory (``ditto-tui runs``) unless ``journal`` is False.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        approver = StaticApprover(approve)
        async with open_runtime(program, config, workspace, approver, journal=journal) as session:
            _report_servers(session.mcp, err)
            runtime = session.runtime
            runtime.subscribe(lambda event: print(event_json(event), file=out, flush=True))
            if isinstance(program.plan, Graph):
                await runtime.run(program.plan, program.initial)
            else:
                await runtime.loop(program.plan, program.initial)
    except (DittoError, Exception) as exc:
        print(f"ditto-tui: run failed: {public_message_from_exception(exc, workspace=workspace)}", file=err)
        return 1
    return 0
