"""Where the runtime meets Textual: events become one message per frame, approvals go to a screen."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import DittoError, RuntimeClosedError, ValidationError
from ditto_tui.interaction import McpRegistry
from ditto_tui.program import Program
from ditto_tui.runs import DurableRunHost, Resolution, open_durable_run_host, retrieved
from ditto_tui.runs.mirror import PendingMirror
from ditto_tui.runtime import ExecutionEvent, Graph, RunFinished, RunStarted, Runtime
from ditto_tui.runtime.approval import Via
from ditto_tui.runtime.breakpoints import Breakpoints
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.session import RunSession, open_runtime
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalRequest, QueueApprover
from ditto_tui.supervise.grants import Grant, GrantState
from ditto_tui.supervise.journal import RunJournal
from ditto_tui.supervise.lint import RecordedCall, recent_journals, recorded_calls
from ditto_tui.supervise.modes import Mode, ModeSwitch
from ditto_tui.supervise.policy import ReviewToggles
from ditto_tui.telemetry import temporal_interceptors
from ditto_tui.tui.mcp_source import BROWSE_ONLY
from ditto_tui.tui.write_targets import server_roots, write_targets
from ditto_tui.webhooks import RunEvents, Webhooks

PROGRAM_INPUT: Any = object()
"""``RunBridge.run``'s default: the program's own input."""

FRAME_SECONDS = 1 / 30
"""How long events gather before the screen hears of them: one message per frame at most."""


class EventsArrived(Message):
    """A frame's worth of execution events, in stream order."""

    def __init__(self, events: tuple[ExecutionEvent, ...]) -> None:
        super().__init__()
        self.events = events


class ApprovalQueued(Message):
    """A call waits for a decision; answer it with :meth:`RunBridge.resolve`."""

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request


class HostSaid(Message):
    """Something the durable run host said the person must see: it could not be reached, or refused a
    decision (``severity`` as :meth:`App.notify` takes it)."""

    def __init__(self, title: str, text: str, severity: str = "error") -> None:
        super().__init__()
        self.title, self.text, self.severity = title, text, severity


class RequestsRefused(Message):
    """A server's requests were refused by its bounds (pending, rate, size): ``count`` so far."""

    def __init__(self, server: str, count: int) -> None:
        super().__init__()
        self.server, self.count = server, count


def told_refusals(count: int) -> bool:
    """Whether the person is told of a server's ``count``-th refusal: the first, then 10, 100, 1,000…"""
    while count >= 10 and count % 10 == 0:
        count //= 10
    return count == 1


class EventPump:
    """A runtime subscriber that coalesces events: at most one :class:`EventsArrived` per frame.

    The first event after a flush schedules the next flush one frame later; everything that arrives
    meanwhile rides along. ``run_finished`` flushes at once, so the end of a run is never held back.
    """

    def __init__(self, target: MessagePump | None = None, frame: float = FRAME_SECONDS) -> None:
        self.target = target
        self.frame = frame
        self._queue: deque[ExecutionEvent] = deque()
        self._scheduled: asyncio.TimerHandle | None = None

    def __call__(self, event: ExecutionEvent) -> None:
        self._queue.append(event)
        if event.kind == "run_finished":
            self.flush()
        elif self._scheduled is None:
            self._scheduled = asyncio.get_running_loop().call_later(self.frame, self.flush)

    def flush(self) -> None:
        """Post everything gathered so far as one message (nothing when empty or detached)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        if not self._queue or self.target is None:
            return
        batch = tuple(self._queue)
        self._queue.clear()
        self.target.post_message(EventsArrived(batch))

    def close(self) -> None:
        """Stop: drop what is queued and cancel the pending flush."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        self._queue.clear()
        self.target = None


