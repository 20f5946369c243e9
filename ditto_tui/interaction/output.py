"""``INTERACTION.OUTPUT``: deliver a final message and artifacts to an application sink."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import pydantic

from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import parse_receipt, validation_summary
from ditto_tui.runtime.worker import NodeHandler, WorkerContext


@runtime_checkable
class OutputSink(Protocol):
    """The delivery port: accept one output and answer with a receipt for the same delivery id."""

    async def deliver(self, input: OutputRequest) -> OutputReceipt | Mapping[str, Any]:
        """Deliver ``input``; the receipt's ``delivery_id`` must equal ``input.delivery_id``."""
        ...


def parse_output_request(input: Any) -> OutputRequest:
    """Validate an OUTPUT node input (either spelling)."""
    if isinstance(input, OutputRequest):
        return input
    try:
        return OutputRequest.model_validate(input)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid output request: {validation_summary(exc)}") from None


async def deliver_output(sink: OutputSink, input: Any) -> OutputReceipt:
    """Validate the request, deliver it once, and validate the receipt (no retry, no deduplication)."""
    request = parse_output_request(input)
    receipt = await sink.deliver(request)
    return parse_receipt(receipt, delivery_id=request.delivery_id)


def create_output_handler(sink: OutputSink) -> NodeHandler:
    """The ``INTERACTION.OUTPUT`` handler over ``sink``."""
    if not callable(getattr(sink, "deliver", None)):
        raise ValidationError("an output sink needs an async deliver(input) method")

    async def handle_output(input: Any, context: WorkerContext) -> OutputReceipt:
        return await deliver_output(sink, input)

    return handle_output
