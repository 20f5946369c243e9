"""The durable run host: runs on Temporal, listed and answered from any process that holds the user's key.

:class:`TemporalRunHost` is a :class:`~ditto_tui.runs.RunHost` over a Temporal client. A run is a
``DittoRun`` workflow (:mod:`ditto_tui.runs.temporal.workflow`) whose nodes run on a worker
(:class:`~ditto_tui.runs.temporal.worker.DittoWorker`, in the app, ``ditto-tui worker`` or the host's own
``worker=``); every payload is encrypted with the user's key (:mod:`ditto_tui.runs.temporal.codec`).
Listing runs and their waiting requests reads the workflows' memos, so it needs no worker alive; a
decision is an update checked by the workflow, or, when no worker takes it in time, a signal the server
keeps and the workflow checks again when a worker is back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.converter import DataConverter, WorkflowSerializationContext
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.runs import (
    DecisionRejected,
    PendingRequest,
    Plan,
    Resolution,
    RunStatus,
    RunSummary,
    first_line,
)
from ditto_tui.runs.temporal import wire
from ditto_tui.runs.temporal.codec import KeyCodec, is_foreign, load_key
from ditto_tui.runs.temporal.plan import binding, node_queue, snapshot
from ditto_tui.runs.temporal.workflow import GRAPH_ATTRIBUTE, WORKFLOW
from ditto_tui.runtime import ExecutionEvent, Graph, RunFinished, Runtime
from ditto_tui.supervise.clients import MAX_CLIENT_LABEL, client_label
from ditto_tui.supervise.inbox import Inbox, InboxAnswer, InboxRequest
from ditto_tui.supervise.requests import ApprovalRequest

if TYPE_CHECKING:
    from ditto_tui.runs.temporal.worker import DittoWorker

DEFAULT_TASK_QUEUE = "ditto-tui"
UPDATE_WAIT_SECONDS = 3.0
"""How long a decision waits for a worker to take it before it is queued for the next one."""
_POLL_SECONDS = 0.05
_KNOWN_KEPT = 20_000
_PAGE = 1000


def data_converter(key: bytes | None = None) -> DataConverter:
    """The converter every durable-run client and worker uses: the user's key over every payload."""
    return dataclasses.replace(DataConverter.default, payload_codec=KeyCodec(key or load_key()))


async def connect(
    address: str, *, namespace: str = "default", key: bytes | None = None, **options: Any
) -> Client:
    """A client of the Temporal server at ``address`` that encrypts with the user's key."""
    return await Client.connect(address, namespace=namespace, data_converter=data_converter(key), **options)


