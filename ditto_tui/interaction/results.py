"""Turning what tools, clients and sinks return into validated contracts, once, at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from ditto_tui.contracts import ExternalResult, OutputReceipt
from ditto_tui.contracts import validation_summary as validation_summary  # imported from here too
from ditto_tui.errors import InvalidResultError

_IDENTITY_KEYS = {"callId": "call_id", "call_id": "call_id", "source": "source"}


def parse_outcome(outcome: Any, *, call_id: str, source: str, what: str) -> ExternalResult:
    """Validate a tool or client outcome and fill ``call_id``/``source``; an invalid one raises."""
    if isinstance(outcome, ExternalResult):
        fields: dict[str, Any] = outcome.model_dump(exclude_none=True)
    elif isinstance(outcome, Mapping):
        fields = dict(outcome)
    else:
        raise InvalidResultError(f"{what} {source!r} returned {type(outcome).__name__}, not a result object")
    for key, attribute in _IDENTITY_KEYS.items():
        if key in fields:
            expected = call_id if attribute == "call_id" else source
            if fields.pop(key) != expected:
                raise InvalidResultError(f"{what} {source!r} returned a result for another call or source")
    fields["call_id"] = call_id
    fields["source"] = source
    try:
        return ExternalResult.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise InvalidResultError(
            f"{what} {source!r} returned an invalid result: {validation_summary(exc)}"
        ) from None


def parse_receipt(receipt: Any, *, delivery_id: str) -> OutputReceipt:
    """Validate a sink's receipt; a wrong delivery id, artifact or metadata raises."""
    try:
        parsed = receipt if isinstance(receipt, OutputReceipt) else OutputReceipt.model_validate(receipt)
    except pydantic.ValidationError as exc:
        raise InvalidResultError(
            f"the output sink returned an invalid receipt: {validation_summary(exc)}"
        ) from None
    if parsed.delivery_id != delivery_id:
        raise InvalidResultError(
            f"the output sink answered delivery {parsed.delivery_id!r} instead of {delivery_id!r}"
        )
    return parsed
