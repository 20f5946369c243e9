"""The runtime: workers, graphs, loops, events and the client that runs them."""

from ditto_tui.config import RuntimeConfig, load_runtime_config_file
from ditto_tui.errors import GraphExecutionError, LoopLimitError, RunAbortedError, UnknownNodeError
from ditto_tui.runtime.breakpoints import (
    BreakpointApprover,
    BreakpointDecision,
    BreakpointRequest,
    Breakpoints,
    parse_json_edit,
)
from ditto_tui.runtime.client import Runtime, create_ditto
from ditto_tui.runtime.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    BreakpointRequested,
    BreakpointResolved,
    CustomEvent,
    ExecutionEvent,
    LoopIteration,
    ModeChanged,
    NodeFailed,
    NodeFinished,
    NodeInfo,
    NodeSkipped,
    NodeStarted,
    RunFinished,
    RunStarted,
)
from ditto_tui.runtime.graph import Graph, GraphNode, LoopDefinition, graph, loop
from ditto_tui.runtime.worker import NodeHandler, Services, WorkerContext, WorkerDefinition, define_worker
from ditto_tui.signal import CancelSignal

__all__ = [
    "AnyEvent",
    "ApprovalRequested",
    "ApprovalResolved",
    "BreakpointApprover",
    "BreakpointDecision",
    "BreakpointRequest",
    "BreakpointRequested",
    "BreakpointResolved",
    "ModeChanged",
    "Breakpoints",
    "CancelSignal",
    "CustomEvent",
    "ExecutionEvent",
    "Graph",
    "GraphExecutionError",
    "GraphNode",
    "LoopDefinition",
    "LoopIteration",
    "LoopLimitError",
    "NodeFailed",
    "NodeFinished",
    "NodeHandler",
    "NodeInfo",
    "NodeSkipped",
    "NodeStarted",
    "RunAbortedError",
    "RunFinished",
    "RunStarted",
    "Runtime",
    "RuntimeConfig",
    "Services",
    "UnknownNodeError",
    "WorkerContext",
    "WorkerDefinition",
    "create_ditto",
    "define_worker",
    "graph",
    "load_runtime_config_file",
    "loop",
    "parse_json_edit",
]
