"""Runs behind one port: start them, list them and their waiting requests, decide, follow, cancel.

:class:`RunHost` is what the app, headless runs and the command line are to talk to, whoever runs the
graph. :class:`LocalRunHost` is the embedded host: the runs of one process, on its
:class:`~ditto_tui.runtime.Runtime`, their requests in its :class:`~ditto_tui.supervise.Inbox`, so a
decision goes through the same checks and is recorded the same way as one made in the approval view.
The core imports neither Textual nor a durable engine.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.runtime import ExecutionEvent, Graph, LoopDefinition, RunFinished, RunStarted, Runtime
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise.clients import client_label
from ditto_tui.supervise.inbox import Inbox, InboxAnswer, InboxRequest
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest

RunStatus = Literal["running", "succeeded", "failed", "cancelled", "interrupted"]
Plan = Graph | LoopDefinition


class DecisionRejected(DittoError):
    """A decision that was not applied: its request is no longer pending, or the decision does not fit
    it (another kind of answer, edited arguments its tool refuses). ``reason`` says which."""

    title = "Decision rejected"
    code = "DECISION_REJECTED"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One run of a host: its id, graph, status, when it started and how many requests wait in it."""

    run_id: str
    graph: str
    status: RunStatus
    started_at: float
    pending: int = 0
    client: str | None = None
    """For a session of the MCP gateway: the client it served, name and version (untrusted text)."""


@dataclass(frozen=True, kw_only=True)
class PendingRequest:
    """A request waiting for a person: which run it belongs to, what kind, a one-line summary (untrusted
    text: show it inert), when it was asked and when it expires, and the request itself."""

    request_id: str
    run_id: str | None
    kind: str
    summary: str
    created_at: float
    expires_at: float | None
    request: InboxRequest


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """A decision the host applied: to which request, what it said and who made it."""

    request_id: str
    run_id: str | None
    decision: str
    decided_by: str
    queued: bool = False
    """True when no worker was alive to take it: kept by the host, checked again and applied (or refused
    and recorded) when one is back."""


ANSWERS: dict[str, str] = {
    "tool_call": "ditto_tui.supervise.requests:ApprovalDecision",
    "result_review": "ditto_tui.supervise.requests:ReviewDecision",
    "breakpoint": "ditto_tui.runtime.breakpoints:BreakpointDecision",
    "sampling": "ditto_tui.supervise.mcp_requests:SamplingAnswer",
    "sampling_result": "ditto_tui.supervise.mcp_requests:SamplingResultAnswer",
    "elicitation": "ditto_tui.supervise.mcp_requests:ElicitationAnswer",
}
"""The answer each kind of request takes (``module:class``): a decision of another type does not fit."""


def fits_kind(kind: str, answer_type: str | None) -> bool:
    """Whether an answer of type ``answer_type`` (``module:class``) fits a ``kind`` request: the listed
    type for a listed kind; for another kind (a sign-in), anything but a tool call's approval."""
    expected = ANSWERS.get(kind)
    return answer_type == expected if expected is not None else answer_type != ANSWERS["tool_call"]


def type_name(value: object) -> str:
    """``value``'s type as :data:`ANSWERS` names it (``module:class``)."""
    return f"{type(value).__module__}:{type(value).__qualname__}"


def first_line(error: BaseException) -> str:
    """``error`` in one line (its message's first, cut at 300 characters; its class when it has none)."""
    text = str(error)
    return text.splitlines()[0][:300] if text else type(error).__name__


def retrieved(future: asyncio.Future[Any]) -> None:
    """A done callback that marks a background future's failure as seen (it is reported elsewhere)."""
    if not future.cancelled():
        future.exception()


def request_summary(request: InboxRequest) -> str:
    """A waiting request in one line, as inboxes list it (untrusted text: show it inert)."""
    if isinstance(request, ApprovalRequest):
        return f"approve {request.tool} ({request.call.id})"
    if request.kind == "breakpoint":
        return f"paused before node {getattr(request, 'node_id', '?')}"
    return f"{request.kind} {request.request_id}"


class RunHost(Protocol):
    """Where runs live (API.md section 11)."""

    async def start(self, graph: Plan, input: Any, *, run_id: str | None = None) -> str:
        """Start ``graph`` on ``input``; the run's id once it has started."""
        ...

    async def runs(self, *, status: RunStatus | None = None) -> list[RunSummary]:
        """The host's runs, oldest first (those of ``status`` only, when given)."""
        ...

    async def pending(self) -> list[PendingRequest]:
        """Every waiting request of every run, oldest first."""
        ...

    async def decide(self, request_id: str, decision: InboxAnswer, *, decided_by: str) -> Resolution:
        """Answer a waiting request; raises :class:`DecisionRejected` when it cannot be applied."""
        ...

    def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[ExecutionEvent]:
        """The run's events with ``seq`` past ``after``: its history, then live until it ends."""
        ...

    async def cancel(self, run_id: str, reason: str) -> None:
        """Cancel the run (its waiting requests end, its calls are cancelled)."""
        ...


