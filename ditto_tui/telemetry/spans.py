"""The spans of a run, made from its events as they happen (the OpenTelemetry SDK is imported here only).

Each span takes its start and end from the events' own times, so a span says when the run did a thing,
not when the exporter heard of it. Names and attributes follow the OpenTelemetry GenAI semantic
conventions where they have one (``gen_ai.*``, ``error.type``, ``mcp.method.name``); what they lack —
who decided a call, by which rule, grant or mode, through which door, after how long — is ``ditto.*``.

- the run: ``invoke_agent {graph}``, the root (``gen_ai.operation.name = invoke_agent``);
- a node execution: ``{node type} {node id}``; a model turn (``INFER.SAMPLE``) is ``chat {model}`` with its
  token usage and finish reason; a tool or MCP call (``INTERACTION.ACT.*``) is ``execute_tool {tool}``;
  a nested call's span is a child of its caller's;
- a request a person answered: ``ditto.approval {tool}``, ``ditto.breakpoint {node}``, ``ditto.review
  {tool}``, under the call (or node) it held, ended by the answer with its provenance; a decision nobody
  was asked for (a rule, a grant, a mode) is a ``ditto.decision`` event on the call's span;
- MCP progress (``mcp.progress``), an MCP server's sampling and elicitation (``mcp.sampling``,
  ``mcp.elicitation``) and mode changes are span events.

Arguments, results, prompts and model text are left out unless ``captureContent`` is on; then each goes
through the journal's secret redaction and is cut at :data:`~ditto_tui.telemetry.CONTENT_LIMIT`
characters. A run's spans that are still open when it finishes end with it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ditto_tui.runtime.events import (
    ApprovalRequested,
    ApprovalResolved,
    BreakpointRequested,
    BreakpointResolved,
    CustomEvent,
    ExecutionEvent,
    ModeChanged,
    NodeFailed,
    NodeFinished,
    NodeSkipped,
    NodeStarted,
    ReviewRequested,
    ReviewResolved,
    RunFinished,
    RunStarted,
)
from ditto_tui.sanitize import SecretRedactor
from ditto_tui.supervise.journal._lines import ACT_MCP, ACT_TOOL, field_of, wire_form
from ditto_tui.telemetry import CONTENT_LIMIT, TraceSettings

logger = logging.getLogger(__name__)

SCOPE = "ditto_tui"
SAMPLE = "INFER.SAMPLE"
PROGRESS = "mcp_progress"
_TOOL_NODES = frozenset({ACT_TOOL, ACT_MCP})
_CUT = "…"

Attributes = dict[str, Any]


def _ns(at: float) -> int:
    return int(at * 1e9)


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What a runtime's model turns say of their model: the provider and the requested model name."""

    provider: str | None = None
    model: str | None = None


@dataclass
class _Open:
    """A span still open, with the context its children start in (made once, when first needed)."""

    span: Span
    _context: otel_context.Context | None = None

    @property
    def context(self) -> otel_context.Context:
        if self._context is None:
            self._context = trace.set_span_in_context(self.span)
        return self._context


@dataclass
class _Request:
    span: Span
    at: float


@dataclass
class _Run:
    """The open spans of one run."""

    root: _Open | None
    mode: str | None = None
    executions: dict[str, _Open] = field(default_factory=dict)
    nodes: dict[str, _Open] = field(default_factory=dict)
    calls: dict[str, _Open] = field(default_factory=dict)
    servers: dict[str, _Open] = field(default_factory=dict)
    requests: dict[str, _Request] = field(default_factory=dict)


