"""The MCP browser opened while several real servers are still starting: each connected one lists its
tools by itself, however their connections interleave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Tree

from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.session import open_runtime
from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import BROWSE_ONLY, McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from tests.mcp.mcp_helpers import node_server
from tests.tui.browser_fixtures import ScreenApp, runtime_config, screen_text
from tests.tui.run_fixtures import wait_until

DEMOS = ("demo-a", "demo-b", "demo-c", "demo-d", "demo-e")


def _config(tmp_path: Path) -> Any:
    servers: dict[str, Any] = {}
    for name in DEMOS:
        (tmp_path / name).mkdir()
        servers[name] = demo_server_entry(tmp_path / name)
    servers["everything"] = node_server("mcp-server-everything", "stdio")
    return runtime_config(
        {"sandbox": {"mcp": [*DEMOS, "everything"]}, "mcp": {"servers": servers}, "approval": {"rules": []}}
    )


def _all_listed(app: ScreenApp) -> bool:
    screen = app.screen
    if not isinstance(screen, McpScreen):
        return False
    tree: Tree[Any] = screen.query_one("#mcp-tree", Tree)
    servers = screen.source.servers()
    return (
        all(server.state == "connected" and server.tools for server in servers)
        and len(tree.root.children) == len(servers)
        and all(node.children for node in tree.root.children)
    )


async def test_every_server_that_connects_after_the_browser_opened_lists_its_tools(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    config = _config(tmp_path)
    async with open_runtime(
        BROWSE_ONLY,
        config,
        tmp_path / "work",
        StaticApprover("deny"),
        wait_for_servers=False,
        log_dir=tmp_path / "logs",
    ) as session:
        source = McpSource(
            runtime=session.runtime, registry=session.mcp, config=config, policy=session.gate.policy
        )
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            try:
                await wait_until(pilot, lambda: _all_listed(app), timeout=30)
            except AssertionError:
                print([(s.name, s.state, s.tools) for s in source.servers()])
                raise
            screen = app.screen
            assert isinstance(screen, McpScreen)
            for server in source.servers():
                screen.selected = (server.name, None)
                screen.show_selected()
                await pilot.pause()
                assert f"1 page, {server.tools} tools" in screen_text(app), server.name
                assert "not listed yet" not in screen_text(app)
