"""A pending decision is visible from every screen: the badge, its key and its click (real runtime)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from ditto_tui.tui import DittoApp
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.screens.run import SessionReplayScreen
from ditto_tui.tui.screens.sampling import SamplingModal
from ditto_tui.tui.screens.tools import ToolsScreen
from ditto_tui.tui.widgets.pending import PendingBadge, badge_text
from tests.tui import test_mcp_requests_tui as server_requests
from tests.tui.run_fixtures import (
    SIZE,
    app_for,
    approval_view,
    config,
    keys_armed,
    outputs,
    run_screen,
    run_worker,
    screen_text,
    wait_until,
    workspace,
)

WRITE_NOTE = "graphs/write_note.py"
ONE = "⏸ 1 decision waiting — p to answer"


def badge(screen: Screen[Any]) -> PendingBadge:
    """The screen's pending badge."""
    return screen.query_one("#pending-badge", PendingBadge)


def shown(screen: Screen[Any]) -> bool:
    """Whether ``screen``'s badge is on show (laid out, not ``display: none``)."""
    widget = badge(screen)
    return widget.display and widget.region.height == 1


async def set_aside(pilot: Pilot[Any]) -> None:
    """Answer the approval view with "later" (Esc) once it is open; wait until it has closed."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    view = await approval_view(pilot)
    await pilot.press("escape")
    await wait_until(pilot, lambda: app.desk.open is not view and view not in app.screen_stack)
    await keys_armed(pilot)


async def switch(pilot: Pilot[Any], key: str, kind: type[Screen[Any]]) -> Screen[Any]:
    """Press ``key`` and wait until a screen of ``kind`` is shown."""
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, kind), timeout=20)
    return pilot.app.screen


def test_the_text_counts_and_names_the_key() -> None:
    assert badge_text(1).plain == ONE
    assert badge_text(3).plain == "⏸ 3 decisions waiting — p to answer"
    assert badge_text(12).cell_len < 78  # fits one row at 80 columns, padding included


async def test_a_set_aside_approval_is_shown_on_every_screen_and_answered_from_any(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=(80, 24)) as pilot:
        run = run_screen(app)
        worker = run_worker(app)
        view = await approval_view(pilot)
        assert not shown(run)  # the view is open: no badge under it
        await set_aside(pilot)
        await wait_until(pilot, lambda: shown(run))
        assert app.screen is run and view not in app.screen_stack and ONE in screen_text(app)
        mcp = await switch(pilot, "f3", McpScreen)
        await wait_until(pilot, lambda: shown(mcp))
        assert ONE in screen_text(app)
        assert mcp.active_bindings["p"].binding.action == "approvals"  # not Ping while a decision waits
        await pilot.press("p")
        await approval_view(pilot)
        assert not shown(mcp)
        await set_aside(pilot)
        await wait_until(pilot, lambda: shown(mcp) and app.screen is mcp)
        tools = await switch(pilot, "f4", ToolsScreen)
        await wait_until(pilot, lambda: shown(tools))
        assert ONE in screen_text(app)
        table = tools.query_one(DataTable)
        assert app.focused is table
        await pilot.click("#pending-badge")
        await approval_view(pilot)
        await pilot.press("a")
        await wait_until(pilot, lambda: worker.is_finished)
        assert isinstance(worker.result, dict) and worker.result["write"].status == "success"
        await wait_until(pilot, lambda: app.screen is tools and app.decisions_waiting == 0)
        await pilot.pause()
        assert app.focused is table  # the click never took the focus
        for screen in (run, mcp, tools):
            assert not shown(screen)
        assert ONE not in screen_text(app)
        await keys_armed(pilot)
        await switch(pilot, "f3", McpScreen)
        assert mcp.active_bindings["p"].binding.action == "ping"


async def test_the_badge_counts_every_request_and_goes_when_they_time_out(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/parallel_writes.py", config(root, timeout_seconds=6.0))
    async with app.run_test(size=SIZE) as pilot:
        run = run_screen(app)
        await set_aside(pilot)  # one of the two: the other one's view opens at once
        assert not shown(run)
        await set_aside(pilot)
        await wait_until(pilot, lambda: shown(run))
        assert "⏸ 2 decisions waiting — p to answer" in screen_text(app)
        tools = await switch(pilot, "f4", ToolsScreen)
        await wait_until(pilot, lambda: shown(tools))
        await wait_until(pilot, lambda: app.bridge.approver.all_pending() == [], timeout=10)
        await wait_until(pilot, lambda: not shown(tools) and not shown(run))
        assert app.screen is tools


async def test_a_run_cancelled_with_a_request_set_aside_clears_the_badge(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        run = run_screen(app)
        await set_aside(pilot)
        await wait_until(pilot, lambda: shown(run))
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        worker = run_worker(app)
        await wait_until(pilot, lambda: worker.is_finished)
        await wait_until(pilot, lambda: not shown(run))
        assert ONE not in screen_text(app)


async def test_a_replay_opened_over_the_live_session_shows_its_pending_decision(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("a")
        await outputs(pilot)
        await keys_armed(pilot)
        await pilot.press("n")  # the same graph again: a second approval, set aside
        await set_aside(pilot)
        await pilot.press("l")
        await wait_until(pilot, lambda: "Runs of this workspace" in screen_text(app))
        await pilot.press("down", "enter")  # the first run: the live one is at the top
        await wait_until(pilot, lambda: isinstance(app.screen, SessionReplayScreen))
        replay = app.screen
        await wait_until(pilot, lambda: shown(replay))
        assert ONE in screen_text(app)
        await keys_armed(pilot)
        await pilot.press("p")
        await approval_view(pilot)
        await pilot.press("a")
        await wait_until(pilot, lambda: app.screen is replay and not shown(replay))


async def test_a_set_aside_sampling_request_counts_and_p_reopens_it(tmp_path: Path) -> None:
    app = server_requests.app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = await server_requests.call(pilot, tmp_path, "trigger-sampling-request", prompt="capital?")
        await server_requests.open_view(pilot, SamplingModal)
        await pilot.press("escape")  # later
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))
        mcp = app.screen
        await wait_until(pilot, lambda: shown(mcp))
        assert ONE in screen_text(app)
        await keys_armed(pilot)
        await pilot.press("p")
        await server_requests.open_view(pilot, SamplingModal)
        assert not shown(mcp)
        await pilot.press("r")
        await asyncio.wait_for(task, 20)
        await wait_until(pilot, lambda: app.screen is mcp and app.decisions_waiting == 0)
        await pilot.pause()
        assert not shown(mcp)
