"""INTERACTION.OBSERVE and INTERACTION.OUTPUT: normalisation, failure summaries, receipts."""

from __future__ import annotations

from typing import Any

import pytest

from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.errors import InvalidResultError, ValidationError
from ditto_tui.interaction import create_interaction_worker, observe_external_result
from ditto_tui.runtime import create_ditto


def result(**fields: Any) -> dict[str, Any]:
    return {"callId": "c-1", "source": "tool", **fields}


def test_a_single_text_becomes_a_string() -> None:
    observation = observe_external_result(result(status="success", content=[{"type": "text", "text": "hi"}]))
    assert observation.message.to_wire() == {"role": "tool", "name": "tool", "content": "hi"}


def test_other_content_becomes_parts_and_structured_data_is_kept() -> None:
    observation = observe_external_result(
        result(
            status="success",
            content=[{"type": "text", "text": "a"}, {"type": "json", "data": {"n": 1}}],
            structuredContent={"n": 1},
            references=[{"uri": "file:README.md"}],
            metadata={"took": 3},
        )
    )
    assert [part.type for part in observation.message.content] == ["text", "json"]  # type: ignore[union-attr]
    assert observation.structured_content == {"n": 1}
    assert observation.references is not None and observation.references[0].uri == "file:README.md"
    assert observation.metadata == {"took": 3}


def test_json_content_becomes_a_json_part() -> None:
    observation = observe_external_result(result(status="success", content={"rows": [1, 2]}))
    assert observation.message.to_wire()["content"] == [{"type": "json", "data": {"rows": [1, 2]}}]


def test_references_only_become_reference_parts() -> None:
    observation = observe_external_result(result(status="success", references=[{"uri": "urn:x"}]))
    assert observation.message.to_wire()["content"] == [{"type": "reference", "reference": {"uri": "urn:x"}}]


@pytest.mark.parametrize("status", ["failed", "timeout", "cancelled", "unknown"])
def test_failures_keep_their_status_and_carry_a_safe_summary(status: str) -> None:
    observation = observe_external_result(
        result(
            status=status,
            error={"code": "E_X", "message": "went wrong"},
            content="partial output that must not read as success",
        )
    )
    assert observation.status == status and observation.error is not None
    assert observation.message.content == f"Call 'c-1' to 'tool' ended {status} (E_X): went wrong"


def test_observe_refuses_an_invalid_result() -> None:
    with pytest.raises(ValidationError):
        observe_external_result(result(status="failed"))


async def test_observe_node_equals_the_pure_helper() -> None:
    payload = {"result": result(status="success", content="file text")}
    async with create_ditto(workers=[create_interaction_worker()]) as runtime:
        routed = await runtime.invoke("INTERACTION.OBSERVE", payload)
    assert routed == observe_external_result(payload)


def test_seed_observe_external_result_takes_result_by_that_name() -> None:
    """API.md: ``observe_external_result(result)``; the seed's ``{result}`` wrapper is accepted too."""
    raw = result(status="success", content="file text")
    by_name = observe_external_result(result=raw)
    assert by_name == observe_external_result(raw) == observe_external_result(result={"result": raw})
    assert by_name.message.content == "file text" and by_name.call_id == "c-1"


class Sink:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.received: list[OutputRequest] = []

    async def deliver(self, input: OutputRequest) -> Any:
        self.received.append(input)
        return self.answer(input) if callable(self.answer) else self.answer


async def deliver(sink: Sink, request: dict[str, Any]) -> OutputReceipt:
    async with create_ditto(workers=[create_interaction_worker(output=sink)]) as runtime:
        receipt: OutputReceipt = await runtime.invoke("INTERACTION.OUTPUT", request)
        return receipt


REQUEST = {"deliveryId": "d-1", "message": {"role": "assistant", "content": None}}


async def test_output_passes_the_request_and_returns_the_receipt() -> None:
    sink = Sink(lambda r: {"deliveryId": r.delivery_id, "status": "accepted"})
    receipt = await deliver(sink, REQUEST)
    assert receipt.status == "accepted" and sink.received[0].message.content is None


@pytest.mark.parametrize(
    "answer",
    [
        {"deliveryId": "other", "status": "accepted"},
        {"deliveryId": "d-1", "status": "rejected"},
        {"deliveryId": "d-1", "status": "accepted", "artifacts": [{"name": "", "reference": {"uri": "x"}}]},
        {"deliveryId": "d-1", "status": "accepted", "metadata": {"bad": float("inf")}},
        {"deliveryId": "d-1", "status": "rejected", "error": {"code": "X", "message": "at /home/alice/x"}},
    ],
)
async def test_invalid_receipts_raise(answer: Any) -> None:
    with pytest.raises(InvalidResultError):
        await deliver(Sink(answer), REQUEST)


@pytest.mark.parametrize(
    "request_",
    [
        {"deliveryId": "", "message": {"role": "assistant", "content": "x"}},
        {"deliveryId": "d", "message": {"role": "robot", "content": "x"}},
        {"deliveryId": "d", "message": {"role": "assistant"}},
        {"deliveryId": "d", "message": {"role": "assistant", "content": "x"}, "artifacts": [{"name": "a"}]},
    ],
)
async def test_invalid_requests_raise_before_delivery(request_: dict[str, Any]) -> None:
    sink = Sink({"deliveryId": "d", "status": "accepted"})
    with pytest.raises(ValidationError):
        await deliver(sink, request_)
    assert sink.received == []
