"""``--break NODE_GLOB`` in the app: the first run already pauses before the node, marked on the graph."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.program import load_program
from ditto_tui.supervise import read_journal
from ditto_tui.supervise.journal import list_runs
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.breakpoint import BreakpointModal
from ditto_tui.tui.widgets.dag import BREAKPOINT_MARKER
from tests.tui.browser_fixtures import screen_text
from tests.tui.run_fixtures import ROOT, SIZE, config, keys_armed, run_screen, wait_until, workspace


async def test_break_pauses_the_first_run_before_the_node_and_marks_it(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    settings = config(root)
    program = load_program(ROOT / "graphs/read_and_deliver.py", settings, root)
    app = DittoApp(RunSpec(config=settings, workspace=root, program=program, breakpoints=("observe",)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, BreakpointModal))
        view = app.screen
        assert isinstance(view, BreakpointModal)
        await wait_until(pilot, lambda: view.armed)
        assert "Paused before node observe" in screen_text(app)
        await pilot.press("n")  # continue: it pauses again in the loop's next iteration
        await keys_armed(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, BreakpointModal) and app.screen is not view)
        again = app.screen
        assert isinstance(again, BreakpointModal)
        await wait_until(pilot, lambda: again.armed)
        await pilot.press("n")
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.runner is not None and screen.runner.is_finished)
        await wait_until(pilot, lambda: BREAKPOINT_MARKER in screen_text(app))
    (run,) = list_runs(root)
    assert run.outcome == "succeeded"
    kinds = [entry.event.kind for entry in read_journal(run.path).entries]
    assert kinds.count("breakpoint_requested") == 2 and kinds.count("breakpoint_resolved") == 2
