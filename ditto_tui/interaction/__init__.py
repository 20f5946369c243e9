"""The INTERACTION worker: tools, MCP, observations and output delivery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ditto_tui._lazy import load

if TYPE_CHECKING:
    from ditto_tui.interaction.brave import BraveWebSearchProvider, create_brave_web_search_provider
    from ditto_tui.interaction.commands import CommandTool, build_argv, create_read_only_command_tools
    from ditto_tui.interaction.gate import CallGate
    from ditto_tui.interaction.mcp import (
        McpCallError,
        McpServerStatus,
        McpToolChange,
        McpToolsChanged,
        open_mcp_servers,
    )
    from ditto_tui.interaction.mcp.registry import (
        McpClient,
        McpDiscoverInput,
        McpDiscovery,
        McpInvocation,
        McpInvokeInput,
        McpRegistry,
        map_tool_result,
    )
    from ditto_tui.interaction.mcp.sdk import mcp_session_client
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    "ditto_tui.interaction.commands": (
        "CommandTool",
        "build_argv",
        "create_read_only_command_tools",
    ),
    "ditto_tui.interaction.gate": ("CallGate",),
    "ditto_tui.interaction.mcp": (
        "McpCallError",
        "McpServerStatus",
        "McpToolChange",
        "McpToolsChanged",
        "open_mcp_servers",
    ),
    "ditto_tui.interaction.mcp.registry": (
        "McpClient",
        "McpDiscoverInput",
        "McpDiscovery",
        "McpInvocation",
        "McpInvokeInput",
        "McpRegistry",
        "map_tool_result",
    ),
    "ditto_tui.interaction.observe": ("observe_external_result",),
    "ditto_tui.interaction.output": (
        "OutputSink",
        "create_output_handler",
    ),
    "ditto_tui.interaction.tools": (
        "PreparedCall",
        "RegisteredTool",
        "Tool",
        "ToolDefinition",
        "ToolRegistry",
    ),
    "ditto_tui.interaction.web_search": (
        "WebSearchError",
        "WebSearchProvider",
        "WebSearchResult",
        "WebSearchTool",
        "create_web_search_tool",
    ),
    "ditto_tui.interaction.worker": (
        "ACT_MCP",
        "ACT_TOOL",
        "NodeDefinition",
        "NodeDescriptor",
        "OBSERVE",
        "OUTPUT",
        "create_interaction_nodes",
        "create_interaction_worker",
        "create_mcp_handler",
        "create_tool_handler",
        "handle_observe",
        "interaction_mcp_node",
        "interaction_observe_node",
        "interaction_output_node",
        "interaction_tool_node",
    ),
    "ditto_tui.interaction.brave": (
        "BraveWebSearchProvider",
        "create_brave_web_search_provider",
    ),
    "ditto_tui.interaction.mcp.sdk": ("mcp_session_client",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
"""Each public name's module, loaded on first use: importing one module of the package (``results``,
which the inbox's requests use) loads neither the MCP SDK, httpx nor the tools it does not touch."""

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
    return load(__name__, _MODULE_OF, name)