class TemporalRunHost:
    """Runs on the Temporal server ``client`` talks to, on ``task_queue``. ``worker`` (optional) is this
    process's own worker: graphs started here are added to it. ``search`` says whether the server has the
    ``DittoPending``/``DittoGraph`` search attributes (the dev server ditto-tui starts does)."""

    def __init__(
        self,
        client: Client | Callable[[], Awaitable[Client]],
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        worker: DittoWorker | None = None,
        search: bool = True,
        update_wait: float = UPDATE_WAIT_SECONDS,
    ) -> None:
        self._client = client if isinstance(client, Client) else None
        self._connect = None if isinstance(client, Client) else client
        self.task_queue, self.worker, self.search = task_queue, worker, search
        self.update_wait = update_wait
        self._started: list[str] = []
        self._known: dict[str, PendingRequest] = {}
        """Requests already read from a memo, by id: an inbox polled again decodes only the new ones."""
        self._memos: dict[str, tuple[bytes, Mapping[str, Any]]] = {}
        """Each run's memo as last listed, raw and decoded: a poll decodes only the memos that changed."""

    @property
    def client(self) -> Client:
        """The client, once connected (:meth:`connected`)."""
        if self._client is None:
            raise ValidationError("the run host is not connected yet")
        return self._client

    async def connected(self) -> Client:
        """The client, connecting (and starting the local server) on first use."""
        if self._client is None:
            assert self._connect is not None
            self._client = await self._connect()
        return self._client

    # -- runs -----------------------------------------------------------------------------------------

    async def start(self, graph: Plan, input: Any, *, run_id: str | None = None) -> str:
        if not isinstance(graph, Graph):
            raise ValidationError("a durable run takes a graph built with graph(name); loops run embedded")
        run_id = run_id or f"run-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        if self.worker is not None:
            self.worker.add_plan(graph)
        spec = {
            "run_id": run_id,
            "graph": snapshot(graph),
            "input": wire.dump(input),
            "search": self.search,
            "node_queue": node_queue(self.task_queue, graph.name),
        }
        attributes = TypedSearchAttributes(
            [SearchAttributePair(GRAPH_ATTRIBUTE, graph.name)] if self.search else []
        )
        await (await self.connected()).start_workflow(
            WORKFLOW,
            spec,
            id=run_id,
            task_queue=self.task_queue,
            search_attributes=attributes,
            # with a worker of this host's in this process, its first task is handed straight to it
            # (not through the server's task queue): the first node starts about 50 ms sooner
            request_eager_start=self.worker is not None,
            memo={
                "graph": graph.name,
                "client": client_label(graph.name, input),
                "status": "running",
                "pending": [],
                "ended": [],
            },
        )
        self._started.append(run_id)
        return run_id

    async def runs(self, *, status: RunStatus | None = None) -> list[RunSummary]:
        found = []
        for run_id, memo, state, started in await self._listed():
            summary = RunSummary(
                run_id=run_id,
                graph=str(memo.get("graph", "")),
                status=state,
                started_at=started,
                pending=len(memo.get("pending", ())) if state == "running" else 0,
                client=_client(memo.get("client")),
            )
            if status is None or summary.status == status:
                found.append(summary)
        return found

    async def _listed(
        self, *, running: bool = False
    ) -> list[tuple[str, Mapping[str, Any], RunStatus, float]]:
        """Each run: id, memo, status, start time (oldest first); by listing when the server lists
        workflows, else the runs this host started."""
        listed: list[tuple[str, Mapping[str, Any], RunStatus, float]] = []
        await self.connected()
        try:
            query = f"WorkflowType = '{WORKFLOW}'" + (" AND ExecutionStatus = 'Running'" if running else "")
            async for info in self._executions(query):
                memo = await self._memo(info)
                if any(is_foreign(value) for value in memo.values()):
                    continue  # another key's run: nothing of it is readable, nor shown
                status = WorkflowExecutionStatus(info.status) if info.status else None
                started = info.start_time.seconds + info.start_time.nanos / 1e9
                listed.append((info.execution.workflow_id, memo, _status(status, memo), started))
        except RPCError as exc:
            if exc.status != RPCStatusCode.UNIMPLEMENTED:
                raise
            for run_id in self._started:
                described = await self.client.get_workflow_handle(run_id).describe()
                memo = await described.memo()
                if any(is_foreign(value) for value in memo.values()):
                    continue
                listed.append(
                    (run_id, memo, _status(described.status, memo), described.start_time.timestamp())
                )
        listed.sort(key=lambda item: item[3])
        return listed

    async def _executions(self, query: str) -> AsyncIterator[WorkflowExecutionInfo]:
        """The workflows ``query`` matches, as the server lists them: the client's ``list_workflows``
        without building a ``WorkflowExecution`` of each (its search attributes decoded, its times made
        datetimes), which for an app polling a thousand runs was most of each poll, on its loop."""
        token = b""
        while True:
            page = await self.client.workflow_service.list_workflow_executions(
                ListWorkflowExecutionsRequest(
                    namespace=self.client.namespace, page_size=_PAGE, next_page_token=token, query=query
                ),
                retry=True,
            )
            for info in page.executions:
                yield info
            token = page.next_page_token
            if not token:
                return

    async def _memo(self, info: WorkflowExecutionInfo) -> Mapping[str, Any]:
        """The run's memo, decoded (and decrypted) only when it changed since it was last read."""
        run_id = info.execution.workflow_id
        raw = info.memo.SerializeToString(deterministic=True)
        kept = self._memos.get(run_id)
        if kept is not None and kept[0] == raw:
            return kept[1]
        converter = self.client.data_converter.with_context(
            WorkflowSerializationContext(namespace=self.client.namespace, workflow_id=run_id)
        )
        memo = {key: (await converter.decode([value]))[0] for key, value in info.memo.fields.items()}
        self._memos.pop(run_id, None)
        self._memos[run_id] = (raw, memo)
        while len(self._memos) > _KNOWN_KEPT:
            self._memos.pop(next(iter(self._memos)))
        await asyncio.sleep(0)  # a thousand new memos are decoded with the app's keys served between
        return memo

    async def pending(self) -> list[PendingRequest]:
        waiting = [
            request
            for run_id, memo, state, _started in await self._listed(running=True)
            if state == "running"
            for request in self._pending_of(run_id, memo)
        ]
        waiting.sort(key=lambda request: request.created_at)
        return waiting

    def _pending_of(self, run_id: str, memo: Mapping[str, Any]) -> list[PendingRequest]:
        found = []
        for item in memo.get("pending", ()):
            request_id = item["request_id"]
            known = self._known.get(request_id)
            if known is None or known.run_id != run_id:
                known = PendingRequest(
                    request_id=request_id,
                    run_id=run_id,
                    kind=item["kind"],
                    summary=item["summary"],
                    created_at=item["created_at"],
                    expires_at=item["expires_at"],
                    request=wire.load(item["request"]),
                )
                self._known[request_id] = known
                while len(self._known) > _KNOWN_KEPT:
                    self._known.pop(next(iter(self._known)))
            found.append(known)
        return found

    async def decide(self, request_id: str, decision: InboxAnswer, *, decided_by: str) -> Resolution:
        found = None
        for run_id, memo, state, _started in await self._listed():
            if request_id in memo.get("ended", ()) or (state != "running" and _asked(memo, request_id)):
                raise DecisionRejected(f"request {request_id!r} is no longer pending")
            if state == "running" and _asked(memo, request_id):
                found = next(p for p in self._pending_of(run_id, memo) if p.request_id == request_id)
        if found is None or found.run_id is None:
            raise DecisionRejected(f"request {request_id!r} is not pending (answered, ended or unknown)")
        decided = {
            "request_id": request_id,
            "answer": wire.dump(decision),
            "decided_by": decided_by,
            "seen": _seen(found.request),
        }
        handle = (await self.connected()).get_workflow_handle(found.run_id)
        queued = False
        try:
            await handle.execute_update("decide", decided, rpc_timeout=timedelta(seconds=self.update_wait))
        except WorkflowUpdateFailedError as exc:
            raise DecisionRejected(_reason(exc)) from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError) as exc:
            if isinstance(exc, RPCError) and exc.status not in (
                RPCStatusCode.DEADLINE_EXCEEDED,
                RPCStatusCode.CANCELLED,
            ):
                raise
            await handle.signal("queued_decide", decided)  # no worker took it: kept, checked on its return
            queued = True
        kind = getattr(decision, "kind", None)
        return Resolution(
            request_id=request_id,
            run_id=found.run_id,
            decision=kind if isinstance(kind, str) else ("approve" if decision.approves else "deny"),
            decided_by=decided_by,
            queued=queued,
        )

    async def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[ExecutionEvent]:
        handle: WorkflowHandle[Any, Any] = (await self.connected()).get_workflow_handle(run_id)
        while True:
            try:
                state = await handle.query("state", after)
            except RPCError:
                described = await handle.describe()
                if described.status == WorkflowExecutionStatus.RUNNING:
                    await asyncio.sleep(_POLL_SECONDS * 4)  # no worker yet: the history waits for one
                    continue
                state = {"events": (await handle.result())["events"][after:]}
            for item in state["events"]:
                event = wire.load(item)
                after = event.seq
                yield event
                if isinstance(event, RunFinished):
                    return
            await asyncio.sleep(_POLL_SECONDS)

    # -- working here --------------------------------------------------------------------------------

    async def work(self, runtime: Runtime, inbox: Inbox, plans: Iterable[Graph] = ()) -> None:
        """Run the runs' nodes in this process too (the app while open, ``ditto-tui worker``): a worker on
        this host's task queue for ``plans``, on ``runtime``, its calls' requests through ``inbox``."""
        if self.worker is not None:
            for plan in plans:
                self.worker.add_plan(plan)
            return
        from ditto_tui.runs.temporal.worker import DittoWorker  # the worker's side: loaded only to work

        worker = DittoWorker(
            await self.connected(),
            runtime,
            inbox,
            task_queue=self.task_queue,
            plans={plan.name: plan for plan in plans},
        )
        await worker.start()
        self.worker = worker

    async def stop_working(self) -> None:
        """Stop this process's worker gracefully: its runs' requests wait for the next worker."""
        worker, self.worker = self.worker, None
        if worker is not None:
            await worker.shutdown()

    def running_here(self, run_id: str) -> bool:
        """Whether a node of ``run_id`` runs on this process's worker now."""
        return self.worker is not None and self.worker.running(run_id)

    def request_key(self, request: InboxRequest) -> str:
        """What binds ``request`` to its run and call: one request, though asked again after a worker's
        restart."""
        return f"{getattr(request, 'run_id', None)}|{binding(request)}"

    async def outputs(self, run_id: str) -> dict[str, Any] | None:
        """The outputs of run ``run_id`` once it has ended (None unless it succeeded)."""
        result = await (await self.connected()).get_workflow_handle(run_id).result()
        outputs = result.get("outputs")
        return {node: wire.load(value) for node, value in outputs.items()} if outputs is not None else None

    async def cancel(self, run_id: str, reason: str) -> None:
        handle = (await self.connected()).get_workflow_handle(run_id)
        await handle.cancel()
        async for _event in self.events(run_id):
            pass


