"""The run journal's cost: per event written, per fsync, and on the 50-node benchmark graph.

- **Write cost per event**: the journal subscriber timed around each call during real runs of the
  50-node line graph (``bench_runtime``), node events only (target ≤ 20 µs per event); ``run_started``
  (creates the run's file), ``run_finished`` (write + fsync) and ``approval_resolved`` (write + fsync,
  from runs of a graph whose steps each need approval) are reported apart.
- **Overhead on the 50-node graph**: the same runtime with one subscriber that keeps events (what the
  UI costs) against the runtime with the journal attached, runs alternating; median wall time per run.

    python -m benchmarks.bench_journal [--json] [--quick]
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_runtime import INPUT, ditto_bind, line, step
from benchmarks.cli import run_benchmark
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import (
    ExecutionEvent,
    Graph,
    Runtime,
    WorkerContext,
    create_ditto,
    define_worker,
    graph,
)
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy, RunJournal, StaticApprover

TARGET_US_PER_EVENT = 20.0
TARGET_OVERHEAD = 0.10
SHAPE = line(50, 300)
APPROVAL_STEPS = 20

RunGraph = Callable[[], Awaitable[Any]]


def _plan() -> Graph:
    plan = graph("line_50")
    for node_id, deps in SHAPE.nodes:
        plan = plan.node(node_id, "BENCH.STEP", list(deps), ditto_bind(deps))
    return plan


def _runtime() -> Runtime:
    return create_ditto(workers=[define_worker(type="BENCH", nodes={"BENCH.STEP": step})])


def _timed(journal: RunJournal, samples: dict[str, list[int]]) -> Callable[[ExecutionEvent], None]:
    def subscriber(event: ExecutionEvent) -> None:
        started = time.perf_counter_ns()
        journal(event)
        samples[event.kind].append(time.perf_counter_ns() - started)

    return subscriber


async def write_costs(directory: Path, runs: int) -> dict[str, list[int]]:
    """Per-kind nanoseconds of the journal subscriber over ``runs`` runs of the 50-node graph."""
    samples: dict[str, list[int]] = defaultdict(list)
    runtime = _runtime()
    runtime.subscribe(_timed(RunJournal(directory / "writes"), samples))
    plan = _plan()
    async with runtime:
        for _ in range(runs):
            await runtime.run(plan, INPUT)
    return samples


async def _approve_step(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": "done"}


async def approval_costs(directory: Path, runs: int) -> dict[str, list[int]]:
    """Per-kind nanoseconds of the journal subscriber in runs whose every step needs approval."""
    samples: dict[str, list[int]] = defaultdict(list)
    tool = Tool(
        name="step",
        input_schema={"type": "object"},
        effects=[],
        requires_approval=True,
        execute_fn=_approve_step,
    )
    journal = RunJournal(directory / "approvals")
    gate = ApprovalGate(policy=ApprovalPolicy(), approver=StaticApprover("allow"))
    gate.recorder = journal
    worker = create_interaction_worker(tools=[tool], approval=gate)
    runtime = create_ditto(sandbox={"tools": ["step"]}, workers=[worker])
    runtime.subscribe(_timed(journal, samples))
    plan = graph("approvals")
    for number in range(APPROVAL_STEPS):
        call = {"call": {"id": f"s-{number}", "name": "step", "arguments": {}}}
        plan = plan.node(f"s{number}", "INTERACTION.ACT.TOOL", [], lambda _i, _d, call=call: call)
    async with runtime:
        for _ in range(runs):
            await runtime.run(plan)
    return samples


async def overhead(directory: Path, repetitions: int) -> dict[str, float]:
    """Median wall time per run (µs) of the 50-node graph: plain, with events kept, with the journal."""
    plan = _plan()
    plain, observed, journaled = _runtime(), _runtime(), _runtime()
    kept: list[ExecutionEvent] = []
    observed.subscribe(lambda event: kept.append(event) if len(kept) < 10_000 else kept.clear())
    RunJournal(directory / "overhead").attach(journaled)

    def runner(runtime: Runtime) -> RunGraph:
        return lambda: runtime.run(plan, INPUT)

    runners: dict[str, RunGraph] = {
        name: runner(runtime)
        for name, runtime in (("plain", plain), ("events", observed), ("journal", journaled))
    }
    samples: dict[str, list[int]] = {name: [] for name in runners}
    try:
        for _ in range(max(3, repetitions // 10)):
            for run in runners.values():
                await run()
        gc.collect()
        for _ in range(repetitions):
            for name, run in runners.items():
                started = time.perf_counter_ns()
                await run()
                samples[name].append(time.perf_counter_ns() - started)
    finally:
        for runtime in (plain, observed, journaled):
            await runtime.close()
    return {name: statistics.median(times) / 1000.0 for name, times in samples.items()}


def _median_us(values: Sequence[int]) -> float:
    return round(statistics.median(values) / 1000.0, 2) if values else 0.0


async def benchmark(scale: float) -> dict[str, Any]:
    """Every figure of the report."""
    runs = max(10, int(SHAPE.repetitions * scale))
    with tempfile.TemporaryDirectory(prefix="ditto-journal-bench-") as temp:
        directory = Path(temp)
        writes = await write_costs(directory, runs)
        approvals = await approval_costs(directory, max(5, runs // 10))
        per_run = await overhead(directory, runs)
    plain_events = [
        ns for kind, values in writes.items() if kind not in ("run_started", "run_finished") for ns in values
    ]
    per_event = _median_us(plain_events)
    over_events = per_run["journal"] / per_run["events"] - 1
    return {
        "events_per_run": SHAPE.size * 2 + 2,
        "write_us_per_event": per_event,
        "write_us_per_event_p95": round(sorted(plain_events)[int(len(plain_events) * 0.95)] / 1000.0, 2),
        "run_started_us": _median_us(writes["run_started"]),
        "run_finished_us": _median_us(writes["run_finished"]),
        "approval_resolved_us": _median_us(approvals["approval_resolved"]),
        "run_us": {name: round(value, 1) for name, value in per_run.items()},
        "overhead_vs_events": round(over_events, 3),
        "overhead_vs_plain": round(per_run["journal"] / per_run["plain"] - 1, 3),
        "targets": {
            "write_us_per_event": TARGET_US_PER_EVENT,
            "overhead": TARGET_OVERHEAD,
            "write_verdict": "met" if per_event <= TARGET_US_PER_EVENT else "NOT met",
            "overhead_verdict": "met" if over_events <= TARGET_OVERHEAD else "NOT met",
        },
    }


def print_report(report: dict[str, Any]) -> None:
    """The figures as text."""
    targets = report["targets"]
    runs = report["run_us"]
    print("Run journal (.ditto/runs/<run_id>.jsonl) — cost of writing")
    print(
        f"  write per event (no fsync):  median {report['write_us_per_event']:.2f} µs, "
        f"p95 {report['write_us_per_event_p95']:.2f} µs — target ≤ {targets['write_us_per_event']:.0f} µs: "
        f"{targets['write_verdict']}"
    )
    print(f"  run_started (creates the file):    median {report['run_started_us']:.0f} µs")
    print(f"  approval_resolved (write + fsync): median {report['approval_resolved_us']:.0f} µs")
    print(f"  run_finished (write + fsync):      median {report['run_finished_us']:.0f} µs")
    print(f"50-node line graph, {report['events_per_run']} events per run — median µs per run")
    print(
        f"  plain {runs['plain']:.0f}  ·  with events kept {runs['events']:.0f}  ·  "
        f"journaled {runs['journal']:.0f}"
    )
    print(
        f"  journal overhead: {report['overhead_vs_events']:+.1%} over the runtime with events "
        f"(target ≤ {targets['overhead']:.0%}: {targets['overhead_verdict']}), "
        f"{report['overhead_vs_plain']:+.1%} over the plain runtime"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_report, argv)


if __name__ == "__main__":
    sys.exit(main())
