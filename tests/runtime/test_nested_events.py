"""Nested calls named with ``context.invoke(..., node_id=...)`` are reported like graph nodes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ditto_tui.runtime import ExecutionEvent, WorkerContext, create_ditto, define_worker, graph, loop


async def double(input: Any, context: WorkerContext) -> Any:
    return {"value": input["value"] * 2, "node": context.node_id}


async def fail(input: Any, context: WorkerContext) -> Any:
    raise ValueError("nested failure")


async def fan(input: Any, context: WorkerContext) -> Any:
    named = await asyncio.gather(
        *(context.invoke("T.DOUBLE", {"value": v}, node_id=f"item-{v}") for v in input["values"])
    )
    anonymous = await context.invoke("T.DOUBLE", {"value": 0})
    try:
        await context.invoke("T.FAIL", {}, node_id="broken")
    except ValueError:
        pass
    return {"named": named, "anonymous": anonymous}


def worker() -> Any:
    return define_worker(type="T", nodes={"T.FAN": fan, "T.DOUBLE": double, "T.FAIL": fail})


async def test_named_nested_calls_emit_node_events_under_the_callers_id() -> None:
    events: list[ExecutionEvent] = []
    plan = graph("fan").node("fan", "T.FAN", [], lambda input, _deps: input)
    body = loop(
        graph=plan,
        max_iterations=1,
        bind=lambda s: {"values": [1, 2]},
        update=lambda s: s + 1,
        done=lambda s: s == 1,
    )
    async with create_ditto(workers=[worker()]) as runtime:
        runtime.subscribe(events.append)
        await runtime.loop(body, 0)
        outputs = await runtime.run(plan, {"values": [3]})
    named = outputs["fan"]["named"]
    assert named == [{"value": 6, "node": "fan/item-3"}]
    assert outputs["fan"]["anonymous"] == {"value": 0, "node": None}
    first_run = [e for e in events if e.run_id == events[0].run_id]
    started = [(e.node_id, e.node_type, e.iteration) for e in first_run if e.kind == "node_started"]  # type: ignore[attr-defined]
    assert started == [
        ("fan", "T.FAN", 1),
        ("fan/item-1", "T.DOUBLE", 1),
        ("fan/item-2", "T.DOUBLE", 1),
        ("fan/broken", "T.FAIL", 1),
    ]
    [failed] = [e for e in first_run if e.kind == "node_failed"]
    assert failed.node_id == "fan/broken" and "nested failure" in failed.error  # type: ignore[attr-defined]
    finished = [e.node_id for e in first_run if e.kind == "node_finished"]  # type: ignore[attr-defined]
    assert finished == ["fan/item-1", "fan/item-2", "fan"]
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs)


async def test_a_nested_failure_still_reaches_the_caller_and_fails_the_run_when_unhandled() -> None:
    async def unhandled(input: Any, context: WorkerContext) -> Any:
        return await context.invoke("T.FAIL", {}, node_id="inner")

    events: list[ExecutionEvent] = []
    plan = graph("g").node("outer", "U.OUTER")
    workers = [worker(), define_worker(type="U", nodes={"U.OUTER": unhandled})]
    async with create_ditto(workers=workers) as runtime:
        runtime.subscribe(events.append)
        with pytest.raises(Exception, match="nested failure"):
            await runtime.run(plan)
    assert [e.node_id for e in events if e.kind == "node_failed"] == ["outer/inner", "outer"]  # type: ignore[attr-defined]


async def test_resources_of_finds_the_worker_exposing_a_node_type() -> None:
    seen: dict[str, Any] = {}

    async def probe(input: Any, context: WorkerContext) -> Any:
        seen["r"] = context.services.resources_of("T.DOUBLE")
        seen["none"] = context.services.resources_of("NO.SUCH")
        return None

    workers = [
        define_worker(type="T", nodes={"T.DOUBLE": double}, resources={"registry": "R"}),
        define_worker(type="P", nodes={"P.PROBE": probe}),
    ]
    async with create_ditto(workers=workers) as runtime:
        await runtime.invoke("P.PROBE", None)
    assert seen == {"r": {"registry": "R"}, "none": {}}
