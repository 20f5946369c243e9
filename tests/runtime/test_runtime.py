"""The runtime: invoke, graphs, loops, events, cancellation, deadlines, concurrency and close."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ditto_tui.errors import (
    GraphBuildError,
    GraphExecutionError,
    LoopLimitError,
    RuntimeClosedError,
    UnknownNodeError,
    ValidationError,
)
from ditto_tui.runtime import (
    ExecutionEvent,
    WorkerContext,
    create_ditto,
    define_worker,
    graph,
    loop,
)


async def echo(input: Any, context: WorkerContext) -> Any:
    return input


async def fail(input: Any, context: WorkerContext) -> Any:
    raise RuntimeError("boom")


def worker(**nodes: Any) -> Any:
    return define_worker(type="T", nodes={f"T.{name.upper()}": handler for name, handler in nodes.items()})


async def test_invoke_returns_the_output_directly() -> None:
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        assert await runtime.invoke("T.ECHO", {"a": 1}) == {"a": 1}


async def test_unknown_node_type_raises() -> None:
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        with pytest.raises(UnknownNodeError, match="T.NOPE"):
            await runtime.invoke("T.NOPE", {})


def test_graph_build_errors_raise_in_the_node_call() -> None:
    plan = graph("g").node("a", "T.ECHO")
    with pytest.raises(GraphBuildError, match="duplicate"):
        plan.node("a", "T.ECHO")
    with pytest.raises(GraphBuildError, match="unknown node 'zz'"):
        plan.node("b", "T.ECHO", ["zz"])
    with pytest.raises(GraphBuildError):
        graph("")


def test_define_worker_refuses_foreign_node_types() -> None:
    with pytest.raises(ValidationError):
        define_worker(type="A", nodes={"B.X": echo})
    with pytest.raises(ValidationError):
        define_worker(type="A", nodes={"A.X": echo}, concurrency=0)


def test_two_workers_exposing_one_node_type_are_refused() -> None:
    with pytest.raises(ValidationError, match="two workers"):
        create_ditto(workers=[worker(echo=echo), worker(echo=echo)])


async def test_run_binds_inputs_from_dependencies() -> None:
    async def add(input: Any, context: WorkerContext) -> Any:
        return input["x"] + 1

    plan = (
        graph("line")
        .node("a", "T.ADD", [], lambda input, deps: {"x": input})
        .node("b", "T.ADD", ["a"], lambda input, deps: {"x": deps["a"]})
        .node("c", "T.ADD", ["a", "b"], lambda input, deps: {"x": deps["a"] + deps["b"]})
    )
    async with create_ditto(workers=[worker(add=add)]) as runtime:
        assert await runtime.run(plan, 1) == {"a": 2, "b": 3, "c": 6}


async def test_independent_nodes_run_concurrently() -> None:
    both_running = asyncio.Barrier(2)

    async def meet(input: Any, context: WorkerContext) -> Any:
        async with asyncio.timeout(2):
            await both_running.wait()
        return input

    plan = graph("fan").node("a", "T.MEET").node("b", "T.MEET").node("join", "T.ECHO", ["a", "b"])
    async with create_ditto(workers=[worker(meet=meet, echo=echo)]) as runtime:
        outputs = await runtime.run(plan, "x")
    assert outputs == {"a": "x", "b": "x", "join": "x"}


async def test_a_failed_node_fails_the_run_and_downstream_nodes_never_start() -> None:
    started: list[str] = []

    async def record(input: Any, context: WorkerContext) -> Any:
        started.append(context.node_id or "")
        return input

    events: list[ExecutionEvent] = []
    plan = (
        graph("g")
        .node("a", "T.RECORD")
        .node("bad", "T.FAIL", ["a"])
        .node("after", "T.RECORD", ["bad"])
        .node("later", "T.RECORD", ["after"])
    )
    async with create_ditto(workers=[worker(record=record, fail=fail)]) as runtime:
        runtime.subscribe(events.append)
        with pytest.raises(GraphExecutionError) as caught:
            await runtime.run(plan, 0)
    assert caught.value.node_id == "bad"
    assert "bad" in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert started == ["a"]
    skipped = [e.node_id for e in events if e.kind == "node_skipped"]  # type: ignore[attr-defined]
    assert skipped == ["after", "later"]
    finished = [e for e in events if e.kind == "run_finished"]
    assert finished[0].status == "failed" and finished[0].failed_node == "bad"  # type: ignore[attr-defined]


async def test_a_failure_cancels_running_siblings() -> None:
    cancelled = asyncio.Event()

    async def slow(input: Any, context: WorkerContext) -> Any:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            assert context.signal.cancelled
            cancelled.set()
            raise

    plan = graph("g").node("slow", "T.SLOW").node("bad", "T.FAIL")
    async with create_ditto(workers=[worker(slow=slow, fail=fail)]) as runtime:
        with pytest.raises(GraphExecutionError):
            await runtime.run(plan, None)
    assert cancelled.is_set()


async def test_events_have_strictly_increasing_seq_and_cover_the_run() -> None:
    events: list[ExecutionEvent] = []
    plan = graph("g").node("a", "T.ECHO").node("b", "T.ECHO", ["a"])
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        unsubscribe = runtime.subscribe(events.append)
        await runtime.run(plan, 1)
        assert unsubscribe() is True
        assert unsubscribe() is False
        await runtime.run(plan, 1)
    kinds = [e.kind for e in events]
    assert kinds == [
        "run_started",
        "node_started",
        "node_finished",
        "node_started",
        "node_finished",
        "run_finished",
    ]
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert len({e.run_id for e in events}) == 1
    started = events[0]
    assert [n.id for n in started.nodes] == ["a", "b"]  # type: ignore[attr-defined]
    assert events[2].output == 1  # type: ignore[attr-defined]


async def test_a_failing_subscriber_does_not_break_the_run() -> None:
    def broken(event: ExecutionEvent) -> None:
        raise OSError("disk full")

    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        runtime.subscribe(broken)
        assert await runtime.run(graph("g").node("a", "T.ECHO"), 5) == {"a": 5}


async def test_loop_runs_until_done_and_update_may_take_only_state() -> None:
    iterations: list[Any] = []
    plan = graph("body").node("step", "T.ECHO")
    definition = loop(
        graph=plan, max_iterations=3, bind=lambda i: i, update=lambda i: i + 1, done=lambda i: i == 3
    )
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        runtime.subscribe(lambda e: iterations.append(e.iteration) if e.kind == "loop_iteration" else None)  # type: ignore[attr-defined]
        assert await runtime.loop(definition, 0) == 3
    assert iterations == [1, 2, 3]


async def test_loop_update_receives_outputs() -> None:
    plan = graph("body").node("step", "T.ECHO", [], lambda state, deps: state + 10)
    definition = loop(graph=plan, max_iterations=5, update=lambda s, out: out["step"], done=lambda s: s >= 30)
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        assert await runtime.loop(definition, 0) == 30


async def test_loop_limit_raises() -> None:
    definition = loop(
        graph=graph("g").node("a", "T.ECHO"), max_iterations=2, update=lambda s: s, done=lambda s: False
    )
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        with pytest.raises(LoopLimitError):
            await runtime.loop(definition, 0)


async def test_cancellation_reaches_the_handler_through_the_signal() -> None:
    seen: list[bool] = []
    entered = asyncio.Event()

    async def wait_forever(input: Any, context: WorkerContext) -> Any:
        entered.set()
        try:
            await asyncio.sleep(30)
        finally:
            seen.append(context.signal.cancelled)

    async with create_ditto(workers=[worker(wait=wait_forever)]) as runtime:
        task = asyncio.ensure_future(runtime.invoke("T.WAIT", {}))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert seen == [True]


async def test_signal_wait_returns_when_the_call_is_cancelled() -> None:
    woke = asyncio.Event()

    async def watch(input: Any, context: WorkerContext) -> Any:
        async def watcher() -> None:
            await context.signal.wait()
            woke.set()

        watching = asyncio.ensure_future(watcher())
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.wait_for(watching, 1)

    async with create_ditto(workers=[worker(watch=watch)]) as runtime:
        task = asyncio.ensure_future(runtime.invoke("T.WATCH", {}))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert woke.is_set()


async def test_cancelling_a_run_cancels_nodes_and_reports_cancelled() -> None:
    events: list[ExecutionEvent] = []
    entered = asyncio.Event()

    async def slow(input: Any, context: WorkerContext) -> Any:
        entered.set()
        await asyncio.sleep(30)

    plan = graph("g").node("a", "T.SLOW").node("b", "T.SLOW").node("c", "T.SLOW", ["a", "b"])
    async with create_ditto(workers=[worker(slow=slow)]) as runtime:
        runtime.subscribe(events.append)
        task = asyncio.ensure_future(runtime.run(plan))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert events[-1].kind == "run_finished" and events[-1].status == "cancelled"  # type: ignore[attr-defined]
    assert {e.node_id for e in events if e.kind == "node_failed"} == {"a", "b"}  # type: ignore[attr-defined]
    assert [e.node_id for e in events if e.kind == "node_skipped"] == ["c"]  # type: ignore[attr-defined]


async def test_timeout_is_a_deadline_on_waiting() -> None:
    seen: list[bool] = []

    async def slow(input: Any, context: WorkerContext) -> Any:
        try:
            await asyncio.sleep(30)
        finally:
            seen.append(context.signal.cancelled)

    async with create_ditto(workers=[worker(slow=slow)]) as runtime:
        with pytest.raises(TimeoutError):
            await runtime.invoke("T.SLOW", {}, timeout=0.05)
    assert seen == [True]


async def test_worker_concurrency_bounds_entry_calls() -> None:
    active = 0
    peak = 0

    async def busy(input: Any, context: WorkerContext) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return input

    definition = define_worker(type="T", nodes={"T.BUSY": busy}, concurrency=2)
    async with create_ditto(workers=[definition]) as runtime:
        results = await asyncio.gather(*(runtime.invoke("T.BUSY", i) for i in range(6)))
    assert results == list(range(6))
    assert peak == 2


async def test_close_drains_in_flight_calls_and_disposes_once() -> None:
    disposed: list[str] = []
    release = asyncio.Event()
    entered = asyncio.Event()

    async def hold(input: Any, context: WorkerContext) -> Any:
        entered.set()
        await release.wait()
        return "done"

    async def dispose() -> None:
        disposed.append("async")

    definition = define_worker(type="T", nodes={"T.HOLD": hold}, dispose=dispose)
    other = define_worker(type="U", nodes={"U.ECHO": echo}, dispose=lambda: disposed.append("sync"))
    runtime = create_ditto(workers=[definition, other])
    call = asyncio.ensure_future(runtime.invoke("T.HOLD", {}))
    await entered.wait()
    closing = asyncio.ensure_future(runtime.close())
    await asyncio.sleep(0.01)
    assert not closing.done() and disposed == []
    with pytest.raises(RuntimeClosedError):
        await runtime.invoke("U.ECHO", {})
    release.set()
    assert await call == "done"
    await closing
    assert disposed == ["async", "sync"]
    await runtime.close()
    assert disposed == ["async", "sync"]


async def test_context_carries_identity_and_nested_invoke_shares_the_run() -> None:
    seen: dict[str, Any] = {}

    async def outer(input: Any, context: WorkerContext) -> Any:
        seen["outer"] = (context.worker_type, context.node_type, context.node_id, context.run_id)
        return await context.invoke("T.INNER", input)

    async def inner(input: Any, context: WorkerContext) -> Any:
        seen["inner_run"] = context.run_id
        return input * 2

    async with create_ditto(workers=[worker(outer=outer, inner=inner)]) as runtime:
        outputs = await runtime.run(graph("g").node("o", "T.OUTER"), 4)
    assert outputs == {"o": 8}
    assert seen["outer"][:3] == ("T", "T.OUTER", "o")
    assert seen["inner_run"] == seen["outer"][3]


async def test_custom_events_from_handlers_reach_subscribers() -> None:
    async def chatty(input: Any, context: WorkerContext) -> Any:
        context.emit("progress", data={"done": 1})
        return input

    events: list[ExecutionEvent] = []
    async with create_ditto(workers=[worker(chatty=chatty)]) as runtime:
        runtime.subscribe(events.append)
        await runtime.invoke("T.CHATTY", None)
    assert [(e.kind, e.name, e.data) for e in events] == [("custom", "progress", {"done": 1})]  # type: ignore[attr-defined]


async def test_create_context_gives_application_code_a_genuine_context() -> None:
    events: list[ExecutionEvent] = []
    async with create_ditto(workers=[worker(echo=echo)]) as runtime:
        runtime.subscribe(events.append)
        context = runtime.create_context()
        assert context.services is runtime.services and not context.signal.cancelled
        assert await context.invoke("T.ECHO", 3) == 3
        context.emit("note", data=1)
    assert [(e.kind, e.run_id) for e in events] == [("custom", context.run_id)]