def open_durable_host(settings: Mapping[str, Any], interceptors: Sequence[object] = ()) -> TemporalRunHost:
    """The durable host ``settings`` (a config's ``runs:`` section) names, connecting on first use:
    ``local`` starts the user's dev server when it is not running; ``remote`` connects to ``address``
    with its TLS and API key. The client (and the workers made from it) uses ``interceptors``."""
    host = settings.get("host")
    namespace = str(settings.get("namespace") or "default")
    chain: dict[str, Any] = {"interceptors": list(interceptors)} if interceptors else {}

    async def local() -> Client:
        from ditto_tui.runs.temporal.server import ensure_running

        server = await asyncio.to_thread(ensure_running)
        return await _reach(server.address, lambda: connect(server.address, namespace=namespace, **chain))

    async def remote() -> Client:
        tls = settings.get("tls")
        options: dict[str, Any] = dict(chain)
        if isinstance(tls, Mapping):
            options["tls"] = TLSConfig(
                client_cert=_read(tls.get("cert")),
                client_private_key=_read(tls.get("key")),
                server_root_ca_cert=_read(tls.get("ca")),
            )
        if settings.get("api_key"):
            options["api_key"] = str(settings["api_key"])
            options.setdefault("tls", True)
        address = str(settings["address"])
        return await _reach(address, lambda: connect(address, namespace=namespace, **options), wait=0.0)

    if host not in ("local", "remote"):
        raise ValidationError(f"runs.host {host!r} is not a durable host (local or remote)")
    queue = str(settings.get("task_queue") or DEFAULT_TASK_QUEUE)
    return TemporalRunHost(local if host == "local" else remote, task_queue=queue, search=host == "local")


