"""A run on Temporal: the graph's scheduler as a deterministic workflow, its waiting requests as state.

The workflow's input is a snapshot of the built graph (each node's id, type and dependencies, and a
digest of them), the run's input and its id. It starts every node whose dependencies are done as an
activity (:mod:`ditto_tui.runs.temporal.worker` runs it on the worker's runtime, binding and calling the
node there), concurrently when several are ready, and ends the run as the embedded scheduler does:
succeeded with every node's output, failed naming the node, or cancelled.

A request a node's call waits on (an approval, a result review, ...) is asked with the ``ask`` update by
the activity and kept here: listed in the ``pending`` memo (and the ``DittoPending`` search attribute, on
a server that has it) so an inbox lists it with no worker alive; its deadline is a durable timer; it is
answered by the ``decide`` update, whose validator refuses a request that is not pending and a decision
that does not fit it (another kind of answer, made on other arguments or another tool definition, or
edited arguments its tool's schema refuses), or by the ``queued_decide`` signal when no worker was alive
to take an update: that one is checked the same way when a worker comes back, and a decision that no
longer fits is refused and recorded, never applied. A worker that dies while a node waits runs the node
again; its call asks again with the same binding (node, call id, tool and arguments digests) and gets
the decision already made, or keeps waiting on the same request and deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ApplicationError
from temporalio.workflow import ActivityCancellationType

from ditto_tui.runs import ANSWERS, fits_kind
from ditto_tui.runs.temporal.codec import FOREIGN_MARK

WORKFLOW = "DittoRun"
RUN_NODE = "ditto_run_node"
PENDING_ATTRIBUTE = SearchAttributeKey.for_keyword_list("DittoPending")
GRAPH_ATTRIBUTE = SearchAttributeKey.for_keyword("DittoGraph")
HEARTBEAT_SECONDS = 2.0
"""A node's activity heartbeats twice in this; a worker that stops is noticed after it and the node runs
on another (or the same, restarted) worker."""
_ENDED_KEPT = 100
"""How many ended requests a run's memo names, so a late decision is told "no longer pending"."""
_TAG = "__ditto__"


def event(kind: str, run_id: str, seq: int, at: float, **fields: Any) -> dict[str, Any]:
    """An event in its stored form (:func:`ditto_tui.runs.temporal.wire.dump` of the event model)."""
    from ditto_tui.runtime.events import EVENT_TYPES

    model = EVENT_TYPES[kind]
    return {
        _TAG: "model",
        "type": f"{model.__module__}:{model.__qualname__}",
        "data": {"kind": kind, "run_id": run_id, "seq": seq, "at": at, **fields},
    }


