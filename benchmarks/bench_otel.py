"""Runs exported as OpenTelemetry traces: what exporting costs a run, and the cold start without it.

- **A run of 1,000 nodes** (a line of steps) with every span exported over OTLP/HTTP to a collector in
  another process (``benchmarks.otlp_sink``) against the same run with exporting off, side by side in
  one process, runs alternating; both runtimes keep their events (as the app and the journal do), so the
  figure is what the traces add (target ≤ 1.1×).
- **Cold start with ``otel`` unset**: ``import ditto_tui.session`` (what every front end starts with) in a
  fresh interpreter with no ``OTEL_*`` variable: its time, and how many OpenTelemetry SDK modules it
  loaded (none: with no collector named the SDK is never imported).

    python -m benchmarks.bench_otel [--json] [--quick]
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_runtime import INPUT, ditto_bind, line, step
from benchmarks.cli import run_benchmark
from ditto_tui.runtime import ExecutionEvent, Graph, Runtime, create_ditto, define_worker, graph
from ditto_tui.telemetry import TraceSettings

TARGET = 1.10
NODES = 1000
SHAPE = line(NODES, 30)


def _plan() -> Graph:
    plan = graph("line_1000")
    for node_id, deps in SHAPE.nodes:
        plan = plan.node(node_id, "BENCH.STEP", list(deps), ditto_bind(deps))
    return plan


def _runtime() -> Runtime:
    runtime = create_ditto(workers=[define_worker(type="BENCH", nodes={"BENCH.STEP": step})])
    kept: list[ExecutionEvent] = []
    runtime.subscribe(lambda event: kept.append(event) if len(kept) < 20_000 else kept.clear())
    return runtime


def _sink() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.otlp_sink"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


async def run_costs(repetitions: int) -> dict[str, Any]:
    """Median milliseconds per run of the 1,000-node line, exporting off and on; spans exported."""
    from ditto_tui.telemetry.feed import RunTracer

    sink, port = _sink()
    try:
        with tempfile.TemporaryDirectory(prefix="ditto-otel-bench-") as temp:
            settings = TraceSettings(endpoint=f"http://127.0.0.1:{port}/v1/traces")
            tracer = RunTracer(settings, Path(temp))
            off, on = _runtime(), _runtime()
            tracer.attach(on)
            plan = _plan()
            samples: dict[str, list[int]] = {"off": [], "on": []}
            async with off, on:
                for _ in range(3):
                    await off.run(plan, INPUT)
                    await on.run(plan, INPUT)
                gc.collect()
                for _ in range(repetitions):
                    for name, runtime in (("off", off), ("on", on)):
                        started = time.perf_counter_ns()
                        await runtime.run(plan, INPUT)
                        samples[name].append(time.perf_counter_ns() - started)
            counts = tracer.flush(60.0) or {"exported": -1, "failed": -1}
            exported, failed, flushed = counts["exported"], counts["failed"], counts["exported"] >= 0
            tracer.close(1.0)
    finally:
        sink.kill()
        sink.wait()
    return {
        "ms": {name: statistics.median(values) / 1e6 for name, values in samples.items()},
        "exported": exported,
        "failed": failed,
        "flushed": flushed,
    }


def cold_start_modules() -> dict[str, Any]:
    """What ``import ditto_tui.session`` (every front end's start) loads with no collector named, and
    its time, median of 5 starts."""
    code = (
        "import sys, time; t = time.perf_counter(); import ditto_tui.session; "
        "d = time.perf_counter() - t; "
        "print(d, sum(1 for m in sys.modules if m.startswith('opentelemetry.sdk')))"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    times, sdk = [], 0
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        seconds, modules = out.stdout.split()
        times.append(float(seconds))
        sdk = max(sdk, int(modules))
    return {"import_ms": round(statistics.median(times) * 1000, 1), "sdk_modules": sdk}


async def benchmark(scale: float) -> dict[str, Any]:
    """Every figure of the report."""
    costs = await run_costs(max(3, int(SHAPE.repetitions * scale)))
    ratio = costs["ms"]["on"] / costs["ms"]["off"]
    return {
        "nodes": NODES,
        "run_ms": {name: round(value, 2) for name, value in costs["ms"].items()},
        "ratio": round(ratio, 3),
        "spans_exported": costs["exported"],
        "spans_failed": costs["failed"],
        "cold_start": cold_start_modules(),
        "target": TARGET,
        "verdict": "met" if ratio <= TARGET else "NOT met",
    }


def print_report(report: dict[str, Any]) -> None:
    """The figures as text."""
    runs = report["run_ms"]
    print(f"OpenTelemetry export — a run of {report['nodes']:,} nodes, median ms per run")
    print(
        f"  export off {runs['off']:.1f}  ·  export on {runs['on']:.1f}  →  {report['ratio']:.2f}× "
        f"(target ≤ {report['target']:.2f}×: {report['verdict']}); "
        f"{report['spans_exported']:,} spans exported, {report['spans_failed']} failed"
    )
    cold = report["cold_start"]
    print(
        f"  cold start with otel unset: import ditto_tui.session {cold['import_ms']:.0f} ms, "
        f"{cold['sdk_modules']} OpenTelemetry SDK modules loaded"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_report, argv)


if __name__ == "__main__":
    sys.exit(main())