async def _reach(address: str, connecting: Callable[[], Awaitable[Client]], *, wait: float = 15.0) -> Client:
    """The connected client; a server that listens but is not healthy yet (it just started) is waited
    for up to ``wait`` seconds; one that cannot be reached is said in one line."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return await connecting()
        except RuntimeError as exc:  # the SDK's connection failure
            if time.monotonic() >= deadline:
                raise DittoError(f"cannot reach the run server at {address}: {first_line(exc)}") from None
            await asyncio.sleep(0.1)


def _read(path: object) -> bytes | None:
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise ValidationError(f"runs.tls: cannot read {path!r}: {exc.strerror}") from None


def _status(status: WorkflowExecutionStatus | None, memo: Mapping[str, Any]) -> RunStatus:
    """A run's status from its workflow's: a completed workflow says in its memo how the run ended."""
    if status in (None, WorkflowExecutionStatus.RUNNING):
        return "running"
    if status in (WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED):
        return "cancelled"
    said = memo.get("status")
    if status == WorkflowExecutionStatus.COMPLETED and said in ("succeeded", "cancelled"):
        return "succeeded" if said == "succeeded" else "cancelled"
    return "failed"


def _client(given: object) -> str | None:
    """The client label a gateway session's memo holds (anything else in its place: none)."""
    return given[:MAX_CLIENT_LABEL] if isinstance(given, str) else None


def _asked(memo: Mapping[str, Any], request_id: str) -> bool:
    return any(item.get("request_id") == request_id for item in memo.get("pending", ()))


def _seen(request: Any) -> dict[str, Any]:
    """What the decider saw of the call: the digests the workflow checks the waiting call against."""
    if isinstance(request, ApprovalRequest):
        return {"arguments_digest": request.arguments_digest, "tool_digest": request.tool_digest}
    return {}


def _reason(error: WorkflowUpdateFailedError) -> str:
    cause = error.cause
    message = getattr(cause, "message", None) or str(cause or error)
    return str(message)


__all__ = [
    "DEFAULT_TASK_QUEUE",
    "DittoWorker",
    "TemporalRunHost",
    "connect",
    "data_converter",
    "open_durable_host",
    "snapshot",
]


def __getattr__(name: str) -> Any:
    """``DittoWorker``, imported on first use (listing and deciding never load the worker's side)."""
    if name == "DittoWorker":
        from ditto_tui.runs.temporal.worker import DittoWorker

        return DittoWorker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
