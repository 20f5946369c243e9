"""Run screen behaviour under large or long runs: huge results stay responsive, iteration rows end."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import parse_runtime_config
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import LoopIteration, NodeInfo, RunFinished, RunStarted, WorkerContext, graph
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.run_state import RunModel
from tests.tui.run_fixtures import run_screen, wait_until

MANY_LINES = "\n".join(f"line {number}" for number in range(100_000))


async def _many(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": MANY_LINES}


async def test_t13_selecting_a_100000_line_result_keeps_the_run_screen_responsive(tmp_path: Path) -> None:
    tool = Tool(
        name="many", description="Many lines.", input_schema={"type": "object"}, effects=[], execute_fn=_many
    )
    plan = graph("many").node(
        "many",
        "INTERACTION.ACT.TOOL",
        [],
        lambda _i, _d: {"call": {"id": "m-1", "name": "many", "arguments": {}}},
    )
    program = Program(name="many", description="One call with a long result.", plan=plan, tools=(tool,))
    config = parse_runtime_config({"sandbox": {"tools": ["many"]}}, {})
    app = DittoApp(RunSpec(config=config, workspace=tmp_path, program=program, journal=False))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.finished)
        screen.timeline.focus()
        await pilot.press("home")
        started = time.perf_counter()
        await pilot.press("down")  # the call's row: its detail holds the 100,000 lines
        await pilot.pause()
        assert screen.timeline.selected is not None and screen.timeline.selected.node_id == "many"
        assert time.perf_counter() - started < 1.0
        shown = screen.detail.text.plain
        assert "press f to show everything" in shown and "line 0" in shown and "line 99999" not in shown
        await pilot.press("f")  # asked for: everything, nothing left out
        await pilot.pause()
        assert "line 99999" in screen.detail.text.plain


def test_an_iteration_row_ends_with_its_iteration() -> None:
    ids: dict[str, Any] = {"run_id": "run-1"}
    model = RunModel()
    start = RunStarted(
        **ids, seq=1, at=100.0, plan="p", plan_kind="loop", nodes=(NodeInfo(id="n", type="T.N"),)
    )
    model.apply(
        [
            start,
            LoopIteration(**ids, seq=2, at=100.0, iteration=1, max_iterations=3),
            LoopIteration(**ids, seq=3, at=101.0, iteration=2, max_iterations=3),
            RunFinished(**ids, seq=4, at=102.0, status="succeeded", duration_ms=2000.0),
        ]
    )
    rows = [entry for entry in model.entries if entry.kind == "iteration"]
    assert [row.status for row in rows] != ["running", "running"]
    assert all(row.status != "running" for row in rows)
