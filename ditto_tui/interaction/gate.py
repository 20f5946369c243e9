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
    """Decides, before execution, whether a tool or MCP call may run (see ``ditto_tui.supervise``).

    The gate wraps execution: the INTERACTION worker hands a call of a guarded registry to the gate, and
    the gate checks it with the registry (``prepare``, ``refusal``), decides, and executes it through the
    registry (``execute``, ``invoke_unguarded``) at most once. A guarded registry called directly
    (``ToolRegistry.call``, ``McpRegistry.execute`` or ``invoke``) hands the call to its gate too, so
    every path reaches the policy. ``ToolRegistry.execute`` refuses a tool needing approval without a
    bound one; ``McpRegistry.invoke_unguarded`` is the gate's own way in and checks the call again.
    """

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
        """Check (``registry.refusal``), decide and invoke one MCP tool call."""
        ...