class DurableRunHost(RunHost, Protocol):
    """A host whose runs outlive this process (``runs.host`` local or remote): this process can be one of
    its workers while it lives."""

    async def work(self, runtime: Runtime, inbox: Inbox, plans: Iterable[Graph] = ()) -> None:
        """Run the nodes of ``plans``' runs here, on ``runtime``; their requests go through ``inbox``."""
        ...

    async def stop_working(self) -> None:
        """Stop running nodes here, gracefully: the runs and their requests wait for another worker."""
        ...

    def running_here(self, run_id: str) -> bool:
        """Whether a node of ``run_id`` runs in this process now."""
        ...

    def request_key(self, request: InboxRequest) -> str:
        """What ties ``request`` to its call (the same after a worker's restart asked it again)."""
        ...

    async def outputs(self, run_id: str) -> dict[str, Any] | None:
        """The outputs of an ended run (None unless it succeeded); waits for it to end."""
        ...


_STARTING: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("ditto_tui_run_host", default=None)


@dataclass(eq=False)
class _Run:
    graph: str
    client: str | None = None
    task: asyncio.Task[Any] | None = None
    signal: CancelSignal = field(default_factory=CancelSignal)
    run_id: str | None = None
    started_at: float = 0.0
    status: RunStatus = "running"
    history: list[ExecutionEvent] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class LocalRunHost:
    """The embedded host: runs of this process on ``runtime``, their requests in ``inbox`` (the inbox
    the runtime's approval gate asks). Decisions are resolved in the inbox, so the gate checks and records
    them as a person's (``decided_by: human``). Each run's events are kept while the host lives."""

    def __init__(self, runtime: Runtime, inbox: Inbox) -> None:
        self.runtime, self.inbox = runtime, inbox
        self._runs: dict[str, _Run] = {}
        self._asked: dict[str, float] = {}
        self._stop = [
            runtime.subscribe(self._seen),
            inbox.on_request(self._requested),
            inbox.on_end(lambda request: self._asked.pop(request.request_id, None)),
        ]

    def close(self) -> None:
        """Stop following the runtime and the inbox (the runs themselves are the runtime's)."""
        for stop in self._stop:
            stop()
        self._stop = []

    # -- starting and following -------------------------------------------------------------------------

    async def start(self, graph: Plan, input: Any, *, run_id: str | None = None) -> str:
        if run_id is not None:  # the runtime names runs itself: only a known id can be given again
            if run_id in self._runs:
                return run_id
            raise ValidationError(f"no run {run_id!r} on this host: the embedded host names its runs itself")
        if not isinstance(graph, Graph | LoopDefinition):
            raise ValidationError("start() needs a graph built with graph(name) or a loop(...) definition")
        run = _Run(graph=graph.name, client=client_label(graph.name, input))
        run.task = asyncio.ensure_future(self._execute(run, graph, input))
        started = asyncio.ensure_future(run.started.wait())
        await asyncio.wait({started, run.task}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if run.run_id is None:  # it failed before it started: the graph's own error
            await run.task
            raise ValidationError("the run ended before it started")
        return run.run_id

    async def _execute(self, run: _Run, graph: Plan, input: Any) -> Any:
        _STARTING.set(run)  # this task's context: the runtime's run_started is told apart by it
        if isinstance(graph, Graph):
            return await self.runtime.run(graph, input, signal=run.signal)
        return await self.runtime.loop(graph, input, signal=run.signal)

    def _seen(self, event: ExecutionEvent) -> None:
        if isinstance(event, RunStarted) and event.plan_kind != "invoke" and event.run_id not in self._runs:
            run = _STARTING.get()
            if run is not None and run.run_id is None:
                run.run_id, run.started_at = event.run_id, event.at
                self._runs[event.run_id] = run
                run.started.set()
        run = self._runs.get(event.run_id)
        if run is None:
            return
        run.history.append(event)
        if isinstance(event, RunFinished):
            run.status = event.status
        run.changed.set()
        run.changed = asyncio.Event()

    async def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[ExecutionEvent]:
        run = self._run(run_id)
        index = 0
        while True:
            while index < len(run.history):
                event = run.history[index]
                index += 1
                if event.seq > after:
                    yield event
                if isinstance(event, RunFinished):
                    return
            await run.changed.wait()

    async def runs(self, *, status: RunStatus | None = None) -> list[RunSummary]:
        waiting = Counter(request.run_id for request in await self.pending())
        found = [
            RunSummary(
                run_id=run_id,
                graph=run.graph,
                status=run.status,
                started_at=run.started_at,
                pending=waiting[run_id],
                client=run.client,
            )
            for run_id, run in self._runs.items()
        ]
        return [summary for summary in found if status is None or summary.status == status]

    async def cancel(self, run_id: str, reason: str) -> None:
        run = self._run(run_id)
        if run.task is None or run.task.done():
            return
        run.signal.cancel(reason)
        run.task.cancel()
        try:
            await run.task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # the caller is cancelled too
                raise
        except Exception:  # the run's own failure is in its events
            pass

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise ValidationError(f"no run {run_id!r} on this host")
        return run

    # -- requests ---------------------------------------------------------------------------------------

    def _requested(self, request: InboxRequest) -> None:
        self._asked[request.request_id] = time.time()

    async def pending(self) -> list[PendingRequest]:
        return [self._pending(request) for request in self.inbox.all_pending()]

    def _pending(self, request: InboxRequest) -> PendingRequest:
        created = self._asked.get(request.request_id)
        if isinstance(request, ApprovalRequest):
            created = request.requested_at if created is None else created
            timeout = request.timeout_seconds
            expires = created + timeout if timeout is not None else None
        else:
            expires = None
        run_id = getattr(request, "run_id", None)
        return PendingRequest(
            request_id=request.request_id,
            run_id=run_id if isinstance(run_id, str) else None,
            kind=request.kind,
            summary=request_summary(request),
            created_at=created if created is not None else time.time(),
            expires_at=expires,
            request=request,
        )

    async def decide(self, request_id: str, decision: InboxAnswer, *, decided_by: str) -> Resolution:
        if decided_by != "human":
            raise ValidationError("the embedded host resolves decisions in the inbox, as a person's")
        request = self.inbox.get(request_id)
        if request is None:
            raise DecisionRejected(f"request {request_id!r} is not pending (answered, ended or unknown)")
        if not fits_kind(request.kind, type_name(decision)):
            raise DecisionRejected(f"a {request.kind} request is not answered with {type(decision).__name__}")
        if isinstance(decision, ApprovalDecision) and decision.arguments is not None:
            try:
                self.inbox.check_arguments(request_id, decision.arguments)
            except ValidationError as exc:
                raise DecisionRejected(f"the edited arguments do not fit: {exc.message}") from None
        if not self.inbox.resolve(request_id, decision):
            raise DecisionRejected(f"request {request_id!r} is no longer pending")
        kind = getattr(decision, "kind", None)
        return Resolution(
            request_id=request_id,
            run_id=getattr(request, "run_id", None),
            decision=kind if isinstance(kind, str) else ("approve" if decision.approves else "deny"),
            decided_by=decided_by,
        )


def open_run_host(
    runtime: Runtime,
    inbox: Inbox,
    config: Mapping[str, Any] | None = None,
    *,
    interceptors: Sequence[object] = (),
) -> RunHost:
    """The run host the config's ``runs:`` section names: ``embedded`` (the default), this process's runs
    on ``runtime`` and ``inbox``; ``local`` or ``remote``, runs on Temporal (the ``durable`` extra),
    connected on first use, its client with ``interceptors`` (traces:
    :func:`ditto_tui.telemetry.temporal_interceptors`)."""
    settings = config or {}
    host = settings.get("host", "embedded")
    if host == "embedded":
        return LocalRunHost(runtime, inbox)
    return open_durable_run_host(settings, interceptors)


def open_durable_run_host(settings: Mapping[str, Any], interceptors: Sequence[object] = ()) -> DurableRunHost:
    """The durable host of a ``runs:`` section (``local`` or ``remote``), imported only now: the embedded
    default never loads Temporal."""
    host = settings.get("host")
    if host not in ("local", "remote"):
        raise ValidationError(f"runs.host {host!r} must be embedded, local or remote")
    try:
        from ditto_tui.runs.temporal import open_durable_host
    except ImportError as exc:
        raise ValidationError(
            f"runs.host {host!r} needs the durable extra: pip install 'ditto-tui[durable]' ({exc})"
        ) from None
    return open_durable_host(settings, interceptors)


__all__ = [
    "ANSWERS",
    "DecisionRejected",
    "DurableRunHost",
    "LocalRunHost",
    "PendingRequest",
    "Plan",
    "Resolution",
    "RunHost",
    "RunStatus",
    "RunSummary",
    "first_line",
    "fits_kind",
    "open_durable_run_host",
    "open_run_host",
    "request_summary",
    "retrieved",
    "type_name",
]
