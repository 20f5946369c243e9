"""The MCP mode of a session: a short wait while the session opens, then the MCP browser over it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Header, Static

from ditto_tui.interaction.mcp import McpRegistry
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from ditto_tui.tui.bridge import RunBridge


class McpSessionScreen(Guarded, Screen[None]):
    """Waits for the session's runtime and MCP servers, then opens :class:`McpScreen` over it.

    The session opens after the first frame (so the app starts fast); the browser needs its runtime,
    gate and registry, so the MCP mode starts here and is replaced as soon as they exist.
    """

    CSS_PATH = "mcp_session.tcss"
    TITLE = "MCP servers"

    def __init__(self, bridge: RunBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self.ready: McpSource | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("Starting the session and the MCP servers of ditto.yaml…"), id="mcp-session-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.open_browser()

    @work(group="mcp-session", exit_on_error=False)
    async def open_browser(self) -> None:
        """Open the browser once the session is open, or say why it did not open."""
        try:
            runtime = await self.bridge.opened()
        except Exception as exc:
            message = public_message_from_exception(exc, workspace=self.bridge.spec.workspace)
            self.query_one("#mcp-session-status", Static).update(Text(f"The session did not open: {message}"))
            return
        gate = self.bridge.gate
        assert gate is not None
        source = McpSource(
            runtime=runtime,
            registry=self.bridge.mcp if self.bridge.mcp is not None else McpRegistry(),
            config=self.bridge.spec.config,
            policy=gate.policy,
        )
        if self.is_current:
            self.show_browser(source)
        else:
            self.ready = source

    def on_screen_resume(self) -> None:
        """Coming back to this mode after the session opened: show the browser."""
        if self.ready is not None:
            source, self.ready = self.ready, None
            self.show_browser(source)

    def show_browser(self, source: McpSource) -> None:
        """Open the browser on top of this screen (a mode's base screen cannot be replaced)."""
        self.query_one("#mcp-session-status", Static).update(Text("The session is open."))
        self.app.push_screen(McpScreen(source))
