"""An OTLP/HTTP trace receiver on 127.0.0.1 for tests: it decodes each export with opentelemetry-proto
and keeps its spans, as a collector would receive them."""

from __future__ import annotations

import contextlib
import gzip
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.loopback import serving


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    """One span as the collector got it, its ids as hex."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status: int
    status_message: str
    start: int
    end: int
    resource: dict[str, Any]

    def texts(self) -> list[str]:
        """Every string the span carries (attribute and event values, name, status)."""
        found = [self.name, self.status_message]
        for values in [self.attributes, *(attributes for _name, attributes in self.events)]:
            found += [str(value) for value in values.values()]
        return found


@dataclass
class Receiver:
    """What the receiver got: the spans and each request's headers."""

    url: str
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def named(self, prefix: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def wait_for(self, prefix: str, seconds: float = 20.0, log: Callable[[], str] = str) -> None:
        """Until a span named ``prefix…`` came in (the exporter sends after its run process left);
        ``log``: what the exporter logged, said when none came."""
        deadline = time.monotonic() + seconds
        while not self.named(prefix):
            assert time.monotonic() < deadline, (
                f"no {prefix} span within {seconds} s; exporter log: {log()!r}"
            )
            time.sleep(0.02)

    def by_id(self, span_id: str) -> ReceivedSpan:
        return next(span for span in self.spans if span.span_id == span_id)


def _decode(body: bytes, into: Receiver) -> None:
    request = ExportTraceServiceRequest.FromString(body)
    for resource_spans in request.resource_spans:
        resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                into.spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        attributes={item.key: _value(item.value) for item in span.attributes},
                        events=[
                            (event.name, {item.key: _value(item.value) for item in event.attributes})
                            for event in span.events
                        ],
                        status=span.status.code,
                        status_message=span.status.message,
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        resource=resource,
                    )
                )


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver on a free port of 127.0.0.1 for the ``with`` block; its ``url`` is the endpoint."""
    received = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            received.headers.append({name.lower(): value for name, value in self.headers.items()})
            _decode(body, received)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as origin:
        received.url = origin
        yield received


@contextlib.contextmanager
def otlp_grpc_receiver() -> Iterator[Receiver]:
    """The same receiver over OTLP/gRPC (the collector's ``TraceService``) on a free port of 127.0.0.1;
    its ``url`` is the endpoint and ``headers`` each call's metadata."""
    import grpc  # type: ignore[import-untyped]
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    received = Receiver(url="")

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> ExportTraceServiceResponse:  # noqa: N802 - gRPC's
            received.headers.append({key.lower(): value for key, value in context.invocation_metadata()})
            _decode(request.SerializeToString(), received)
            return ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    received.url = f"http://127.0.0.1:{port}"
    try:
        yield received
    finally:
        server.stop(grace=None)
