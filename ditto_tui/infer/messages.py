"""INFER's own message contract, tool definitions for models, and the explicit mapping from observations."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Self

import pydantic
from pydantic import Field, StringConstraints, model_validator

from ditto_tui.contracts import (
    ContentField,
    ContractModel,
    JsonObjectField,
    JsonPart,
    JsonValue,  # noqa: F401  (pydantic resolves the JSON field types by this name)
    McpCapability,
    MessageContent,
    MessageRole,
    Observation,
    ReferencePart,
    TextPart,
    ToolCall,
)
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary

ACTION_REQUEST_ID = "actionRequestId"
"""The metadata key of a tool message that names the action request (call id) it answers."""

INVALID_ACTIONS = "invalidActions"
"""Assistant metadata: action requests the model malformed, by call id, with a code, a message and the
raw arguments text; they are answered with a failed result and never executed."""

MCP_PREFIX = "mcp__"
"""Model-facing names of MCP tools are ``mcp__<server>__<tool>``."""

_FUNCTION_NAME = r"^[A-Za-z0-9_-]{1,64}$"
_MCP_SERVER = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
_MCP_TOOL = re.compile(r"^[A-Za-z0-9_-]+$")


class InferMessage(ContractModel):
    """A message of a model conversation, separate from the shared ``Message``.

    An assistant message may carry ``action_requests`` (tool calls with the model's call ids); a tool
    message must carry ``metadata["actionRequestId"]``, the id of the call it answers.
    """

    role: MessageRole = Field(description="system, user, assistant or tool.")
    content: ContentField = Field(default=None, description="Text, message parts or JSON; may be null.")
    action_requests: list[ToolCall] = Field(
        default_factory=list, description="Tool calls the assistant asks for (assistant only)."
    )
    metadata: JsonObjectField = Field(
        default_factory=dict, description="Correlation and status data, e.g. actionRequestId."
    )

    @model_validator(mode="after")
    def _check_role(self) -> Self:
        if self.action_requests and self.role != "assistant":
            raise ValueError("only an assistant message carries action requests")
        if self.role == "tool":
            call_id = self.metadata.get(ACTION_REQUEST_ID)
            if not isinstance(call_id, str) or not call_id:
                raise ValueError(
                    "a tool message needs metadata.actionRequestId, the id of the call it answers"
                )
        return self

    @property
    def action_request_id(self) -> str | None:
        """The call id a tool message answers (``None`` for other roles)."""
        value = self.metadata.get(ACTION_REQUEST_ID)
        return value if isinstance(value, str) else None

    def invalid_action(self, call_id: str) -> Mapping[str, Any] | None:
        """Why the model's action request ``call_id`` is malformed, or ``None`` when it is well formed."""
        invalid = self.metadata.get(INVALID_ACTIONS)
        entry = invalid.get(call_id) if isinstance(invalid, Mapping) else None
        return entry if isinstance(entry, Mapping) else None


FunctionName = Annotated[str, StringConstraints(strict=True, pattern=_FUNCTION_NAME)]


class ToolSpec(ContractModel):
    """A tool as a model sees it: a function name, a description and the JSON Schema of its arguments."""

    name: FunctionName = Field(description="1-64 letters, digits, underscores or hyphens.")
    description: str | None = Field(default=None, description="What the tool does.")
    input_schema: JsonObjectField = Field(description="JSON Schema of the arguments object.")


def parse_messages(value: Any, *, where: str = "messages") -> list[InferMessage]:
    """Validate a list of messages (models or dicts in either spelling); a bad one raises naming it."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ValidationError(f"{where} must be a list of messages")
    parsed = []
    for index, item in enumerate(value):
        if isinstance(item, InferMessage):
            parsed.append(item)
            continue
        try:
            parsed.append(InferMessage.model_validate(item))
        except pydantic.ValidationError as exc:
            raise ValidationError(f"{where}[{index}]: {validation_summary(exc)}") from None
    return parsed


def parse_tool_specs(value: Any, *, where: str = "tools") -> list[ToolSpec]:
    """Validate tool definitions: ``ToolSpec``s, dicts, or registry ``ToolDefinition``s."""
    if value is None:
        return []
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ValidationError(f"{where} must be a list of tool definitions")
    specs = []
    for index, item in enumerate(value):
        if isinstance(item, ToolSpec):
            specs.append(item)
            continue
        fields = item if isinstance(item, Mapping) else _definition_fields(item)
        try:
            specs.append(ToolSpec.model_validate(fields))
        except pydantic.ValidationError as exc:
            raise ValidationError(f"{where}[{index}]: {validation_summary(exc)}") from None
    return specs


def _definition_fields(item: Any) -> dict[str, Any]:
    return {
        "name": getattr(item, "name", None),
        "description": getattr(item, "description", None),
        "input_schema": dict(getattr(item, "input_schema", None) or {}),
    }


# --- MCP tool names ------------------------------------------------------------------------------------


def mcp_tool_name(server: str, tool: str) -> str | None:
    """The model-facing name ``mcp__<server>__<tool>``, or ``None`` when it cannot be a function name.

    The server part holds no ``__`` and neither starts nor ends with ``_``, so the name maps back to the
    same server and tool (see :func:`parse_mcp_tool_name`).
    """
    name = f"{MCP_PREFIX}{server}__{tool}"
    if not _MCP_SERVER.match(server) or not _MCP_TOOL.match(tool) or len(name) > 64:
        return None
    return name


def parse_mcp_tool_name(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an ``mcp__<server>__<tool>`` name, or ``None`` for any other name."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, separator, tool = name[len(MCP_PREFIX) :].partition("__")
    if not separator or not _MCP_SERVER.match(server) or not _MCP_TOOL.match(tool):
        return None
    return server, tool


def mcp_tool_spec(capability: McpCapability) -> ToolSpec | None:
    """The model-facing definition of a discovered MCP tool (``None`` when its name cannot be mapped)."""
    name = mcp_tool_name(capability.server, capability.name)
    if name is None:
        return None
    schema = capability.input_schema or {"type": "object"}
    return ToolSpec(name=name, description=capability.description, input_schema=schema)


# --- observations and text -----------------------------------------------------------------------------


def observation_to_infer_message(observation: Observation | Mapping[str, Any]) -> InferMessage:
    """The tool message answering one action request: call id, source and status kept in ``metadata``.

    A success carries the observation's message content. Any other status carries a one-line statement
    that the call did not succeed, with its status and error code, so it can never read as success.
    """
    parsed = _observation(observation)
    metadata: dict[str, Any] = {
        ACTION_REQUEST_ID: parsed.call_id,
        "source": parsed.source,
        "status": parsed.status,
    }
    if parsed.error is not None:
        metadata["error"] = parsed.error.to_wire()
    content = parsed.message.content if parsed.status == "success" else failure_text(parsed)
    return InferMessage(role="tool", content=content, metadata=metadata)


def failure_text(observation: Observation) -> str:
    """``Tool call 'id' (source) did not succeed: status failed, error CODE: message``."""
    error = observation.error
    detail = f", error {error.code}: {error.message}" if error is not None else ""
    return (
        f"Tool call {observation.call_id!r} ({observation.source}) did not succeed: "
        f"status {observation.status}{detail}"
    )


def _observation(value: Observation | Mapping[str, Any]) -> Observation:
    if isinstance(value, Observation):
        return value
    try:
        return Observation.model_validate(value)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid observation: {validation_summary(exc)}") from None


def content_text(content: MessageContent) -> str | None:
    """Message content as plain text for a text-only model protocol (``None`` stays ``None``)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(_is_part(part) for part in content):
        return "\n".join(_part_text(part) for part in content)
    return json.dumps(content, ensure_ascii=False)


def _is_part(value: object) -> bool:
    return isinstance(value, TextPart | JsonPart | ReferencePart)


def _part_text(part: Any) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, JsonPart):
        return json.dumps(part.data, ensure_ascii=False)
    return f"[reference {part.reference.uri}]"
