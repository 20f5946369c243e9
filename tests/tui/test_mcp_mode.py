"""``ditto-tui mcp``: the app opens in its MCP mode, waits for the session, then browses the demo server."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.config import parse_runtime_config
from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.mcp import McpScreen
from tests.tui.run_fixtures import SIZE, wait_until


async def test_mcp_mode_opens_the_browser_once_the_session_is_open_and_discovers(tmp_path: Path) -> None:
    config = parse_runtime_config(
        {
            "sandbox": {"mcp": ["demo"]},
            "mcp": {"servers": {"demo": demo_server_entry(tmp_path / "notes")}},
            "approval": {"rules": [{"mcp": "demo:*", "decision": "ask"}]},
        },
        {},
    )
    app = DittoApp(RunSpec(config=config, workspace=tmp_path, program=None, journal=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen), timeout=20)
        screen = app.screen
        assert isinstance(screen, McpScreen)
        await wait_until(pilot, lambda: (screen.source.server("demo").tools or 0) >= 5, timeout=20)
        names = {capability.name for capability in screen.source.registry.capabilities("demo")}
        assert {"read_note", "write_note"} <= names
