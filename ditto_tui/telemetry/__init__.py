"""Runs as OpenTelemetry traces: what to export and where, decided without the OpenTelemetry SDK.

A run becomes a trace (:mod:`ditto_tui.telemetry.spans`): its root span, one span per node execution
(a model turn is a ``chat`` span, a tool or MCP call an ``execute_tool`` span, after the GenAI semantic
conventions), one per request a person answered (approvals, breakpoints, result reviews) with the
decision's provenance, and the policy's own decisions, MCP progress and MCP sampling as span events.

Where to: ``otel:`` in ``ditto.yaml`` (endpoint, protocol, headers, captureContent, sampling) over the
standard variables ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_EXPORTER_OTLP_PROTOCOL`` and ``OTEL_SERVICE_NAME``
(``OTEL_SDK_DISABLED=true`` turns it off). With no endpoint nothing is exported and the SDK is never
imported: :func:`trace_settings` reads only the config and the environment.

Exporting never holds a run, the UI or the exit: the run's process only hands small records to an
exporter process of its own (:mod:`ditto_tui.telemetry.feed`), which makes the spans and sends them in
batches, each export bounded by ``otel.timeoutSeconds``; a failed one is counted and logged to
``otel.log`` in the state directory's logs, never raised; leaving waits at most
:data:`EXIT_FLUSH_SECONDS` to hand over the last records.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

    from ditto_tui.config import RuntimeConfig
    from ditto_tui.telemetry.feed import RunTracer

Protocol = Literal["http/protobuf", "grpc"]

DEFAULT_SERVICE_NAME = "ditto-tui"
EXIT_FLUSH_SECONDS = 1.0
"""How long leaving waits for spans still to be exported (a dead collector costs no more than this)."""
CONTENT_LIMIT = 8192
"""The most characters of one captured argument, result, prompt or message (``captureContent``)."""
HTTP_TRACES_PATH = "/v1/traces"


@dataclass(frozen=True, kw_only=True)
class TraceSettings:
    """Where and how runs are exported (see the module's docstring for where each value comes from)."""

    endpoint: str
    protocol: Protocol = "http/protobuf"
    headers: tuple[tuple[str, str], ...] = ()
    capture_content: bool = False
    sampling: float = 1.0
    service_name: str = DEFAULT_SERVICE_NAME
    timeout_seconds: float = 5.0
    secrets: tuple[str, ...] = ()
    """Values never exported: the config's secrets (``${VAR}`` values, keys, tokens, these headers)."""


def _signal_url(base: str) -> str:
    """An OTLP/HTTP base endpoint with the traces path added (as the OpenTelemetry spec says for
    ``OTEL_EXPORTER_OTLP_ENDPOINT``), unless it is already there."""
    trimmed = base.rstrip("/")
    return trimmed if trimmed.endswith(HTTP_TRACES_PATH) else trimmed + HTTP_TRACES_PATH


def _env_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``OTEL_EXPORTER_OTLP_HEADERS`` (``k1=v1,k2=v2``, values percent-encoded) as pairs."""
    pairs = []
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if sep and name.strip():
            pairs.append((urllib.parse.unquote(name.strip()), urllib.parse.unquote(value.strip())))
    return tuple(pairs)


def trace_settings(config: RuntimeConfig, environ: Mapping[str, str] | None = None) -> TraceSettings | None:
    """What to export under ``config`` and ``environ`` (default: ``os.environ``); None: nothing."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    otel = config.otel
    signal_endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()  # used as it is
    base = otel.endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not (base or signal_endpoint):
        return None
    protocol = (
        otel.protocol
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    )
    grpc = (protocol or "").strip() == "grpc"
    if otel.endpoint or not signal_endpoint:
        endpoint = base if grpc else _signal_url(base)
    else:
        endpoint = signal_endpoint
    headers = dict(_env_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", "")))
    headers.update(otel.headers)
    secrets = {*config.secret_values(), *(value for value in headers.values() if value)}
    return TraceSettings(
        endpoint=endpoint,
        protocol="grpc" if grpc else "http/protobuf",
        headers=tuple(sorted(headers.items())),
        capture_content=otel.capture_content,
        sampling=otel.sampling,
        service_name=otel.service_name or env.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME,
        timeout_seconds=otel.timeout_seconds,
        secrets=tuple(sorted(secrets)),
    )


_lock = threading.Lock()
_tracers: dict[tuple[TraceSettings, str], RunTracer] = {}


def run_tracer(config: RuntimeConfig, workspace: Path) -> RunTracer | None:
    """The tracer that exports this process's runs under ``config``, or None when nothing is exported.

    One per settings and workspace, for the process's life: each front end (the app, a headless run, a
    worker, the gateway) subscribes it to its runtime (:meth:`RunTracer.attach`)."""
    settings = trace_settings(config)
    if settings is None:
        return None
    key = (settings, str(workspace))
    with _lock:
        tracer = _tracers.get(key)
        if tracer is None:
            from ditto_tui.telemetry.feed import RunTracer

            tracer = _tracers[key] = RunTracer(settings, workspace)
        return tracer


def flush_tracing(timeout: float = EXIT_FLUSH_SECONDS) -> None:
    """Send what the tracers still hold, waiting at most ``timeout`` seconds in all; then stop them."""
    with _lock:
        tracers = list(_tracers.values())
        _tracers.clear()
    for tracer in tracers:
        tracer.close(timeout / max(1, len(tracers)))


def temporal_interceptors(config: RuntimeConfig, workspace: Path) -> list[object]:
    """Temporal's own OpenTelemetry interceptor over this process's tracer, for the durable host's client
    (its workers take it from the client), or none when nothing is exported: with it, the trace context
    travels with a run's workflow and its activities, so the node spans a worker makes, on whichever
    machine, join the trace of the process that started the run."""
    tracer = run_tracer(config, workspace)
    return [] if tracer is None else [tracer.temporal_interceptor()]
