"""The port an approval gate implements to sit in front of the tool and MCP registries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.runtime.worker import WorkerContext

if TYPE_CHECKING:
    from ditto_tui.interaction.mcp.registry import McpRegistry
    from ditto_tui.interaction.tools import ToolRegistry
    from ditto_tui.sandbox import Sandbox
    from ditto_tui.signal import CancelSignal


class CallGate(Protocol):
    """Decides, before execution, whether a tool or MCP call may run (see ``ditto_tui.supervise``)."""

    async def call_tool(
        self, registry: ToolRegistry, call: ToolCall | Mapping[str, Any], context: WorkerContext
    ) -> ExternalResult:
        """Prepare, decide and execute one registered tool call."""
        ...

    async def invoke_mcp(
        self,
        registry: McpRegistry,
        server: str,
        call: ToolCall,
        sandbox: Sandbox,
        signal: CancelSignal | None,
        context: WorkerContext | None,
    ) -> ExternalResult:
        """Decide and invoke one MCP tool call."""
        ...
