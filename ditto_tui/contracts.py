"""Wire types of the INTERACTION worker: JSON values, messages, calls, results, receipts (seed §5–§7)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Self, TypeAlias

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from ditto_tui.errors import ValidationError
from ditto_tui.sanitize import unsafe_reason

__all__ = [
    "MAX_JSON_DEPTH",
    "Artifact",
    "ContentField",
    "ContractModel",
    "ExternalResult",
    "InteractionError",
    "JsonField",
    "JsonObject",
    "JsonObjectField",
    "JsonPart",
    "JsonValue",
    "McpCapability",
    "Message",
    "MessageContent",
    "MessagePart",
    "MessageRole",
    "Observation",
    "OutputReceipt",
    "OutputRequest",
    "ReceiptStatus",
    "Reference",
    "ReferencePart",
    "ResultStatus",
    "TextPart",
    "ToolCall",
    "ensure_json",
    "ensure_json_object",
    "parse_content",
    "to_wire",
]

JsonValue: TypeAlias = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
"""A JSON-compatible value: str, int, finite float, bool, None, list, or dict with str keys."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a dict with str keys and JSON-compatible values."""

MAX_JSON_DEPTH = 200
"""The deepest nesting of lists and dicts ``ensure_json`` accepts."""

ResultStatus: TypeAlias = Literal["success", "failed", "cancelled", "timeout", "unknown"]
"""How an external action ended; only ``success`` is a success."""

ReceiptStatus: TypeAlias = Literal["accepted", "rejected", "unknown"]
"""What an output sink says about a delivery."""

MessageRole: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""Who a message is from."""

# --- JSON values ---------------------------------------------------------------------------------------


class _JsonProblem(Exception):
    """Raised inside the walk; collects the JSON path while unwinding, so the happy path stays cheap."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str | int] = []


def ensure_json(value: object, *, where: str = "value") -> JsonValue:
    """A JSON-compatible copy of ``value``: tuples become lists, mappings dicts, str/int/float subclasses
    their base type.

    Raises ``ValidationError`` naming the JSON path (``arguments.items[2]: NaN is not JSON-compatible``)
    for NaN or infinity, bytes, datetime, sets, other objects, callables, non-str keys, cycles and
    nesting deeper than ``MAX_JSON_DEPTH``.
    """
    try:
        return _walk(value, set())
    except _JsonProblem as problem:
        raise ValidationError(_describe(where, problem)) from None


def ensure_json_object(value: object, *, where: str = "value") -> JsonObject:
    """Like ``ensure_json``, for a value that must be a JSON object."""
    if not isinstance(value, Mapping):
        prefix = f"{where}: " if where else ""
        raise ValidationError(f"{prefix}must be a JSON object, not {type(value).__name__}")
    result = ensure_json(value, where=where)
    assert isinstance(result, dict)
    return result


def _walk(value: object, active: set[int]) -> JsonValue:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # type: ignore[return-value]  # narrowed by the exact type checks above
    if kind is float:
        return _finite(value)  # type: ignore[arg-type]
    if kind is dict:
        return _walk_mapping(value, active)  # type: ignore[arg-type]
    if kind is list or kind is tuple:
        return _walk_sequence(value, active)  # type: ignore[arg-type]
    return _walk_subclass(value, active)


def _walk_mapping(value: Mapping[object, object], active: set[int]) -> JsonObject:
    _enter(value, active)
    result: JsonObject = {}
    for key, item in value.items():
        if type(key) is not str:
            if not isinstance(key, str):
                raise _JsonProblem(f"key {key!r} ({type(key).__name__}) is not a string")
            key = str.__str__(key)
        kind = type(item)
        # The common case, a str, int, bool or null value, without a call per value:
        if kind is str or kind is int or kind is bool or item is None:
            result[key] = item  # type: ignore[assignment]  # narrowed by the exact type checks above
            continue
        try:
            result[key] = _walk(item, active)
        except _JsonProblem as problem:
            problem.path.append(key)
            raise
    active.discard(id(value))
    return result


