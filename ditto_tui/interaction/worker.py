"""The INTERACTION worker: its node types, handlers, descriptors and the standard factory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ditto_tui.contracts import ExternalResult, Observation, ToolCall
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.gate import CallGate
from ditto_tui.interaction.mcp.port import McpDiscoverInput, parse_mcp_input
from ditto_tui.interaction.mcp.registry import McpClient, McpDiscovery, McpInvocation, McpRegistry
from ditto_tui.interaction.observe import observe_external_result
from ditto_tui.interaction.output import OutputSink, create_output_handler
from ditto_tui.interaction.tools import RegisteredTool, ToolRegistry
from ditto_tui.runtime.worker import NodeHandler, WorkerContext, WorkerDefinition, define_worker

WORKER_TYPE = "INTERACTION"
ACT_TOOL = "INTERACTION.ACT.TOOL"
ACT_MCP = "INTERACTION.ACT.MCP"
OBSERVE = "INTERACTION.OBSERVE"
OUTPUT = "INTERACTION.OUTPUT"


@dataclass(frozen=True, slots=True)
class NodeDefinition:
    """A handler bound to a node type and the worker type that will expose it."""

    worker_type: str
    type: str
    handler: NodeHandler


@dataclass(frozen=True, slots=True)
class NodeDescriptor:
    """Names one INTERACTION node type; ``define`` binds a replacement handler without registering it."""

    type: str

    def define(self, worker_type: str, handler: NodeHandler) -> NodeDefinition:
        """Bind ``handler`` to this node type for a worker of type ``worker_type``."""
        if not self.type.startswith(worker_type + "."):
            raise ValidationError(f"node type {self.type!r} does not belong to worker type {worker_type!r}")
        if not callable(handler):
            raise ValidationError(f"handler for {self.type!r} is not callable")
        return NodeDefinition(worker_type, self.type, handler)


interaction_tool_node = NodeDescriptor(ACT_TOOL)
interaction_mcp_node = NodeDescriptor(ACT_MCP)
interaction_observe_node = NodeDescriptor(OBSERVE)
interaction_output_node = NodeDescriptor(OUTPUT)


def _tool_call(input: Any) -> ToolCall | Mapping[str, Any]:
    if not isinstance(input, Mapping) or set(input) != {"call"}:
        raise ValidationError("INTERACTION.ACT.TOOL input must be exactly {'call': {id, name, arguments}}")
    call = input["call"]
    if not isinstance(call, ToolCall | Mapping):
        raise ValidationError("INTERACTION.ACT.TOOL call must be an object with id, name and arguments")
    return call


def create_tool_handler(registry: ToolRegistry) -> NodeHandler:
    """The ``INTERACTION.ACT.TOOL`` handler over ``registry`` (through its approval gate, if guarded)."""
    if not isinstance(registry, ToolRegistry):
        raise ValidationError("create_tool_handler needs a ToolRegistry")

    async def handle_tool(input: Any, context: WorkerContext) -> ExternalResult:
        # The gate wraps the call (prepare, decide, execute); the registry alone checks and executes.
        gate = registry.gate
        if gate is not None:
            return await gate.call_tool(registry, _tool_call(input), context)
        return await registry.call(_tool_call(input), context)

    return handle_tool


def create_mcp_handler(registry: McpRegistry) -> NodeHandler:
    """The ``INTERACTION.ACT.MCP`` handler over ``registry`` (discover, or invoke through its gate)."""
    if not isinstance(registry, McpRegistry):
        raise ValidationError("create_mcp_handler needs an McpRegistry")

    async def handle_mcp(input: Any, context: WorkerContext) -> McpDiscovery | McpInvocation:
        gate = registry.gate
        sandbox, signal = context.services.sandbox, context.signal
        if gate is None:
            return await registry.execute(input, sandbox, signal, context=context)
        request = parse_mcp_input(input)
        if isinstance(request, McpDiscoverInput):
            return await registry.execute(request, sandbox, signal, context=context)
        # The gate wraps the invocation (refusal, decide, invoke_unguarded), as it does a tool call.
        result = await gate.invoke_mcp(registry, request.server, request.call, sandbox, signal, context)
        return McpInvocation(result=result)

    return handle_mcp


async def handle_observe(input: Any, context: WorkerContext) -> Observation:
    """The ``INTERACTION.OBSERVE`` handler: :func:`observe_external_result` as a node."""
    return observe_external_result(input)


def create_interaction_nodes(
    *,
    tools: ToolRegistry | None = None,
    mcp: McpRegistry | None = None,
    output: OutputSink | None = None,
) -> dict[str, NodeHandler]:
    """Handlers for ``define_worker``: ACT.TOOL and OBSERVE always, ACT.MCP and OUTPUT when given."""
    if tools is not None and not isinstance(tools, ToolRegistry):
        raise ValidationError("create_interaction_nodes(tools=...) takes a ToolRegistry, not a list")
    if mcp is not None and not isinstance(mcp, McpRegistry):
        raise ValidationError("create_interaction_nodes(mcp=...) takes an McpRegistry, not a client map")
    nodes: dict[str, NodeHandler] = {
        ACT_TOOL: create_tool_handler(tools if tools is not None else ToolRegistry()),
        OBSERVE: handle_observe,
    }
    if mcp is not None:
        nodes[ACT_MCP] = create_mcp_handler(mcp)
    if output is not None:
        nodes[OUTPUT] = create_output_handler(output)
    return nodes


def _tool_registry(tools: ToolRegistry | Iterable[RegisteredTool] | None) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    return ToolRegistry(tools or ())


def _mcp_registry(mcp: McpRegistry | Mapping[str, McpClient] | None) -> McpRegistry | None:
    if mcp is None or isinstance(mcp, McpRegistry):
        return mcp
    if not isinstance(mcp, Mapping):
        raise ValidationError("mcp= takes an McpRegistry or a mapping of server name to client")
    registry = McpRegistry()
    for server, client in mcp.items():
        registry.register(server, client)
    return registry


def create_interaction_worker(
    *,
    tools: ToolRegistry | Iterable[RegisteredTool] | None = None,
    mcp: McpRegistry | Mapping[str, McpClient] | None = None,
    output: OutputSink | None = None,
    concurrency: int | None = None,
    approval: CallGate | None = None,
) -> WorkerDefinition:
    """The standard INTERACTION worker.

    Lists and maps are registered now; supplied registries keep their identity for later changes.
    ``approval`` (an ``ApprovalGate``) guards the registries so that every call goes through it. The
    registries are the worker's ``resources`` (``"tools"``, and ``"mcp"`` when given), so an agent loop
    can describe the tools to a model. The factory grants no permission.
    """
    tool_registry = _tool_registry(tools)
    mcp_registry = _mcp_registry(mcp)
    if approval is not None:
        tool_registry.guard(approval)
        if mcp_registry is not None:
            mcp_registry.guard(approval)
    resources: dict[str, object] = {"tools": tool_registry}
    if mcp_registry is not None:
        resources["mcp"] = mcp_registry
    return define_worker(
        type=WORKER_TYPE,
        nodes=create_interaction_nodes(tools=tool_registry, mcp=mcp_registry, output=output),
        resources=resources,
        concurrency=concurrency,
    )
