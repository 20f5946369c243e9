"""The contract models: both spellings in, camelCase out, and the seed's rules for each type."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from ditto_tui import contracts
from ditto_tui.contracts import (
    Artifact,
    ContractModel,
    ExternalResult,
    InteractionError,
    McpCapability,
    Message,
    Observation,
    OutputReceipt,
    OutputRequest,
    Reference,
    TextPart,
    ToolCall,
    parse_content,
    to_wire,
)

ERROR = {"code": "NOT_FOUND", "message": "No matching record", "retryable": False}


def test_both_spellings_are_accepted_and_the_wire_is_camel_case() -> None:
    camel = ExternalResult.model_validate(
        {"callId": "c1", "source": "s", "status": "success", "structuredContent": {"a": 1}}
    )
    snake = ExternalResult.model_validate(
        {"call_id": "c1", "source": "s", "status": "success", "structured_content": {"a": 1}}
    )
    assert camel == snake
    assert camel.call_id == "c1"
    assert camel.to_wire() == {
        "callId": "c1",
        "source": "s",
        "status": "success",
        "structuredContent": {"a": 1},
    }
    assert to_wire(camel) == camel.to_wire()
    assert "callId" in camel.model_dump(by_alias=True)


def test_models_are_frozen_and_forbid_unknown_fields() -> None:
    call = ToolCall(id="c1", name="t", arguments={})
    with pytest.raises(pydantic.ValidationError):
        call.id = "c2"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="extra"):
        ToolCall.model_validate({"id": "c1", "name": "t", "arguments": {}, "flags": ["-x"]})


@pytest.mark.parametrize(
    "data",
    [
        {"id": "", "name": "t", "arguments": {}},
        {"id": "c1", "name": "", "arguments": {}},
        {"id": "c1", "name": "t", "arguments": [1]},
        {"id": "c1", "name": "t", "arguments": None},
        {"id": 1, "name": "t", "arguments": {}},
        {"id": "c1", "name": "t"},
    ],
)
def test_tool_call_rules(data: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        ToolCall.model_validate(data)


def test_reference_needs_a_uri() -> None:
    assert Reference(uri="urn:x", media_type="text/plain").to_wire() == {
        "uri": "urn:x",
        "mediaType": "text/plain",
    }
    with pytest.raises(pydantic.ValidationError):
        Reference(uri="")


def test_content_parts_are_recognised_only_when_every_item_is_a_part() -> None:
    parts = parse_content(
        [
            {"type": "text", "text": "hi"},
            {"type": "json", "data": {"n": 1}},
            {"type": "reference", "reference": {"uri": "urn:r", "mediaType": "text/plain"}},
        ]
    )
    assert isinstance(parts, list)
    assert [type(part).__name__ for part in parts] == ["TextPart", "JsonPart", "ReferencePart"]
    assert parse_content([{"type": "text", "text": "hi"}, {"other": 1}]) == [
        {"type": "text", "text": "hi"},
        {"other": 1},
    ]
    assert parse_content([{"type": "text"}]) == [{"type": "text"}]
    assert parse_content([{"type": "image", "data": "x"}]) == [{"type": "image", "data": "x"}]
    assert parse_content([TextPart(type="text", text="a")]) == [TextPart(type="text", text="a")]
    assert parse_content(("a", 1)) == ["a", 1]
    assert parse_content([]) == []


def test_message_content_is_required_but_may_be_null() -> None:
    with pytest.raises(pydantic.ValidationError, match="content"):
        Message.model_validate({"role": "assistant"})
    null = Message(role="assistant", content=None)
    assert null.to_wire() == {"role": "assistant", "content": None}
    request = OutputRequest(delivery_id="d1", message=null)
    assert request.to_wire() == {"deliveryId": "d1", "message": {"role": "assistant", "content": None}}


@pytest.mark.parametrize("content", ["text", 3, 1.5, True, {"summary": "Complete", "count": 2}, [1, "a"]])
def test_message_content_may_be_any_json(content: object) -> None:
    assert Message(role="assistant", content=content).to_wire()["content"] == content


def test_message_parts_round_trip_on_the_wire() -> None:
    wire = {
        "role": "tool",
        "name": "read_text",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "reference", "reference": {"uri": "urn:r", "mediaType": "text/plain"}},
        ],
    }
    message = Message.model_validate(wire)
    assert message.to_wire() == wire
    assert Message.model_validate(message.to_wire()) == message


def test_message_rejects_unknown_roles() -> None:
    with pytest.raises(pydantic.ValidationError):
        Message.model_validate({"role": "developer", "content": "x"})


@pytest.mark.parametrize("status", ["failed", "cancelled", "timeout", "unknown"])
def test_non_success_results_need_an_error(status: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=f"a '{status}' result needs an error"):
        ExternalResult.model_validate({"callId": "c", "source": "s", "status": status})
    result = ExternalResult.model_validate({"callId": "c", "source": "s", "status": status, "error": ERROR})
    assert result.error == InteractionError(**ERROR)


def test_success_needs_content_structured_content_or_references() -> None:
    with pytest.raises(pydantic.ValidationError, match="needs content, structuredContent or references"):
        ExternalResult(call_id="c", source="s", status="success")
    for extra in ({"content": ""}, {"structured_content": 0}, {"references": [{"uri": "urn:x"}]}):
        assert ExternalResult.model_validate({"call_id": "c", "source": "s", "status": "success", **extra})


def test_result_fields_are_validated() -> None:
    base = {"callId": "c", "source": "s", "status": "success", "content": "x"}
    for bad in (
        {"status": "ok"},
        {"callId": ""},
        {"metadata": [1]},
        {"references": [{"uri": ""}]},
        {"structuredContent": float("nan")},
        {"error": {"code": "bad code", "message": "x"}},
    ):
        with pytest.raises(pydantic.ValidationError):
            ExternalResult.model_validate({**base, **bad})


@pytest.mark.parametrize(
    "message",
    [
        "line\nbreak",
        "x" * 513,
        "key sk-" + "a" * 30,
        "Authorization: Bearer abcdefghijklmnop",
        "api_key=abc",
        "password=hunter2",
        "AKIAIOSFODNN7EXAMPLE",
        "open /home/alice/.ssh/id_rsa",
        'File "app.py", line 3, in main',
        "bidi \u202e",
        "esc \x1b[2J",
    ],
)
def test_interaction_error_message_must_be_public(message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="safe_error"):
        InteractionError(code="E", message=message)


def test_interaction_error_code_rules() -> None:
    assert InteractionError(code="a.B_c-1", message="ok").retryable is None
    for code in ["", "x" * 65, "has space", "é"]:
        with pytest.raises(pydantic.ValidationError):
            InteractionError(code=code, message="ok")
    with pytest.raises(pydantic.ValidationError):
        InteractionError.model_validate({"code": "E", "message": "ok", "retryable": "yes"})


def test_observation_has_no_content_and_a_message() -> None:
    observation = Observation.model_validate(
        {
            "callId": "read-1",
            "source": "read_text",
            "status": "success",
            "message": {"role": "tool", "name": "read_text", "content": "file text"},
        }
    )
    assert observation.to_wire()["message"] == {"role": "tool", "name": "read_text", "content": "file text"}
    with pytest.raises(pydantic.ValidationError):
        Observation.model_validate({**observation.to_wire(), "content": "x"})
    with pytest.raises(pydantic.ValidationError, match="needs an error"):
        Observation.model_validate({**observation.to_wire(), "status": "failed"})


def test_output_request_and_receipt() -> None:
    artifact = {"name": "report", "reference": {"uri": "urn:report:1", "mediaType": "application/json"}}
    request = OutputRequest.model_validate(
        {
            "deliveryId": "report-1",
            "message": {"role": "assistant", "content": {"count": 2}},
            "artifacts": [artifact],
        }
    )
    assert request.artifacts == (Artifact.model_validate(artifact),)
    receipt = OutputReceipt.model_validate(
        {"deliveryId": "report-1", "status": "accepted", "artifacts": [artifact]}
    )
    assert receipt.to_wire() == {"deliveryId": "report-1", "status": "accepted", "artifacts": [artifact]}
    with pytest.raises(pydantic.ValidationError, match="'rejected' receipt needs an error"):
        OutputReceipt(delivery_id="d", status="rejected")
    with pytest.raises(pydantic.ValidationError):
        Artifact.model_validate({"name": "", "reference": {"uri": "urn:x"}})
    with pytest.raises(pydantic.ValidationError):
        OutputRequest.model_validate({"deliveryId": "", "message": {"role": "assistant", "content": 1}})


def test_mcp_capability() -> None:
    capability = McpCapability.model_validate(
        {
            "server": "files",
            "name": "read_text_file",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
        }
    )
    assert capability.to_wire() == {
        "server": "files",
        "name": "read_text_file",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    }
    with pytest.raises(pydantic.ValidationError):
        McpCapability.model_validate({"server": "files", "name": "x", "inputSchema": "object"})


def test_every_public_model_and_field_is_documented() -> None:
    for name in contracts.__all__:
        value = getattr(contracts, name)
        if isinstance(value, type) and issubclass(value, ContractModel):
            assert value.__doc__, name
            for field_name, field in value.model_fields.items():
                assert field.description, f"{name}.{field_name}"


def test_json_schema_can_be_generated() -> None:
    schema = ExternalResult.model_json_schema(by_alias=True)
    assert {"callId", "structuredContent"} <= set(schema["properties"])
