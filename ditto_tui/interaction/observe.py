"""``INTERACTION.OBSERVE``: a pure, synchronous normalisation of an ExternalResult into an Observation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from ditto_tui.contracts import (
    ExternalResult,
    JsonPart,
    Message,
    MessagePart,
    Observation,
    ReferencePart,
    TextPart,
)
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary


def _parse_result(input: Any) -> ExternalResult:
    if isinstance(input, ExternalResult):
        return input
    if isinstance(input, Mapping) and set(input) == {"result"}:
        return _parse_result(input["result"])
    try:
        return ExternalResult.model_validate(input)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid external result: {validation_summary(exc)}") from None


def _content_parts(result: ExternalResult) -> list[MessagePart]:
    content = result.content
    if isinstance(content, str):
        return [TextPart(type="text", text=content)]
    if (
        isinstance(content, list)
        and content
        and all(isinstance(p, TextPart | JsonPart | ReferencePart) for p in content)
    ):
        return [part for part in content if isinstance(part, TextPart | JsonPart | ReferencePart)]
    if content is not None:
        return [JsonPart(type="json", data=content)]
    parts: list[MessagePart] = []
    if result.structured_content is not None:
        parts.append(JsonPart(type="json", data=result.structured_content))
    for reference in result.references or ():
        parts.append(ReferencePart(type="reference", reference=reference))
    return parts


def _failure_summary(result: ExternalResult) -> str:
    error = result.error
    detail = f" ({error.code}): {error.message}" if error is not None else ""
    return f"Call {result.call_id!r} to {result.source!r} ended {result.status}{detail}"


def observe_external_result(result: ExternalResult | Mapping[str, Any]) -> Observation:
    """Normalise ``result`` (or ``{"result": result}``) into an Observation; never retries, never promotes.

    The message has ``role="tool"`` and ``name=source``. A success whose content is one text part becomes
    a string; other content becomes text/json/reference parts. A failure carries a safe one-line summary
    and keeps its status and error.
    """
    parsed = _parse_result(result)
    if parsed.status == "success":
        parts = _content_parts(parsed)
        content: Any = parts[0].text if len(parts) == 1 and isinstance(parts[0], TextPart) else parts
    else:
        content = _failure_summary(parsed)
    return Observation.model_validate(
        {
            "call_id": parsed.call_id,
            "source": parsed.source,
            "status": parsed.status,
            "structured_content": parsed.structured_content,
            "references": parsed.references,
            "error": parsed.error,
            "metadata": parsed.metadata,
            "message": Message(role="tool", name=parsed.source, content=content),
        }
    )