class CountingExporter(SpanExporter):
    """An exporter that counts what it could not send and logs it, and never raises."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.exported = 0
        self.failed = 0
        self._failures = 0

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        try:
            result = self.exporter.export(spans)
        except Exception as exc:  # an exporter's bug must not reach the SDK's thread
            logger.warning("exporting %d spans failed: %s", len(spans), exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
            self._failures += 1
            if self._failures in (1, 10) or self._failures % 100 == 0:
                logger.warning(
                    "%d spans not exported so far (%d failed exports)", self.failed, self._failures
                )
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporter.force_flush(timeout_millis)


def _exporter(settings: TraceSettings) -> SpanExporter:
    headers = dict(settings.headers)
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        insecure = settings.endpoint.startswith("http://")
        return GrpcExporter(
            endpoint=settings.endpoint,
            headers=headers,
            timeout=settings.timeout_seconds,
            insecure=insecure,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=settings.traces_url, headers=headers, timeout=settings.timeout_seconds)


def _log_to(path: Path) -> None:
    """Send the SDK's and the exporters' log records to ``path`` (never to a terminal the app draws on)."""
    from ditto_tui.home import StateDirError, open_private

    try:
        stream = open(open_private(path, append=True), "a", encoding="utf-8", errors="replace")  # noqa: SIM115
    except StateDirError as exc:
        logger.warning("traces: no log file: %s", exc.message)
        stream = None
    handler: logging.Handler = logging.StreamHandler(stream) if stream else logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("opentelemetry", __name__):
        named = logging.getLogger(name)
        named.addHandler(handler)
        named.propagate = False


class RunTracer:
    """Turns the events of the runtimes it is attached to into spans of ``tracer``."""

    def __init__(
        self,
        tracer: trace.Tracer,
        settings: TraceSettings,
        *,
        provider: TracerProvider | None = None,
        exporter: CountingExporter | None = None,
    ) -> None:
        self.tracer, self.settings, self.provider, self.exporter = tracer, settings, provider, exporter
        self._redactor = SecretRedactor(settings.secrets)
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()
        self._interceptor: object | None = None

    @classmethod
    def exporting(cls, settings: TraceSettings, workspace: Path) -> RunTracer:
        """A tracer whose spans go to ``settings``' collector in batches, from a thread of the SDK."""
        from ditto_tui.home import logs_dir

        _log_to(logs_dir(workspace) / "otel.log")
        resource = Resource.create({"service.name": settings.service_name})
        sampler = ParentBased(TraceIdRatioBased(settings.sampling))
        provider = TracerProvider(resource=resource, sampler=sampler)
        exporter = CountingExporter(_exporter(settings))
        timeout_ms = int(settings.timeout_seconds * 1000)
        provider.add_span_processor(BatchSpanProcessor(exporter, export_timeout_millis=timeout_ms))
        return cls(provider.get_tracer(SCOPE), settings, provider=provider, exporter=exporter)

    def temporal_interceptor(self) -> object:
        """A ``temporalio.contrib.opentelemetry.TracingInterceptor`` over this tracer (one per tracer)."""
        if self._interceptor is None:
            from temporalio.contrib.opentelemetry import TracingInterceptor

            self._interceptor = TracingInterceptor(self.tracer)
        return self._interceptor

    @property
    def failed(self) -> int:
        """How many spans could not be exported so far."""
        return 0 if self.exporter is None else self.exporter.failed

    def attach(
        self, runtime: Any, model: ModelInfo | None = None, mode: Callable[[], str] | None = None
    ) -> Any:
        """Follow ``runtime``'s events; ``model`` names its model turns' model, ``mode`` says the session's
        mode when a run starts. Returns the unsubscribe function."""
        listener = _Listener(self, model or ModelInfo(), mode)
        return runtime.subscribe(listener)

    def flush(self, timeout: float = 5.0) -> bool:
        """Export every finished span now, waiting at most ``timeout`` seconds."""
        if self.provider is None:
            return True
        return bool(self.provider.force_flush(int(timeout * 1000)))

    def close(self, timeout: float = 1.0) -> None:
        """Flush for at most ``timeout`` seconds, then stop exporting (spans still queued are dropped)."""
        if self.provider is None:
            return
        self.flush(timeout)
        processor_shutdown = threading.Thread(target=self.provider.shutdown, daemon=True)
        processor_shutdown.start()
        processor_shutdown.join(timeout)

    # -- content ----------------------------------------------------------------------------------------

    def content(self, value: Any) -> str:
        """``value`` as JSON text for a span: redacted, then cut at the limit."""
        try:
            text = json.dumps(self._redactor.redact_data(_wire(value)), ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            text = self._redactor.redact(repr(value))
        if len(text) > CONTENT_LIMIT:
            text = text[: CONTENT_LIMIT - 1] + _CUT
        return text

    def text(self, value: str) -> str:
        """A string that is not content but may hold a secret (an error's message): redacted, bounded."""
        text = self._redactor.redact(value)
        return text if len(text) <= CONTENT_LIMIT else text[: CONTENT_LIMIT - 1] + _CUT

    # -- MCP servers' requests ---------------------------------------------------------------------------

    def client_request(self, fields: Mapping[str, Any]) -> None:
        """An MCP server's sampling or elicitation and its decision, as an event on the span of the call
        that server is running (else on the run's root; else nowhere)."""
        server = str(fields.get("server") or "")
        request = str(fields.get("request") or "request")
        attributes: Attributes = {
            "mcp.server": server,
            "ditto.decision": str(fields.get("decision") or ""),
            "ditto.decided_by": str(fields.get("by") or ""),
        }
        with self._lock:
            target = next(
                (run.servers[server] for run in self._runs.values() if server in run.servers),
                None,
            ) or next((run.root for run in self._runs.values() if run.root is not None), None)
        if target is not None:
            name = "mcp.sampling" if request.startswith("sampling") else f"mcp.{request}"
            target.span.add_event(name, attributes)


def _wire(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return wire_form(value)


def _rule_attributes(event: ApprovalResolved) -> Attributes:
    attributes: Attributes = {}
    if event.rules:
        first = event.rules[0]
        attributes["ditto.rule"] = first.rule
        if first.file is not None:
            attributes["ditto.rule.file"] = first.file
        if first.line is not None:
            attributes["ditto.rule.line"] = first.line
        if first.layer is not None:
            attributes["ditto.rule.layer"] = first.layer
    return attributes


class _Listener:
    """One runtime's subscription: its events become spans of the tracer."""

    def __init__(self, tracer: RunTracer, model: ModelInfo, mode: Callable[[], str] | None) -> None:
        self.tracer, self.model, self.mode = tracer, model, mode
        self.runs = tracer._runs
        self.capture = tracer.settings.capture_content
        self._handlers: dict[type[ExecutionEvent], Callable[[Any], None]] = {
            RunStarted: self._run_started,
            NodeStarted: self._node_started,
            NodeFinished: self._node_finished,
            NodeFailed: self._node_failed,
            NodeSkipped: self._node_skipped,
            ApprovalRequested: self._approval_requested,
            ApprovalResolved: self._approval_resolved,
            BreakpointRequested: self._breakpoint_requested,
            BreakpointResolved: self._breakpoint_resolved,
            ReviewRequested: self._review_requested,
            ReviewResolved: self._review_resolved,
            ModeChanged: self._mode_changed,
            RunFinished: self._run_finished,
            CustomEvent: self._custom,
        }
        self._chat_name = f"chat {model.model}" if model.model else "chat"

    def __call__(self, event: ExecutionEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    # -- the run --------------------------------------------------------------------------------------

    def _run(self, run_id: str) -> _Run:
        """The open spans of ``run_id``; a run not started here (a durable run's node, on its worker) has
        no root: its spans start in the current context (the activity's, from Temporal's interceptor)."""
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = _Run(root=None)
        return run

    def _run_started(self, event: RunStarted) -> None:
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.plan,
            "ditto.run.id": event.run_id,
            "ditto.run.kind": event.plan_kind,
            "ditto.run.nodes": len(event.nodes),
        }
        mode = self.mode() if self.mode is not None else None
        if mode is not None:
            attributes["ditto.mode"] = mode
        span = self.tracer.tracer.start_span(
            f"invoke_agent {event.plan}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.at),
        )
        self.runs[event.run_id] = _Run(root=_Open(span), mode=mode)

    def _run_finished(self, event: RunFinished) -> None:
        run = self.runs.pop(event.run_id, None)
        if run is None:
            return
        end = _ns(event.at)
        for request in run.requests.values():
            request.span.set_attribute("ditto.decision", "unanswered")
            request.span.end(end_time=end)
        for open_span in run.executions.values():
            open_span.span.set_status(Status(StatusCode.ERROR, "the run ended first"))
            open_span.span.end(end_time=end)
        if run.root is None:
            return
        span = run.root.span
        span.set_attribute("ditto.run.status", event.status)
        if event.failed_node is not None:
            span.set_attribute("ditto.run.failed_node", event.failed_node)
        if event.status != "succeeded":
            span.set_attribute("error.type", event.status)
            span.set_status(Status(StatusCode.ERROR, self.tracer.text(event.error or event.status)))
        span.end(end_time=end)

    def _parent(self, run: _Run, node_id: str | None = None, call_id: str | None = None) -> Any:
        """The context a span of ``run`` starts in: its call's, its node's, its caller's, the run's."""
        if call_id is not None and (found := run.calls.get(call_id)) is not None:
            return found.context
        if node_id is not None:
            if (found := run.nodes.get(node_id)) is not None and call_id is not None:
                return found.context
            caller, sep, _rest = node_id.rpartition("/")
            if sep and (found := run.nodes.get(caller)) is not None:
                return found.context
        return run.root.context if run.root is not None else None

    # -- nodes ----------------------------------------------------------------------------------------

    def _node_started(self, event: NodeStarted) -> None:
        run = self._run(event.run_id)
        node_type = event.node_type
        attributes: Attributes = {
            "ditto.node.id": event.node_id,
            "ditto.node.type": node_type,
            "ditto.execution.id": event.execution_id,
        }
        if event.iteration is not None:
            attributes["ditto.iteration"] = event.iteration
        call_id = server = None
        if node_type in _TOOL_NODES:
            call = field_of(event.input, "call", "call")
            call_id = field_of(call, "id", "id")
            tool = (
                field_of(call, "name", "name")
                or field_of(event.input, "operation", "operation")
                or "discover"
            )
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = str(tool)
            attributes["gen_ai.tool.type"] = "extension" if node_type == ACT_MCP else "function"
            if isinstance(call_id, str):
                attributes["gen_ai.tool.call.id"] = call_id
            if node_type == ACT_MCP:
                server = field_of(event.input, "server", "server")
                attributes["mcp.method.name"] = "tools/call" if call is not None else "tools/list"
                if isinstance(server, str):
                    attributes["mcp.server"] = server
            if self.capture and call is not None:
                attributes["gen_ai.tool.call.arguments"] = self.tracer.content(field_of(call, "arguments"))
            name = f"execute_tool {tool}"
        elif node_type == SAMPLE:
            attributes["gen_ai.operation.name"] = "chat"
            if self.model.provider is not None:
                attributes["gen_ai.provider.name"] = self.model.provider
            if self.model.model is not None:
                attributes["gen_ai.request.model"] = self.model.model
            if self.capture:
                attributes["gen_ai.input.messages"] = self.tracer.content(field_of(event.input, "messages"))
            name = self._chat_name
        else:
            if self.capture and event.input is not None:
                attributes["ditto.node.input"] = self.tracer.content(event.input)
            name = f"{node_type} {event.node_id}"
        parent = self._parent(run, event.node_id)
        span = self.tracer.tracer.start_span(
            name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.at),
        )
        opened = _Open(span)
        run.executions[event.execution_id] = opened
        run.nodes[event.node_id] = opened
        if isinstance(call_id, str):
            run.calls[call_id] = opened
        if isinstance(server, str):
            run.servers[server] = opened

    def _ended(self, run_id: str, execution_id: str, node_id: str) -> tuple[_Run, Span] | None:
        run = self.runs.get(run_id)
        if run is None:
            return None
        opened = run.executions.pop(execution_id, None)
        if opened is None:
            return None
        if run.nodes.get(node_id) is opened:
            del run.nodes[node_id]
        for table in (run.calls, run.servers):
            for key in [key for key, value in table.items() if value is opened]:
                del table[key]
        if run.root is None and not run.executions and not run.requests:  # a durable run's node, done
            del self.runs[run_id]
        return run, opened.span

    def _node_finished(self, event: NodeFinished) -> None:
        ended = self._ended(event.run_id, event.execution_id, event.node_id)
        if ended is None:
            return
        _run, span = ended
        output = event.output
        if event.node_type in _TOOL_NODES:
            result = field_of(output, "result", "result") or output
            status = field_of(result, "status", "status")
            if isinstance(status, str):
                span.set_attribute("ditto.tool.status", status)
                if status != "success":
                    error = field_of(result, "error", "error")
                    code = field_of(error, "code", "code") if error is not None else None
                    span.set_attribute("error.type", str(code or status))
                    # the message is the result's text (a denial's says the person's reason): content
                    message = field_of(error, "message", "message") if self.capture and error else None
                    said = self.tracer.text(str(message or code or status))
                    span.set_status(Status(StatusCode.ERROR, said))
            if self.capture:
                span.set_attribute("gen_ai.tool.call.result", self.tracer.content(result))
        elif event.node_type == SAMPLE:
            usage = field_of(output, "usage", "usage")
            if isinstance(usage, Mapping):
                for key, name in _USAGE:
                    count = usage.get(key)
                    if type(count) is int:
                        span.set_attribute(name, count)
            reason = field_of(output, "finish_reason", "finishReason")
            if isinstance(reason, str):
                span.set_attribute("gen_ai.response.finish_reasons", (reason,))
            if self.capture:
                span.set_attribute(
                    "gen_ai.output.messages", self.tracer.content([field_of(output, "message")])
                )
        elif self.capture and output is not None:
            span.set_attribute("ditto.node.output", self.tracer.content(output))
        span.end(end_time=_ns(event.at))

    def _node_failed(self, event: NodeFailed) -> None:
        ended = self._ended(event.run_id, event.execution_id, event.node_id)
        if ended is None:
            return
        _run, span = ended
        span.set_attribute("error.type", "cancelled" if event.cancelled else event.error_type)
        span.set_status(Status(StatusCode.ERROR, self.tracer.text(event.error)))
        span.end(end_time=_ns(event.at))

    def _node_skipped(self, event: NodeSkipped) -> None:
        run = self._run(event.run_id)
        at = _ns(event.at)
        attributes: Attributes = {
            "ditto.node.id": event.node_id,
            "ditto.node.type": event.node_type,
            "ditto.node.skipped": event.reason,
        }
        span = self.tracer.tracer.start_span(
            f"{event.node_type} {event.node_id}",
            context=self._parent(run, event.node_id),
            attributes=attributes,
            start_time=at,
        )
        span.end(end_time=at)

    # -- requests and decisions -----------------------------------------------------------------------

    def _open_request(
        self, event: ExecutionEvent, request_id: str, name: str, parent: Any, attributes: Attributes
    ) -> None:
        run = self._run(event.run_id)
        attributes["ditto.request.id"] = request_id
        span = self.tracer.tracer.start_span(
            name, context=parent, attributes=attributes, start_time=_ns(event.at)
        )
        run.requests[request_id] = _Request(span, event.at)

    def _close_request(self, event: ExecutionEvent, request_id: str, attributes: Attributes) -> bool:
        run = self.runs.get(event.run_id)
        request = run.requests.pop(request_id, None) if run is not None else None
        if request is None:
            return False
        attributes["ditto.request.wait_ms"] = round((event.at - request.at) * 1000, 3)
        request.span.set_attributes(attributes)
        request.span.end(end_time=_ns(event.at))
        return True

    def _decided(
        self, decided_by: str | None, via: str | None, approver: str | None, run_id: str
    ) -> Attributes:
        attributes: Attributes = {"ditto.decided_by": decided_by or "unknown"}
        if via is not None:
            attributes["ditto.via"] = via
        if approver is not None:
            attributes["ditto.approver"] = approver
        if decided_by == "mode":
            run = self.runs.get(run_id)
            if run is not None and run.mode is not None:
                attributes["ditto.mode"] = run.mode
        return attributes

    def _approval_requested(self, event: ApprovalRequested) -> None:
        run = self._run(event.run_id)
        attributes: Attributes = {
            "ditto.request.kind": "approval",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
        }
        if event.server is not None:
            attributes["mcp.server"] = event.server
        if event.rule is not None:
            attributes["ditto.rule"] = event.rule
        if self.capture and event.arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = self.tracer.content(event.arguments)
        parent = self._parent(run, event.node_id, event.call_id)
        self._open_request(event, event.request_id, f"ditto.approval {event.tool}", parent, attributes)

    def _approval_resolved(self, event: ApprovalResolved) -> None:
        attributes = self._decided(event.decided_by, event.via, event.approver, event.run_id)
        attributes["ditto.decision"] = event.decision
        attributes.update(_rule_attributes(event))
        if event.grant is not None:
            attributes["ditto.grant"] = event.grant
        if event.edited:
            attributes["ditto.arguments_edited"] = True
        if self.capture and event.reason:
            attributes["ditto.reason"] = self.tracer.content(event.reason)
        if self._close_request(event, event.request_id, attributes):
            return
        run = self.runs.get(event.run_id)
        if run is None:
            return
        target = run.calls.get(event.call_id) or run.root
        if target is not None:
            attributes["gen_ai.tool.name"] = event.tool
            attributes["gen_ai.tool.call.id"] = event.call_id
            target.span.add_event("ditto.decision", attributes, timestamp=_ns(event.at))

    def _breakpoint_requested(self, event: BreakpointRequested) -> None:
        run = self._run(event.run_id)
        attributes: Attributes = {
            "ditto.request.kind": "breakpoint",
            "ditto.node.id": event.node_id,
            "ditto.node.type": event.node_type,
            "ditto.breakpoint": event.pattern,
        }
        if self.capture and event.input is not None:
            attributes["ditto.node.input"] = self.tracer.content(event.input)
        parent = self._parent(run, event.node_id)
        self._open_request(event, event.request_id, f"ditto.breakpoint {event.node_id}", parent, attributes)

    def _breakpoint_resolved(self, event: BreakpointResolved) -> None:
        attributes = self._decided(event.decided_by, None, event.approver, event.run_id)
        attributes["ditto.decision"] = event.action
        self._close_request(event, event.request_id, attributes)

    def _review_requested(self, event: ReviewRequested) -> None:
        run = self._run(event.run_id)
        attributes: Attributes = {
            "ditto.request.kind": "review",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "ditto.review.flagged": len(event.spans),
        }
        if event.asked_by is not None:
            attributes["ditto.review.asked_by"] = event.asked_by
        if self.capture and event.result is not None:
            attributes["gen_ai.tool.call.result"] = self.tracer.content(event.result)
        parent = self._parent(run, event.node_id, event.call_id)
        self._open_request(event, event.request_id, f"ditto.review {event.tool}", parent, attributes)

    def _review_resolved(self, event: ReviewResolved) -> None:
        attributes = self._decided(event.decided_by, None, event.approver, event.run_id)
        attributes["ditto.decision"] = event.action
        attributes["ditto.review.released"] = event.released
        self._close_request(event, event.request_id, attributes)

    def _mode_changed(self, event: ModeChanged) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        run.mode = event.mode
        if run.root is not None:
            run.root.span.add_event(
                "ditto.mode_changed",
                {"ditto.mode": event.mode, "ditto.mode.previous": event.previous},
                timestamp=_ns(event.at),
            )

    def _custom(self, event: CustomEvent) -> None:
        if event.name != PROGRESS:
            return
        run = self.runs.get(event.run_id)
        data = event.data if isinstance(event.data, Mapping) else {}
        call_id = data.get("call_id")
        target = run.calls.get(call_id) if run is not None and isinstance(call_id, str) else None
        if target is None:
            return
        attributes: Attributes = {"mcp.progress": float(data.get("progress") or 0)}
        total = data.get("total")
        if isinstance(total, int | float):
            attributes["mcp.progress.total"] = float(total)
        if self.capture and isinstance(data.get("message"), str):
            attributes["mcp.progress.message"] = self.tracer.text(data["message"])
        target.span.add_event("mcp.progress", attributes, timestamp=_ns(event.at))


_USAGE = (
    ("inputTokens", "gen_ai.usage.input_tokens"),
    ("promptTokens", "gen_ai.usage.input_tokens"),
    ("outputTokens", "gen_ai.usage.output_tokens"),
    ("completionTokens", "gen_ai.usage.output_tokens"),
)
"""The usage counts a model reports (camelCase, either vocabulary) and the conventions' names for them."""
