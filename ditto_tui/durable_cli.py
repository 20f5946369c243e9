"""The commands of durable runs: ``run GRAPH --detach``, ``inbox``, ``decide``, ``worker``, ``server``,
and ``runs`` on a durable host. They talk to a :class:`~ditto_tui.runs.RunHost` (the ``runs:`` section of
the config), never to Temporal itself; nothing here imports it until a durable host is used."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.json_text import json_option
from ditto_tui.runs import (
    DecisionRejected,
    DurableRunHost,
    PendingRequest,
    RunHost,
    RunSummary,
    first_line,
    open_durable_run_host,
)
from ditto_tui.runs_cli import safe, when
from ditto_tui.sanitize import escape_unprintable
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest
from ditto_tui.telemetry import temporal_interceptors

if TYPE_CHECKING:
    from ditto_tui.program import Program

COMMANDS = frozenset({"inbox", "decide", "worker", "server"})


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the commands on the CLI's subparsers."""
    inbox = commands.add_parser(
        "inbox",
        help="list every request waiting for a decision, across the runs of the durable host",
        description="Every pending request of every run on the configured run host (runs.host local or "
        "remote), oldest first: its id, run, kind, what it asks and when it expires.",
    )
    inbox.add_argument("--json", action="store_true", help="one JSON object per request")
    decide = commands.add_parser(
        "decide",
        help="answer a waiting request from any terminal",
        description="Approve or deny REQUEST_ID (from `ditto-tui inbox`), recorded as decided by a person "
        "(decided_by: human). With no worker alive, the decision is kept and applied, checked again, when "
        "one is back.",
    )
    decide.add_argument("request_id", help="the request's id, from `ditto-tui inbox`")
    decide.add_argument("decision", choices=("approve", "deny"))
    decide.add_argument("--reason", help="why (a denial's reason is shown to the model)")
    decide.add_argument("--args", dest="edited", help="approve these arguments instead: JSON, or @FILE")
    attach = commands.add_parser(
        "attach",
        help="open the Run screen on a run of the durable host, started anywhere",
        description="Show RUN_ID (from `ditto-tui runs`) in the app from its start and follow it live; its "
        "requests are answered here as in any run. The app runs the workspace's graph's nodes while open "
        "(a worker); quitting leaves the run running.",
    )
    attach.add_argument("run_id", help="the run's id, from `ditto-tui runs` or `run --detach`")
    worker = commands.add_parser(
        "worker",
        help="run a worker for a graph's durable runs (their nodes run here)",
        description="Poll the run host for GRAPH's runs and run their nodes in this process, with the "
        "workspace's tools, MCP servers and policy. Ctrl-C stops it gracefully; runs wait for the next one.",
    )
    worker.add_argument("graph", help="the graph file, e.g. graphs/read_and_deliver.py")
    server = commands.add_parser(
        "server",
        help="the local Temporal server of runs.host local: status, start or stop",
        description="The user's local Temporal dev server (127.0.0.1, its database in the state directory).",
    )
    server.add_argument("action", choices=("status", "start", "stop"), nargs="?", default="status")


def attached(args: argparse.Namespace, config: RuntimeConfig) -> str | None:
    """The run ``attach RUN_ID`` follows (None for another command); an error on the embedded host."""
    if args.command != "attach":
        return None
    durable_host(config)  # says what to set when runs live in one process
    if getattr(args, "headless", False):
        raise ValidationError("attach opens the app on the run: --headless does not apply to it")
    return str(args.run_id)


def detached(args: argparse.Namespace) -> bool:
    """Whether the command runs a loaded graph on the durable host: ``worker``, ``run --detach``."""
    return args.command == "worker" or (args.command == "run" and bool(getattr(args, "detach", False)))


def durable_host(config: RuntimeConfig, workspace: Path | None = None) -> DurableRunHost:
    """The config's durable host; a clear error when the config says embedded. With ``workspace``, runs
    started or worked on through it are traced when the config exports traces."""
    if config.runs.host == "embedded":
        raise ValidationError(
            "runs.host is embedded: runs live in the process that started them. Set runs: {host: local} "
            "in ditto.yaml for runs that outlive the terminal"
        )
    interceptors = temporal_interceptors(config, workspace) if workspace is not None else []
    return open_durable_run_host(config.runs.model_dump(), interceptors)


def run_command(args: argparse.Namespace, config: RuntimeConfig, out: TextIO | None = None) -> int:
    """Run one of :data:`COMMANDS` (``worker`` is :func:`run_worker`)."""
    out = out or sys.stdout
    if args.command == "server":
        return _server(args.action, out)
    host = durable_host(config)
    if args.command == "inbox":
        return asyncio.run(said(_inbox(host, args.json, out)))
    return asyncio.run(said(_decide(host, args, out)))


async def said(work: Coroutine[Any, Any, int]) -> int:
    """``work``, its failures from the run host in one line (a DittoError), never a traceback."""
    try:
        return await work
    except DittoError:
        raise
    except Exception as exc:
        raise DittoError(f"the run host failed: {first_line(exc)}") from None


async def _inbox(host: RunHost, as_json: bool, out: TextIO) -> int:
    pending = await host.pending()
    if as_json:
        for request in pending:
            print(escape_unprintable(json.dumps(pending_json(request), ensure_ascii=False)), file=out)
        return 0
    if not pending:
        print("nothing waits for a decision", file=out)
        return 0
    for request in pending:
        expires = "never expires" if request.expires_at is None else f"expires {when(request.expires_at)}"
        print(
            f"{safe(request.request_id)}  {safe(request.run_id)}  {safe(request.summary)}  ({expires})",
            file=out,
        )
        if isinstance(request.request, ApprovalRequest):
            arguments = json.dumps(request.request.arguments, ensure_ascii=False)
            print(f"    arguments: {safe(arguments[:400])}", file=out)
            if request.request.protected:
                print(f"    control file: {safe(', '.join(request.request.protected))}", file=out)
    return 0


