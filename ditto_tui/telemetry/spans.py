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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ditto_tui.sanitize import SecretRedactor
from ditto_tui.supervise.journal._lines import ACT_MCP, ACT_TOOL
from ditto_tui.telemetry import CONTENT_LIMIT, TraceSettings

logger = logging.getLogger(__name__)

SCOPE = "ditto_tui"
SAMPLE = "INFER.SAMPLE"
PROGRESS = "mcp_progress"
_TOOL_NODES = frozenset({ACT_TOOL, ACT_MCP})
QUEUE_SIZE = 1 << 17
"""Spans the exporter holds before it drops any (the SDK's 2,048 is a second of a busy run)."""
_CUT = "…"

Attributes = dict[str, Any]


def _ns(at: float) -> int:
    return int(at * 1e9)


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
    placeholders: dict[str, int] = field(default_factory=dict)
    """Span ids chosen for plain callers still running, which nested calls' spans already name."""


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

    return HttpExporter(endpoint=settings.endpoint, headers=headers, timeout=settings.timeout_seconds)


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


class ChosenIds(RandomIdGenerator):
    """Random ids, except the next span's when one was chosen for it beforehand (:attr:`chosen`)."""

    chosen: int | None = None

    def generate_span_id(self) -> int:
        chosen, self.chosen = self.chosen, None
        return chosen if chosen is not None else super().generate_span_id()


def exporting_provider(settings: TraceSettings, log: Path) -> TracerProvider:
    """A tracer provider whose spans go to ``settings``' collector in batches, from a thread of the SDK;
    its log records go to ``log``."""
    _log_to(log)
    resource = Resource.create({"service.name": settings.service_name})
    sampler = ParentBased(TraceIdRatioBased(settings.sampling))
    provider = TracerProvider(resource=resource, sampler=sampler, id_generator=ChosenIds())
    exporter = CountingExporter(_exporter(settings))
    timeout_ms = int(settings.timeout_seconds * 1000)
    processor = BatchSpanProcessor(exporter, max_queue_size=QUEUE_SIZE, export_timeout_millis=timeout_ms)
    provider.add_span_processor(processor)
    provider.counting = exporter  # type: ignore[attr-defined]
    return provider


def _remote(parent: Sequence[int] | None) -> otel_context.Context | None:
    """The context of a span made in another process (a Temporal activity's), from its numbers."""
    if not parent:
        return None
    trace_id, span_id, flags = parent
    remote = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return trace.set_span_in_context(NonRecordingSpan(remote))


def _node_attributes(record: dict[str, Any]) -> Attributes:
    """What every node's span says of it: its id, type, execution and iteration."""
    attributes: Attributes = {
        "ditto.node.id": record["node_id"],
        "ditto.node.type": record["node_type"],
        "ditto.execution.id": record["execution_id"],
    }
    if record.get("iteration") is not None:
        attributes["ditto.iteration"] = record["iteration"]
    return attributes


def _rule_attributes(rules: Sequence[Sequence[Any]] | None) -> Attributes:
    attributes: Attributes = {}
    if rules:
        rule, file, line, layer = rules[0]
        attributes["ditto.rule"] = rule
        if file is not None:
            attributes["ditto.rule.file"] = file
        if line is not None:
            attributes["ditto.rule.line"] = line
        if layer is not None:
            attributes["ditto.rule.layer"] = layer
    return attributes


def _expanded(record: Sequence[Any]) -> dict[str, Any] | None:
    """A plain node's whole span, sent as a tuple at its end (see ``ditto_tui.telemetry.feed``), as a
    record."""
    if len(record) == 7:
        run, at, node_id, node_type, execution_id, iteration, duration_ms = record
        return {
            "kind": "node_done",
            "run": run,
            "at": at,
            "node_id": node_id,
            "node_type": node_type,
            "execution_id": execution_id,
            "iteration": iteration,
            "duration_ms": duration_ms,
        }
    return None


