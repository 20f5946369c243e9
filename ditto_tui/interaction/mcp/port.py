"""The MCP client port and the ACT.MCP contracts: requests, responses, typed call failures, result mapping."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import pydantic

from ditto_tui.contracts import ContractModel, ExternalResult, InteractionError, McpCapability, ToolCall
from ditto_tui.errors import InvalidResultError, McpError, ValidationError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.sanitize import unsafe_reason
from ditto_tui.signal import CancelSignal

MCP_TOOL_ERROR_MESSAGE = "The MCP server reported a tool error"

ProgressListener = Callable[[float, "float | None", "str | None"], None]
"""Called with (progress, total, message) for each progress notification of a running call."""


@runtime_checkable
class McpClient(Protocol):
    """The application-owned MCP client port (an adapter over an SDK session)."""

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page: ``{"tools": [...], "nextCursor"?: str}``."""
        ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """Result fields: ``content``, ``structuredContent``, ``references``, ``isError``, ``error``.

        A client may also take ``progress=`` (a :data:`ProgressListener`); the registry passes it only
        to clients whose ``call_tool`` accepts it.

        A call that gets no tool result (deadline, lost connection, protocol error) raises
        :class:`McpCallError`; cancellation through ``signal`` raises :class:`asyncio.CancelledError`.
        """
        ...


@dataclasses.dataclass(frozen=True)
class McpServerInfo:
    """What a server said about itself when the session was initialised.

    ``capabilities`` is the MCP wire form of its ``ServerCapabilities`` (``{"resources": {...}, ...}``).
    """

    name: str
    version: str
    protocol_version: str
    capabilities: Mapping[str, Any]
    title: str | None = None
    instructions: str | None = None


