"""The help screen: every screen's purpose and keys, read from the classes."""

from __future__ import annotations

from typing import Any

from textual.app import App

from ditto_tui.tui.screens.help import HelpScreen
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.screens.tools import ToolsScreen
from tests.tui.browser_fixtures import screen_text


class HelpApp(App[None]):
    """An app whose only job is to show the help screen."""

    def on_mount(self) -> None:
        self.push_screen(HelpScreen([McpScreen, ToolsScreen]))


async def test_help_lists_each_screen_and_its_keys_and_escape_closes_it() -> None:
    app = HelpApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "MCP servers" in text and "Discover" in text and "Call tool" in text
        assert "Tools" in text and "Command palette" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


def test_help_screen_snapshot(snap_compare: Any) -> None:
    assert snap_compare(HelpApp(), terminal_size=(120, 36))
