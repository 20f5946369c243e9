"""``react_loop``: model turn → tool calls through the approval gate → observations → … → answer.

One iteration of the loop is one model turn, drawn as five nodes::

    tools → sample → act → observe → output

``tools`` resolves the named tools to definitions once (discovering MCP servers for ``mcp__…`` names);
``sample`` is ``INFER.SAMPLE``; ``act`` runs the turn's action requests concurrently through
``INTERACTION.ACT.TOOL``/``ACT.MCP`` (nested nodes ``act/<call id>``); ``observe`` turns each result into
an observation and a tool message (``observe/<call id>``); ``output`` delivers the final answer through
``INTERACTION.OUTPUT`` (when a sink was given) once the model stops asking for actions, and nothing before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ditto_tui.contracts import OutputReceipt
from ditto_tui.errors import LoopLimitError, ValidationError
from ditto_tui.infer.messages import InferMessage, ToolSpec, parse_messages
from ditto_tui.infer.react_nodes import REACT_ACT, REACT_OBSERVE, REACT_OUTPUT, REACT_TOOLS
from ditto_tui.infer.worker import SAMPLE
from ditto_tui.runtime.graph import LoopDefinition, graph, loop

DEFAULT_DELIVERY_ID = "react:answer"


@dataclass(frozen=True, kw_only=True)
class ReactState:
    """The state of an agent loop: the conversation so far and, once answered, the answer and receipt."""

    messages: tuple[InferMessage, ...]
    delivery_id: str = DEFAULT_DELIVERY_ID
    tools: tuple[ToolSpec, ...] | None = None
    steps: int = 0
    answer: InferMessage | None = None
    receipt: OutputReceipt | None = None

    @property
    def finished(self) -> bool:
        """Whether the model gave its final answer."""
        return self.answer is not None


def react_state(initial: Any, *, system: str | None = None) -> ReactState:
    """The loop state for ``initial``: a task (str), a list of messages, ``{"prompt" | "messages",
    "deliveryId"?}``, or a state.

    ``system`` is put first unless the messages already start with a system message.
    """
    if isinstance(initial, ReactState):
        return initial
    if isinstance(initial, str):
        initial = {"prompt": initial}
    elif isinstance(initial, list | tuple):
        initial = {"messages": initial}
    if not isinstance(initial, Mapping) or set(initial) - {"prompt", "messages", "deliveryId"}:
        raise ValidationError(
            "an agent loop starts from a task string or {'prompt'|'messages', 'deliveryId'?}"
        )
    if ("prompt" in initial) == ("messages" in initial):
        raise ValidationError("an agent loop starts from exactly one of 'prompt' or 'messages'")
    if "prompt" in initial:
        if not isinstance(initial["prompt"], str) or not initial["prompt"].strip():
            raise ValidationError("the agent loop's prompt must be a nonempty string")
        messages = [InferMessage(role="user", content=initial["prompt"])]
    else:
        messages = parse_messages(initial["messages"])
    if system is not None and not (messages and messages[0].role == "system"):
        messages.insert(0, InferMessage(role="system", content=system))
    delivery_id = initial.get("deliveryId", DEFAULT_DELIVERY_ID)
    if not isinstance(delivery_id, str) or not delivery_id:
        raise ValidationError("deliveryId must be a nonempty string")
    return ReactState(messages=tuple(messages), delivery_id=delivery_id)


def react_loop(
    *, tools: Sequence[str], max_steps: int, system: str | None = None, name: str = "react"
) -> LoopDefinition:
    """An agent loop over the named tools (``mcp__<server>__<tool>`` or ``mcp__<server>__*`` for MCP).

    Run it with ``runtime.loop(definition, task)``; the final :class:`ReactState` holds the answer and
    the output receipt. More than ``max_steps`` model turns without an answer raises ``LoopLimitError``.
    Needs the INTERACTION worker (with OUTPUT, and ACT.MCP for MCP tools) and the INFER worker.
    """
    names = _tool_names(tools)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValidationError("max_steps must be a positive integer")
    if system is not None and not isinstance(system, str):
        raise ValidationError("system must be a string")

    def bind(state: Any) -> ReactState:
        return react_state(state, system=system)

    def update(state: Any, outputs: Mapping[str, Any]) -> ReactState:
        return _next_state(react_state(state, system=system), outputs, max_steps)

    body = (
        graph(name)
        .node("tools", REACT_TOOLS, [], lambda state, _deps: {"names": names, "resolved": state.tools})
        .node("sample", SAMPLE, ["tools"], _sample_input)
        .node("act", REACT_ACT, ["sample", "tools"], _act_input)
        .node("observe", REACT_OBSERVE, ["act"], lambda _state, deps: {"results": deps["act"]["results"]})
        .node("output", REACT_OUTPUT, ["sample", "observe"], _output_input)
    )
    return loop(graph=body, max_iterations=max_steps, bind=bind, update=update, done=_finished)


def _tool_names(tools: Sequence[str]) -> list[str]:
    if isinstance(tools, str) or not isinstance(tools, Sequence):
        raise ValidationError("tools must be a list of tool names")
    names = list(tools)
    if not all(isinstance(name, str) and name for name in names):
        raise ValidationError("tools must be a list of nonempty tool names")
    if len(set(names)) != len(names):
        raise ValidationError("tools names a tool twice")
    return names


def _finished(state: Any) -> bool:
    return isinstance(state, ReactState) and state.finished


def _sample_input(state: ReactState, deps: Mapping[str, Any]) -> dict[str, Any]:
    return {"messages": list(state.messages), "tools": deps["tools"]["tools"]}


def _act_input(_state: ReactState, deps: Mapping[str, Any]) -> dict[str, Any]:
    offered = [tool.name for tool in deps["tools"]["tools"]]
    return {"message": deps["sample"]["message"], "offered": offered}


def _output_input(state: ReactState, deps: Mapping[str, Any]) -> dict[str, Any]:
    message: InferMessage = deps["sample"]["message"]
    return {"deliveryId": state.delivery_id, "message": None if message.action_requests else message}


def _next_state(state: ReactState, outputs: Mapping[str, Any], max_steps: int) -> ReactState:
    message: InferMessage = outputs["sample"]["message"]
    answers: list[InferMessage] = outputs["observe"]["messages"]
    steps = state.steps + 1
    new = dataclasses.replace(
        state,
        messages=(*state.messages, message, *answers),
        tools=tuple(outputs["tools"]["tools"]),
        steps=steps,
    )
    if not message.action_requests:
        return dataclasses.replace(new, answer=message, receipt=outputs["output"])
    if steps >= max_steps:
        raise LoopLimitError(
            f"the model gave no final answer in {max_steps} turns (max_steps); its last turn still asked "
            f"for {len(message.action_requests)} action(s)"
        )
    return new