def pending_json(request: PendingRequest) -> dict[str, Any]:
    """A pending request as ``inbox --json`` prints it."""
    item: dict[str, Any] = {
        "request_id": request.request_id,
        "run_id": request.run_id,
        "kind": request.kind,
        "summary": request.summary,
        "created_at": request.created_at,
        "expires_at": request.expires_at,
    }
    if isinstance(request.request, ApprovalRequest):
        item.update(
            tool=request.request.tool,
            server=request.request.server,
            call_id=request.request.call.id,
            arguments=dict(request.request.arguments),
            arguments_digest=request.request.arguments_digest,
            protected=list(request.request.protected),
        )
    return item


async def _decide(host: RunHost, args: argparse.Namespace, out: TextIO) -> int:
    edited = _edited(args.edited)
    if args.decision == "deny" and edited is not None:
        raise ValidationError("--args edits what is approved: a denial takes none")
    decision = ApprovalDecision(kind=args.decision, reason=args.reason, arguments=edited, via="cli")
    try:
        resolution = await host.decide(args.request_id, decision, decided_by="human")
    except DecisionRejected as exc:
        print(f"ditto-tui: decision refused: {safe(exc.reason)}", file=sys.stderr)
        return 1
    said = "approved" if decision.approves else "denied"
    if resolution.queued:
        print(
            f"{said} {safe(args.request_id)}: no worker is running, so it is kept and applied (checked "
            "again) when one is back",
            file=out,
        )
    else:
        print(f"{said} {safe(args.request_id)} of run {safe(resolution.run_id)}", file=out)
    return 0


def _edited(given: str | None) -> dict[str, Any] | None:
    return None if given is None else dict(json_option(given, "--args", require_object=True))


def _server(action: str, out: TextIO) -> int:
    from ditto_tui.runs.temporal import server

    if action == "stop":
        stopped = server.stop()
        print(
            "the local run server is stopped" if stopped else "the local run server was not running", file=out
        )
        return 0
    found = server.ensure_running() if action == "start" else server.status()
    if found is None:
        print("the local run server is not running (it starts when a durable run needs it)", file=out)
        return 0
    print(
        f"the local run server runs at {found.address} (pid {found.pid}); Temporal's web UI: {found.ui}",
        file=out,
    )
    return 0


async def start_detached(
    program: Program, config: RuntimeConfig, out: TextIO, workspace: Path | None = None
) -> int:
    """``run GRAPH --detach``: start the run on the durable host, print its id, leave it running."""
    from ditto_tui.runtime import Graph

    if not isinstance(program.plan, Graph):
        raise ValidationError(f"{program.name}: a loop runs embedded; --detach takes a graph")
    host = durable_host(config, workspace)
    run_id = await host.start(program.plan, program.initial)
    print(run_id, file=out)
    print(
        f"ditto-tui: run {run_id} started on the {config.runs.host} run host; a worker runs its nodes "
        "(`ditto-tui worker GRAPH`, or the app); `ditto-tui inbox` lists what it waits for",
        file=sys.stderr,
    )
    return 0


async def run_worker(
    program: Program, config: RuntimeConfig, workspace: Path, err: TextIO | None = None
) -> int:
    """``worker GRAPH``: run the graph's durable runs' nodes here until SIGINT or SIGTERM."""
    from ditto_tui.runtime import Graph
    from ditto_tui.session import open_runtime
    from ditto_tui.supervise import QueueApprover

    err = err or sys.stderr
    if not isinstance(program.plan, Graph):
        raise ValidationError(f"{program.name}: a loop runs embedded; a worker runs graphs")
    host = durable_host(config, workspace)
    inbox = QueueApprover()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    async with open_runtime(
        program, config, workspace, inbox, notice=lambda line: print(line, file=err)
    ) as session:
        await host.work(session.runtime, inbox, [program.plan])
        print(
            f"ditto-tui: worker for {program.plan.name!r} on the {config.runs.host} run host "
            f"(pid {os.getpid()}); Ctrl-C stops it",
            file=err,
            flush=True,
        )
        await stop.wait()
        print("ditto-tui: worker stopping: its runs wait for the next worker", file=err, flush=True)
        with contextlib.suppress(Exception):
            await host.stop_working()
    return 0


async def print_durable_runs(config: RuntimeConfig, as_json: bool, out: TextIO) -> int:
    """``runs`` on a durable host: every run of the host with its pending count."""
    summaries: list[RunSummary] = await durable_host(config).runs()
    for summary in summaries:
        if as_json:
            item = {
                "run_id": summary.run_id,
                "graph": summary.graph,
                "status": summary.status,
                "started_at": summary.started_at,
                "pending": summary.pending,
                "client": summary.client,
            }
            print(escape_unprintable(json.dumps(item, ensure_ascii=False)), file=out)
        else:
            waiting = f"  {summary.pending} waiting" if summary.pending else ""
            client = f"  {safe(summary.client)}" if summary.client is not None else ""
            print(
                f"{safe(summary.run_id)}  {safe(summary.graph)}  {summary.status}{waiting}{client}", file=out
            )
    if not summaries and not as_json:
        print("no runs on the run host yet", file=out)
    return 0
