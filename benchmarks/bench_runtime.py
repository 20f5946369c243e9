"""Runtime overhead per node: ditto_tui, LangGraph and a bare-asyncio floor on the same graph shapes.

Every node is a trivial async function that returns its input, so what is timed is the engine:
scheduling, binding inputs, collecting outputs. The engines take turns run by run, so they share the
same machine conditions; the figure is the median wall time of one graph run divided by its nodes.

    python -m benchmarks.bench_runtime [--json] [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import operator
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from benchmarks.cli import run_benchmark

TARGET_US_PER_NODE = 20.0
INPUT: dict[str, Any] = {"x": 1}

RunGraph = Callable[[], Awaitable[Mapping[str, Any]]]
Close = Callable[[], Awaitable[None]]


@dataclass(frozen=True, kw_only=True)
class Shape:
    """A graph shape: node ids in topological order, each with the ids it depends on."""

    name: str
    nodes: tuple[tuple[str, tuple[str, ...]], ...]
    repetitions: int

    @property
    def size(self) -> int:
        return len(self.nodes)


def line(length: int, repetitions: int) -> Shape:
    """``n0 -> n1 -> ... -> n{length-1}``."""
    nodes = tuple((f"n{i}", (f"n{i - 1}",) if i else ()) for i in range(length))
    return Shape(name=f"line-{length}", nodes=nodes, repetitions=repetitions)


def fan_out(width: int, repetitions: int) -> Shape:
    """One source, ``width`` parallel branches, one join: ``width + 2`` nodes."""
    branches = tuple((f"b{i}", ("src",)) for i in range(width))
    join = ("join", tuple(branch for branch, _ in branches))
    return Shape(name=f"fan-out-{width}", nodes=(("src", ()), *branches, join), repetitions=repetitions)


SHAPES = (line(3, 3000), line(50, 300), fan_out(10, 1000))


async def step(input: Any, context: Any = None) -> Any:
    """The node every engine runs: return the input unchanged."""
    return input


def join_value(values: Sequence[Any]) -> Any:
    """What a node passes on: its single dependency's output, or all of them for a join."""
    return values[0] if len(values) == 1 else list(values)


# --- ditto_tui ----------------------------------------------------------------------------------


def ditto_bind(deps: tuple[str, ...]) -> Callable[[Any, Mapping[str, Any]], Any]:
    if not deps:
        return lambda input, _outputs: input
    if len(deps) == 1:
        (dep,) = deps
        return lambda _input, outputs: outputs[dep]
    return lambda _input, outputs: [outputs[dep] for dep in deps]


async def build_ditto(shape: Shape, *, observed: bool = False) -> tuple[RunGraph, Close]:
    from ditto_tui.runtime import create_ditto, define_worker, graph

    worker = define_worker(type="BENCH", nodes={"BENCH.STEP": step})
    runtime = create_ditto(workers=[worker])
    if observed:
        events: list[Any] = []
        runtime.subscribe(lambda event: events.append(event) if len(events) < 10_000 else events.clear())
    plan = graph(shape.name.replace("-", "_"))
    for node_id, deps in shape.nodes:
        plan = plan.node(node_id, "BENCH.STEP", list(deps), ditto_bind(deps))

    async def run() -> Mapping[str, Any]:
        outputs: Mapping[str, Any] = await runtime.run(plan, INPUT)
        return outputs

    return run, runtime.close


async def build_ditto_observed(shape: Shape) -> tuple[RunGraph, Close]:
    """ditto_tui with one subscriber receiving every event (what the UI and the journal cost)."""
    return await build_ditto(shape, observed=True)


# --- LangGraph ----------------------------------------------------------------------------------


class LangGraphState(TypedDict, total=False):
    """``value`` carries a line; each fan-out branch appends to ``branches`` (reducer: list concat)."""

    value: Any
    branches: Annotated[list[Any], operator.add]


def langgraph_node(deps: tuple[str, ...], is_branch: bool) -> Callable[[LangGraphState], Awaitable[Any]]:
    async def node(state: LangGraphState) -> dict[str, Any]:
        input = state["branches"] if len(deps) > 1 else state["value"]
        output = await step(input)
        return {"branches": [output]} if is_branch else {"value": output}

    return node


async def build_langgraph(shape: Shape) -> tuple[RunGraph, Close]:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(LangGraphState)
    dependents = {dep for _, deps in shape.nodes for dep in deps}
    branches = {dep for _, deps in shape.nodes if len(deps) > 1 for dep in deps}
    for node_id, deps in shape.nodes:
        builder.add_node(node_id, langgraph_node(deps, is_branch=node_id in branches))  # type: ignore[call-overload]
        if not deps:
            builder.add_edge(START, node_id)
        elif len(deps) == 1:
            builder.add_edge(deps[0], node_id)
        else:
            builder.add_edge(list(deps), node_id)
        if node_id not in dependents:
            builder.add_edge(node_id, END)
    app = builder.compile()
    config: Any = {"recursion_limit": shape.size + 10}

    async def run() -> Mapping[str, Any]:
        result: Mapping[str, Any] = await app.ainvoke({"value": INPUT, "branches": []}, config)
        return result

    async def close() -> None:
        return None

    return run, close


# --- bare asyncio -------------------------------------------------------------------------------