class ScreenApprover(QueueApprover):
    """The TUI's approver: requests queue up and the screen is told; a person answers each one."""

    def __init__(self) -> None:
        super().__init__()
        self.target: MessagePump | None = None
        self.on_request(self._announce)

    def _announce(self, request: ApprovalRequest) -> None:
        if self.target is not None:
            self.target.post_message(ApprovalQueued(request))


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What the session opens: the config and workspace, and the graph file to run (None: browse only).

    ``journal``: whether runs are journaled (``--no-journal`` turns it off); ``ask_task``: the Run screen
    asks for the agent's task in its prompt box before the first run; ``mode``: the session's mode at
    the start (``--mode``); ``breakpoints``: node globs to pause before from the first run on
    (``--break``), as if ``b`` had set them; ``notices``: lines the person must see when the app opens
    (which of the workspace's files were passed over, and why), shown as warnings.
    """

    config: RuntimeConfig
    workspace: Path
    program: Program | None = None
    journal: bool = True
    ask_task: bool = False
    mode: Mode = "ask"
    breakpoints: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    attach: str | None = None
    """A run of the durable host to follow from the start, instead of starting one (``attach RUN_ID``)."""

    @property
    def durable(self) -> bool:
        """Whether runs live on a durable host (``runs.host`` local or remote), outliving the app."""
        return self.config.runs.host != "embedded"


WEBHOOK_DRAIN_SECONDS = 2.0
"""How long the app's exit waits, at most, for its last notifications to be sent."""


def answered_via() -> Via:
    """Where this app's person answers: ``browser`` when textual-serve runs it (its web driver), else
    ``terminal``."""
    return "browser" if "web_driver" in os.environ.get("TEXTUAL_DRIVER", "") else "terminal"


class RunBridge:
    """One session: a runtime kept open for every screen, the program run on it, events and decisions.

    :meth:`serve` opens the runtime with the same :func:`ditto_tui.headless.open_runtime` as headless
    runs (same sandbox, gate, MCP servers, journal and events) and keeps it open until :meth:`close`;
    :meth:`run` runs the program on it. Events go to one target (the Run screen, else the app),
    approval requests to the app.
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.pump = EventPump()
        self.approver = ScreenApprover()
        self.runtime: Runtime | None = None
        self.gate: ApprovalGate | None = None
        self.mcp: McpRegistry | None = None
        self.journal: RunJournal | None = None
        self.session: RunSession | None = None
        self.runs: list[str] = []
        """The ids of the program's runs in this session, oldest first."""
        self.host: DurableRunHost | None = None
        """The durable run host, once connected (None on the embedded host)."""
        self.mirror: PendingMirror | None = None
        self._hosting: asyncio.Future[DurableRunHost] | None = None
        self._mirroring: asyncio.Task[None] | None = None
        self.followed: str | None = None
        """The durable run :meth:`follow` shows now."""
        self._starting = False
        self._opened: asyncio.Future[Runtime] | None = None
        self._closing: asyncio.Event | None = None
        self._closed: asyncio.Event | None = None

    def connect(self, *, events: MessagePump, approvals: MessagePump | None = None) -> None:
        """Send events to ``events`` and approval requests to ``approvals`` from now on."""
        self.pump.target = events
        if approvals is not None:
            self.approver.target = approvals

    async def serve(self) -> None:
        """Open the session's runtime and hold it open until :meth:`close` (or cancellation)."""
        opened = self._future()
        self._closing, self._closed = asyncio.Event(), asyncio.Event()
        spec = self.spec
        try:
            async with open_runtime(
                spec.program or BROWSE_ONLY,
                spec.config,
                spec.workspace,
                self.approver,
                journal=spec.journal,
                mode=spec.mode,
            ) as session:
                self.session = session
                self.runtime, self.gate, self.mcp = session.runtime, session.gate, session.mcp
                self.journal = session.journal
                for pattern in spec.breakpoints:  # before the first run can start
                    session.runtime.breakpoints.add(pattern)
                unsubscribe = session.runtime.subscribe(self._local)
                unwatch = session.runtime.subscribe(self._watch)
                unrefused = session.client_requests.on_refused(self._refused)
                webhooks = self._webhooks(session.runtime)
                try:
                    opened.set_result(session.runtime)
                    if spec.durable:
                        self._hosting = asyncio.ensure_future(self._open_host(session))
                        self._hosting.add_done_callback(retrieved)
                    await self._closing.wait()
                finally:
                    await self._close_host()
                    unsubscribe()
                    unwatch()
                    unrefused()
                    self.pump.flush()
                    if webhooks is not None:
                        await webhooks.drain(WEBHOOK_DRAIN_SECONDS)
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise
        finally:
            if not opened.done():
                opened.cancel()
            self._closed.set()

    async def run(self, initial: Any = PROGRAM_INPUT, *, follows: str | None = None) -> Any:
        """Run the program on the session's runtime; returns its outputs (graph) or final state (loop).

        ``initial`` replaces the program's input; ``follows`` names the run whose conversation this one
        continues, which its journal records. On a durable host a graph's run is started there and
        followed (:meth:`follow`); a loop runs here.
        """
        program = self.spec.program
        if program is None:
            raise ValidationError("this session has no program to run")
        runtime = await self._future()
        given = program.initial if initial is PROGRAM_INPUT else initial
        if self.spec.durable and isinstance(program.plan, Graph):
            host = await self.durable()
            run_id = await host.start(program.plan, given)
            self.runs.append(run_id)
            return await self.follow(run_id)
        if follows is not None and self.journal is not None:
            self.journal.follow_up(follows)
        if self.journal is not None:
            self.journal.next_input(given)
        self._starting = True
        if isinstance(program.plan, Graph):
            return await runtime.run(program.plan, given)
        return await runtime.loop(program.plan, given)

    async def follow(self, run_id: str) -> Any:
        """Follow run ``run_id`` of the durable host to its end: its events (history, then live) go to the
        screen; returns its outputs. Cancelled (the app quits, or another run is shown), the run goes on
        on the host (:meth:`cancel_durable` ends it)."""
        host = await self.durable()
        finished: RunFinished | None = None
        self.followed = run_id
        try:
            async for event in host.events(run_id):
                self.pump(event)
                if isinstance(event, RunFinished):
                    finished = event
        finally:
            if self.followed == run_id:
                self.followed = None
        if finished is not None and finished.status == "failed":
            where = f"node {finished.failed_node!r} failed: " if finished.failed_node else ""
            raise DittoError(f"{where}{finished.error or 'the run failed'}")
        if finished is None or finished.status != "succeeded":
            return None
        return await host.outputs(run_id)

    def cancel_durable(self) -> bool:
        """End the durable run followed now (its follower sees it end); False when none is followed."""
        run_id, host = self.followed, self.host
        if run_id is None or host is None:
            return False
        task = asyncio.ensure_future(host.cancel(run_id, "cancelled in the app"))
        task.add_done_callback(lambda done: self._cancel_failed(run_id, done))
        return True

    def _cancel_failed(self, run_id: str, done: asyncio.Future[None]) -> None:
        error = None if done.cancelled() else done.exception()
        if error is not None:
            self._say("Cancel", f"run {run_id} was not cancelled: {public_message_from_exception(error)}")

    async def durable(self) -> DurableRunHost:
        """The durable host, once connected and working here (raises why it could not be)."""
        if self._hosting is None:
            await self._future()
        if self._hosting is None:
            raise ValidationError("runs.host is embedded: runs live in this process")
        return await asyncio.shield(self._hosting)

    async def _open_host(self, session: RunSession) -> DurableRunHost:
        """Connect to the durable host, run the program's nodes here while the app is open, and ask the
        host's waiting requests in this session's inbox (the cross-run inbox)."""
        try:
            traced = temporal_interceptors(self.spec.config, self.spec.workspace)
            host = open_durable_run_host(self.spec.config.runs.model_dump(), traced)
            program = self.spec.program
            plans = [program.plan] if program is not None and isinstance(program.plan, Graph) else []
            await host.work(session.runtime, self.approver, plans)
        except Exception as exc:
            self._say("Run host", f"cannot use the run host: {public_message_from_exception(exc)}")
            raise
        self.host = host
        self.mirror = PendingMirror(
            host,
            self.approver,
            key=host.request_key,
            on_rejected=lambda _request, reason: self._say("Decision refused", reason, "warning"),
            on_decided=self._decided,
            on_failed=self._host_failed,
        )
        self._mirroring = asyncio.ensure_future(self.mirror.run())
        return host

    def _decided(self, resolution: Resolution) -> None:
        if resolution.queued:
            self._say(
                "Decision kept",
                f"no worker runs the nodes of run {resolution.run_id} now: the decision is kept and applied, "
                "checked again, when one is back",
                "warning",
            )

    def _host_failed(self, error: BaseException) -> None:
        mirror = self.mirror
        if mirror is not None and mirror.failures in (1, 10, 100):
            self._say("Run host", f"the run host does not answer: {public_message_from_exception(error)}")

    def _say(self, title: str, text: str, severity: str = "error") -> None:
        target = self.approver.target
        if target is not None:
            target.post_message(HostSaid(title, text, severity))

    async def _close_host(self) -> None:
        """Stop asking the host's requests and stop working for it; its runs go on."""
        hosting, self._hosting = self._hosting, None
        if hosting is None:
            return
        if self._mirroring is not None:
            self._mirroring.cancel()
            await asyncio.gather(self._mirroring, return_exceptions=True)
        if not hosting.done():
            hosting.cancel()
        await asyncio.gather(hosting, return_exceptions=True)
        if self.host is not None:
            with contextlib.suppress(Exception):
                await self.host.stop_working()

    def _local(self, event: ExecutionEvent) -> None:
        """An event of this process's runtime goes to the screen, unless it is of a durable run's node
        running here: that run's events come from its host, in its order (:meth:`follow`)."""
        host = self.host
        if host is None or not host.running_here(event.run_id):
            self.pump(event)

    def _webhooks(self, runtime: Runtime) -> Webhooks | None:
        """The ``notify:`` webhook of the session's own runs (embedded ones: on a durable host the
        notifications, with their decision links, come from ``ditto-tui serve``)."""
        if self.spec.config.notify.webhook is None or self.spec.durable:
            return None
        webhooks = Webhooks(self.spec.config.notify)
        runtime.subscribe(RunEvents(webhooks))
        return webhooks

    def _refused(self, server: str, count: int) -> None:
        """Tell the app of a server's first refusal by its bounds, then of every tenfold count."""
        target = self.approver.target
        if target is not None and told_refusals(count):
            target.post_message(RequestsRefused(server, count))

    def _watch(self, event: ExecutionEvent) -> None:
        """Note the id of each run :meth:`run` starts."""
        if self._starting and isinstance(event, RunStarted) and event.plan_kind != "invoke":
            self._starting = False
            self.runs.append(event.run_id)

    async def close(self) -> None:
        """Close the runtime (and everything it opened) and wait until it is closed."""
        if self._closing is None or self._closed is None:
            return
        self._closing.set()
        await self._closed.wait()
        self.pump.close()

    async def opened(self) -> Runtime:
        """The session's runtime, once :meth:`serve` has opened it (raises if opening failed)."""
        return await asyncio.shield(self._future())

    def _future(self) -> asyncio.Future[Runtime]:
        if self._opened is None:
            self._opened = asyncio.get_running_loop().create_future()
        return self._opened

    # -- what the screens ask ---------------------------------------------------------------------------

    def pending(self) -> list[ApprovalRequest]:
        """Every request waiting for a decision, oldest first."""
        return self.approver.pending()

    def resolve(self, request_id: str, decision: ApprovalDecision) -> bool:
        """Answer a request; False when it is no longer pending (timed out, cancelled, answered). The
        decision says where it was made: in a terminal, or in a browser (``ditto-tui serve``)."""
        if decision.via is None:
            decision = dataclasses.replace(decision, via=answered_via())
        return self.approver.resolve(request_id, decision)

    def withdraw(self, request_id: str) -> bool:
        """Cancel a pending request: its call ends ``cancelled`` and never executes."""
        return self.gate is not None and self.gate.withdraw(request_id)

    def check_arguments(self, request_id: str, arguments: Mapping[str, Any]) -> None:
        """Validate edited arguments as approving them would; raises ``ValidationError`` if refused."""
        if self.gate is None:
            raise RuntimeClosedError("the session is not open")
        self.gate.check_arguments(request_id, arguments)

    def cancel_call(self, execution_id: str) -> bool:
        """Cancel one running call (a pending approval of it ends ``cancelled``)."""
        return self.runtime is not None and self.runtime.cancel_call(execution_id)

    def grants(self) -> list[str]:
        """Tools some live grant covers (in part or in whole)."""
        return self.gate.always_approved() if self.gate is not None else []

    def revoke(self, tool: str) -> bool:
        """Withdraw every grant of ``tool``."""
        return self.gate is not None and self.gate.revoke(tool)

    @property
    def breakpoints(self) -> Breakpoints | None:
        """The session's live breakpoints (None until the session is open)."""
        return self.runtime.breakpoints if self.runtime is not None else None

    @property
    def reviews(self) -> ReviewToggles | None:
        """The tools whose results are reviewed for the rest of the session (None until it is open)."""
        return self.gate.reviews if self.gate is not None else None

    @property
    def mode(self) -> ModeSwitch | None:
        """The session's mode switch (None until the session is open)."""
        return self.gate.mode if self.gate is not None else None

    def recorded_calls(self) -> list[RecordedCall]:
        """The calls of the workspace's latest recorded runs, to show what a grant would have approved."""
        return recorded_calls(recent_journals(self.spec.workspace))

    def grant_states(self) -> list[GrantState]:
        """The session's live grants with what is left of them (the grants panel)."""
        return self.gate.grants.states() if self.gate is not None else []

    def revoke_grant(self, grant_id: str) -> Grant | None:
        """End grant ``grant_id`` (or the only one whose id starts with it)."""
        return self.gate.grants.revoke(grant_id) if self.gate is not None else None

    @property
    def timeout(self) -> float | None:
        """Seconds a request may wait before it ends as ``APPROVAL_TIMEOUT`` (None: no limit)."""
        return self.gate.timeout if self.gate is not None else self.spec.config.approval.timeout_seconds

    def other_run(self, request: ApprovalRequest) -> bool:
        """Whether ``request`` is of a run this session neither started nor follows: a durable run's
        request the run host's inbox brought here."""
        mirror = self.mirror
        return (
            mirror is not None
            and mirror.mirrored(request.request_id)
            and request.run_id not in (self.followed, *self.runs)
        )

    def write_targets(self, server: str | None, path: str) -> list[str]:
        """The workspace files a call writing ``path`` may change, most likely first (see
        :mod:`ditto_tui.tui.write_targets`); a local tool's ``path`` is the file itself."""
        if server is None:
            return [path]
        workspace = self.spec.workspace
        roots = server_roots(self.spec.config.mcp.servers.get(server), workspace)
        return write_targets(path, roots, workspace)

    def read_text(self, path: str) -> str:
        """Read a workspace file through the run's sandbox (its path rules and permissions)."""
        if self.runtime is None:
            raise RuntimeClosedError("the session is not open")
        return self.runtime.services.sandbox.read_text(path)
