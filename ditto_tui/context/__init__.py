"""CONTEXT: scoped working sets that observations enter only by an explicit update, and the flows."""

from ditto_tui.context.flows import FlowResult, observation_item, run_mcp_flow, run_tool_call_flow
from ditto_tui.context.worker import (
    UPDATE,
    ContextItem,
    ContextStore,
    ContextUpdate,
    ContextUpdateInput,
    create_context_worker,
)

__all__ = [
    "UPDATE",
    "ContextItem",
    "ContextStore",
    "ContextUpdate",
    "ContextUpdateInput",
    "FlowResult",
    "create_context_worker",
    "observation_item",
    "run_mcp_flow",
    "run_tool_call_flow",
]
