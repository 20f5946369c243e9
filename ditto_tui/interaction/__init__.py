"""The INTERACTION worker: tools, MCP, observations and output delivery."""

from typing import TYPE_CHECKING, Any

from ditto_tui.interaction.commands import CommandTool, build_argv, create_read_only_command_tools
from ditto_tui.interaction.gate import CallGate
from ditto_tui.interaction.mcp import McpCallError, McpServerStatus, McpToolChange, McpToolsChanged
from ditto_tui.interaction.mcp.registry import (
    McpClient,
    McpDiscoverInput,
    McpDiscovery,
    McpInvocation,
    McpInvokeInput,
    McpRegistry,
    map_tool_result,
)
from ditto_tui.interaction.observe import observe_external_result
from ditto_tui.interaction.output import OutputSink, create_output_handler
from ditto_tui.interaction.tools import PreparedCall, RegisteredTool, Tool, ToolDefinition, ToolRegistry
from ditto_tui.interaction.web_search import (
    WebSearchError,
    WebSearchProvider,
    WebSearchResult,
    WebSearchTool,
    create_web_search_tool,
)
from ditto_tui.interaction.worker import (
    ACT_MCP,
    ACT_TOOL,
    OBSERVE,
    OUTPUT,
    NodeDefinition,
    NodeDescriptor,
    create_interaction_nodes,
    create_interaction_worker,
    create_mcp_handler,
    create_tool_handler,
    handle_observe,
    interaction_mcp_node,
    interaction_observe_node,
    interaction_output_node,
    interaction_tool_node,
)

if TYPE_CHECKING:
    from ditto_tui.interaction.brave import BraveWebSearchProvider, create_brave_web_search_provider
    from ditto_tui.interaction.mcp import open_mcp_servers
    from ditto_tui.interaction.mcp.sdk import mcp_session_client

__all__ = [
    "ACT_MCP",
    "ACT_TOOL",
    "OBSERVE",
    "OUTPUT",
    "BraveWebSearchProvider",
    "CallGate",
    "CommandTool",
    "McpCallError",
    "McpClient",
    "McpDiscoverInput",
    "McpDiscovery",
    "McpInvocation",
    "McpInvokeInput",
    "McpRegistry",
    "McpServerStatus",
    "McpToolChange",
    "McpToolsChanged",
    "NodeDefinition",
    "NodeDescriptor",
    "OutputSink",
    "PreparedCall",
    "RegisteredTool",
    "Tool",
    "ToolDefinition",
    "ToolRegistry",
    "WebSearchError",
    "WebSearchProvider",
    "WebSearchResult",
    "WebSearchTool",
    "build_argv",
    "create_brave_web_search_provider",
    "create_interaction_nodes",
    "create_interaction_worker",
    "create_mcp_handler",
    "create_output_handler",
    "create_read_only_command_tools",
    "create_tool_handler",
    "create_web_search_tool",
    "handle_observe",
    "interaction_mcp_node",
    "interaction_observe_node",
    "interaction_output_node",
    "interaction_tool_node",
    "map_tool_result",
    "mcp_session_client",
    "observe_external_result",
    "open_mcp_servers",
]


def __getattr__(name: str) -> Any:
    # The SDK adapter and open_mcp_servers import the slow ``mcp`` package, so they load on first use.
    if name in ("mcp_session_client", "open_mcp_servers"):
        from ditto_tui.interaction import mcp

        value = getattr(mcp, name)
        globals()[name] = value
        return value
    if name in ("BraveWebSearchProvider", "create_brave_web_search_provider"):
        # The Brave provider imports httpx, which is slow to import too.
        from ditto_tui.interaction import brave

        value = getattr(brave, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