def _walk_sequence(value: list[object] | tuple[object, ...], active: set[int]) -> list[JsonValue]:
    _enter(value, active)
    result: list[JsonValue] = []
    for index, item in enumerate(value):
        try:
            result.append(_walk(item, active))
        except _JsonProblem as problem:
            problem.path.append(index)
            raise
    active.discard(id(value))
    return result


def _enter(container: object, active: set[int]) -> None:
    if id(container) in active:
        raise _JsonProblem("a cycle is not JSON-compatible")
    if len(active) >= MAX_JSON_DEPTH:
        raise _JsonProblem(f"nesting deeper than {MAX_JSON_DEPTH} levels is not supported")
    active.add(id(container))


def _walk_subclass(value: object, active: set[int]) -> JsonValue:
    """Subclasses of the JSON types (``StrEnum``, ``IntEnum``, ``OrderedDict``) and rejections."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return _finite(float.__float__(value))
    if isinstance(value, Mapping):
        return _walk_mapping(value, active)
    if isinstance(value, list | tuple):
        return _walk_sequence(value, active)
    raise _JsonProblem(f"{type(value).__name__} is not JSON-compatible")


def _finite(value: float) -> float:
    if math.isfinite(value):
        return value
    raise _JsonProblem(f"{'NaN' if math.isnan(value) else value} is not JSON-compatible")


def _describe(where: str, problem: _JsonProblem) -> str:
    path = where
    for step in reversed(problem.path):
        if isinstance(step, int):
            path += f"[{step}]"
        elif step.isidentifier():
            path += f".{step}" if path else step
        else:
            path += f"[{step[:64]!r}]"
    return f"{path}: {problem.reason}" if path else problem.reason


class _Validated:
    """A pydantic marker: validate with a plain function, serialise by inference, describe in JSON schema.

    Validation never builds pydantic's generic JSON schema for the value, so a big payload is walked
    once by hand.
    """

    __slots__ = ("_json_schema", "_validate")

    def __init__(self, validate: Callable[[Any], Any], json_schema: JsonSchemaValue) -> None:
        self._validate = validate
        self._json_schema = json_schema

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(self._validate)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return dict(self._json_schema)


def _json_field(value: object) -> JsonValue:
    return ensure_json(value, where="")


def _json_object_field(value: object) -> JsonObject:
    if type(value) is not dict:
        return ensure_json_object(value, where="")
    try:  # a plain dict, the common case: no abstract-class check and one call fewer
        return _walk_mapping(value, set())
    except _JsonProblem as problem:
        raise ValidationError(_describe("", problem)) from None


_JSON = _Validated(_json_field, {})
_JSON_OBJECT = _Validated(_json_object_field, {"type": "object"})

JsonField = Annotated[JsonValue, _JSON]
"""A pydantic field type for any JSON value, checked by ``ensure_json`` (for models outside this module)."""

JsonObjectField = Annotated[JsonObject, _JSON_OBJECT]
"""A pydantic field type for a JSON object, checked by ``ensure_json_object``."""

# --- models --------------------------------------------------------------------------------------------

NonEmptyStr = Annotated[str, StringConstraints(strict=True, min_length=1)]
Text = Annotated[str, pydantic.Strict()]
Flag = Annotated[bool, pydantic.Strict()]


class ContractModel(BaseModel):
    """Base of every contract: frozen, no unknown fields, snake_case attributes, camelCase on the wire.

    Input is accepted in either spelling (``callId`` or ``call_id``); ``model_dump(by_alias=True)`` and
    ``to_wire()`` give the seed's camelCase.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The seed's JSON form: camelCase keys, absent optional fields omitted, JSON types only."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def to_wire(model: ContractModel) -> dict[str, Any]:
    """``model.to_wire()``: the camelCase JSON form of any contract."""
    return model.to_wire()


def validation_summary(error: pydantic.ValidationError, limit: int = 3) -> str:
    """A one-line summary of a pydantic error naming fields and rules, never echoing input values."""
    parts = []
    for item in error.errors(include_input=False, include_url=False)[:limit]:
        location = ".".join(str(part) for part in item["loc"]) or "value"
        parts.append(f"{location}: {item['msg']}")
    more = error.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts).replace("\n", " ")


