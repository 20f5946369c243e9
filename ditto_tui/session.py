"""The composition root: one place that builds a session for the TUI, headless runs and the MCP browser.

A session is the runtime a program runs on, with its sandbox and executor, the INTERACTION, CONTEXT and
INFER workers, the approval gate and its inbox, the run journal (the gate's decision recorder) and the
connected MCP servers. :func:`open_runtime` builds and opens it; every front end takes what it needs from
the :class:`RunSession` it yields instead of wiring its own.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.context import create_context_worker
from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.home import logs_dir
from ditto_tui.infer import create_infer_worker, resolve_provider
from ditto_tui.interaction import McpRegistry, ToolRegistry, create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runtime import Runtime, WorkerDefinition, create_ditto
from ditto_tui.runtime.breakpoints import Breakpoints
from ditto_tui.runtime.events import ExecutionEvent, RunFinished, RunStarted
from ditto_tui.sandbox import create_local_sandbox_executor
from ditto_tui.supervise import ApprovalGate, Inbox, InboxBreakpoints, RunJournal
from ditto_tui.supervise.grants import GrantStore
from ditto_tui.supervise.journal import create_run_journal
from ditto_tui.supervise.mcp_requests import McpRequests
from ditto_tui.supervise.modes import Mode, ModeSwitch
from ditto_tui.supervise.policy import ReviewToggles
from ditto_tui.supervise.sign_in import InboxAuthorizer
from ditto_tui.telemetry import run_tracer


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
    inbox: Inbox | None = None,
    mode: Mode = "ask",
) -> tuple[Runtime, ApprovalGate]:
    """The runtime a program runs on: config sandbox, local executor, INTERACTION worker with its gate.

    With ``mcp`` (connected servers, see :func:`open_runtime`) the worker also exposes INTERACTION.ACT.MCP.
    With ``journal`` every run is journaled in the user's state directory and a call whose approval the
    journal cannot record is not executed (``ditto_tui.supervise.journal``). ``inbox`` (one built over
    ``approver``) becomes the gate's table of pending requests. The gate's grants are the session's and
    the workspace's project grants (:class:`~ditto_tui.supervise.grants.GrantStore`); ``mode`` is the
    session's mode at the start, and every change of it is journaled in each run going on.
    """
    gate = ApprovalGate.from_config(config.approval, inbox if inbox is not None else approver)
    gate.grants = GrantStore(workspace)
    gate.mode = ModeSwitch(mode)
    for tool in program.reviews:  # the program asks for its results to be reviewed (only ever more review)
        gate.reviews.add(tool, by="graph")
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
    _journal_modes(runtime, gate, run_journal)
    _trace(runtime, gate, config, workspace)
    return runtime, gate


def _trace(runtime: Runtime, gate: ApprovalGate, config: RuntimeConfig, workspace: Path) -> None:
    """Export the runtime's runs as traces when ``otel:`` or the environment names a collector."""
    tracer = run_tracer(config, workspace)
    if tracer is None:
        return
    from ditto_tui.telemetry.feed import ModelInfo

    infer = config.infer
    model = ModelInfo(provider=infer.provider, model=infer.model if infer.provider == "openai" else None)
    tracer.attach(runtime, model, mode=lambda: gate.mode.mode)


def _journal_modes(runtime: Runtime, gate: ApprovalGate, journal: RunJournal | None) -> None:
    """Put the mode on the record of every run: in its journal's header, and each change in every run
    going on then (a ``mode_changed`` event); a run's grants end with it."""
    live: set[str] = set()
    if journal is not None:
        journal.mode = lambda: gate.mode.mode

    def watch(event: ExecutionEvent) -> None:
        if isinstance(event, RunStarted):
            live.add(event.run_id)
        elif isinstance(event, RunFinished):
            live.discard(event.run_id)
            gate.grants.end_run(event.run_id)

    def changed(mode: Mode, previous: Mode) -> None:
        for run_id in sorted(live):
            runtime.announce(run_id, "mode_changed", {"mode": mode, "previous": previous})

    runtime.subscribe(watch)
    gate.mode.on_change(changed)


def agent_workers(program: Program, config: RuntimeConfig, workspace: Path) -> list[WorkerDefinition]:
    """CONTEXT, INFER over the model of ``infer:`` (else the program's own), and the program's workers."""
    workers = [create_context_worker()]
    provider = resolve_provider(config.infer, workspace=workspace, default=program.provider)
    if provider is not None:
        workers.append(create_infer_worker(provider=provider))
    return [*workers, *program.workers]


@dataclass(frozen=True, kw_only=True)
class RunSession:
    """A runtime ready to run a program: its approval gate, the gate's inbox of pending requests, the run
    journal that records every decision (None with ``--no-journal``) and the connected MCP servers."""

    runtime: Runtime
    gate: ApprovalGate
    mcp: McpRegistry
    client_requests: McpRequests

    @property
    def inbox(self) -> Inbox:
        """The one table of requests waiting for a decision."""
        return self.gate.inbox

    @property
    def breakpoints(self) -> Breakpoints:
        """The session's live breakpoints (``b`` on a node, step mode): every run consults them."""
        return self.runtime.breakpoints

    @property
    def reviews(self) -> ReviewToggles:
        """The tools whose results the person reviews for the rest of the session (a live set the gate
        reads on every call), beside the rules that say ``review: results``."""
        return self.gate.reviews

    @property
    def journal(self) -> RunJournal | None:
        """The run journal, the gate's decision recorder."""
        recorder = self.gate.recorder
        return recorder if isinstance(recorder, RunJournal) else None


