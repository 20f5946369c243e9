"""The app on a durable run host (``runs: {host: local}``): the run is started on the host and followed
there, the app's worker runs its nodes, ``l`` lists the host's runs, the inbox holds another process's
request, and quitting says the runs go on."""

from __future__ import annotations

from pathlib import Path

import pytest

from ditto_tui.config import RunsConfig
from ditto_tui.program import load_program
from ditto_tui.runs import open_durable_run_host
from ditto_tui.runs.temporal import server
from ditto_tui.supervise import ApprovalDecision
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.runs import HostRunsModal
from tests.runs.workspace import listed
from tests.tui.run_fixtures import SIZE, approval_view, wait_until, workspace
from tests.tui.run_fixtures import config as tui_config

GRAPH = Path(__file__).resolve().parents[2] / "graphs" / "write_note.py"
NOTE = ".ditto/notes/hello.md"


@pytest.mark.timeout(180)
async def test_the_app_runs_the_graph_on_the_host_lists_its_runs_and_leaves_them_running(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    config = tui_config(root).model_copy(update={"runs": RunsConfig(host="local", task_queue="app-test")})
    program = load_program(GRAPH, config, root)
    app = DittoApp(RunSpec(config=config, workspace=root, program=program, journal=False))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.desk.open is not None, timeout=90)  # the server starts
            view = await approval_view(pilot)
            (run_id,) = app.bridge.runs
            assert view.request.run_id == run_id and not (root / NOTE).exists()
            host = open_durable_run_host(config.runs.model_dump())
            (waiting,) = await listed(host, seconds=30)  # stored just after the worker asked it here
            assert waiting.request_id == view.request.request_id  # one request: the host's and the view's

            await pilot.press("escape")  # later: it stays pending
            await wait_until(pilot, lambda: app.desk.open is None)
            await pilot.pause(0.6)  # keys are held back a moment after a modal closes
            await pilot.press("l")
            await wait_until(pilot, lambda: isinstance(app.screen, HostRunsModal), timeout=30)
            runs_list = app.screen
            assert isinstance(runs_list, HostRunsModal)
            assert [(s.run_id, s.status, s.pending) for s in runs_list.summaries] == [(run_id, "running", 1)]
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, HostRunsModal))

            await host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
            await wait_until(pilot, lambda: _finished(app), timeout=60)
            assert (root / NOTE).read_text(encoding="utf-8").startswith("# Hello")

            second = await host.start(program.plan, program.initial)  # started elsewhere, waiting here
            await wait_until(pilot, lambda: app.desk.open is not None, timeout=60)
            assert app.desk.open is not None and app.desk.open.request.run_id == second
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.desk.open is None)

            await pilot.pause(0.6)
            await pilot.press("q")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
            confirm = app.screen
            assert isinstance(confirm, ConfirmModal)
            question = confirm.question
            assert "Runs go on on the run host" in question and "ditto-tui inbox" in question
            await pilot.press("y")
        runs = {summary.run_id: summary for summary in await host.runs()}
        assert runs[run_id].status == "succeeded"
        assert runs[second].status == "running" and runs[second].pending == 1  # quitting left it waiting
    finally:
        server.stop()


def _finished(app: DittoApp) -> bool:
    from ditto_tui.tui.screens.run import RunScreen

    screen = app.screen
    return isinstance(screen, RunScreen) and screen.model.finished
