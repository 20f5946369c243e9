"""The runtime client: routes node calls to workers, runs graphs and loops, reports events."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pydantic

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import (
    DittoError,
    GraphExecutionError,
    LoopLimitError,
    RunAbortedError,
    RuntimeClosedError,
    UnknownNodeError,
    ValidationError,
)
from ditto_tui.runtime.breakpoints import (
    BreakpointApprover,
    BreakpointDecision,
    BreakpointRequest,
    Breakpoints,
)
from ditto_tui.runtime.events import (
    EVENT_TYPES,
    CustomEvent,
    ExecutionEvent,
    NodeInfo,
    RunStatus,
    checked_fields,
)
from ditto_tui.runtime.graph import Graph, GraphNode, LoopDefinition
from ditto_tui.runtime.worker import NodeHandler, Services, WorkerContext, WorkerDefinition
from ditto_tui.sandbox import Sandbox, SandboxExecutor, SandboxPermissions
from ditto_tui.sanitize import exception_label, public_message_from_exception
from ditto_tui.signal import CancelSignal

logger = logging.getLogger(__name__)


def short_run_id(run_id: str) -> str:
    """A run id as a person reads it in a line: its random tail (``run-20261203T063623-c3efdf49`` →
    ``c3efdf49``), or the first 8 characters of an id of another shape."""
    head, _, tail = run_id.rpartition("-")
    return tail if head.startswith("run-") and len(tail) == 8 else run_id[:8]


_ALWAYS_BUILT = frozenset({"approval_requested", "approval_resolved", "review_requested", "review_resolved"})
"""Decision events are built even with no subscriber: the gate hands them to its decision recorder."""
"""Event kinds built even with no subscriber: the approval gate hands them to its decision recorder."""

Subscriber = Callable[[ExecutionEvent], object]
BreakpointsArg = Breakpoints | Iterable[str] | None


@dataclass(frozen=True, slots=True)
class _Route:
    worker: WorkerDefinition
    handler: NodeHandler
    semaphore: asyncio.Semaphore | None
    output: pydantic.TypeAdapter[Any] | None = None
    """The node type's declared output type, for checking an output given at a breakpoint."""


def _identity(node_id: str, node_type: str, execution_id: str, iteration: int | None) -> dict[str, Any]:
    """The fields every event of one node call carries."""
    return {"node_id": node_id, "node_type": node_type, "execution_id": execution_id, "iteration": iteration}


class _RunFailed(Exception):
    """Internal: a node of a graph failed; carries the node and its error."""

    def __init__(self, node: GraphNode, error: BaseException) -> None:
        super().__init__(node.id)
        self.node = node
        self.error = error


