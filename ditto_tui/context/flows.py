"""The two composed flows: act → observe → an explicit CONTEXT update, for a tool call or an MCP call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pydantic

from ditto_tui.context.worker import UPDATE, ContextUpdate
from ditto_tui.contracts import ExternalResult, Observation, ToolCall
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import ACT_MCP, ACT_TOOL, OBSERVE
from ditto_tui.interaction.results import validation_summary


class Invoker(Protocol):
    """Anything that calls a node type: a runtime, or a handler's ``context``."""

    async def invoke(self, node_type: str, input: Any) -> Any:
        """Call ``node_type`` with ``input`` and return its output."""
        ...


@dataclass(frozen=True, kw_only=True)
class FlowResult:
    """What a flow did: the action's result, its observation, and the context update (``None``: skipped)."""

    result: ExternalResult
    observation: Observation
    context: ContextUpdate | None

    @property
    def succeeded(self) -> bool:
        """Whether the action succeeded."""
        return self.observation.status == "success"


async def run_tool_call_flow(
    runtime: Invoker, scope: Any, call: ToolCall | Mapping[str, Any], *, include_failures: bool = False
) -> FlowResult:
    """``INTERACTION.ACT.TOOL`` → ``INTERACTION.OBSERVE`` → ``CONTEXT.UPDATE`` for one call.

    A failed, timed-out, cancelled or unknown observation enters the working set only when
    ``include_failures`` is true; it is never retried.
    """
    parsed = _call(call)
    result: ExternalResult = await runtime.invoke(ACT_TOOL, {"call": parsed})
    return await _observe_and_update(runtime, scope, parsed, result, include_failures)


async def run_mcp_flow(
    runtime: Invoker,
    scope: Any,
    server: str,
    call: ToolCall | Mapping[str, Any],
    *,
    include_failures: bool = False,
) -> FlowResult:
    """``INTERACTION.ACT.MCP`` (invoke) → ``INTERACTION.OBSERVE`` → ``CONTEXT.UPDATE`` for one call."""
    parsed = _call(call)
    invocation = await runtime.invoke(ACT_MCP, {"operation": "invoke", "server": server, "call": parsed})
    return await _observe_and_update(runtime, scope, parsed, invocation.result, include_failures)


async def _observe_and_update(
    runtime: Invoker, scope: Any, call: ToolCall, result: ExternalResult, include_failures: bool
) -> FlowResult:
    observation: Observation = await runtime.invoke(OBSERVE, {"result": result})
    if observation.status != "success" and not include_failures:
        return FlowResult(result=result, observation=observation, context=None)
    update: ContextUpdate = await runtime.invoke(
        UPDATE, {"scope": scope, "ingress": [observation_item(call, observation)]}
    )
    return FlowResult(result=result, observation=observation, context=update)


def observation_item(call: ToolCall, observation: Observation) -> dict[str, Any]:
    """The ingress item of an observation: ``observation:<call id>`` with call id, source and status."""
    metadata: dict[str, Any] = {
        "callId": call.id,
        "source": observation.source,
        "status": observation.status,
    }
    if observation.error is not None:
        metadata["errorCode"] = observation.error.code
    return {
        "id": f"observation:{call.id}",
        "sourceNode": OBSERVE,
        "content": observation.message.content,
        "metadata": metadata,
    }


def _call(call: ToolCall | Mapping[str, Any]) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    try:
        return ToolCall.model_validate(call)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid tool call: {validation_summary(exc)}") from None
