"""MCP: the client port and registry, tool drift, server status, and the official SDK behind them.

The SDK adapter (``mcp_session_client``) and ``open_mcp_servers`` load the ``mcp`` package, which is slow
to import, so they are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ditto_tui._lazy import load
from ditto_tui.interaction.mcp.blocks import McpBlock
from ditto_tui.interaction.mcp.drift import McpToolChange, McpToolsChanged
from ditto_tui.interaction.mcp.registry import (
    McpBrowser,
    McpCallError,
    McpClient,
    McpClientRequests,
    McpDiscoverInput,
    McpDiscovery,
    McpInvocation,
    McpInvokeInput,
    McpLogLine,
    McpOfferChanged,
    McpRegistry,
    McpServerInfo,
    map_tool_result,
)
from ditto_tui.interaction.mcp.status import McpServerState, McpServerStatus

if TYPE_CHECKING:
    from ditto_tui.interaction.mcp.connect import open_mcp_servers
    from ditto_tui.interaction.mcp.sdk import SessionClient, mcp_session_client

_LAZY = {
    "mcp_session_client": "ditto_tui.interaction.mcp.sdk",
    "SessionClient": "ditto_tui.interaction.mcp.sdk",
    "open_mcp_servers": "ditto_tui.interaction.mcp.connect",
}

__all__ = [
    "McpBlock",
    "McpBrowser",
    "McpCallError",
    "McpClient",
    "McpClientRequests",
    "McpDiscoverInput",
    "McpDiscovery",
    "McpInvocation",
    "McpInvokeInput",
    "McpLogLine",
    "McpOfferChanged",
    "McpRegistry",
    "McpServerInfo",
    "McpServerState",
    "McpServerStatus",
    "McpToolChange",
    "McpToolsChanged",
    "SessionClient",
    "map_tool_result",
    "mcp_session_client",
    "open_mcp_servers",
]


def __getattr__(name: str) -> Any:
    return load(__name__, _LAZY, name)
