"""The worker of durable runs: runs each node's activity on this process's runtime, and carries the
requests its calls wait on to the run's workflow and the answers back.

The node is bound and called on the worker's :class:`~ditto_tui.runtime.Runtime`, so its calls go through
the same approval gate, rules, grants, modes and reviews as an embedded run's, and the same events are
reported: they are sent to the workflow in order (the ``emitted`` signal) before the activity returns.
A request the gate puts in the worker's inbox is asked of the workflow (the ``ask`` update) and waits
there, with its deadline kept by the workflow's timer (the inbox does not time it out itself); the
answer comes back and resolves it in the inbox, so the gate checks and records it as a person's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from ditto_tui.errors import ValidationError
from ditto_tui.runs import request_summary, retrieved
from ditto_tui.runs.temporal import wire
from ditto_tui.runs.temporal.plan import binding, node_queue, snapshot
from ditto_tui.runs.temporal.workflow import HEARTBEAT_SECONDS, RUN_NODE, DittoRun
from ditto_tui.runtime import ExecutionEvent, Graph, Runtime
from ditto_tui.supervise.inbox import Inbox, InboxRequest

logger = logging.getLogger(__name__)

MAX_WAITING_NODES = 10_000
"""How many nodes one worker runs at once: most of them wait for a person (a coroutine each, cheap), and
the SDK's default of 100 would leave the 101st run's node unstarted until one of them is answered."""

_RETRIED = frozenset({RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.CANCELLED})
"""RPC failures after which a request is asked of its run again."""

SERVER_KINDS = frozenset({"sampling", "sampling_result", "elicitation"})
"""Requests an MCP server makes of the client, which carry no run: asked of the run whose node runs here
when there is exactly one (with several, they stay in this process's inbox)."""


class _Stream:
    """The events of one run on this worker, sent to its workflow in order."""

    def __init__(self, client: Client, run_id: str) -> None:
        self.handle = client.get_workflow_handle(run_id)
        self.buffer: list[dict[str, Any]] = []
        self.users = 0
        self._sending: asyncio.Task[None] | None = None

    def add(self, event: ExecutionEvent) -> None:
        try:
            self.buffer.append(wire.dump(event))
        except ValidationError as exc:
            logger.warning("event %s of run %s not stored: %s", event.kind, event.run_id, exc)
            return
        if self._sending is None or self._sending.done():
            self._sending = asyncio.ensure_future(self._send())

    async def _send(self) -> None:
        await asyncio.sleep(0)  # what one step of the run reports goes in one signal
        while self.buffer:
            batch, self.buffer = self.buffer, []
            await self.handle.signal("emitted", batch)

    async def flush(self) -> None:
        while self._sending is not None and not self._sending.done():
            await asyncio.shield(self._sending)
        if self.buffer:
            self._sending = asyncio.ensure_future(self._send())
            await asyncio.shield(self._sending)


class DittoWorker:
    """A Temporal worker for ``task_queue`` running durable runs' nodes on ``runtime``; the requests of
    their calls go through ``inbox`` (the runtime's approval gate's) to the workflow. ``plans`` are the
    graphs it can run, by name (a run whose graph differs from the worker's is refused)."""

    def __init__(
        self,
        client: Client,
        runtime: Runtime,
        inbox: Inbox,
        *,
        task_queue: str,
        plans: Mapping[str, Graph] = {},
        sticky_seconds: float = 1.0,
        cached_runs: int = 1000,
    ) -> None:
        self.client, self.runtime, self.inbox, self.task_queue = client, runtime, inbox, task_queue
        self.plans: dict[str, Graph] = {}
        self._initial = dict(plans)
        self._streams: dict[str, _Stream] = {}
        self._asking: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._stops = [
            runtime.subscribe(self._seen),
            inbox.on_request(self._requested),
            inbox.on_end(self._ended),
        ]
        inbox.timed_elsewhere = lambda request: getattr(request, "run_id", None) in self._streams
        self._options: dict[str, Any] = {
            "sticky_queue_schedule_to_start_timeout": timedelta(seconds=sticky_seconds),
            "max_cached_workflows": cached_runs,
            "graceful_shutdown_timeout": timedelta(seconds=2),
        }
        self._workers: dict[str, tuple[Worker, asyncio.Task[None] | None]] = {}
        self._closing = False

    def add_plan(self, plan: Graph) -> None:
        """Let this worker run ``plan``'s nodes (their activities are on the graph's own task queue)."""
        self.plans[plan.name] = plan
        queue = node_queue(self.task_queue, plan.name)
        if queue not in self._workers:
            worker = Worker(
                self.client,
                task_queue=queue,
                activities=[self.run_node],
                max_concurrent_activities=MAX_WAITING_NODES,
                **self._options,
            )
            running = self._workers and any(task is not None for _w, task in self._workers.values())
            self._workers[queue] = (worker, asyncio.ensure_future(worker.run()) if running else None)

    async def start(self) -> None:
        """Poll the task queues in the background until :meth:`shutdown`: the runs' workflows on
        ``task_queue``, each graph's nodes on its own."""
        runs = Worker(
            self.client,
            task_queue=self.task_queue,
            workflows=[DittoRun],
            workflow_runner=UnsandboxedWorkflowRunner(),
            **self._options,
        )
        self._workers[self.task_queue] = (runs, None)
        for plan in list(self._initial.values()) + list(self.plans.values()):
            self.add_plan(plan)
        for queue, (worker, task) in list(self._workers.items()):
            if task is None:
                self._workers[queue] = (worker, asyncio.ensure_future(worker.run()))
        await asyncio.sleep(0)

    async def shutdown(self) -> None:
        """Stop polling, letting running activities end first (gracefully: the server notices at once)."""
        self._closing = True  # what the stopping does to the runs' calls stays out of their record
        workers = list(self._workers.values())
        self._workers = {}
        await asyncio.gather(*(worker.shutdown() for worker, task in workers if task is not None))
        for _worker, task in workers:
            if task is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await task
        for stop in self._stops:
            stop()
        self._stops = []
        self.inbox.timed_elsewhere = None

    def running(self, run_id: str) -> bool:
        """Whether a node of run ``run_id`` runs on this worker now (its events go to the workflow)."""
        return run_id in self._streams

    # -- a node ---------------------------------------------------------------------------------------

    @activity.defn(name=RUN_NODE)
    async def run_node(self, task: dict[str, Any]) -> dict[str, Any]:
        run_id, node_id = task["run_id"], task["node_id"]
        plan = self.plans.get(task["graph"])
        if plan is None:
            return {"error": f"this worker has no graph {task['graph']!r}: start the worker in its workspace"}
        if snapshot(plan)["digest"] != task["digest"]:
            return {"error": f"this worker's graph {plan.name!r} is not the one the run was started with"}
        stream = self._streams.get(run_id)
        if stream is None:
            stream = self._streams[run_id] = _Stream(self.client, run_id)
        stream.users += 1
        beating = asyncio.ensure_future(_heartbeat())
        node = asyncio.ensure_future(
            self.runtime.run_node(
                plan, node_id, wire.load(task["input"]), wire.load(task["deps"]), run_id=run_id
            )
        )
        try:
            output = await asyncio.shield(node)
            return {"output": wire.dump(output)}
        except asyncio.CancelledError:
            if not node.done():  # its record says why in words of ours, not the SDK's "Activity cancelled"
                node.cancel("the worker stopped" if self._closing else "the run was ended")
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await node
            if self._closing:  # the worker stops, not the run: the node runs again on the next worker
                raise ApplicationError(
                    "the worker stopped; the node runs again on the next one",
                    category=ApplicationErrorCategory.BENIGN,
                ) from None
            raise
        except Exception as exc:
            return {"error": self.runtime.public_error(exc)}
        finally:
            beating.cancel()
            await stream.flush()
            stream.users -= 1
            if stream.users == 0:
                del self._streams[run_id]

    def _seen(self, event: ExecutionEvent) -> None:
        stream = self._streams.get(event.run_id)
        if stream is not None and not self._closing and event.kind not in ("run_started", "run_finished"):
            stream.add(event)

    # -- its requests ---------------------------------------------------------------------------------

    def _requested(self, request: InboxRequest) -> None:
        run_id = getattr(request, "run_id", None)
        if run_id is None and request.kind in SERVER_KINDS and len(self._streams) == 1:
            # an MCP server asks (sampling, elicitation) while one durable run's node runs here: its call
            # is what the server serves, so the request is that run's, answered from any terminal
            run_id = next(iter(self._streams))
        if isinstance(run_id, str) and run_id in self._streams:
            task = asyncio.ensure_future(self._ask(run_id, request))
            self._asking[request.request_id] = (run_id, task)

    async def _ask(self, run_id: str, request: InboxRequest) -> None:
        try:
            asked = self._asked(request)
        except ValidationError as exc:  # it cannot be stored: nobody elsewhere could answer it
            logger.error("run %s: request %s not asked: %s", run_id, request.request_id, exc)
            self.inbox.withdraw(request.request_id)
            return
        handle = self.client.get_workflow_handle(run_id)
        pause = 0.1
        while True:
            try:
                answer = await handle.execute_update("ask", asked)
                break
            except asyncio.CancelledError:
                raise
            except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError) as exc:
                # the server did not answer in time (a loaded server, a long wait): ask again; the run
                # knows the request by its binding, so it is one request still
                if self._closing or isinstance(exc, RPCError) and exc.status not in _RETRIED:
                    return self._not_taken(run_id, request, exc)
                logger.info("run %s: asking %s again: %s", run_id, request.request_id, exc)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)
            except Exception as exc:  # the run refused it, or ended
                return self._not_taken(run_id, request, exc)
        if answer["status"] == "answered":
            self.inbox.resolve(request.request_id, wire.load(answer["answer"]))
        elif answer["status"] == "timeout":
            self.inbox.expire(request.request_id)
        else:
            self.inbox.withdraw(request.request_id)

    def _not_taken(self, run_id: str, request: InboxRequest, error: BaseException) -> None:
        if not self._closing:  # a worker that stops leaves the request to the next one
            level = logging.ERROR if isinstance(error, WorkflowUpdateFailedError) else logging.WARNING
            logger.log(level, "run %s did not take request %s: %s", run_id, request.request_id, error)
            self.inbox.withdraw(request.request_id)

    def _asked(self, request: InboxRequest) -> dict[str, Any]:
        """What the workflow keeps of ``request``: ids, binding, deadline, the request itself."""
        return {
            "request_id": request.request_id,
            "kind": request.kind,
            "binding": binding(request),
            "summary": request_summary(request),
            "timeout": self.inbox.timeout_of(request.request_id),
            "request": wire.dump(request),
            "input_schema": wire.dump(getattr(request, "input_schema", None)),
            "arguments_digest": getattr(request, "arguments_digest", None),
            "tool_digest": getattr(request, "tool_digest", None),
        }

    def _ended(self, request: InboxRequest) -> None:
        found = self._asking.pop(request.request_id, None)
        if found is None:
            return
        run_id, asking = found
        how = "answered" if asking.done() else "withdrawn"
        asking.cancel()
        if self._closing:  # the worker stops, not the call: the request waits for the next worker
            return
        stream = self._streams.get(run_id)
        if stream is not None:
            settle = stream.handle.signal("settled", args=[binding(request), how])
            stream_task = asyncio.ensure_future(settle)
            stream_task.add_done_callback(retrieved)


async def _heartbeat() -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(HEARTBEAT_SECONDS / 4)