class SpanBuilder:
    """Turns the records of :mod:`ditto_tui.telemetry.feed` into spans of ``tracer``."""

    def __init__(self, tracer: trace.Tracer, settings: TraceSettings, ids: ChosenIds | None = None) -> None:
        self.tracer, self.settings = tracer, settings
        self._ids = ids or ChosenIds()
        self.capture = settings.capture_content
        self.runs: dict[str, _Run] = {}
        self._redactor = SecretRedactor(settings.secrets)
        self._kinds: dict[str, Callable[[dict[str, Any]], None]] = {
            "run_started": self._run_started,
            "run_finished": self._run_finished,
            "node_started": self._node_started,
            "node_finished": self._node_finished,
            "node_done": self._node_done,
            "node_failed": self._node_failed,
            "node_skipped": self._node_skipped,
            "approval_requested": self._approval_requested,
            "approval_resolved": self._approval_resolved,
            "breakpoint_requested": self._breakpoint_requested,
            "breakpoint_resolved": self._breakpoint_resolved,
            "review_requested": self._review_requested,
            "review_resolved": self._review_resolved,
            "mode_changed": self._mode_changed,
            "custom": self._progress,
            "client_request": self._client_request,
        }

    def handle(self, record: dict[str, Any] | Sequence[Any]) -> None:
        """One record; one that is not understood is passed over."""
        fields = record if isinstance(record, dict) else _expanded(record)
        if fields is None:
            return
        handler = self._kinds.get(str(fields.get("kind")))
        if handler is not None:
            handler(fields)

    # -- content ----------------------------------------------------------------------------------------

    def content(self, text: str) -> str:
        """JSON text of the run's content for a span: its secrets redacted, then cut at the limit."""
        try:
            redacted = json.dumps(self._redactor.redact_data(json.loads(text)), ensure_ascii=False)
        except ValueError:
            redacted = self._redactor.redact(text)
        return self._bounded(redacted)

    def text(self, value: Any) -> str:
        """A string that is not content but may hold a secret (an error's message): redacted, bounded."""
        return self._bounded(self._redactor.redact(str(value)))

    @staticmethod
    def _bounded(text: str) -> str:
        return text if len(text) <= CONTENT_LIMIT else text[: CONTENT_LIMIT - 1] + _CUT

    # -- the run --------------------------------------------------------------------------------------

    def _run(self, run_id: str) -> _Run:
        """The open spans of ``run_id``; a run whose root is elsewhere (a durable run's node on its worker)
        has none here: its spans start in the context their records carry."""
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = _Run(root=None)
        return run

    def _start(self, name: str, parent: Any, attributes: Attributes, at: float) -> Span:
        return self.tracer.start_span(
            name, context=parent, kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(at)
        )

    def _run_started(self, record: dict[str, Any]) -> None:
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": record["plan"],
            "ditto.run.id": record["run"],
            "ditto.run.kind": record["plan_kind"],
            "ditto.run.nodes": record["nodes"],
        }
        if record.get("mode") is not None:
            attributes["ditto.mode"] = record["mode"]
        span = self._start(f"invoke_agent {record['plan']}", None, attributes, record["at"])
        self.runs[record["run"]] = _Run(root=_Open(span), mode=record.get("mode"))

    def _run_finished(self, record: dict[str, Any]) -> None:
        run = self.runs.pop(record["run"], None)
        if run is None:
            return
        end = _ns(record["at"])
        for request in run.requests.values():
            request.span.set_attribute("ditto.decision", "unanswered")
            request.span.end(end_time=end)
        for opened in run.executions.values():
            opened.span.set_status(Status(StatusCode.ERROR, "the run ended first"))
            opened.span.end(end_time=end)
        if run.root is None:
            return
        span, status = run.root.span, record["status"]
        span.set_attribute("ditto.run.status", status)
        if record.get("failed_node") is not None:
            span.set_attribute("ditto.run.failed_node", record["failed_node"])
        if status != "succeeded":
            span.set_attribute("error.type", status)
            span.set_status(Status(StatusCode.ERROR, self.text(record.get("error") or status)))
        span.end(end_time=end)

    def _parent(self, run: _Run, node_id: str | None = None, call_id: str | None = None) -> Any:
        """The context a span of ``run`` starts in: its call's, its node's, its caller's, the run's."""
        if call_id is not None and (found := run.calls.get(call_id)) is not None:
            return found.context
        if node_id is not None:
            if call_id is not None and (found := run.nodes.get(node_id)) is not None:
                return found.context
            caller, sep, _rest = node_id.rpartition("/")
            if sep:
                if (found := run.nodes.get(caller)) is not None:
                    return found.context
                if run.root is not None:  # a plain caller still running: its span comes at its end
                    return self._placeholder(run, caller)
        return run.root.context if run.root is not None else None

    def _placeholder(self, run: _Run, caller: str) -> otel_context.Context:
        """The context of the span ``caller`` will have: its id chosen now, its span made when it ends
        (a plain node's start is not sent), under the run's trace."""
        span_id = run.placeholders.get(caller)
        if span_id is None:
            span_id = run.placeholders[caller] = self._ids.generate_span_id()
        assert run.root is not None
        root = run.root.span.get_span_context()
        context = SpanContext(root.trace_id, span_id, is_remote=False, trace_flags=root.trace_flags)
        return trace.set_span_in_context(NonRecordingSpan(context))

    # -- nodes ----------------------------------------------------------------------------------------

    def _node_started(self, record: dict[str, Any]) -> None:
        run = self._run(record["run"])
        node_id, node_type = record["node_id"], record["node_type"]
        attributes = _node_attributes(record)
        call_id = record.get("call_id")
        server = record.get("server")
        if node_type in _TOOL_NODES:
            tool = record.get("tool") or "discover"
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = str(tool)
            attributes["gen_ai.tool.type"] = "extension" if node_type == ACT_MCP else "function"
            if isinstance(call_id, str):
                attributes["gen_ai.tool.call.id"] = call_id
            if node_type == ACT_MCP:
                attributes["mcp.method.name"] = "tools/call" if record.get("tool") else "tools/list"
                if isinstance(server, str):
                    attributes["mcp.server"] = server
            if self.capture and isinstance(record.get("arguments"), str):
                attributes["gen_ai.tool.call.arguments"] = self.content(record["arguments"])
            name = f"execute_tool {tool}"
        elif node_type == SAMPLE:
            attributes["gen_ai.operation.name"] = "chat"
            if record.get("provider") is not None:
                attributes["gen_ai.provider.name"] = record["provider"]
            if record.get("model") is not None:
                attributes["gen_ai.request.model"] = record["model"]
            if self.capture and isinstance(record.get("messages"), str):
                attributes["gen_ai.input.messages"] = self.content(record["messages"])
            name = f"chat {record['model']}" if record.get("model") else "chat"
        else:
            if self.capture and isinstance(record.get("input"), str):
                attributes["ditto.node.input"] = self.content(record["input"])
            name = f"{node_type} {node_id}"
        parent = self._parent(run, node_id)
        if parent is None:
            parent = _remote(record.get("parent"))
        opened = _Open(self._start(name, parent, attributes, record["at"]))
        run.executions[record["execution_id"]] = opened
        run.nodes[node_id] = opened
        if isinstance(call_id, str):
            run.calls[call_id] = opened
        if isinstance(server, str):
            run.servers[server] = opened

    def _ended(self, record: dict[str, Any]) -> Span | None:
        run_id = record["run"]
        run = self.runs.get(run_id)
        if run is None:
            return None
        opened = run.executions.pop(record["execution_id"], None)
        if opened is None:
            return None
        if run.nodes.get(record["node_id"]) is opened:
            del run.nodes[record["node_id"]]
        for table in (run.calls, run.servers):
            for key in [key for key, value in table.items() if value is opened]:
                del table[key]
        if run.root is None and not run.executions and not run.requests:  # a durable run's node, done
            del self.runs[run_id]
        return opened.span

    def _node_finished(self, record: dict[str, Any]) -> None:
        span = self._ended(record)
        if span is None:
            return
        status = record.get("status")
        if isinstance(status, str):
            span.set_attribute("ditto.tool.status", status)
            if status != "success":
                code = record.get("error_code")
                span.set_attribute("error.type", str(code or status))
                # the message is the result's text (a denial's says the person's reason): content
                said = record.get("error_message") if self.capture else None
                span.set_status(Status(StatusCode.ERROR, self.text(said or code or status)))
            if self.capture and isinstance(record.get("result"), str):
                span.set_attribute("gen_ai.tool.call.result", self.content(record["result"]))
        usage = record.get("usage")
        if isinstance(usage, Mapping):
            for key, name in _USAGE:
                count = usage.get(key)
                if type(count) is int:
                    span.set_attribute(name, count)
        if isinstance(record.get("finish_reason"), str):
            span.set_attribute("gen_ai.response.finish_reasons", (record["finish_reason"],))
        if self.capture and isinstance(record.get("message"), str):
            span.set_attribute("gen_ai.output.messages", self.content(record["message"]))
        if self.capture and isinstance(record.get("output"), str):
            span.set_attribute("ditto.node.output", self.content(record["output"]))
        span.end(end_time=_ns(record["at"]))

    def _node_done(self, record: dict[str, Any]) -> None:
        """A plain node's end: its whole span at once (it started ``duration_ms`` before), or, when its
        start was sent (a durable run's node, in its activity's context), the span opened then."""
        run = self.runs.get(record["run"])
        if run is not None and record["execution_id"] in run.executions:
            self._node_finished(record)
            return
        span = self._whole(record)
        span.end(end_time=_ns(record["at"]))

    def _whole(self, record: dict[str, Any]) -> Span:
        run = self._run(record["run"])
        node_id, node_type = record["node_id"], record["node_type"]
        started = record["at"] - float(record.get("duration_ms") or 0) / 1000
        parent = self._parent(run, node_id)
        self._ids.chosen = run.placeholders.pop(node_id, None)  # its nested calls' spans name it already
        return self._start(f"{node_type} {node_id}", parent, _node_attributes(record), started)

    def _node_failed(self, record: dict[str, Any]) -> None:
        run = self.runs.get(record["run"])
        opened = run is not None and record["execution_id"] in run.executions
        span = self._ended(record) if opened else self._whole(record)
        if span is None:
            return
        span.set_attribute(
            "error.type", "cancelled" if record.get("cancelled") else str(record["error_type"])
        )
        span.set_status(Status(StatusCode.ERROR, self.text(record.get("error") or "")))
        span.end(end_time=_ns(record["at"]))

    def _node_skipped(self, record: dict[str, Any]) -> None:
        run = self._run(record["run"])
        attributes: Attributes = {
            "ditto.node.id": record["node_id"],
            "ditto.node.type": record["node_type"],
            "ditto.node.skipped": record["reason"],
        }
        name = f"{record['node_type']} {record['node_id']}"
        span = self._start(name, self._parent(run, record["node_id"]), attributes, record["at"])
        span.end(end_time=_ns(record["at"]))

    # -- requests and decisions -----------------------------------------------------------------------

    def _open_request(self, record: dict[str, Any], name: str, parent: Any, attributes: Attributes) -> None:
        run = self._run(record["run"])
        attributes["ditto.request.id"] = record["request_id"]
        run.requests[record["request_id"]] = _Request(
            self._start(name, parent, attributes, record["at"]), record["at"]
        )

    def _close_request(self, record: dict[str, Any], attributes: Attributes) -> bool:
        run = self.runs.get(record["run"])
        request = run.requests.pop(record["request_id"], None) if run is not None else None
        if request is None:
            return False
        attributes["ditto.request.wait_ms"] = round((record["at"] - request.at) * 1000, 3)
        request.span.set_attributes(attributes)
        request.span.end(end_time=_ns(record["at"]))
        return True

    def _decided(self, record: dict[str, Any]) -> Attributes:
        decided_by = record.get("decided_by")
        attributes: Attributes = {"ditto.decided_by": decided_by or "unknown"}
        for key, name in (("via", "ditto.via"), ("approver", "ditto.approver"), ("grant", "ditto.grant")):
            if record.get(key) is not None:
                attributes[name] = record[key]
        if decided_by == "mode":
            run = self.runs.get(record["run"])
            if run is not None and run.mode is not None:
                attributes["ditto.mode"] = run.mode
        return attributes

    def _call_request(self, record: dict[str, Any], kind: str, attributes: Attributes) -> None:
        """Open the span of a request about a call (an approval, a result review), under the call."""
        attributes["ditto.request.kind"] = kind
        attributes["gen_ai.tool.name"] = record["tool"]
        attributes["gen_ai.tool.call.id"] = record["call_id"]
        for name, value in (
            ("gen_ai.tool.call.arguments", record.get("arguments")),
            ("gen_ai.tool.call.result", record.get("result")),
        ):
            if self.capture and isinstance(value, str):
                attributes[name] = self.content(value)
        parent = self._parent(self._run(record["run"]), record.get("node_id"), record["call_id"])
        self._open_request(record, f"ditto.{kind} {record['tool']}", parent, attributes)

    def _approval_requested(self, record: dict[str, Any]) -> None:
        attributes: Attributes = {}
        if record.get("server") is not None:
            attributes["mcp.server"] = record["server"]
        if record.get("rule") is not None:
            attributes["ditto.rule"] = record["rule"]
        self._call_request(record, "approval", attributes)

    def _approval_resolved(self, record: dict[str, Any]) -> None:
        attributes = self._decided(record)
        attributes["ditto.decision"] = record["decision"]
        attributes.update(_rule_attributes(record.get("rules")))
        if record.get("edited"):
            attributes["ditto.arguments_edited"] = True
        if self.capture and record.get("reason"):
            attributes["ditto.reason"] = self.text(record["reason"])
        if self._close_request(record, attributes):
            return
        run = self.runs.get(record["run"])
        target = (run.calls.get(record["call_id"]) or run.root) if run is not None else None
        if target is not None:
            attributes["gen_ai.tool.name"] = record["tool"]
            attributes["gen_ai.tool.call.id"] = record["call_id"]
            target.span.add_event("ditto.decision", attributes, timestamp=_ns(record["at"]))

    def _breakpoint_requested(self, record: dict[str, Any]) -> None:
        run = self._run(record["run"])
        attributes: Attributes = {
            "ditto.request.kind": "breakpoint",
            "ditto.node.id": record["node_id"],
            "ditto.node.type": record["node_type"],
            "ditto.breakpoint": record["pattern"],
        }
        if self.capture and isinstance(record.get("input"), str):
            attributes["ditto.node.input"] = self.content(record["input"])
        parent = self._parent(run, record["node_id"])
        self._open_request(record, f"ditto.breakpoint {record['node_id']}", parent, attributes)

    def _breakpoint_resolved(self, record: dict[str, Any]) -> None:
        attributes = self._decided(record)
        attributes["ditto.decision"] = record["action"]
        self._close_request(record, attributes)

    def _review_requested(self, record: dict[str, Any]) -> None:
        attributes: Attributes = {"ditto.review.flagged": record["flagged"]}
        if record.get("asked_by") is not None:
            attributes["ditto.review.asked_by"] = record["asked_by"]
        self._call_request(record, "review", attributes)

    def _review_resolved(self, record: dict[str, Any]) -> None:
        attributes = self._decided(record)
        attributes["ditto.decision"] = record["action"]
        attributes["ditto.review.released"] = bool(record["released"])
        self._close_request(record, attributes)

    def _mode_changed(self, record: dict[str, Any]) -> None:
        run = self.runs.get(record["run"])
        if run is None:
            return
        run.mode = record["mode"]
        if run.root is not None:
            changed = {"ditto.mode": record["mode"], "ditto.mode.previous": record["previous"]}
            run.root.span.add_event("ditto.mode_changed", changed, timestamp=_ns(record["at"]))

    def _progress(self, record: dict[str, Any]) -> None:
        run = self.runs.get(record["run"])
        call_id = record.get("call_id")
        target = run.calls.get(call_id) if run is not None and isinstance(call_id, str) else None
        if target is None:
            return
        attributes: Attributes = {"mcp.progress": float(record.get("progress") or 0)}
        if isinstance(record.get("total"), int | float):
            attributes["mcp.progress.total"] = float(record["total"])
        if self.capture and isinstance(record.get("message"), str):
            attributes["mcp.progress.message"] = self.text(record["message"])
        target.span.add_event("mcp.progress", attributes, timestamp=_ns(record["at"]))

    def _client_request(self, record: dict[str, Any]) -> None:
        """An MCP server's sampling or elicitation: an event on the span of the call that server is
        running (else on a run's root; else nowhere)."""
        server, request = record["server"], record["request"]
        target = next((run.servers[server] for run in self.runs.values() if server in run.servers), None)
        if target is None:
            target = next((run.root for run in self.runs.values() if run.root is not None), None)
        if target is not None:
            attributes = {
                "mcp.server": server,
                "ditto.decision": record["decision"],
                "ditto.decided_by": record["by"],
            }
            name = "mcp.sampling" if request.startswith("sampling") else f"mcp.{request}"
            target.span.add_event(name, attributes)


_USAGE = (
    ("inputTokens", "gen_ai.usage.input_tokens"),
    ("promptTokens", "gen_ai.usage.input_tokens"),
    ("outputTokens", "gen_ai.usage.output_tokens"),
    ("completionTokens", "gen_ai.usage.output_tokens"),
)
"""The usage counts a model reports (camelCase, either vocabulary) and the conventions' names for them."""
