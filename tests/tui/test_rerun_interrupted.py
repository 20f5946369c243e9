"""``r`` in the runs list on a run that was interrupted (its process killed while it waited) runs the
session's graph again on the input that run was started on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ditto_tui.program import load_program
from ditto_tui.supervise.journal import list_runs
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.runs import RunsModal
from ditto_tui.workspace import DEFAULT_GRAPH, resolve_config
from tests.journal.test_interrupted_runs import waiting_run
from tests.tui.run_fixtures import SIZE, wait_until


def _interrupted(tmp_path: Path) -> tuple[Path, str]:
    with waiting_run(tmp_path) as workspace:
        pass
    (run,) = list_runs(workspace)
    assert run.outcome == "interrupted" and run.has_input
    return workspace, run.run_id


@pytest.mark.timeout(120)
async def test_r_on_an_interrupted_run_runs_the_graph_again_on_its_input(tmp_path: Path) -> None:
    workspace, interrupted = _interrupted(tmp_path)
    config = resolve_config(None, workspace).config
    program = load_program(DEFAULT_GRAPH, config, workspace)
    app = DittoApp(RunSpec(config=config, workspace=workspace, program=program, ask_task=True))
    async with app.run_test(size=SIZE) as pilot:
        await app.bridge.opened()
        await pilot.press("escape", "l")  # out of the task box, then the runs list
        await wait_until(pilot, lambda: isinstance(app.screen, RunsModal))
        await pilot.press("r")
        await wait_until(pilot, lambda: len(app.bridge.runs) == 1, timeout=30)
        rerun = app.bridge.runs[0]
        assert rerun != interrupted
        await wait_until(pilot, lambda: len(list_runs(workspace)) == 2)
        headers = {
            summary.run_id: json.loads(summary.path.read_text(encoding="utf-8").splitlines()[0])
            for summary in list_runs(workspace)
        }
        assert headers[rerun]["input"] == headers[interrupted]["input"] == program.initial
