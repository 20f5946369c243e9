"""Seed fidelity of worker concurrency: it "bounds entry calls"; a handler's nested ``context.invoke``
takes no slot, so a worker with ``concurrency=1`` never deadlocks on its own node types."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import WorkerContext, create_ditto, define_worker, graph

DEADLINE = 5.0
RESULT = {"callId": "inner", "source": "lookup", "status": "success", "content": "found"}


async def _observe_inside(args: Mapping[str, Any], context: WorkerContext) -> Any:
    observation = await context.invoke("INTERACTION.OBSERVE", {"result": RESULT})
    return {"status": "success", "content": observation.message.content}


async def test_seed_a_tool_that_invokes_observe_does_not_deadlock_a_worker_with_concurrency_1() -> None:
    tool = Tool(name="observer", input_schema={"type": "object"}, effects=[], execute_fn=_observe_inside)
    worker = create_interaction_worker(tools=[tool], concurrency=1)
    async with create_ditto(sandbox={"tools": ["observer"]}, workers=[worker]) as runtime:
        call = {"id": "outer", "name": "observer", "arguments": {}}
        async with asyncio.timeout(DEADLINE):
            result = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
    assert result.status == "success" and result.content == "found"


async def test_seed_a_traced_nested_invoke_takes_no_slot_either() -> None:
    async def inner(input: Any, context: WorkerContext) -> Any:
        return input + 1

    async def outer(input: Any, context: WorkerContext) -> Any:
        return await context.invoke("T.INNER", input, node_id="step")

    worker = define_worker(type="T", nodes={"T.OUTER": outer, "T.INNER": inner}, concurrency=1)
    async with create_ditto(workers=[worker]) as runtime:
        async with asyncio.timeout(DEADLINE):
            assert await runtime.invoke("T.OUTER", 1) == 2
            assert await runtime.run(graph("g").node("a", "T.OUTER", [], lambda input, _deps: input), 5) == {
                "a": 6
            }


async def test_seed_nested_calls_run_beside_the_slot_holder_while_entry_calls_wait() -> None:
    release = asyncio.Event()
    holding = asyncio.Event()
    entered: list[str] = []

    async def hold(input: Any, context: WorkerContext) -> Any:
        entered.append(f"hold:{input}")
        if input == "first":
            holding.set()
            nested = await asyncio.gather(*(context.invoke("T.ECHO", i) for i in range(3)))
            await release.wait()
            return nested
        return input

    async def echo(input: Any, context: WorkerContext) -> Any:
        return input

    worker = define_worker(type="T", nodes={"T.HOLD": hold, "T.ECHO": echo}, concurrency=1)
    async with create_ditto(workers=[worker]) as runtime:
        first = asyncio.ensure_future(runtime.invoke("T.HOLD", "first"))
        await holding.wait()
        second = asyncio.ensure_future(runtime.invoke("T.HOLD", "second"))
        entry_echo = asyncio.ensure_future(runtime.invoke("T.ECHO", "entry"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert entered == ["hold:first"] and not second.done() and not entry_echo.done()
        release.set()
        async with asyncio.timeout(DEADLINE):
            assert await first == [0, 1, 2]
            assert await second == "second" and await entry_echo == "entry"


async def test_seed_a_context_made_for_application_code_makes_entry_calls() -> None:
    release = asyncio.Event()
    holding = asyncio.Event()

    async def hold(input: Any, context: WorkerContext) -> Any:
        holding.set()
        await release.wait()
        return "held"

    async def echo(input: Any, context: WorkerContext) -> Any:
        return input

    worker = define_worker(type="T", nodes={"T.HOLD": hold, "T.ECHO": echo}, concurrency=1)
    async with create_ditto(workers=[worker]) as runtime:
        held = asyncio.ensure_future(runtime.invoke("T.HOLD", None))
        await holding.wait()
        from_app = asyncio.ensure_future(runtime.create_context().invoke("T.ECHO", "app"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not from_app.done()
        release.set()
        async with asyncio.timeout(DEADLINE):
            assert await held == "held" and await from_app == "app"


async def test_seed_graph_nodes_are_entry_calls_bounded_by_concurrency() -> None:
    active = 0
    peak = 0

    async def busy(input: Any, context: WorkerContext) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        active -= 1
        return input

    plan = graph("fan")
    for index in range(4):
        plan = plan.node(f"n{index}", "T.BUSY", [], lambda input, _deps: input)
    worker = define_worker(type="T", nodes={"T.BUSY": busy}, concurrency=1)
    async with create_ditto(workers=[worker]) as runtime:
        outputs = await runtime.run(plan, 7)
    assert outputs == {f"n{index}": 7 for index in range(4)} and peak == 1
