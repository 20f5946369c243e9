"""Reconnecting a server from the MCP browser: R (or the Detail tab's button) starts it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Tree

from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import open_mcp_source
from ditto_tui.tui.screens.mcp import McpScreen
from tests.mcp.mcp_helpers import python_server
from tests.tui.browser_fixtures import ScreenApp, runtime_config
from tests.tui.run_fixtures import wait_until


async def test_r_starts_the_selected_server_again_and_lists_its_tools(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    config = runtime_config(
        {
            "sandbox": {"mcp": ["hostile"]},
            "mcp": {"servers": {"hostile": python_server("hostile.py")}},
            "approval": {"rules": [{"mcp": "hostile:*", "decision": "allow"}]},
        }
    )
    async with open_mcp_source(
        config, tmp_path / "work", StaticApprover("deny"), log_dir=tmp_path / "logs"
    ) as source:
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            await app.workers.wait_for_complete()
            tree: Tree[Any] = app.screen.query_one("#mcp-tree", Tree)
            tree.focus()
            tree.move_cursor(next(node for node in tree.root.children if node.data == ("hostile", None)))
            await pilot.pause()
            before = source.registry.get("hostile")
            await pilot.press("R")
            await wait_until(pilot, lambda: source.registry.get("hostile") is not before)
            await wait_until(
                pilot, lambda: source.server("hostile").callable and bool(source.tools("hostile"))
            )
            log = (tmp_path / "logs" / "hostile.log").read_text(encoding="utf-8")
            assert "[ditto] reconnecting" in log and log.count("starting MCP server 'hostile'") >= 1
            observation = await source.invoke("hostile", "echo", {"text": "again"})
            assert observation.status == "success"
