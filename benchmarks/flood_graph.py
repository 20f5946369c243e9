"""A graph of one node that makes 20,000 calls, each a node call of its own in the run's events (40,000
``node_started``/``node_finished`` events): the flood ``bench_serve`` runs in a served tab and in a
terminal. ``DITTO_BENCH_CALLS`` sets the count."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.program import Program
from ditto_tui.runtime import define_worker, graph
from ditto_tui.runtime.worker import WorkerContext

CALLS = int(os.environ.get("DITTO_BENCH_CALLS", "20000"))


async def _step(input: Any, _context: WorkerContext) -> Any:
    return input


async def _flood(_input: Any, context: WorkerContext) -> dict[str, int]:
    for index in range(CALLS):
        await context.invoke("BENCH.STEP", {"index": index}, node_id=f"call-{index}")
    return {"calls": CALLS}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """One node, ``flood``, making ``CALLS`` nested calls."""
    worker = define_worker(type="BENCH", nodes={"BENCH.FLOOD": _flood, "BENCH.STEP": _step})
    plan = graph("flood").node("flood", "BENCH.FLOOD", [], lambda _input, _deps: {})
    return Program(name="flood", description=__doc__ or "", plan=plan, workers=(worker,))