@asynccontextmanager
async def open_runtime(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    approver: Any,
    *,
    journal: bool = True,
    wait_for_servers: bool = False,
    log_dir: Path | None = None,
    notice: Callable[[str], None] | None = None,
    mode: Mode = "ask",
) -> AsyncIterator[RunSession]:
    """:func:`build_runtime` with the MCP servers of ``mcp.servers`` connected.

    Only servers the sandbox grants (``sandbox.mcp``) are started, concurrently, each in a neutral folder
    outside the workspace (unless its entry sets ``cwd``); their stderr goes to ``<server>.log`` in the
    workspace's state directory (:func:`ditto_tui.home.logs_dir`), never into the workspace. The run does
    not wait for them: an MCP call waits for its server to finish starting. On exit the runtime drains
    first, then every server is closed. A server that fails to start does not stop the run:
    ``session.mcp.status(name)`` says why. ``wait_for_servers`` waits for every server to be connected
    (or failed) before the session is yielded; ``log_dir`` replaces the state directory's logs folder.

    What the servers ask of the client (sampling, elicitation, roots) goes to ``session.client_requests``
    (:class:`~ditto_tui.supervise.mcp_requests.McpRequests`): before the person through the gate's inbox
    and on the record of the journal. With no approver, or one that answers by itself, the ``mcp:``
    policy decides and ``notice`` is told in one line. A server that needs a sign-in asks the person
    through the inbox too; with no person to ask, it fails saying to run ``ditto-tui mcp login``.
    Breakpoints ask the person through the inbox (:class:`InboxBreakpoints`); with no person, a run
    with breakpoints refuses to start.
    """
    inbox = approver if isinstance(approver, Inbox) else Inbox(approver)
    requests = client_requests(program, config, workspace, inbox, automatic=approver is None, notice=notice)
    requests.journaled = journal
    sign_in = None if requests.unattended else InboxAuthorizer(inbox=inbox)
    log_folder = log_dir or logs_dir(workspace)
    async with _mcp_servers(config, workspace, wait_for_servers, log_folder, requests, sign_in) as mcp:
        runtime, gate = build_runtime(
            program, config, workspace, approver, mcp=mcp, journal=journal, inbox=inbox, mode=mode
        )
        session = RunSession(runtime=runtime, gate=gate, mcp=mcp, client_requests=requests)
        requests.recorder = session.journal
        requests.tracer = run_tracer(config, workspace)
        if not requests.unattended:  # a person is there: breakpoints wait in the inbox for them
            runtime.approver = InboxBreakpoints(inbox, session.journal)
        if sign_in is not None:
            sign_in.attach(session.journal)
        try:
            async with runtime:
                yield session
        finally:
            if session.journal is not None:
                session.journal.close()


def client_requests(
    program: Program,
    config: RuntimeConfig,
    workspace: Path,
    inbox: Inbox,
    *,
    automatic: bool = False,
    notice: Callable[[str], None] | None = None,
) -> McpRequests:
    """Answers to MCP server requests: the inbox's person, the ``infer:`` model, the ``mcp:`` policy.

    The model is a provider of its own, not the agent's: a scripted model's turns belong to the agent's
    conversation, and a server's request must not consume them.
    """
    return McpRequests(
        inbox=inbox,
        workspace=workspace,
        provider=resolve_provider(config.infer, workspace=workspace, default=program.provider),
        sampling=config.mcp.sampling,
        elicitation=config.mcp.elicitation,
        automatic=automatic,
        timeout=config.approval.timeout_seconds,
        notice=notice,
    )


@asynccontextmanager
async def _mcp_servers(
    config: RuntimeConfig,
    workspace: Path,
    wait: bool,
    log_dir: Path,
    requests: McpRequests,
    sign_in: InboxAuthorizer | None,
) -> AsyncIterator[McpRegistry]:
    if not config.mcp.servers:  # no server: skip loading the MCP SDK
        yield McpRegistry(**config.mcp.registry_kwargs())
        return
    # The MCP SDK takes about a second of CPU to import (its types are hundreds of pydantic models):
    # imported on a thread, it leaves the event loop free (the app keeps drawing and taking keys).
    await asyncio.to_thread(importlib.import_module, "ditto_tui.interaction.mcp.connect")
    from ditto_tui.interaction import open_mcp_servers
    from ditto_tui.interaction.mcp.connect import AUTO_RECONNECT_DELAYS
    from ditto_tui.interaction.mcp.oauth import default_token_dir, refuse_sign_in

    async with open_mcp_servers(
        config.mcp.servers,
        max_discovery_pages=config.mcp.max_discovery_pages,
        max_capabilities=config.mcp.max_capabilities,
        timeout=config.mcp.timeout_seconds,
        workspace=workspace,
        log_dir=log_dir,
        allowed=config.sandbox.mcp,
        secrets=config.secret_values(),
        wait=wait,
        client_requests=requests,
        reconnect_delays=AUTO_RECONNECT_DELAYS,
        authorize=sign_in if sign_in is not None else refuse_sign_in,
        token_store=default_token_dir(),
    ) as mcp:
        announcing: set[asyncio.Task[list[str]]] = set()

        def announce() -> None:
            """Tell the connected servers, in the background, that the roots changed."""
            task = asyncio.get_running_loop().create_task(mcp.roots_changed())
            announcing.add(task)
            task.add_done_callback(announcing.discard)

        requests.on_roots_changed(announce)
        yield mcp
