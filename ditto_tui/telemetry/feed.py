"""The run side of tracing: each event a trace needs, as a small record, fed to the exporter process.

Building spans and encoding them for OTLP costs tens of microseconds each, on whichever thread does it;
in the run's process that would be the run's own time (Python runs one thread at a time). So the run's
process only turns each event into a record of plain values (most nodes send one, at their end), and
hands the records, one write every :data:`WRITE_EVERY_SECONDS`, to a process of its own
(:mod:`ditto_tui.telemetry.exporter`) that builds the spans and exports them. Its pipe is never
waited on: when the exporter falls behind, records wait in memory up to :data:`MAX_WAITING_BYTES`, then
are dropped and counted. The exporter is started with the first record and leaves on its own once this
process closes the pipe, sending what it holds within ``otel.timeoutSeconds``.

Nothing here imports the OpenTelemetry SDK. Temporal's interceptor, when a durable host asks for one,
makes its spans in this process (:meth:`RunTracer.temporal_interceptor`), and the records of a run
whose root is elsewhere carry the context they start in (the activity's), so a worker's node spans
join the run's trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import marshal
import operator
import os
import selectors
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ditto_tui.runtime.events import ExecutionEvent
from ditto_tui.supervise.journal._lines import ACT_MCP, ACT_TOOL, field_of, wire_form

if TYPE_CHECKING:
    from ditto_tui.telemetry import TraceSettings

logger = logging.getLogger(__name__)

MAX_WAITING_BYTES = 16 * 1024 * 1024
"""Records kept while the exporter cannot take them; past this, new ones are dropped (and counted)."""
SAMPLE = "INFER.SAMPLE"
PROGRESS = "mcp_progress"
_TOOL_NODES = frozenset({ACT_TOOL, ACT_MCP})
_SPECIAL = frozenset({*_TOOL_NODES, SAMPLE})
_ended = operator.itemgetter(
    "run_id", "at", "node_id", "node_type", "execution_id", "iteration", "duration_ms"
)
"""A plain node's whole span as the tuple sent for it (every other record is a dict), from its end's
event: ``(run, at, node_id, node_type, execution_id, iteration, duration_ms)``."""
HELD = 4096
"""Records held at most between two writes: a loop that does not yield for a while (a line of quick
nodes) writes when this many are queued instead of holding them all until it does."""
_FRAME = struct.Struct("<I")
WRITE_EVERY_SECONDS = 0.05
"""How often records are written to the exporter: one write for all a run did meanwhile (a write per
node, with its call scheduled, costs a fast node a sixth of its time)."""
_RETRY_SECONDS = 0.02
PIPE_BYTES = 1024 * 1024
"""The pipe to the exporter is asked to hold this much (Linux's default limit for a process's pipes)."""


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What a runtime's model turns say of their model: the provider and the requested model name."""

    provider: str | None = None
    model: str | None = None


