"""The public names of API.md §1–§5 exist where API.md says, and the package root re-exports them lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import ditto_tui

API = {
    "ditto_tui.contracts": [
        "JsonValue",
        "JsonObject",
        "Reference",
        "MessagePart",
        "MessageContent",
        "Message",
        "ToolCall",
        "InteractionError",
        "ExternalResult",
        "Observation",
        "Artifact",
        "OutputReceipt",
        "McpCapability",
    ],
    "ditto_tui.runtime": [
        "create_ditto",
        "define_worker",
        "WorkerContext",
        "graph",
        "loop",
        "load_runtime_config_file",
        "UnknownNodeError",
        "GraphExecutionError",
        "LoopLimitError",
    ],
    "ditto_tui.sandbox": [
        "SandboxPermissions",
        "Sandbox",
        "SandboxExecutor",
        "CommandResult",
        "create_local_sandbox_executor",
    ],
    "ditto_tui.interaction": [
        "create_interaction_worker",
        "create_interaction_nodes",
        "create_tool_handler",
        "create_mcp_handler",
        "create_output_handler",
        "observe_external_result",
        "ToolRegistry",
        "McpRegistry",
        "RegisteredTool",
        "Tool",
        "McpClient",
        "OutputSink",
        "interaction_tool_node",
        "interaction_mcp_node",
        "interaction_observe_node",
        "interaction_output_node",
    ],
    "ditto_tui.supervise": [
        "ApprovalPolicy",
        "Approver",
        "ApprovalRequest",
        "ApprovalDecision",
        "ApprovalGate",
        "Approval",
        "RunStarted",
        "NodeStarted",
        "NodeFinished",
        "NodeFailed",
        "NodeSkipped",
        "LoopIteration",
        "ApprovalRequested",
        "ApprovalResolved",
        "RunFinished",
    ],
}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in API.items() for n in names])
def test_api_name_exists(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def test_contracts_are_reexported_from_the_root() -> None:
    from ditto_tui import contracts

    for name in API["ditto_tui.contracts"]:
        assert getattr(ditto_tui, name) is getattr(contracts, name)


def test_importing_the_root_loads_nothing_heavy() -> None:
    heavy = "('pydantic', 'ditto_tui.')"
    code = f"import sys, ditto_tui; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def test_unknown_root_attribute_raises() -> None:
    with pytest.raises(AttributeError):
        ditto_tui.no_such_name  # noqa: B018


@pytest.mark.parametrize(
    "kind",
    [
        "run_started",
        "node_started",
        "node_finished",
        "node_failed",
        "node_skipped",
        "loop_iteration",
        "approval_requested",
        "approval_resolved",
        "run_finished",
    ],
)
def test_every_event_kind_has_a_model_with_the_common_fields(kind: str) -> None:
    from ditto_tui.runtime.events import EVENT_TYPES

    fields = EVENT_TYPES[kind].model_fields
    assert {"kind", "run_id", "seq", "at"} <= set(fields)
