"""The server actions of the MCP browser's detail tab: ping, reconnect and the log level selector."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Select

from ditto_tui.tui.widgets.mcp_browse_text import LOGGING_LEVELS

__all__ = ["McpServerActions"]


class McpServerActions(Horizontal):
    """Ping the selected server, start it again, or choose the level of the log messages it sends."""

    DEFAULT_CSS = """
    McpServerActions { height: auto; margin: 0 0 1 0; }
    McpServerActions > #mcp-ping, McpServerActions > #mcp-reconnect { margin-right: 2; }
    McpServerActions > #mcp-log-level { width: 28; }
    """

    def compose(self) -> ComposeResult:
        yield Button("Ping", id="mcp-ping", compact=True)
        yield Button("Reconnect", id="mcp-reconnect", compact=True)
        levels = [(level, level) for level in LOGGING_LEVELS]
        yield Select(levels, prompt="Log level", id="mcp-log-level", compact=True)