@runtime_checkable
class McpClientRequests(Protocol):
    """What the application answers when a server asks the client (API.md §7).

    Given to ``open_mcp_servers(client_requests=...)``, it makes the client declare the ``sampling``,
    ``elicitation`` (form and url) and ``roots`` capabilities. Params and results are the MCP wire form
    (camelCase). Raising :class:`~ditto_tui.errors.McpError` (or any exception) answers the server with
    an error whose message is sanitised; the exception's text never reaches the server otherwise.
    """

    async def create_message(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """A ``sampling/createMessage`` request's params -> a ``CreateMessageResult``."""
        ...

    async def elicit(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """An ``elicitation/create`` request's params -> ``{"action": ..., "content"?: {...}}``."""
        ...

    async def list_roots(self, server: str) -> list[Mapping[str, Any]]:
        """The roots to offer ``server``: ``[{"uri": "file:///...", "name"?: str}]``."""
        ...


@runtime_checkable
class McpBrowser(Protocol):
    """The optional part of the port: what a server offers besides tools (a fake may leave it out).

    Every result is the MCP wire form (camelCase, no ``None`` fields). A request for something the server
    did not declare (``resources``, ``resources.subscribe``, ``prompts``, ``completions``, ``logging``)
    raises :class:`McpError` saying so, without asking it; a
    call that gets no result raises :class:`McpCallError`, as a tool call does.
    """

    def server_info(self) -> McpServerInfo:
        """The server's initialize result; raises :class:`McpCallError` when it is not connected."""
        ...

    async def list_resources(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page: ``{"resources": [...], "nextCursor"?: str}``."""
        ...

    async def list_resource_templates(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page: ``{"resourceTemplates": [...], "nextCursor"?: str}``."""
        ...

    async def read_resource(self, uri: str, signal: CancelSignal | None = None) -> Mapping[str, Any]:
        """``{"contents": [...]}``."""
        ...

    async def list_prompts(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page: ``{"prompts": [...], "nextCursor"?: str}``."""
        ...

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """``{"description"?: str, "messages": [...]}``."""
        ...

    async def ping(self, signal: CancelSignal | None = None) -> float:
        """The round trip of one ``ping`` request, in seconds."""
        ...

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        signal: CancelSignal | None = None,
    ) -> Mapping[str, Any]:
        """Completions of one argument of a prompt or resource template: ``{"values": [...], ...}``.

        ``ref`` is ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource", "uri"}``, ``argument``
        is ``{"name", "value"}``; the result may also hold ``total`` and ``hasMore``.
        """
        ...

    async def set_logging_level(self, level: str, signal: CancelSignal | None = None) -> None:
        """Ask the server to send log messages of ``level`` and above (an MCP ``LoggingLevel``)."""
        ...

    async def subscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        """Ask the server to notify changes of one resource."""
        ...

    async def unsubscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        """Ask the server to stop notifying changes of one resource."""
        ...


class McpCallError(McpError):
    """A call that reached an MCP client but ended without a tool result.

    ``status`` is the ``ExternalResult`` status an invocation reports (``timeout`` for a deadline,
    ``failed`` otherwise); ``message`` must already be a safe public message. A discovery that meets it
    fails as a whole.
    """

    title = "MCP call failed"

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Literal["failed", "timeout"] = "failed",
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.retryable = retryable


class McpDiscoverInput(ContractModel):
    """Discover the tools of one server, or of every registered server when ``server`` is omitted."""

    operation: Literal["discover"]
    server: str | None = None


class McpInvokeInput(ContractModel):
    """Invoke one tool on one server."""

    operation: Literal["invoke"]
    server: str
    call: ToolCall


class McpDiscovery(ContractModel):
    """The result of a discovery: every capability found, in server and page order."""

    operation: Literal["discover"] = "discover"
    capabilities: tuple[McpCapability, ...]


class McpInvocation(ContractModel):
    """The result of an invocation: the tool's ExternalResult (``source`` = ``server:tool``)."""

    operation: Literal["invoke"] = "invoke"
    result: ExternalResult


McpInput = McpDiscoverInput | McpInvokeInput
_INPUT_ADAPTER: pydantic.TypeAdapter[McpInput] = pydantic.TypeAdapter(
    Annotated[McpInput, pydantic.Field(discriminator="operation")]
)


_BY_OPERATION: dict[object, type[McpDiscoverInput | McpInvokeInput]] = {
    "discover": McpDiscoverInput,
    "invoke": McpInvokeInput,
}


def parse_mcp_input(input: Any) -> McpInput:
    """Validate an ACT.MCP input (either spelling)."""
    if isinstance(input, McpDiscoverInput | McpInvokeInput):
        return input
    # The operation picks the model directly; anything else gets the union's own error message.
    model = _BY_OPERATION.get(input.get("operation")) if isinstance(input, Mapping) else None
    try:
        if model is not None:
            return model.model_validate(input)
        return _INPUT_ADAPTER.validate_python(input)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid MCP request: {validation_summary(exc)}") from None


def _safe_error(error: Any) -> InteractionError:
    if isinstance(error, Mapping | InteractionError):
        try:
            parsed = InteractionError.model_validate(error)
        except pydantic.ValidationError:
            parsed = None
        if parsed is not None and unsafe_reason(parsed.message) is None:
            return parsed
    return InteractionError(code="MCP_TOOL_ERROR", message=MCP_TOOL_ERROR_MESSAGE)


_RESULT_FIELDS = (
    ("content", "content"),
    ("structured_content", "structuredContent"),
    ("references", "references"),
    ("metadata", "metadata"),
)
_IDENTITY_AND_METADATA = frozenset({"call_id", "source", "metadata"})


def map_tool_result(result: Mapping[str, Any], *, call_id: str, source: str) -> ExternalResult:
    """Map McpToolResult fields to an ExternalResult; ``isError`` becomes ``failed`` with a safe error."""
    if not isinstance(result, Mapping):
        raise McpError(f"MCP call {source!r} returned {type(result).__name__}, not a result object")
    fields: dict[str, Any] = {"call_id": call_id, "source": source}
    for key, alias in _RESULT_FIELDS:
        value = result.get(alias, result.get(key))
        if value is not None:
            fields[key] = value
    if bool(result.get("isError", result.get("is_error", False))):
        fields["status"] = "failed"
        fields["error"] = _safe_error(result.get("error"))
    else:
        if not (fields.keys() - _IDENTITY_AND_METADATA):
            fields["content"] = []
        fields["status"] = "success"
    try:
        return ExternalResult.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise InvalidResultError(
            f"MCP server {source!r} returned an invalid result: {validation_summary(exc)}"
        ) from None