class Reference(ContractModel):
    """A pointer to content kept elsewhere: a file, a URL, an artifact."""

    uri: NonEmptyStr = Field(description="Where the content is; nonempty (a URL, URN or workspace path).")
    media_type: Text | None = Field(default=None, description="The content's media type, e.g. text/plain.")
    digest: Text | None = Field(default=None, description="A digest of the content, e.g. sha256:….")


class TextPart(ContractModel):
    """A message part holding text."""

    type: Literal["text"] = Field(description='Always "text".')
    text: Text = Field(description="The text.")


class JsonPart(ContractModel):
    """A message part holding a JSON value."""

    type: Literal["json"] = Field(description='Always "json".')
    data: JsonField = Field(description="The JSON value.")


class ReferencePart(ContractModel):
    """A message part pointing at content elsewhere."""

    type: Literal["reference"] = Field(description='Always "reference".')
    reference: Reference = Field(description="The referenced content.")


MessagePart: TypeAlias = Annotated[TextPart | JsonPart | ReferencePart, Field(discriminator="type")]
"""One part of a message, told apart by ``type``: text, json or reference."""

MessageContent: TypeAlias = str | list[MessagePart] | JsonValue
"""Text, a list of message parts, or any JSON value (JSON null included)."""

_PART_MODELS: dict[object, type[TextPart | JsonPart | ReferencePart]] = {
    "text": TextPart,
    "json": JsonPart,
    "reference": ReferencePart,
}


def parse_content(value: object, *, where: str = "content") -> MessageContent:
    """Validate message content: a str, a list of parts, or any JSON value.

    A list is read as parts only when every element is a part, or a dict whose ``type`` is text, json or
    reference and which validates as that part; any other list is plain JSON.
    """
    if type(value) is str or value is None:
        return value
    if isinstance(value, list | tuple) and value:
        parts = _as_parts(value)
        if parts is not None:
            return parts
    return ensure_json(value, where=where)


def _as_parts(items: list[Any] | tuple[Any, ...]) -> list[MessagePart] | None:
    parts: list[MessagePart] = []
    for item in items:
        if isinstance(item, TextPart | JsonPart | ReferencePart):
            parts.append(item)
            continue
        model = _PART_MODELS.get(item.get("type")) if isinstance(item, dict) else None
        if model is None:
            return None
        try:
            parts.append(model.model_validate(item))
        except pydantic.ValidationError:
            return None
    return parts


def _content_field(value: object) -> MessageContent:
    return parse_content(value, where="")


ContentField = Annotated[MessageContent, _Validated(_content_field, {})]
"""A pydantic field type for message content, checked by ``parse_content``."""


class Message(ContractModel):
    """A message between roles; ``content`` is required and may be JSON null (``None``)."""

    role: MessageRole = Field(description="system, user, assistant or tool.")
    content: ContentField = Field(description="Text, message parts or any JSON value; required, may be null.")
    name: Text | None = Field(default=None, description="The author's name; for a tool message, the source.")

    @model_serializer(mode="wrap")
    def _keep_null_content(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        # content is required on the wire, so exclude_none (as in to_wire) must keep a JSON null.
        if isinstance(data, dict) and self.content is None and info.exclude_none:
            data["content"] = None
        return data


class ToolCall(ContractModel):
    """A request to run one registered tool."""

    id: NonEmptyStr = Field(description="Correlates the call with its result; nonempty.")
    name: NonEmptyStr = Field(description="The registered tool to run; nonempty.")
    arguments: JsonObjectField = Field(description="The tool's structured input, a JSON object.")


def _public_message(message: str) -> str:
    reason = unsafe_reason(message)
    if reason is not None:
        raise ValueError(f"{reason}; build it with ditto_tui.sanitize.safe_error")
    return message


class InteractionError(ContractModel):
    """A safe, structured error: a stable code and a one-line public message."""

    code: Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9_.-]{1,64}$")] = Field(
        description="A stable machine-readable code: 1–64 letters, digits, underscores, dots or hyphens."
    )
    message: Annotated[str, pydantic.Strict(), AfterValidator(_public_message)] = Field(
        description=(
            "A public one-line message: at most 512 characters, no newline, control or invisible "
            "character, credential marker, absolute path or stack frame."
        )
    )
    retryable: Flag | None = Field(default=None, description="Whether a retry may help; descriptive only.")