class _Pauses:
    """One run's breakpoints: the live sets it consults before each node, who is asked, and the nodes the
    person said not to pause at again in this run."""

    __slots__ = ("_approver", "_not_again", "_run_id", "_runtime", "_sets", "_skipped")

    def __init__(
        self, runtime: Runtime, sets: tuple[Breakpoints, ...], approver: BreakpointApprover, run_id: str
    ) -> None:
        self._runtime = runtime
        self._sets = sets
        self._approver = approver
        self._run_id = run_id
        self._not_again: set[str] = set()
        self._skipped: set[tuple[str, int | None]] = set()

    def skipped(self, node_ids: Iterable[str], iteration: int | None) -> str | None:
        """The first of ``node_ids`` skipped with a person's output in ``iteration``, or None."""
        return next((node_id for node_id in node_ids if (node_id, iteration) in self._skipped), None)

    def _match(self, node: GraphNode) -> str | None:
        if node.id in self._not_again:
            return None
        for patterns in self._sets:
            if patterns and (found := patterns.match(node.id, node.type)) is not None:
                return found
        return None

    async def before(self, node: GraphNode, node_input: Any, iteration: int | None) -> tuple[bool, Any]:
        """Pause before ``node`` when a breakpoint matches it: ``(True, input)`` runs the node on ``input``,
        ``(False, output)`` skips it with ``output``; an abort raises :class:`RunAbortedError`."""
        pattern = self._match(node)
        if pattern is None:
            return True, node_input
        runtime = self._runtime
        request = BreakpointRequest(
            request_id=runtime._new_id("breakpoint"),
            node_id=node.id,
            node_type=node.type,
            input=node_input,
            run_id=self._run_id,
            iteration=iteration,
            pattern=pattern,
            output_shape=runtime._routes[node.type].output,
        )
        identity: dict[str, Any] = {
            "request_id": request.request_id,
            "node_id": node.id,
            "node_type": node.type,
            "iteration": iteration,
        }
        runtime._emit(
            "breakpoint_requested", self._run_id, {**identity, "pattern": pattern, "input": node_input}
        )
        decision = await self._ask(request)
        decided_by, approver = self._answered_by()
        runtime._emit(
            "breakpoint_resolved",
            self._run_id,
            {
                **identity,
                "decided_by": decided_by,
                "approver": approver,
                "action": decision.action,
                "input": decision.input if decision.action == "edit" else None,
                "output": decision.output if decision.action == "skip" else None,
                "again": decision.again,
                "reason": decision.reason,
            },
        )
        if not decision.again:
            self._not_again.add(node.id)
        if decision.action == "abort":
            why = f": {decision.reason}" if decision.reason else ""
            raise RunAbortedError(
                f"run aborted at the breakpoint before node {node.id!r}{why}", node_id=node.id
            )
        if decision.action == "skip":
            self._skipped.add((node.id, iteration))
            return False, request.given_output(decision.output)
        return True, request.edited_input(decision.input) if decision.action == "edit" else node_input

    def _answered_by(self) -> tuple[str, str | None]:
        """Who answers the breakpoints: a person through the inbox (the approver says so with its own
        ``answered_by()``), else the library approver itself, by its ``name`` or class."""
        answered_by = getattr(self._approver, "answered_by", None)
        if callable(answered_by):
            who: tuple[str, str | None] = answered_by()
            return who
        name = getattr(self._approver, "name", None)
        return "approver", name if isinstance(name, str) and name else type(self._approver).__name__

    async def _ask(self, request: BreakpointRequest) -> BreakpointDecision:
        """The approver's decision; one that fails or answers nonsense aborts the run (fail closed)."""
        try:
            decision = await self._approver.decide(request)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("the approver failed on breakpoint %r", request.request_id)
            return BreakpointDecision(action="abort", reason="the approver failed to decide")
        if not isinstance(decision, BreakpointDecision):
            return BreakpointDecision(action="abort", reason="the approver gave an invalid decision")
        return decision


_ELSEWHERE_KEPT = 256
"""How many runs scheduled elsewhere keep their breakpoints' "not again" answers in a runtime."""


def _given_input(input: Any, _deps: Any) -> Any:
    return input


def _describe(error: BaseException) -> str:
    """What failed, in the words of :func:`public_message_from_exception` (``MCP call failed: …``,
    ``cancelled``), never a class name; unsanitised, since the exception raised to the application
    keeps the whole story (events carry the public form)."""
    message = error.message if isinstance(error, DittoError) else str(error)
    label = exception_label(error)
    if label is None:
        return message or "unexpected error"
    if not message or message.casefold().startswith(label.casefold()):
        return message or label
    return f"{label}: {message}"