def _content(value: Any) -> str:
    """A value as JSON text for the exporter, which redacts and bounds it (``captureContent`` only)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=wire_form)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


class RunTracer:
    """Feeds the events of the runtimes it is attached to, as records, to an exporter process."""

    def __init__(self, settings: TraceSettings, workspace: Path) -> None:
        self.settings, self.workspace = settings, workspace
        self.capture = settings.capture_content
        self.dropped = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._records: list[dict[str, Any] | tuple[Any, ...]] = []
        self._waiting = bytearray()  # written from its front: ``del [:n]`` there moves nothing
        self._frames: deque[int] = deque()  # the lengths of the frames in it, in order
        self._into = 0  # bytes of the first of them written already (the exporter reads it)
        self._retry: asyncio.TimerHandle | None = None
        self._scheduled = False
        self._closed = False
        self._acks = 0
        self._interceptor: Any = None
        self._provider: Any = None

    # -- attaching ------------------------------------------------------------------------------------

    def attach(
        self, runtime: Any, model: ModelInfo | None = None, mode: Callable[[], str] | None = None
    ) -> Callable[[], bool]:
        """Follow ``runtime``'s events; ``model`` names its model turns' model, ``mode`` says the session's
        mode when a run starts. Returns the unsubscribe function."""
        listener = _Listener(self, model or ModelInfo(), mode)
        unsubscribe: Callable[[], bool] = runtime.subscribe(listener.subscriber())
        return unsubscribe

    def client_request(self, fields: Mapping[str, Any]) -> None:
        """An MCP server's sampling or elicitation and its decision (an event on that server's call)."""
        self.send(
            {
                "kind": "client_request",
                "server": str(fields.get("server") or ""),
                "request": str(fields.get("request") or "request"),
                "decision": str(fields.get("decision") or ""),
                "by": str(fields.get("by") or ""),
            }
        )

    # -- Temporal -------------------------------------------------------------------------------------

    def temporal_interceptor(self) -> Any:
        """Temporal's ``TracingInterceptor`` over a tracer of this process (its few spans per workflow
        task and activity are made and exported here); the runs it carries are traced through it."""
        if self._interceptor is None:
            from temporalio.contrib.opentelemetry import TracingInterceptor

            from ditto_tui.telemetry.spans import exporting_provider

            self._provider = exporting_provider(self.settings, self.workspace / "otel.log")
            self._interceptor = TracingInterceptor(self._provider.get_tracer("temporalio"))
        return self._interceptor

    @property
    def propagates(self) -> bool:
        """Whether spans of this process carry a context from elsewhere (a durable run's activities)."""
        return self._interceptor is not None

    # -- the pipe -------------------------------------------------------------------------------------

    def send(self, record: dict[str, Any]) -> None:
        """Queue one record; it is written with the others of the next :data:`WRITE_EVERY_SECONDS`."""
        self._records.append(record)
        if not self._scheduled:
            self.send_soon()

    def send_soon(self) -> None:
        """Write the queued records in :data:`WRITE_EVERY_SECONDS` (now, outside an event loop)."""
        if self._closed:
            self._records.clear()
            return
        self._scheduled = True
        try:
            asyncio.get_running_loop().call_later(WRITE_EVERY_SECONDS, self._write)
        except RuntimeError:  # no loop (a record from a thread, or at exit): write now
            self._write()

    def _start(self) -> subprocess.Popen[bytes] | None:
        if self._process is None:
            from ditto_tui.home import StateDirError, logs_dir, open_private

            log_path = logs_dir(self.workspace) / "otel.log"
            try:
                log_fd = open_private(log_path, append=True)
            except StateDirError as exc:
                logger.warning("traces: no log file: %s", exc.message)
                log_fd = subprocess.DEVNULL
            settings = dict(vars(self.settings), log=str(log_path))
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "ditto_tui.telemetry.exporter"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log_fd,
                    start_new_session=True,  # a ctrl+c in the terminal stops the app, not the last export
                )
            except OSError as exc:
                logger.warning("traces: the exporter did not start: %s", exc)
                self._closed = True
                return None
            finally:
                if isinstance(log_fd, int) and log_fd >= 0:
                    os.close(log_fd)
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(settings).encode() + b"\n")
            self._process.stdin.flush()
            os.set_blocking(self._process.stdin.fileno(), False)
            with contextlib.suppress(ImportError, OSError, AttributeError):  # Linux: fewer, larger writes
                import fcntl

                fcntl.fcntl(self._process.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        return self._process

    def _write(self) -> None:
        self._scheduled = False
        self.hand_over()

    def hand_over(self) -> None:
        """Write what is queued to the exporter now, as far as its pipe takes it."""
        records = self._records  # emptied in place: the runtime's subscriber appends to this very list
        waiting = self._waiting
        if self._closed:  # nothing more is traced: nothing is kept for it
            records.clear()
            waiting.clear()
            self._frames.clear()
            return
        if records:
            batch = marshal.dumps(records)  # one frame a turn: cheaper than one a record
            records.clear()
            waiting += _FRAME.pack(len(batch))
            waiting += batch
            self._frames.append(_FRAME.size + len(batch))
        if not waiting:
            return  # nothing to hand over: no exporter is started for it
        process = self._start()
        if process is None or process.stdin is None:
            return
        try:
            written = os.write(process.stdin.fileno(), waiting)
        except BlockingIOError:
            written = 0
        except OSError as exc:  # the exporter is gone: nothing more is traced
            logger.warning("traces: the exporter stopped: %s", exc)
            self._closed = True
            waiting.clear()
            self._frames.clear()
            return
        del waiting[:written]
        self._written(written)
        if waiting and self._retry is None:
            with contextlib.suppress(RuntimeError):
                self._retry = asyncio.get_running_loop().call_later(_RETRY_SECONDS, self._retried)

    def _written(self, count: int) -> None:
        """``count`` more bytes went to the exporter; past :data:`MAX_WAITING_BYTES` waiting, whole frames
        are dropped (and counted), never the rest of one the exporter has begun to read."""
        frames, into = self._frames, self._into + count
        while frames and into >= frames[0]:
            into -= frames.popleft()
        self._into = into
        if len(self._waiting) > MAX_WAITING_BYTES:
            begun = frames[0] - into if into else 0
            self.dropped += len(frames) - (1 if begun else 0)
            del self._waiting[begun:]
            kept = frames[0] if begun else None
            frames.clear()
            if kept is not None:
                frames.append(kept)

    def _retried(self) -> None:
        self._retry = None
        self.hand_over()

    def _drain(self, deadline: float) -> None:
        """Write everything queued, waiting for the pipe until ``deadline``."""
        self._write()
        while self._waiting and time.monotonic() < deadline and not self._closed:
            time.sleep(0.005)
            self._write()

    # -- flushing -------------------------------------------------------------------------------------

    def flush(self, timeout: float = 5.0) -> dict[str, int] | None:
        """Have every span so far exported, waiting at most ``timeout`` seconds; the exporter's counts
        (``exported``, ``failed``) then, or None when it did not answer in time."""
        deadline = time.monotonic() + timeout
        if self._provider is not None:
            self._provider.force_flush(int(timeout * 1000))
        self._acks += 1
        token = self._acks
        self.send({"kind": "flush", "token": token, "timeout": max(0.1, timeout - 0.2)})
        self._drain(deadline)
        process = self._process
        if process is None or process.stdout is None:
            return None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    break
                line = process.stdout.readline()
                if not line:
                    return None
                fields = json.loads(line)
                if fields.get("token") == token:
                    counts = {"exported": int(fields["exported"]), "failed": int(fields["failed"])}
                    return counts
        return None

    def close(self, timeout: float = 1.0) -> None:
        """Hand over what is queued (waiting at most ``timeout`` seconds for the pipe) and let the
        exporter finish on its own: this process does not wait for the collector."""
        deadline = time.monotonic() + timeout
        if self._provider is not None:
            done = threading.Thread(
                target=self._provider.force_flush, args=(int(timeout * 1000),), daemon=True
            )
            done.start()
            done.join(timeout)
        self._drain(deadline)  # a run that ended before its first write starts the exporter here
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            threading.Thread(target=_reap, args=(process,), daemon=True).start()
        self._closed = True


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Wait for the exporter to finish its last export (it bounds it), then release its pipe."""
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


class _Listener:
    """One runtime's subscription: the records of the events a trace needs."""

    def __init__(self, tracer: RunTracer, model: ModelInfo, mode: Callable[[], str] | None) -> None:
        self.tracer, self.model, self.mode = tracer, model, mode
        self.send = tracer.send
        self.capture = tracer.capture
        self.rooted: set[str] = set()
        self._kinds: dict[str, Callable[[Any], dict[str, Any] | None]] = {
            "run_started": self._run_started,
            "node_started": self._node_started,
            "node_finished": self._node_finished,
            "node_failed": self._node_failed,
            "node_skipped": self._plain("node_id", "node_type", "reason"),
            "approval_requested": self._approval_requested,
            "approval_resolved": self._approval_resolved,
            "breakpoint_requested": self._breakpoint_requested,
            "breakpoint_resolved": self._plain("request_id", "action", "decided_by", "approver"),
            "review_requested": self._review_requested,
            "review_resolved": self._plain("request_id", "action", "released", "decided_by", "approver"),
            "mode_changed": self._plain("mode", "previous"),
            "run_finished": self._run_finished,
            "custom": self._custom,
        }

    def subscriber(self) -> Callable[[ExecutionEvent], None]:
        """The function the runtime calls with each event. A plain node (neither a model turn nor a tool
        call) sends nothing when it starts and one tuple when it ends, its start in it: nearly every
        event of a big run, so this path has what it needs bound to locals and does no more; the rest
        go through :meth:`__call__`."""
        tracer, special, rooted = self.tracer, _SPECIAL, self.rooted
        records, slow, capture = tracer._records, self.__call__, self.capture
        queue, ended = records.append, _ended

        def subscriber(event: Any) -> None:
            kind = event.kind
            if capture:
                slow(event)
            elif kind == "node_finished" and event.node_type not in special:
                queue(ended(event.__dict__))
                if not tracer._scheduled:
                    tracer.send_soon()
                elif len(records) >= HELD:
                    tracer.hand_over()
            elif kind != "node_started" or (
                event.node_type in special or (tracer._interceptor is not None and event.run_id not in rooted)
            ):
                slow(event)

        return subscriber

    def __call__(self, event: ExecutionEvent) -> None:
        build = self._kinds.get(event.kind)
        if build is not None:
            record = build(event)
            if record is not None:
                self.send(record)

    @staticmethod
    def _plain(*names: str) -> Callable[[Any], dict[str, Any]]:
        return lambda event: _picked(event, names)

    def _run_started(self, event: Any) -> dict[str, Any]:
        self.rooted.add(event.run_id)
        record = _picked(event, ("plan", "plan_kind"))
        record["nodes"] = len(event.nodes)
        record["mode"] = self.mode() if self.mode is not None else None
        return record

    def _run_finished(self, event: Any) -> dict[str, Any]:
        self.rooted.discard(event.run_id)
        return _picked(event, ("status", "error", "failed_node"))

    def _node_started(self, event: Any) -> dict[str, Any]:
        node_type = event.node_type
        run_id = event.run_id
        record: dict[str, Any] = {
            "kind": "node_started",
            "run": run_id,
            "at": event.at,
            "node_id": event.node_id,
            "node_type": node_type,
            "execution_id": event.execution_id,
            "iteration": event.iteration,
        }
        if node_type in _TOOL_NODES:
            call = field_of(event.input, "call", "call")
            record["call_id"] = field_of(call, "id", "id") if call is not None else None
            record["tool"] = field_of(call, "name", "name") if call is not None else None
            if node_type == ACT_MCP:
                record["server"] = field_of(event.input, "server", "server")
            if self.capture and call is not None:
                record["arguments"] = _content(field_of(call, "arguments"))
        elif node_type == SAMPLE:
            record["provider"], record["model"] = self.model.provider, self.model.model
            if self.capture:
                record["messages"] = _content(field_of(event.input, "messages"))
        elif self.capture and event.input is not None:
            record["input"] = _content(event.input)
        if run_id not in self.rooted and self.tracer.propagates:
            record["parent"] = _current_context()
        return record

    def _node_finished(self, event: Any) -> dict[str, Any]:
        node_type = event.node_type
        record: dict[str, Any] = {
            "kind": "node_finished",
            "run": event.run_id,
            "at": event.at,
            "node_id": event.node_id,
            "execution_id": event.execution_id,
        }
        output = event.output
        if node_type in _TOOL_NODES:
            result = field_of(output, "result", "result") or output
            record["status"] = field_of(result, "status", "status")
            error = field_of(result, "error", "error")
            if error is not None:
                record["error_code"] = field_of(error, "code", "code")
                if self.capture:
                    record["error_message"] = field_of(error, "message", "message")
            if self.capture:
                record["result"] = _content(result)
        elif node_type == SAMPLE:
            usage = field_of(output, "usage", "usage")
            if isinstance(usage, Mapping):
                record["usage"] = {key: count for key, count in usage.items() if type(count) is int}
            record["finish_reason"] = field_of(output, "finish_reason", "finishReason")
            if self.capture:
                record["message"] = _content([field_of(output, "message")])
        elif self.capture and output is not None:
            record["output"] = _content(output)
        return record

    def _node_failed(self, event: Any) -> dict[str, Any]:
        names = ("node_id", "node_type", "execution_id", "iteration", "duration_ms", "error_type", "error")
        record = _picked(event, (*names, "cancelled"))
        return record

    def _approval_requested(self, event: Any) -> dict[str, Any]:
        record = _picked(event, ("request_id", "call_id", "tool", "server", "node_id", "rule"))
        if self.capture and event.arguments is not None:
            record["arguments"] = _content(event.arguments)
        return record

    def _approval_resolved(self, event: Any) -> dict[str, Any]:
        names = (
            "request_id",
            "call_id",
            "tool",
            "decision",
            "decided_by",
            "via",
            "approver",
            "grant",
            "edited",
        )
        record = _picked(event, names)
        record["rules"] = [(ref.rule, ref.file, ref.line, ref.layer) for ref in event.rules]
        if self.capture and event.reason:
            record["reason"] = event.reason
        return record

    def _breakpoint_requested(self, event: Any) -> dict[str, Any]:
        record = _picked(event, ("request_id", "node_id", "node_type", "pattern"))
        if self.capture and event.input is not None:
            record["input"] = _content(event.input)
        return record

    def _review_requested(self, event: Any) -> dict[str, Any]:
        record = _picked(event, ("request_id", "call_id", "tool", "node_id", "asked_by"))
        record["flagged"] = len(event.spans)
        if self.capture and event.result is not None:
            record["result"] = _content(event.result)
        return record

    def _custom(self, event: Any) -> dict[str, Any] | None:
        if event.name != PROGRESS or not isinstance(event.data, Mapping):
            return None
        data = event.data
        record = {
            "call_id": data.get("call_id"),
            "progress": data.get("progress"),
            "total": data.get("total"),
        }
        if self.capture and isinstance(data.get("message"), str):
            record["message"] = data["message"]
        return record


def _picked(event: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A record of ``event``'s fields ``names``, with its kind, run and time."""
    fields = event.__dict__
    record = {name: fields.get(name) for name in names}
    record["kind"], record["run"], record["at"] = event.kind, event.run_id, event.at
    return record


def _current_context() -> tuple[int, int, int] | None:
    """The span context the calling code runs in (Temporal's activity span), as plain numbers."""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return (context.trace_id, context.span_id, int(context.trace_flags))