def _needs_error(status: str, error: InteractionError | None, field: str) -> None:
    if error is None:
        raise ValueError(f"a {status!r} {field} needs an error")


_CallId = Annotated[NonEmptyStr, Field(description="The id of the call this result answers; nonempty.")]
_Source = Annotated[NonEmptyStr, Field(description="The tool name, or server:tool for MCP.")]
_Status = Annotated[ResultStatus, Field(description="success, failed, cancelled, timeout or unknown.")]
_Structured = Annotated[JsonField | None, Field(description="Machine-readable JSON data.")]
_References = Annotated[tuple[Reference, ...] | None, Field(description="Provenance and artifacts.")]
_Error = Annotated[InteractionError | None, Field(description="Why it did not succeed.")]
_Metadata = Annotated[JsonObjectField | None, Field(description="Extra JSON data about the action.")]


class ExternalResult(ContractModel):
    """The result of one external action. Success has content, structured content or references; every
    other status has an error. An absent ``content`` and a JSON-null one are both ``None``."""

    call_id: _CallId
    source: _Source
    status: _Status
    content: ContentField | None = Field(default=None, description="Text, message parts or any JSON value.")
    structured_content: _Structured = None
    references: _References = None
    error: _Error = None
    metadata: _Metadata = None

    @model_validator(mode="after")
    def _check_status(self) -> Self:
        if self.status != "success":
            _needs_error(self.status, self.error, "result")
        elif self.content is None and self.structured_content is None and not self.references:
            raise ValueError("a 'success' result needs content, structuredContent or references")
        return self


class Observation(ContractModel):
    """An ``ExternalResult`` normalised for reasoning: no ``content``, plus a tool ``message``."""

    call_id: _CallId
    source: _Source
    status: _Status
    structured_content: _Structured = None
    references: _References = None
    error: _Error = None
    metadata: _Metadata = None
    message: Message = Field(description="The tool message (role=tool, name=source) made from the result.")

    @model_validator(mode="after")
    def _check_status(self) -> Self:
        if self.status != "success":
            _needs_error(self.status, self.error, "observation")
        return self


class Artifact(ContractModel):
    """A named reference delivered with an output."""

    name: NonEmptyStr = Field(description="The artifact's name; nonempty.")
    reference: Reference = Field(description="Where the artifact is.")


class OutputRequest(ContractModel):
    """The input of INTERACTION.OUTPUT: one delivery to an output sink."""

    delivery_id: NonEmptyStr = Field(description="Identifies one application delivery; nonempty.")
    message: Message = Field(description="The message to deliver, normally from the assistant.")
    artifacts: tuple[Artifact, ...] | None = Field(default=None, description="References delivered with it.")


class OutputReceipt(ContractModel):
    """What an output sink reports; rejected and unknown receipts carry an error."""

    delivery_id: NonEmptyStr = Field(description="The delivery id of the request; nonempty.")
    status: ReceiptStatus = Field(description="accepted, rejected or unknown.")
    artifacts: tuple[Artifact, ...] | None = Field(default=None, description="Artifacts the sink accepted.")
    error: InteractionError | None = Field(default=None, description="Why it was rejected or is unknown.")
    metadata: JsonObjectField | None = Field(default=None, description="Extra JSON data from the sink.")

    @model_validator(mode="after")
    def _check_status(self) -> Self:
        if self.status != "accepted":
            _needs_error(self.status, self.error, "receipt")
        return self


class McpCapability(ContractModel):
    """One tool an MCP server offers, as discovered."""

    server: Text = Field(description="The registered server name.")
    name: Text = Field(description="The tool's name on that server.")
    description: Text | None = Field(default=None, description="The server's description of the tool.")
    input_schema: JsonObjectField | None = Field(default=None, description="JSON Schema of the arguments.")
    output_schema: JsonObjectField | None = Field(default=None, description="JSON Schema of the result.")
    annotations: JsonObjectField | None = Field(default=None, description="MCP tool annotations, if sent.")
    title: Text | None = Field(default=None, description="The tool's display title, if the server sent one.")
    unsupported: Text | None = Field(
        default=None, description="Why this client cannot call the tool (it is listed, never invoked)."
    )