class Runtime:
    """A runtime built by :func:`create_ditto`: ``invoke``, ``run``, ``loop``, ``subscribe``, ``close``."""

    def __init__(
        self,
        *,
        sandbox: Sandbox,
        workers: Iterable[WorkerDefinition],
        config: RuntimeConfig | None,
        providers: Mapping[str, object],
        approver: BreakpointApprover | None = None,
    ) -> None:
        self.approver = approver
        """Who is asked at a breakpoint (None: nobody, and a run with breakpoints refuses to start)."""
        self.breakpoints = Breakpoints()
        """The session's live breakpoints, consulted by every run besides the run's own."""
        self._elsewhere: dict[str, _Pauses] = {}
        self.services = Services(
            sandbox=sandbox, config=config, providers=dict(providers), resources_of=self._resources_of
        )
        self._workers: list[WorkerDefinition] = []
        self._routes: dict[str, _Route] = {}
        for worker in workers:
            self._add_worker(worker)
        self._subscribers: list[Subscriber] = []
        self._seq = itertools.count(1)
        self._ids = itertools.count(1)
        # Invoke run ids need only be unique, not secret; a seeded generator costs a fraction of uuid4.
        self._run_ids = random.Random()
        self._inflight = 0
        self._signals: dict[str, CancelSignal] = {}
        self._idle: asyncio.Event | None = None
        self._closed = False
        self._disposed = False

    def _public(self, error: BaseException) -> str:
        """``error`` as events carry it: what failed, in words, on one line without secrets, absolute paths or
        control characters, since events reach the UI, headless output and the journal."""
        config = self.services.config
        secrets = config.secret_values() if config is not None else ()
        return public_message_from_exception(
            error, secrets=secrets, workspace=self.services.sandbox.workspace
        )

    def _add_worker(self, worker: WorkerDefinition) -> None:
        if not isinstance(worker, WorkerDefinition):
            raise ValidationError("workers must be WorkerDefinition values from define_worker(...)")
        semaphore = asyncio.Semaphore(worker.concurrency) if worker.concurrency else None
        for node_type, handler in worker.nodes.items():
            if node_type in self._routes:
                raise ValidationError(f"node type {node_type!r} is exposed by two workers")
            declared = worker.outputs.get(node_type)
            output = None if declared is None else pydantic.TypeAdapter[Any](declared)
            self._routes[node_type] = _Route(worker, handler, semaphore, output)
        if worker not in self._workers:
            self._workers.append(worker)

    # -- events ---------------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], bool]:
        """Call ``callback(event)`` for every event; returns an unsubscribe function (True once)."""
        self._subscribers.append(callback)

        def unsubscribe() -> bool:
            try:
                self._subscribers.remove(callback)
            except ValueError:
                return False
            return True

        return unsubscribe

    def announce(self, run_id: str, kind: str, fields: Mapping[str, Any]) -> ExecutionEvent | None:
        """Emit an event of ``kind`` (its fields checked by its class) into run ``run_id`` from outside
        its nodes: the session's supervision (a mode change) uses it so the run's record says so."""
        cls = EVENT_TYPES.get(kind)
        checked = dict(fields)
        if cls is not None and cls is not CustomEvent:
            kind, checked = checked_fields(cls, **checked)
        return self._emit(kind, run_id, checked)

    @property
    def observed(self) -> bool:
        """Whether anyone listens to events (events are not even built otherwise)."""
        return bool(self._subscribers)

    def _emit(self, kind: str, run_id: str, fields: dict[str, Any]) -> ExecutionEvent | None:
        if not self._subscribers and kind not in _ALWAYS_BUILT:
            return None
        cls = EVENT_TYPES.get(kind)
        if cls is None or cls is CustomEvent:
            cls, fields = CustomEvent, {"name": kind, "data": fields.get("data", fields)}
            kind = "custom"
        fields.update(kind=kind, run_id=run_id, seq=next(self._seq), at=time.time())
        event = cls.trusted(fields)
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event)
            except Exception:  # a failing subscriber must not break the run
                logger.exception("event subscriber %r failed", subscriber)
        return event

    # -- calls ----------------------------------------------------------------------------------------

    def _resources_of(self, node_type: str) -> Mapping[str, object]:
        route = self._routes.get(node_type)
        return {} if route is None else route.worker.resources

    def _route(self, node_type: str) -> _Route:
        route = self._routes.get(node_type)
        if route is None:
            raise UnknownNodeError(f"no registered worker exposes node type {node_type!r}")
        return route

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    async def invoke(
        self, node_type: str, input: Any, *, timeout: float | None = None, signal: CancelSignal | None = None
    ) -> Any:
        """Call one node type and return its output directly; ``timeout`` bounds the wait in seconds."""
        route = self._route(node_type)
        run_id = f"invoke-{self._run_ids.getrandbits(48):012x}"
        return await self._call(
            route, node_type, input, run_id=run_id, node_id=None, parent=signal, timeout=timeout
        )

    async def _call(
        self,
        route: _Route,
        node_type: str,
        input: Any,
        *,
        run_id: str,
        node_id: str | None,
        parent: CancelSignal | None,
        timeout: float | None,
        execution_id: str | None = None,
        iteration: int | None = None,
        entry: bool = True,
    ) -> Any:
        """Call ``route``'s handler; an ``entry`` call (not nested in a handler) takes a concurrency slot."""
        if self._closed:
            raise RuntimeClosedError("the runtime is closed")
        signal = CancelSignal(parent)
        signal.bind_task(asyncio.current_task())
        execution_id = execution_id or self._new_id("exec")
        context = WorkerContext(
            services=self.services,
            worker_type=route.worker.type,
            node_type=node_type,
            execution_id=execution_id,
            invoke=self._nested_invoke(run_id, signal, node_id, iteration),
            emit=self._emitter(run_id),
            signal=signal,
            run_id=run_id,
            node_id=node_id,
            resources=route.worker.resources,
        )
        self._inflight += 1
        self._signals[execution_id] = signal
        try:
            # Worker concurrency bounds entry calls only (the seed): a nested call waiting for a slot its
            # own caller holds would deadlock a worker with concurrency=1.
            if timeout is None and (route.semaphore is None or not entry):
                return await route.handler(input, context)  # the common case, with no frame between
            return await self._bounded(route, input, context, entry, timeout)
        except asyncio.CancelledError:
            signal.cancel()
            raise
        finally:
            del self._signals[execution_id]
            self._inflight -= 1
            if self._inflight == 0 and self._idle is not None:
                self._idle.set()

    @staticmethod
    async def _bounded(
        route: _Route, input: Any, context: WorkerContext, entry: bool, timeout: float | None
    ) -> Any:
        """The handler's call within ``timeout`` seconds, holding a worker slot if it is an entry call; the
        call's signal is cancelled with it when it times out."""
        async with contextlib.nullcontext() if timeout is None else asyncio.timeout(timeout):
            try:
                if route.semaphore is None or not entry:
                    return await route.handler(input, context)
                async with route.semaphore:
                    return await route.handler(input, context)
            except asyncio.CancelledError:
                context.signal.cancel()
                raise

    def create_context(
        self, *, node_type: str = "APP.CALL", signal: CancelSignal | None = None
    ) -> WorkerContext:
        """A genuine context for calling registries from application code outside any handler
        (e.g. ``ToolRegistry.list(context)`` in a UI); its events belong to a run of their own."""
        run_id = f"app-{uuid.uuid4().hex[:12]}"
        context_signal = signal or CancelSignal()
        return WorkerContext(
            services=self.services,
            worker_type=node_type.split(".", 1)[0],
            node_type=node_type,
            execution_id=self._new_id("exec"),
            invoke=self._nested_invoke(run_id, context_signal, entry=True),
            emit=self._emitter(run_id),
            signal=context_signal,
            run_id=run_id,
        )

    def cancel_call(self, execution_id: str, reason: str = "cancelled by the user") -> bool:
        """Cancel one in-flight call by its execution id (``node_started.execution_id``).

        The call's ``context.signal`` is cancelled, and with it every call nested under it: a call
        waiting for approval ends ``cancelled`` unexecuted, a running tool stops as it honours the signal.
        Other calls and the run go on. Returns False when no call with that id is in flight.
        """
        signal = self._signals.get(execution_id)
        if signal is None:
            return False
        signal.cancel(reason)
        return True

    def _nested_invoke(
        self,
        run_id: str,
        parent: CancelSignal,
        caller: str | None = None,
        iteration: int | None = None,
        *,
        entry: bool = False,
    ) -> Any:
        """``context.invoke``: from inside a handler a call is nested and takes no concurrency slot;
        from a context made for application code (``entry``) it is an entry call like ``invoke``."""
        # A partial, not a closure: every call builds a context, and a partial costs less to make.
        return functools.partial(self._invoke_nested, run_id, parent, caller, iteration, entry)

    async def _invoke_nested(
        self,
        run_id: str,
        parent: CancelSignal,
        caller: str | None,
        iteration: int | None,
        entry: bool,
        node_type: str,
        input: Any,
        *,
        timeout: float | None = None,
        node_id: str | None = None,
    ) -> Any:
        route = self._route(node_type)
        if node_id is None:
            return await self._call(
                route,
                node_type,
                input,
                run_id=run_id,
                node_id=None,
                parent=parent,
                timeout=timeout,
                entry=entry,
            )
        traced_id = node_id if caller is None else f"{caller}/{node_id}"
        node = GraphNode(traced_id, node_type, (), _given_input)
        return await self._traced(
            node,
            input,
            {},
            run_id=run_id,
            iteration=iteration,
            signal=parent,
            timeout=timeout,
            entry=entry,
        )

    def _emitter(self, run_id: str) -> Any:
        return functools.partial(self._emit_fields, run_id)

    def _emit_fields(self, run_id: str, kind: str, /, **fields: Any) -> ExecutionEvent | None:
        return self._emit(kind, run_id, fields)

    # -- graphs ---------------------------------------------------------------------------------------

    async def run(
        self,
        plan: Graph,
        input: Any = None,
        *,
        signal: CancelSignal | None = None,
        breakpoints: BreakpointsArg = None,
    ) -> dict[str, Any]:
        """Run ``plan`` once on ``input``; returns ``{node_id: output}`` for every node.

        ``breakpoints`` (node globs, or a live :class:`Breakpoints`) pause the run before each matching
        node and ask :attr:`approver`; with none, breakpoints raise :class:`ValidationError` here.
        """
        if not isinstance(plan, Graph):
            raise ValidationError("run() needs a graph built with graph(name)")
        self._check_types(plan)
        run_id = self._new_run_id()
        pauses = self._pauses(breakpoints, run_id)
        self._emit_run_started(run_id, plan, "graph", None)
        work = self._execute(plan, input, run_id, None, signal, pauses)
        outputs: dict[str, Any] = await self._finish(run_id, work)
        return outputs

    async def loop(
        self,
        definition: LoopDefinition,
        initial: Any,
        *,
        signal: CancelSignal | None = None,
        breakpoints: BreakpointsArg = None,
    ) -> Any:
        """Run a loop from ``initial`` state; returns the final state. ``breakpoints`` as for :meth:`run`:
        a breakpoint pauses in each iteration until the person answers ``again=False``."""
        if not isinstance(definition, LoopDefinition):
            raise ValidationError("loop() needs a definition built with loop(...)")
        self._check_types(definition.graph)
        run_id = self._new_run_id()
        pauses = self._pauses(breakpoints, run_id)
        self._emit_run_started(run_id, definition.graph, "loop", definition.max_iterations)
        return await self._finish(run_id, self._iterate(definition, initial, run_id, signal, pauses))

    async def run_node(
        self,
        plan: Graph,
        node_id: str,
        input: Any,
        deps_outputs: Mapping[str, Any],
        *,
        run_id: str,
        iteration: int | None = None,
        signal: CancelSignal | None = None,
    ) -> Any:
        """Run one node of ``plan`` as part of run ``run_id`` (a run scheduled elsewhere, e.g. by a durable
        host): bind it from the plan's ``input`` and its dependencies' outputs, call it and report
        ``node_started`` and ``node_finished``/``node_failed`` under ``run_id``. Raises
        :class:`GraphExecutionError` naming the node when it fails, as :meth:`run` does."""
        node = plan.nodes.get(node_id)
        if node is None:
            raise ValidationError(f"graph {plan.name!r} has no node {node_id!r}")
        self._route(node.type)
        try:
            pauses = self._scheduled_pauses(run_id)
            return await self._traced(
                node,
                input,
                deps_outputs,
                run_id=run_id,
                iteration=iteration,
                signal=signal,
                timeout=None,
                pauses=pauses,
            )
        except Exception as error:
            if isinstance(error, GraphExecutionError | RunAbortedError):
                raise
            raise GraphExecutionError(
                f"node {node.id!r} ({node.type}) failed: {_describe(error)}", node_id=node.id
            ) from error

    def _scheduled_pauses(self, run_id: str) -> _Pauses | None:
        """The breakpoints of a run scheduled elsewhere: this runtime's own (``b`` in the app, ``--break``),
        one :class:`_Pauses` per run, so "do not pause here again" holds for the rest of the run."""
        pauses = self._elsewhere.get(run_id)
        if pauses is None:
            if not self.breakpoints:
                return None
            pauses = self._pauses(None, run_id)
            if pauses is None:
                return None
            self._elsewhere[run_id] = pauses
            while len(self._elsewhere) > _ELSEWHERE_KEPT:
                self._elsewhere.pop(next(iter(self._elsewhere)))
        return pauses

    def public_error(self, error: BaseException) -> str:
        """``error`` as events carry it (one line, no secrets, absolute paths or control characters)."""
        return self._public(error)

    def _pauses(self, breakpoints: BreakpointsArg, run_id: str) -> _Pauses | None:
        """The run's breakpoints, or None when nothing can pause it; breakpoints nobody can answer raise."""
        given = None if breakpoints is None else Breakpoints.coerce(breakpoints)
        sets = (self.breakpoints,) if given is None else (self.breakpoints, given)
        if self.approver is None:
            if any(sets) or isinstance(breakpoints, Breakpoints):
                raise ValidationError(
                    "breakpoints need someone to ask: create_ditto(..., approver=...), or a person in the app"
                )
            return None
        return _Pauses(self, sets, self.approver, run_id)

    def _new_run_id(self) -> str:
        if self._closed:
            raise RuntimeClosedError("the runtime is closed")
        return f"run-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"

    def _check_types(self, plan: Graph) -> None:
        for node in plan.nodes.values():
            self._route(node.type)

    def _emit_run_started(self, run_id: str, plan: Graph, plan_kind: str, max_iterations: int | None) -> None:
        if self._subscribers:
            nodes = tuple(NodeInfo(id=n.id, type=n.type, deps=n.deps) for n in plan.nodes.values())
            self._emit(
                "run_started",
                run_id,
                {"plan": plan.name, "plan_kind": plan_kind, "nodes": nodes, "max_iterations": max_iterations},
            )

    async def _finish(self, run_id: str, work: Any) -> Any:
        started = time.perf_counter()
        status: RunStatus = "failed"
        error: BaseException | None = None
        try:
            result = await work
            status = "succeeded"
            return result
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            failed = error.node_id if isinstance(error, GraphExecutionError | RunAbortedError) else None
            self._emit(
                "run_finished",
                run_id,
                {
                    "status": status,
                    "duration_ms": (time.perf_counter() - started) * 1000,
                    "error": None if error is None else self._public(error),
                    "failed_node": failed,
                },
            )

    async def _iterate(
        self,
        definition: LoopDefinition,
        state: Any,
        run_id: str,
        signal: CancelSignal | None,
        pauses: _Pauses | None = None,
    ) -> Any:
        iteration = 0
        while not definition.done(state):
            if iteration >= definition.max_iterations:
                limit = definition.max_iterations
                raise LoopLimitError(f"loop {definition.graph.name!r} did not finish in {limit} iterations")
            iteration += 1
            self._emit(
                "loop_iteration",
                run_id,
                {"iteration": iteration, "max_iterations": definition.max_iterations},
            )
            plan_input = definition.bind(state)
            outputs = await self._execute(definition.graph, plan_input, run_id, iteration, signal, pauses)
            state = self._update(definition, state, outputs, iteration, pauses)
        return state

    def _update(
        self,
        definition: LoopDefinition,
        state: Any,
        outputs: dict[str, Any],
        iteration: int,
        pauses: _Pauses | None,
    ) -> Any:
        """The loop's next state; the update failing on the output a person gave for a skipped node is
        said so, naming the node, rather than as the update's own error."""
        try:
            return definition.update(state, outputs)
        except DittoError:
            raise
        except Exception as exc:
            skipped = pauses.skipped(outputs, iteration) if pauses is not None else None
            if skipped is None:
                raise
            raise GraphExecutionError(
                f"loop {definition.graph.name!r} could not take the output given for skipped node "
                f"{skipped!r}: {_describe(exc)}",
                node_id=skipped,
            ) from exc

    async def _execute(
        self,
        plan: Graph,
        input: Any,
        run_id: str,
        iteration: int | None,
        signal: CancelSignal | None,
        pauses: _Pauses | None = None,
    ) -> dict[str, Any]:
        scheduler = _Scheduler(self, plan, input, run_id, iteration, signal, pauses)
        try:
            return await scheduler.run()
        except _RunFailed as failure:
            node, error = failure.node, failure.error
            skipped = None
            if pauses is not None and not isinstance(error, DittoError):
                skipped = pauses.skipped(node.deps, iteration)
            if skipped is not None:
                message = f"could not take the output given for skipped node {skipped!r}: {_describe(error)}"
            else:
                message = f"failed: {_describe(error)}"
            raise GraphExecutionError(f"node {node.id!r} ({node.type}) {message}", node_id=node.id) from error

    async def _traced(
        self,
        node: GraphNode,
        raw_input: Any,
        deps_outputs: Mapping[str, Any],
        *,
        run_id: str,
        iteration: int | None,
        signal: CancelSignal | None,
        timeout: float | None,
        entry: bool = True,
        pauses: _Pauses | None = None,
    ) -> Any:
        """Bind and call one node, reporting ``node_started`` and ``node_finished``/``node_failed``; with
        ``pauses``, a breakpoint may edit its input first, or skip it with an output of the person's."""
        node_id, node_type = node.id, node.type
        execution_id = self._new_id("exec")
        observed = bool(self._subscribers)
        started = time.perf_counter()
        identity: dict[str, Any] = {}
        try:
            node_input = node.bind(raw_input, deps_outputs)
            runs, value = True, node_input
            if pauses is not None:
                runs, value = await pauses.before(node, node_input, iteration)
                observed = bool(self._subscribers)
                node_input = value if runs else node_input
            if observed:
                identity = _identity(node_id, node_type, execution_id, iteration)
                self._emit("node_started", run_id, {**identity, "input": node_input})
            if runs:
                value = await self._call(
                    self._routes[node_type],
                    node_type,
                    node_input,
                    run_id=run_id,
                    node_id=node_id,
                    parent=signal,
                    timeout=timeout,
                    execution_id=execution_id,
                    iteration=iteration,
                    entry=entry,
                )
            output = value
        except BaseException as exc:
            if observed:
                self._emit(
                    "node_failed",
                    run_id,
                    {
                        **(identity or _identity(node_id, node_type, execution_id, iteration)),
                        "duration_ms": (time.perf_counter() - started) * 1000,
                        "error_type": type(exc).__name__,
                        "error": self._public(exc),
                        "cancelled": isinstance(exc, asyncio.CancelledError),
                    },
                )
            raise
        if observed:
            self._emit(
                "node_finished",
                run_id,
                {
                    **(identity or _identity(node_id, node_type, execution_id, iteration)),
                    "duration_ms": (time.perf_counter() - started) * 1000,
                    "output": output,
                },
            )
        return output

    # -- lifecycle ------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Refuse new calls, wait for in-flight calls to finish, then run each worker's dispose once."""
        self._closed = True
        if self._inflight:
            self._idle = asyncio.Event()
            if self._inflight:
                await self._idle.wait()
        if self._disposed:
            return
        self._disposed = True
        for worker in self._workers:
            if worker.dispose is None:
                continue
            outcome = worker.dispose()
            if inspect.isawaitable(outcome):
                await outcome

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class _Scheduler:
    """Runs one graph: starts every node whose dependencies are done, concurrently when several are."""

    __slots__ = (
        "_done",
        "_input",
        "_iteration",
        "_missing",
        "_pauses",
        "_plan",
        "_run_id",
        "_runtime",
        "_signal",
        "_waiter",
        "outputs",
    )

    def __init__(
        self,
        runtime: Runtime,
        plan: Graph,
        input: Any,
        run_id: str,
        iteration: int | None,
        signal: CancelSignal | None,
        pauses: _Pauses | None = None,
    ) -> None:
        self._runtime = runtime
        self._pauses = pauses
        self._plan = plan
        self._input = input
        self._run_id = run_id
        self._iteration = iteration
        self._signal = signal
        self._missing = {node.id: len(node.deps) for node in plan.nodes.values()}
        self.outputs: dict[str, Any] = {}
        self._done: list[asyncio.Task[Any]] = []
        """Node tasks finished since the scheduler last looked, in the order they finished."""
        self._waiter: asyncio.Future[None] | None = None

    def _start(self, node: GraphNode) -> Any:
        outputs = self.outputs
        return self._runtime._traced(
            node,
            self._input,
            {dep: outputs[dep] for dep in node.deps},
            run_id=self._run_id,
            iteration=self._iteration,
            signal=self._signal,
            timeout=None,
            pauses=self._pauses,
        )

    @staticmethod
    def _failed(node: GraphNode, error: Exception) -> Exception:
        """What a node's failure ends the run with: an abort at a breakpoint as it is, else the node's."""
        return error if isinstance(error, RunAbortedError) else _RunFailed(node, error)

    def _complete(self, node_id: str, output: Any, ready: list[GraphNode]) -> None:
        self.outputs[node_id] = output
        nodes = self._plan.nodes
        for dependent in self._plan.dependents(node_id):
            self._missing[dependent] -= 1
            if self._missing[dependent] == 0:
                ready.append(nodes[dependent])

    async def run(self) -> dict[str, Any]:
        ready = [node for node in self._plan.nodes.values() if not node.deps]
        running: dict[asyncio.Task[Any], GraphNode] = {}
        try:
            while ready or running:
                if not running and len(ready) == 1:
                    node = ready.pop()
                    try:
                        output = await self._start(node)
                    except Exception as exc:
                        raise self._failed(node, exc) from exc
                    self._complete(node.id, output, ready)
                    continue
                loop = asyncio.get_running_loop()
                for node in ready:
                    task = loop.create_task(self._start(node))
                    task.add_done_callback(self._finished)
                    running[task] = node
                ready.clear()
                if not self._done:
                    self._waiter = loop.create_future()
                    try:
                        await self._waiter
                    finally:
                        self._waiter = None
                done, self._done = self._done, []
                for task in done:
                    node = running.pop(task)
                    try:
                        output = task.result()
                    except Exception as exc:
                        raise self._failed(node, exc) from exc
                    self._complete(node.id, output, ready)
        except BaseException as exc:
            await self._stop(running)
            self._skip_unstarted(exc)
            raise
        return self.outputs

    def _finished(self, task: asyncio.Task[Any]) -> None:
        """A node task's done callback: wake :meth:`run` (one callback per task, where ``asyncio.wait``
        would add one to every running task each time it is called)."""
        self._done.append(task)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _stop(self, running: dict[asyncio.Task[Any], GraphNode]) -> None:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    def _skip_unstarted(self, error: BaseException) -> None:
        if not self._runtime.observed:
            return
        reason = "run cancelled" if isinstance(error, asyncio.CancelledError) else "an upstream node failed"
        if isinstance(error, _RunFailed):
            reason = f"node {error.node.id!r} failed"
        elif isinstance(error, RunAbortedError):
            reason = "the run was aborted at a breakpoint"
        for node in self._plan.nodes.values():
            if node.id not in self.outputs and self._missing[node.id] > 0:
                self._runtime._emit(
                    "node_skipped",
                    self._run_id,
                    {
                        "node_id": node.id,
                        "node_type": node.type,
                        "iteration": self._iteration,
                        "reason": reason,
                    },
                )


def create_ditto(
    *,
    sandbox: SandboxPermissions | Sandbox | Mapping[str, object] | None = None,
    sandbox_executor: SandboxExecutor | None = None,
    workers: Iterable[WorkerDefinition] = (),
    config: RuntimeConfig | None = None,
    workspace: str | os.PathLike[str] = ".",
    providers: Mapping[str, object] | None = None,
    approver: BreakpointApprover | None = None,
) -> Runtime:
    """Build a runtime: a shared sandbox over ``workspace`` and the given workers.

    ``sandbox`` takes permissions (a dict or :class:`SandboxPermissions`) or a ready :class:`Sandbox`;
    when omitted and ``config`` is given, the config's ``sandbox`` section is used. Nothing is granted
    unless stated. ``approver`` is asked at breakpoints (``run(..., breakpoints=[...])``).
    """
    if isinstance(sandbox, Sandbox):
        shared = sandbox
    else:
        granted = sandbox
        if granted is None and config is not None:
            granted = config.sandbox.to_permissions_kwargs()
        shared = Sandbox(SandboxPermissions.coerce(granted), workspace=workspace, executor=sandbox_executor)
    return Runtime(
        sandbox=shared, workers=workers, config=config, providers=providers or {}, approver=approver
    )
