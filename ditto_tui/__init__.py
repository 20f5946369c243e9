"""ditto-tui: supervised agent runs over a Python port of the Ditto INTERACTION worker.

The public names of the contracts, runtime, sandbox, interaction, infer and supervise layers are importable
from here; each is loaded on first use so that ``import ditto_tui`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "ditto_tui.contracts": (
        "Artifact",
        "ExternalResult",
        "InteractionError",
        "JsonObject",
        "JsonValue",
        "McpCapability",
        "Message",
        "MessageContent",
        "MessagePart",
        "Observation",
        "OutputReceipt",
        "OutputRequest",
        "Reference",
        "ToolCall",
    ),
    "ditto_tui.errors": (
        "DittoError",
        "GraphExecutionError",
        "LoopLimitError",
        "PermissionDeniedError",
        "UnknownNodeError",
        "ValidationError",
    ),
    "ditto_tui.runtime": (
        "WorkerContext",
        "create_ditto",
        "define_worker",
        "graph",
        "load_runtime_config_file",
        "loop",
    ),
    "ditto_tui.sandbox": ("Sandbox", "SandboxPermissions", "create_local_sandbox_executor"),
    "ditto_tui.interaction": (
        "McpRegistry",
        "OutputSink",
        "RegisteredTool",
        "Tool",
        "ToolRegistry",
        "create_brave_web_search_provider",
        "create_interaction_nodes",
        "create_interaction_worker",
        "create_read_only_command_tools",
        "create_web_search_tool",
        "observe_external_result",
    ),
    "ditto_tui.infer": (
        "InferMessage",
        "ModelProvider",
        "create_infer_worker",
        "create_openai_compatible_provider",
        "create_scripted_provider",
        "load_scripted_provider",
        "observation_to_infer_message",
        "react_loop",
    ),
    "ditto_tui.supervise": (
        "ApprovalDecision",
        "ApprovalGate",
        "ApprovalPolicy",
        "ApprovalRequest",
        "Approver",
        "RunJournal",
        "read_journal",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    # Not ditto_tui._lazy.load: importing the root loads no module of ditto-tui at all.
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'ditto_tui' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
