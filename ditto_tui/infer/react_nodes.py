"""The INFER worker's agent-loop steps: which tools the model sees, acting, observing and delivering.

Each step fans out to INTERACTION nodes with ``context.invoke(..., node_id=...)``, so every tool call,
MCP discovery, observation and delivery is reported as a node of its own (``act/<call id>``,
``observe/<call id>``, ``tools/discover-<server>``, ``output/<delivery id>``) and every tool call goes
through the registry, the sandbox and the approval gate exactly like a call of a plain graph.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from 3.12 on

from ditto_tui.contracts import ExternalResult, McpCapability, Observation, OutputReceipt, ToolCall
from ditto_tui.errors import DittoError, UnknownNodeError, UnknownToolError, ValidationError
from ditto_tui.infer.messages import (
    MCP_PREFIX,
    InferMessage,
    ToolSpec,
    content_text,
    mcp_tool_spec,
    observation_to_infer_message,
    parse_mcp_tool_name,
    parse_tool_specs,
)
from ditto_tui.infer.proposal import proposed_by
from ditto_tui.interaction import ACT_MCP, ACT_TOOL, OBSERVE, OUTPUT, ToolRegistry
from ditto_tui.runtime.worker import NodeHandler, WorkerContext
from ditto_tui.sanitize import safe_error

REACT_TOOLS = "INFER.REACT.TOOLS"
REACT_ACT = "INFER.REACT.ACT"
REACT_OBSERVE = "INFER.REACT.OBSERVE"
REACT_OUTPUT = "INFER.REACT.OUTPUT"

_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class ToolsOutput(TypedDict):
    """The output of ``INFER.REACT.TOOLS``: the model-facing tools, and MCP tools left out (and why)."""

    tools: list[ToolSpec]
    omitted: list[str]


class ActOutput(TypedDict):
    """The output of ``INFER.REACT.ACT``: one result per action request, in their order."""

    results: list[ExternalResult]


class ObserveOutput(TypedDict):
    """The output of ``INFER.REACT.OBSERVE``: the observations and the tool messages the model reads."""

    observations: list[Observation]
    messages: list[InferMessage]


def failed_result(call: ToolCall, code: str, message: str, source: str | None = None) -> ExternalResult:
    """A failed result answering ``call`` without executing it."""
    return ExternalResult(
        call_id=call.id, source=source or call.name, status="failed", error=safe_error(code, message)
    )


# --- tools ---------------------------------------------------------------------------------------------


async def handle_tools(input: Any, context: WorkerContext) -> ToolsOutput:
    """Resolve tool names to model-facing definitions once; later steps pass the resolved list through."""
    if not isinstance(input, Mapping) or not isinstance(input.get("names"), list | tuple):
        raise ValidationError("INFER.REACT.TOOLS input must be {'names': [...], 'resolved'?: [...]}")
    context.signal.raise_if_cancelled()
    resolved = input.get("resolved")
    if resolved is not None:
        return {"tools": parse_tool_specs(resolved, where="resolved"), "omitted": []}
    names = [str(name) for name in input["names"]]
    local = [name for name in names if not name.startswith(MCP_PREFIX)]
    tools = [_local_spec(name, context) for name in local]
    omitted: list[str] = []
    for server, wanted in _mcp_wanted(names).items():
        specs, skipped = await _discover(server, wanted, context)
        tools.extend(specs)
        omitted.extend(skipped)
    _refuse_duplicates(tools)
    return {"tools": tools, "omitted": omitted}


def _local_spec(name: str, context: WorkerContext) -> ToolSpec:
    registry = context.services.resources_of(ACT_TOOL).get("tools")
    if not isinstance(registry, ToolRegistry):
        raise ValidationError("the worker exposing INTERACTION.ACT.TOOL keeps no tool registry to describe")
    definition = registry.definition(name)
    if definition is None:
        raise UnknownToolError(f"the agent loop names tool {name!r}, which is not registered")
    sandbox = context.services.sandbox
    sandbox.check_tool(name)
    sandbox.check_effects(definition.effects)
    return ToolSpec(name=name, description=definition.description, input_schema=definition.input_schema)


def _mcp_wanted(names: Iterable[str]) -> dict[str, set[str] | None]:
    """Server → wanted tool names (``None``: every tool, from ``mcp__<server>__*``)."""
    wanted: dict[str, set[str] | None] = {}
    for name in names:
        if not name.startswith(MCP_PREFIX):
            continue
        server, _, tool = name[len(MCP_PREFIX) :].partition("__")
        if tool == "*":
            wanted[server] = None
            continue
        if parse_mcp_tool_name(name) is None:
            raise ValidationError(f"{name!r} is not an mcp__<server>__<tool> name")
        current = wanted.setdefault(server, set())
        if current is not None:
            current.add(tool)
    return wanted


async def _discover(
    server: str, wanted: set[str] | None, context: WorkerContext
) -> tuple[list[ToolSpec], list[str]]:
    discovery = await context.invoke(
        ACT_MCP, {"operation": "discover", "server": server}, node_id=f"discover-{server}"
    )
    capabilities: Sequence[McpCapability] = discovery.capabilities
    specs: list[ToolSpec] = []
    omitted: list[str] = []
    for capability in capabilities:
        if wanted is not None and capability.name not in wanted:
            continue
        spec = mcp_tool_spec(capability)
        if spec is None:
            omitted.append(f"{server}:{capability.name} (its name cannot be a model function name)")
        else:
            specs.append(spec)
    missing = sorted((wanted or set()) - {capability.name for capability in capabilities})
    if missing:
        raise UnknownToolError(f"MCP server {server!r} offers no tool {missing[0]!r}")
    return specs, omitted


def _refuse_duplicates(tools: Sequence[ToolSpec]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ValidationError(f"the agent loop names tool {tool.name!r} twice")
        seen.add(tool.name)


# --- act -----------------------------------------------------------------------------------------------


async def handle_act(input: Any, context: WorkerContext) -> ActOutput:
    """Run every action request of the model's turn concurrently, each through ACT.TOOL or ACT.MCP.

    Malformed, repeated or unoffered requests are answered with a failed result and never executed; a
    refusal by the registry or sandbox (bad arguments, unknown tool, permission) becomes a failed result
    too, so the model sees it. Results come back in the order of the requests.
    """
    message, offered = _act_input(input)
    context.signal.raise_if_cancelled()
    seen: set[str] = set()
    work: list[Callable[[], Coroutine[Any, Any, ExternalResult]]] = []
    for call in message.action_requests:
        work.append(_action(call, message, offered, call.id in seen, context))
        seen.add(call.id)
    return {"results": await _all(work)}


def _act_input(input: Any) -> tuple[InferMessage, set[str]]:
    if not isinstance(input, Mapping) or not isinstance(input.get("message"), InferMessage):
        raise ValidationError("INFER.REACT.ACT input must be {'message': InferMessage, 'offered': [...]}")
    return input["message"], {str(name) for name in input.get("offered") or ()}


def _action(
    call: ToolCall, message: InferMessage, offered: set[str], repeated: bool, context: WorkerContext
) -> Callable[[], Coroutine[Any, Any, ExternalResult]]:
    invalid = message.invalid_action(call.id)
    if repeated:
        return _ready(failed_result(call, "DUPLICATE_CALL_ID", "Another request of this turn has this id"))
    if invalid is not None:
        code = invalid.get("code")
        code = code if isinstance(code, str) and _CODE.fullmatch(code) else "INVALID_ARGUMENTS"
        return _ready(failed_result(call, code, str(invalid.get("message") or "The request is malformed")))
    if call.name not in offered:
        return _ready(failed_result(call, "UNKNOWN_TOOL", f"No tool named {call.name!r} is offered"))
    route = parse_mcp_tool_name(call.name)
    proposal = content_text(message.content)
    if route is None:
        return lambda: _act_tool(call, context, proposal)
    return lambda: _act_mcp(call, route[0], route[1], context, proposal)


def _ready(result: ExternalResult) -> Callable[[], Coroutine[Any, Any, ExternalResult]]:
    async def ready() -> ExternalResult:
        return result

    return ready


async def _act_tool(call: ToolCall, context: WorkerContext, proposal: str | None) -> ExternalResult:
    try:
        with proposed_by(proposal):
            result: ExternalResult = await context.invoke(ACT_TOOL, {"call": call}, node_id=call.id)
    except DittoError as exc:
        return failed_result(call, exc.code, exc.message)
    return result


async def _act_mcp(
    call: ToolCall, server: str, tool: str, context: WorkerContext, proposal: str | None
) -> ExternalResult:
    request = {
        "operation": "invoke",
        "server": server,
        "call": {"id": call.id, "name": tool, "arguments": call.arguments},
    }
    try:
        with proposed_by(proposal):
            invocation = await context.invoke(ACT_MCP, request, node_id=call.id)
    except DittoError as exc:
        return failed_result(call, exc.code, exc.message, source=f"{server}:{tool}")
    result: ExternalResult = invocation.result
    return result


async def _all(work: Sequence[Callable[[], Coroutine[Any, Any, ExternalResult]]]) -> list[ExternalResult]:
    """Run the actions concurrently; an unexpected error cancels the others and is raised as itself."""
    if len(work) == 1:
        return [await work[0]()]
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(action()) for action in work]
    except BaseExceptionGroup as failures:
        raise failures.exceptions[0] from None
    return [task.result() for task in tasks]


# --- observe and output --------------------------------------------------------------------------------


async def handle_observe(input: Any, context: WorkerContext) -> ObserveOutput:
    """Observe each result through INTERACTION.OBSERVE and map it to the tool message the model reads."""
    if not isinstance(input, Mapping) or not isinstance(input.get("results"), list | tuple):
        raise ValidationError("INFER.REACT.OBSERVE input must be {'results': [...]}")
    observations: list[Observation] = []
    for result in input["results"]:
        context.signal.raise_if_cancelled()
        call_id = result.call_id if isinstance(result, ExternalResult) else None
        observations.append(await context.invoke(OBSERVE, {"result": result}, node_id=call_id))
    messages = [observation_to_infer_message(observation) for observation in observations]
    return {"observations": observations, "messages": messages}


async def handle_output(input: Any, context: WorkerContext) -> OutputReceipt | None:
    """Deliver the final answer through INTERACTION.OUTPUT; a turn that still acts delivers nothing.

    Without an OUTPUT node (no sink was given to the INTERACTION worker) nothing is delivered and the
    receipt is ``None``; the answer is in the loop's final state either way.
    """
    if not isinstance(input, Mapping) or not isinstance(input.get("deliveryId"), str):
        raise ValidationError("INFER.REACT.OUTPUT input must be {'deliveryId': str, 'message': ...}")
    context.signal.raise_if_cancelled()
    answer = input.get("message")
    if answer is None:
        return None
    if not isinstance(answer, InferMessage) or answer.role != "assistant" or answer.action_requests:
        raise ValidationError("INFER.REACT.OUTPUT delivers only a final assistant message")
    delivery_id = input["deliveryId"]
    request = {"deliveryId": delivery_id, "message": {"role": "assistant", "content": answer.content}}
    try:
        receipt: OutputReceipt = await context.invoke(OUTPUT, request, node_id=delivery_id)
    except UnknownNodeError:
        return None  # no output sink was given: the answer stays in the loop's final state
    return receipt


REACT_NODES: dict[str, NodeHandler] = {
    REACT_TOOLS: handle_tools,
    REACT_ACT: handle_act,
    REACT_OBSERVE: handle_observe,
    REACT_OUTPUT: handle_output,
}
"""The agent-loop node types the INFER worker exposes beside ``INFER.SAMPLE``."""

REACT_OUTPUTS: dict[str, Any] = {
    REACT_TOOLS: ToolsOutput,
    REACT_ACT: ActOutput,
    REACT_OBSERVE: ObserveOutput,
    REACT_OUTPUT: OutputReceipt | None,
}
"""Their declared outputs (``define_worker(outputs=...)``)."""