async def floor_node(deps: Sequence[asyncio.Task[Any]]) -> Any:
    if not deps:
        return await step(INPUT)
    return await step(join_value([await dep for dep in deps]))


async def build_floor(shape: Shape) -> tuple[RunGraph, Close]:
    async def run() -> Mapping[str, Any]:
        tasks: dict[str, asyncio.Task[Any]] = {}
        for node_id, deps in shape.nodes:
            tasks[node_id] = asyncio.create_task(floor_node([tasks[dep] for dep in deps]))
        return {node_id: await task for node_id, task in tasks.items()}

    async def close() -> None:
        return None

    return run, close


# --- measurement --------------------------------------------------------------------------------

ENGINES: dict[str, Callable[[Shape], Awaitable[tuple[RunGraph, Close]]]] = {
    "ditto_tui": build_ditto,
    "ditto+events": build_ditto_observed,
    "langgraph": build_langgraph,
    "asyncio": build_floor,
}


def check_output(engine: str, shape: Shape, outputs: Mapping[str, Any]) -> None:
    """Fail loudly if an engine skipped work: the last node must have passed the input on."""
    last, deps = shape.nodes[-1]
    expected = join_value([INPUT] * len(deps))
    got = outputs.get("value") if engine == "langgraph" else outputs.get(last)
    if got != expected:
        raise AssertionError(f"{engine} on {shape.name}: final output {got!r}, expected {expected!r}")


async def measure_shape(shape: Shape, scale: float, unavailable: dict[str, str]) -> dict[str, Any]:
    runners: dict[str, RunGraph] = {}
    closers: list[Close] = []
    for engine, build in ENGINES.items():
        if engine in unavailable:
            continue
        try:
            run, close = await build(shape)
        except ImportError as error:
            unavailable[engine] = f"{type(error).__name__}: {error}"
            continue
        runners[engine] = run
        closers.append(close)
        check_output(engine, shape, await run())
    repetitions = max(5, int(shape.repetitions * scale))
    samples: dict[str, list[int]] = {engine: [] for engine in runners}
    try:
        for _ in range(max(3, repetitions // 10)):  # warm-up
            for run in runners.values():
                await run()
        gc.collect()
        for _ in range(repetitions):
            for engine, run in runners.items():
                start = time.perf_counter_ns()
                await run()
                samples[engine].append(time.perf_counter_ns() - start)
    finally:
        for close in closers:
            await close()
    per_node = {
        engine: round(statistics.median(times) / shape.size / 1000.0, 2) for engine, times in samples.items()
    }
    return {"shape": shape.name, "nodes": shape.size, "repetitions": repetitions, "us_per_node": per_node}


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return round(numerator / denominator, 2)


def add_ratios(row: dict[str, Any]) -> None:
    figures: dict[str, float] = row["us_per_node"]
    row["langgraph_over_ditto"] = ratio(figures.get("langgraph"), figures.get("ditto_tui"))
    row["ditto_over_floor"] = ratio(figures.get("ditto_tui"), figures.get("asyncio"))


def version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def fmt(value: float | None, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.1f}{suffix}"


def print_table(report: dict[str, Any]) -> None:
    print(
        f"Runtime overhead per node (median µs/node) — Python {report['python']}, "
        f"langgraph {report['versions']['langgraph']}"
    )
    header = (
        "shape",
        "nodes",
        "reps",
        "ditto_tui",
        "ditto+events",
        "langgraph",
        "asyncio",
        "LG/ditto",
        "ditto/floor",
    )
    print("  ".join(f"{cell:>12}" for cell in header))
    for row in report["results"]:
        figures = row["us_per_node"]
        cells = (
            row["shape"],
            str(row["nodes"]),
            str(row["repetitions"]),
            fmt(figures.get("ditto_tui")),
            fmt(figures.get("ditto+events")),
            fmt(figures.get("langgraph")),
            fmt(figures.get("asyncio")),
            fmt(row["langgraph_over_ditto"], "x"),
            fmt(row["ditto_over_floor"], "x"),
        )
        print("  ".join(f"{cell:>12}" for cell in cells))
    print(f"target: ditto_tui ≤ {TARGET_US_PER_NODE:.0f} µs/node on every shape — {report['target_verdict']}")
    print("ditto+events: the same runtime with one subscriber receiving every event (UI, journal)")
    for engine, reason in report["unavailable"].items():
        print(f"{engine} not measured: {reason}")


def verdict(results: Sequence[Mapping[str, Any]]) -> str:
    figures = [row["us_per_node"].get("ditto_tui") for row in results]
    if any(figure is None for figure in figures):
        return "not measured"
    return "met" if all(figure <= TARGET_US_PER_NODE for figure in figures) else "NOT met"


async def benchmark(scale: float) -> dict[str, Any]:
    unavailable: dict[str, str] = {}
    results = [await measure_shape(shape, scale, unavailable) for shape in SHAPES]
    for row in results:
        add_ratios(row)
    return {
        "python": platform.python_version(),
        "versions": {"ditto-tui": version_of("ditto-tui"), "langgraph": version_of("langgraph")},
        "target_us_per_node": TARGET_US_PER_NODE,
        "target_verdict": verdict(results),
        "unavailable": unavailable,
        "results": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(
        __doc__, benchmark, print_table, argv, exit_code=lambda report: 1 if report["unavailable"] else 0
    )


if __name__ == "__main__":
    sys.exit(main())
