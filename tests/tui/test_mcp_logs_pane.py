"""The MCP browser's Logs tab: a server's log file's end, then each line live, filtered with ``f``."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Log

from ditto_tui.interaction.mcp.logs import LOG_LINES_PER_SECOND
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_logs import McpLogsPane
from tests.mcp.mcp_helpers import python_server
from tests.tui.browser_fixtures import ScreenApp, screen_text
from tests.tui.mcp_browser_helpers import browser_source, select_server
from tests.tui.run_fixtures import wait_until


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[McpSource]:
    servers = {
        "hostile": python_server("hostile.py"),
        "missing": {"command": str(tmp_path / "no-such-server")},
    }
    async with browser_source(tmp_path, servers, rules=[{"mcp": "hostile:*", "decision": "allow"}]) as opened:
        yield opened


async def _logs(app: ScreenApp, pilot: Any, server: str) -> McpLogsPane:
    await select_server(pilot, server)
    await pilot.press("g")
    await wait_until(pilot, lambda: bool(app.screen.query(McpLogsPane)))
    return app.screen.query_one(McpLogsPane)


def _log_text(pane: McpLogsPane) -> str:
    return "\n".join(pane.query_one(Log).lines)


async def test_the_log_shows_its_history_then_each_line_as_it_is_written(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _logs(app, pilot, "hostile")
        assert "[ditto] starting MCP server 'hostile' (stdio)" in _log_text(pane)
        await source.invoke("hostile", "echo", {"text": "x"})
        await wait_until(pilot, lambda: "[stderr] called echo" in _log_text(pane))
        await source.invoke("hostile", "flood", {"count": 3, "secret": "hunter2-secret"})
        await wait_until(pilot, lambda: "[log] info flood: line 2 token=[REDACTED]" in _log_text(pane))
        assert "hunter2" not in _log_text(pane)
        assert "3 log messages" in screen_text(app)
        pane.query_one(Log).focus()
        await pilot.press("f")  # log messages only
        await pilot.pause()
        shown = pane.query_one(Log).lines
        assert shown and all(line.startswith("[log] ") for line in shown)
        assert "showing log messages" in screen_text(app)
        for _ in range(3):
            await pilot.press("f")  # stderr, ditto's notes, every line again
        await pilot.pause()
        assert "[stderr] called echo" in _log_text(pane) and "[ditto]" in _log_text(pane)


async def test_a_server_that_failed_to_start_shows_why_in_its_log(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _logs(app, pilot, "missing")
        await wait_until(pilot, lambda: "was not found" in _log_text(pane))


async def test_a_flood_of_lines_is_drawn_once_per_frame_and_bounded(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _logs(app, pilot, "hostile")
        before = len(pane.lines)
        for n in range(500):
            source.registry.report_log("hostile", "[log]", f"info burst: {n}")
            source.registry.report_log("elsewhere", "[log]", "not this server")
        await wait_until(pilot, lambda: len(pane.lines) == before + 500)
        assert "not this server" not in _log_text(pane) and "info burst: 499" in _log_text(pane)


async def test_m17_a_log_flood_reaches_the_pane_rate_limited_and_redacted(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _logs(app, pilot, "hostile")
        started = time.monotonic()
        await source.invoke("hostile", "flood", {"count": 2000, "secret": "hunter2-secret"})
        await wait_until(pilot, lambda: "dropping the rest" in _log_text(pane))
        seconds = time.monotonic() - started
        lines = list(pane.query_one(Log).lines)
        first = next(n for n, line in enumerate(lines) if "dropping the rest" in line)
        logged = [line for line in lines if line.startswith("[log] ")]
        # At most LOG_LINES_PER_SECOND in each second of the flood (a slow machine spreads it over more
        # seconds, each with its own allowance), and far fewer than were sent.
        assert any(line.startswith("[log] ") for line in lines[:first])
        assert len(logged) <= LOG_LINES_PER_SECOND * (math.ceil(seconds) + 1)
        assert len(logged) < 2000
        assert "hunter2" not in _log_text(pane)
        assert app.is_running


async def test_a_single_log_message_is_counted_in_the_singular(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _logs(app, pilot, "hostile")
        await source.invoke("hostile", "flood", {"count": 1, "secret": "s"})
        await wait_until(pilot, lambda: "[log] info flood: line 0" in _log_text(pane))
        await pilot.pause()
        assert "1 log message," in screen_text(app) and "1 log messages" not in screen_text(app)
