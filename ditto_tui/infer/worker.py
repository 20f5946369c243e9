"""The INFER worker: ``INFER.SAMPLE`` asks the model provider for one assistant turn."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from 3.12 on

from ditto_tui.errors import ValidationError
from ditto_tui.infer.messages import InferMessage, parse_messages, parse_tool_specs
from ditto_tui.infer.provider import ModelProvider, parse_turn, takes_keyword
from ditto_tui.infer.react_nodes import REACT_NODES, REACT_OUTPUTS
from ditto_tui.runtime.worker import WorkerContext, WorkerDefinition, define_worker

WORKER_TYPE = "INFER"
SAMPLE = "INFER.SAMPLE"
MESSAGE_DELTA = "message_delta"
"""The custom event ``INFER.SAMPLE`` emits for each streamed piece: ``data`` is the piece (``text`` or
``toolCall``) with the ``nodeId`` and ``executionId`` of the sampling node."""


class SampleOutput(TypedDict):
    """The output of ``INFER.SAMPLE`` (declared, so an output given for a skipped node is checked)."""

    message: InferMessage
    finishReason: str
    usage: NotRequired[dict[str, int]]


def _sample_input(input: Any) -> tuple[list[InferMessage], list[Any]]:
    if not isinstance(input, Mapping) or "messages" not in input or set(input) - {"messages", "tools"}:
        raise ValidationError("INFER.SAMPLE input must be {'messages': [...], 'tools'?: [...]}")
    return parse_messages(input["messages"]), parse_tool_specs(input.get("tools"))


def create_infer_worker(*, provider: ModelProvider, concurrency: int | None = None) -> WorkerDefinition:
    """The INFER worker over ``provider``; its ``aclose()``, if any, runs when the runtime closes.

    ``INFER.SAMPLE`` takes ``{"messages": [...], "tools"?: [definitions]}`` and returns
    ``{"message": InferMessage, "finishReason": str, "usage"?: {...}}``; the call's signal reaches the
    provider. A provider failure raises (``InferError``). A provider that streams (its ``sample`` takes
    ``on_delta``) has each piece emitted as a :data:`MESSAGE_DELTA` event while the node runs; the
    output is still the whole message. The worker also exposes the steps of
    :func:`~ditto_tui.infer.react.react_loop` (``INFER.REACT.*``).
    """
    if not callable(getattr(provider, "sample", None)):
        raise ValidationError("create_infer_worker(provider=...) needs an object with async sample()")
    streams = takes_keyword(type(provider), "on_delta")

    async def handle_sample(input: Any, context: WorkerContext) -> SampleOutput:
        messages, tools = _sample_input(input)
        if streams:
            where = {"nodeId": context.node_id, "executionId": context.execution_id}

            def on_delta(piece: Mapping[str, Any]) -> None:
                context.emit(MESSAGE_DELTA, data={**piece, **where})

            sampled = await provider.sample(messages, tools, signal=context.signal, on_delta=on_delta)  # type: ignore[call-arg]
        else:
            sampled = await provider.sample(messages, tools, signal=context.signal)
        turn = parse_turn(sampled)
        output: SampleOutput = {"message": turn.message, "finishReason": turn.finish_reason}
        if turn.usage is not None:
            output["usage"] = dict(turn.usage)
        return output

    async def dispose() -> None:
        close = getattr(provider, "aclose", None)
        if callable(close):
            outcome = close()
            if inspect.isawaitable(outcome):
                await outcome

    return define_worker(
        type=WORKER_TYPE,
        nodes={SAMPLE: handle_sample, **REACT_NODES},
        dispose=dispose,
        concurrency=concurrency,
        outputs={SAMPLE: SampleOutput, **REACT_OUTPUTS},
    )