@workflow.defn(name=WORKFLOW)
class DittoRun:
    def __init__(self) -> None:
        self._events: list[dict[str, Any]] = []
        self._requests: dict[str, dict[str, Any]] = {}
        self._status = "running"
        self._run_id = ""
        self._graph = ""
        self._search = False
        self._open: dict[str, dict[str, Any]] = {}
        """Approvals asked (``approval_requested``) and not ended yet in the run's events, by request id."""
        self._changed = False
        """Whether the requests changed since the memo was last written (see :meth:`_publishing`)."""

    # -- the run --------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        if FOREIGN_MARK in spec:  # started without the user's key: nothing of it runs
            self._status = "failed"
            self._run_id = workflow.info().workflow_id
            self._emit(
                "run_finished",
                status="failed",
                duration_ms=0.0,
                error="refused: the run was not started with your key, so nothing of it ran",
                failed_node=None,
            )
            self._flush()
            return {"status": "failed", "outputs": None, "events": self._events}
        self._run_id, self._graph, self._search = (
            spec["run_id"],
            spec["graph"]["name"],
            spec.get("search", False),
        )
        nodes: list[dict[str, Any]] = spec["graph"]["nodes"]
        started = workflow.time()
        self._emit(
            "run_started",
            plan=self._graph,
            plan_kind="graph",
            nodes=[{"id": n["id"], "type": n["type"], "deps": list(n["deps"])} for n in nodes],
            max_iterations=None,
        )
        self._flush()
        publisher = asyncio.ensure_future(self._publishing())
        status, error, failed = "succeeded", None, None
        outputs: dict[str, Any] = {}
        try:
            failure = await self._schedule(spec, nodes, outputs)
            if failure is not None:
                status, error, failed = "failed", failure["error"], failure["node_id"]
        except asyncio.CancelledError:
            status, error = "cancelled", None
        publisher.cancel()
        self._skip(nodes, outputs, status, failed)
        for entry in self._requests.values():
            if entry["status"] == "pending":
                entry["status"] = "withdrawn"
        self._close_open(None, "the run ended before it was decided")
        self._status = status
        self._emit(
            "run_finished",
            status=status,
            duration_ms=(workflow.time() - started) * 1000,
            error=error,
            failed_node=failed,
        )
        self._flush()
        return {
            "status": status,
            "outputs": outputs if status == "succeeded" else None,
            "events": self._events,
        }

    async def _schedule(
        self, spec: dict[str, Any], nodes: list[dict[str, Any]], outputs: dict[str, Any]
    ) -> dict[str, Any] | None:
        order = {node["id"]: index for index, node in enumerate(nodes)}
        missing = {node["id"]: len(node["deps"]) for node in nodes}
        dependents: dict[str, list[dict[str, Any]]] = {node["id"]: [] for node in nodes}
        for node in nodes:
            for dep in node["deps"]:
                dependents[dep].append(node)
        ready = [node for node in nodes if not node["deps"]]
        running: dict[asyncio.Task[dict[str, Any]], dict[str, Any]] = {}
        failure: dict[str, Any] | None = None
        try:
            while (ready or running) and failure is None:
                for node in ready:
                    task = asyncio.ensure_future(self._node(spec, node, outputs))
                    running[task] = node
                ready = []
                done, _ = await workflow.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: order[running[t]["id"]]):
                    node = running.pop(task)
                    result = task.result()
                    if "error" in result:
                        failure = {"node_id": node["id"], "error": result["error"]}
                        break
                    outputs[node["id"]] = result["output"]
                    for dependent in dependents[node["id"]]:
                        missing[dependent["id"]] -= 1
                        if missing[dependent["id"]] == 0:
                            ready.append(dependent)
        except GeneratorExit:
            raise  # the worker lets go of the run (it stops, or makes room): nothing may be awaited now
        except BaseException:
            await _stopped(running)
            raise
        await _stopped(running)
        return failure

    async def _node(
        self, spec: dict[str, Any], node: dict[str, Any], outputs: dict[str, Any]
    ) -> dict[str, Any]:
        task = {
            "run_id": self._run_id,
            "graph": self._graph,
            "digest": spec["graph"]["digest"],
            "node_id": node["id"],
            "input": spec["input"],
            "deps": {dep: outputs[dep] for dep in node["deps"]},
        }
        result: dict[str, Any] = await workflow.execute_activity(
            RUN_NODE,
            task,
            task_queue=spec["node_queue"],
            start_to_close_timeout=timedelta(days=3650),
            heartbeat_timeout=timedelta(seconds=HEARTBEAT_SECONDS),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        return result

    def _skip(
        self, nodes: list[dict[str, Any]], outputs: dict[str, Any], status: str, failed: str | None
    ) -> None:
        if status == "succeeded":
            return
        ran = {e["data"].get("node_id") for e in self._events if e["data"]["kind"] == "node_started"}
        reason = "run cancelled" if status == "cancelled" else f"node {failed!r} failed"
        for node in nodes:
            if node["id"] not in outputs and node["id"] not in ran:
                self._emit(
                    "node_skipped", node_id=node["id"], node_type=node["type"], iteration=None, reason=reason
                )

    # -- events ---------------------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        self._events.append(event(kind, self._run_id, len(self._events) + 1, workflow.time(), **fields))

    @workflow.signal
    def emitted(self, batch: list[dict[str, Any]]) -> None:
        """Events a node's activity reported (node started, approvals, tool results...), in order."""
        if not isinstance(batch, list):
            return  # not made with the user's key: no event of it is recorded
        for item in batch:
            data = dict(item["data"], run_id=self._run_id)
            kind = data.get("kind")
            if kind == "approval_requested":  # asked again: the ask of a worker that stopped has ended
                self._close_open(data.get("call_id"), "its worker stopped; the call asked again")
                self._open[str(data.get("request_id"))] = data
            elif kind == "approval_resolved":
                self._open.pop(str(data.get("request_id")), None)
            data["seq"] = len(self._events) + 1
            self._events.append({**item, "data": data})

    def _close_open(self, call_id: Any, reason: str) -> None:
        """End in the record the approvals still open (those of ``call_id``, or all): their asker is gone,
        so the history says how each ended, as an embedded run's does."""
        for request_id, asked in list(self._open.items()):
            if call_id is not None and asked.get("call_id") != call_id:
                continue
            del self._open[request_id]
            self._emit(
                "approval_resolved",
                request_id=request_id,
                call_id=asked.get("call_id"),
                tool=asked.get("tool"),
                decision="cancelled",
                reason=reason,
                arguments_digest=asked.get("arguments_digest"),
            )

    @workflow.query
    def state(self, after: int = 0) -> dict[str, Any]:
        """The run's status, its events past ``after`` and its pending requests."""
        return {"status": self._status, "events": self._events[after:], "pending": self._pending()}

    # -- requests -------------------------------------------------------------------------------------

    @workflow.update
    async def ask(self, asked: dict[str, Any]) -> dict[str, Any]:
        """A node's call waits on a request: kept until answered, timed out, withdrawn or the run ends."""
        entry = next(
            (e for e in self._requests.values() if e["binding"] == asked["binding"] and not e["settled"]),
            None,
        )
        if entry is None:
            now = workflow.time()
            timeout = asked.get("timeout")
            entry = {
                **asked,
                "status": "pending",
                "created_at": now,
                "expires_at": now + timeout if timeout is not None else None,
                "answer": None,
                "decided_by": None,
                "settled": False,
            }
            self._requests[asked["request_id"]] = entry
            self._publish()
        if entry["status"] == "pending":
            await self._wait(entry)
        return {"status": entry["status"], "answer": entry["answer"], "request_id": entry["request_id"]}

    async def _wait(self, entry: dict[str, Any]) -> None:
        expires = entry["expires_at"]
        remaining = None if expires is None else max(0.0, expires - workflow.time())
        try:
            if remaining == 0.0:
                raise TimeoutError
            await workflow.wait_condition(lambda: entry["status"] != "pending", timeout=remaining)
        except TimeoutError:
            if entry["status"] == "pending":
                entry["status"] = "timeout"
                self._publish()

    @workflow.signal
    def settled(self, binding: str, how: str) -> None:
        """The asking call is done with its request (its outcome is in its events): no longer pending, and
        a later call with the same binding asks afresh."""
        if not isinstance(binding, str):
            return
        for entry in self._requests.values():
            if entry["binding"] == binding and not entry["settled"]:
                entry["settled"] = True
                if entry["status"] == "pending":
                    entry["status"] = "withdrawn" if how != "answered" else "answered"
        self._publish()

    @workflow.update
    def decide(self, decided: dict[str, Any]) -> dict[str, Any]:
        """A person's answer (validated by :meth:`check_decision` before it is accepted)."""
        return self._apply(decided)

    @decide.validator
    def check_decision(self, decided: dict[str, Any]) -> None:
        reason = self._unfit(decided)
        if reason is not None:
            raise ApplicationError(reason, type="DecisionRejected", non_retryable=True)

    @workflow.signal
    def queued_decide(self, decided: dict[str, Any]) -> None:
        """A decision sent while no worker was alive: checked now, applied only if it still fits."""
        reason = self._unfit(decided)
        if reason is None:
            self._apply(decided)
            return
        self._emit(
            "custom",
            name="decision_refused",
            data={"request_id": decided.get("request_id"), "reason": reason},
        )

    def _apply(self, decided: dict[str, Any]) -> dict[str, Any]:
        entry = self._requests[decided["request_id"]]
        entry.update(status="answered", answer=decided["answer"], decided_by=decided["decided_by"])
        self._publish()
        return {
            "request_id": entry["request_id"],
            "run_id": self._run_id,
            "decided_by": decided["decided_by"],
        }

    def _unfit(self, decided: dict[str, Any]) -> str | None:
        if not isinstance(decided, dict) or FOREIGN_MARK in decided:
            return "the decision was not made with your key: refused"
        request_id = decided.get("request_id")
        entry = self._requests.get(request_id) if isinstance(request_id, str) else None
        if entry is None:
            return f"request {request_id!r} is not pending (answered, ended or unknown)"
        if entry["status"] != "pending":
            return f"request {request_id!r} is no longer pending"
        answer = decided.get("answer")
        answered_with = answer.get("type") if isinstance(answer, dict) else None
        is_approval = answered_with == ANSWERS["tool_call"]
        if not fits_kind(entry["kind"], answered_with):
            return f"a {entry['kind']} request is not answered with that kind of decision"
        seen = decided.get("seen") or {}
        for field in ("arguments_digest", "tool_digest"):
            if seen.get(field) is not None and seen[field] != entry.get(field):
                return f"the decision was made on another call than the one waiting ({field} differs)"
        if is_approval and isinstance(answer, dict):
            edited = answer["fields"].get("arguments")
            if edited is not None:
                return _schema_refusal(entry.get("input_schema"), edited)
        return None

    def _pending(self) -> list[dict[str, Any]]:
        return [
            {
                key: entry[key]
                for key in ("request_id", "kind", "summary", "created_at", "expires_at", "request")
            }
            for entry in self._requests.values()
            if entry["status"] == "pending"
        ]

    def _publish(self) -> None:
        """Note that the requests changed: the memo is written once the handlers of this workflow task have
        run (:meth:`_publishing`), never from a handler itself. A handler's command is ordered by when its
        handler ran, and a replay may run a task's signal and update handlers in another order than the
        first execution did (an update's acceptance then lands beside another command than it did):
        writing the memo after all of them keeps a replay's commands those of the history."""
        self._changed = True

    async def _publishing(self) -> None:
        while True:
            await workflow.wait_condition(lambda: self._changed)
            self._flush()

    def _flush(self) -> None:
        self._changed = False
        pending = self._pending()
        ended = [rid for rid, entry in self._requests.items() if entry["status"] != "pending"][-_ENDED_KEPT:]
        workflow.upsert_memo(
            {"status": self._status, "pending": pending, "graph": self._graph, "ended": ended}
        )
        if self._search:
            workflow.upsert_search_attributes(
                [PENDING_ATTRIBUTE.value_set([p["request_id"] for p in pending])]
            )


def _schema_refusal(schema: Any, edited: Any) -> str | None:
    """Why the tool's input schema refuses edited arguments (None: it takes them)."""
    from ditto_tui.runs.temporal.wire import load

    arguments = load(edited)
    if not isinstance(arguments, dict):
        return "the edited arguments do not fit: they must be a JSON object"
    if not isinstance(schema, dict):
        return None
    import jsonschema

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return None
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "arguments"
    return f"the edited arguments do not fit: {where}: {error.message}"


async def _stopped(running: Mapping[asyncio.Task[dict[str, Any]], Any]) -> None:
    """Cancel the nodes still running and wait for each to end (its activity told, as it is waited for)."""
    for task in running:
        task.cancel()
    if running:
        await asyncio.gather(*running, return_exceptions=True)
