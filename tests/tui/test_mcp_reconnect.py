"""Reconnecting a server from the MCP browser: R (or the Detail tab's button) starts it again."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.tui.screens.mcp import McpScreen
from tests.mcp.mcp_helpers import python_server
from tests.tui.browser_fixtures import ScreenApp
from tests.tui.mcp_browser_helpers import browser_source, select_server
from tests.tui.run_fixtures import wait_until


async def test_r_starts_the_selected_server_again_and_lists_its_tools(tmp_path: Path) -> None:
    servers = {"hostile": python_server("hostile.py")}
    rules = [{"mcp": "hostile:*", "decision": "allow"}]
    async with browser_source(tmp_path, servers, rules=rules) as source:
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            await select_server(pilot, "hostile")
            before = source.registry.get("hostile")
            await pilot.press("R")
            await wait_until(pilot, lambda: source.registry.get("hostile") is not before)
            view = source.server
            await wait_until(pilot, lambda: view("hostile").callable and bool(source.tools("hostile")))
            log = (tmp_path / "logs" / "hostile.log").read_text(encoding="utf-8")
            assert "[ditto] reconnecting" in log
            observation = await source.invoke("hostile", "echo", {"text": "again"})
            assert observation.status == "success"
