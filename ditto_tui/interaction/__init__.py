"""The INTERACTION worker: tools, MCP, observations and output delivery."""

from ditto_tui.interaction.gate import CallGate
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

__all__ = [
    "ACT_MCP",
    "ACT_TOOL",
    "OBSERVE",
    "OUTPUT",
    "CallGate",
    "McpClient",
    "McpDiscoverInput",
    "McpDiscovery",
    "McpInvocation",
    "McpInvokeInput",
    "McpRegistry",
    "NodeDefinition",
    "NodeDescriptor",
    "OutputSink",
    "PreparedCall",
    "RegisteredTool",
    "Tool",
    "ToolDefinition",
    "ToolRegistry",
    "create_interaction_nodes",
    "create_interaction_worker",
    "create_mcp_handler",
    "create_output_handler",
    "create_tool_handler",
    "handle_observe",
    "interaction_mcp_node",
    "interaction_observe_node",
    "interaction_output_node",
    "interaction_tool_node",
    "map_tool_result",
    "observe_external_result",
]
