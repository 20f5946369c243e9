"""Failure events are a public channel (the Run screen, headless output, the journal): their ``error`` is a
public message, whatever the failing handler put in its exception. The exception raised to the caller
keeps its full detail for the application."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import parse_runtime_config
from ditto_tui.errors import GraphExecutionError
from ditto_tui.runtime import (
    ExecutionEvent,
    NodeFailed,
    RunFinished,
    WorkerContext,
    create_ditto,
    define_worker,
    graph,
)
from ditto_tui.sanitize import unsafe_reason

CONFIGURED = "plainConfiguredValue7d1f"
TOKEN = "sk-proj-" + "T" * 40


async def _explode(input: Any, context: WorkerContext) -> Any:
    workspace = context.services.sandbox.workspace
    raise RuntimeError(
        f"lookup in {workspace}/notes/a.md and /home/alice/.ssh/id_rsa failed\n"
        f"Authorization: Bearer {TOKEN} key={CONFIGURED} \x1b]52;c;Zm9v\x07\u202e"
    )


async def test_e01_e04_e05_e07_failure_events_carry_only_public_messages(tmp_path: Path) -> None:
    config = parse_runtime_config({"interaction": {"webSearch": {"apiKey": CONFIGURED}}}, {})
    events: list[ExecutionEvent] = []
    plan = graph("boom").node("boom", "T.EXPLODE", [], lambda _i, _d: {})
    async with create_ditto(
        config=config, workspace=tmp_path, workers=[define_worker(type="T", nodes={"T.EXPLODE": _explode})]
    ) as runtime:
        runtime.subscribe(events.append)
        with pytest.raises(GraphExecutionError) as caught:
            await runtime.run(plan)
    assert TOKEN in str(caught.value)  # the application still gets the whole story
    failed = [event for event in events if isinstance(event, NodeFailed)]
    finished = [event for event in events if isinstance(event, RunFinished)]
    assert len(failed) == 1 and len(finished) == 1
    for error in (failed[0].error, finished[0].error):
        assert error is not None and unsafe_reason(error) is None, error
        assert TOKEN not in error and CONFIGURED not in error and "/home/alice" not in error
        assert "\n" not in error and "\x1b" not in error and "\u202e" not in error
        assert "notes/a.md" in error and str(tmp_path) not in error  # workspace paths stay, relative
    failure, outcome = failed[0].error, finished[0].error
    assert failure is not None and failure.startswith("lookup in ")
    assert outcome is not None and outcome.startswith("node 'boom' (T.EXPLODE) failed: ")
    assert "GraphExecutionError" not in outcome
