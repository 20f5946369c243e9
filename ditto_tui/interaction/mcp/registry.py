"""The MCP client port and ``McpRegistry``: bounded discovery and invocation on registered servers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import pydantic

from ditto_tui.contracts import ContractModel, ExternalResult, InteractionError, McpCapability, ToolCall
from ditto_tui.errors import McpError, ValidationError
from ditto_tui.interaction.gate import CallGate
from ditto_tui.interaction.results import parse_outcome, validation_summary
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sandbox import Sandbox
from ditto_tui.sanitize import unsafe_reason
from ditto_tui.signal import CancelSignal

MCP_TOOL_ERROR_MESSAGE = "The MCP server reported a tool error"


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
        """Result fields: ``content``, ``structuredContent``, ``references``, ``isError``, ``error``."""
        ...


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


def parse_mcp_input(input: Any) -> McpInput:
    """Validate an ACT.MCP input (either spelling)."""
    if isinstance(input, McpDiscoverInput | McpInvokeInput):
        return input
    try:
        return _INPUT_ADAPTER.validate_python(input)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid MCP request: {validation_summary(exc)}") from None


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a positive integer")
    return value


def _capability(server: str, tool: Any) -> McpCapability:
    if not isinstance(tool, Mapping):
        raise McpError(f"server {server!r} listed a tool that is not an object", code="MCP_INVALID_TOOL")
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise McpError(f"server {server!r} listed a tool without a name", code="MCP_INVALID_TOOL")
    label = name
    schema = tool.get("inputSchema", tool.get("input_schema"))
    if not isinstance(schema, Mapping):
        raise McpError(
            f"server {server!r} tool {label!r} has no input schema object", code="MCP_INVALID_SCHEMA"
        )
    output_schema = tool.get("outputSchema", tool.get("output_schema"))
    if output_schema is not None and not isinstance(output_schema, Mapping):
        raise McpError(
            f"server {server!r} tool {label!r} has an invalid output schema", code="MCP_INVALID_SCHEMA"
        )
    try:
        return McpCapability.model_validate(
            {
                "server": server,
                "name": name,
                "description": tool.get("description"),
                "input_schema": schema,
                "output_schema": output_schema,
                "annotations": tool.get("annotations"),
            }
        )
    except pydantic.ValidationError as exc:
        raise McpError(
            f"server {server!r} tool {label!r} is invalid: {validation_summary(exc)}", code="MCP_INVALID_TOOL"
        ) from None


def _safe_error(error: Any) -> InteractionError:
    if isinstance(error, Mapping | InteractionError):
        try:
            parsed = InteractionError.model_validate(error)
        except pydantic.ValidationError:
            parsed = None
        if parsed is not None and unsafe_reason(parsed.message) is None:
            return parsed
    return InteractionError(code="MCP_TOOL_ERROR", message=MCP_TOOL_ERROR_MESSAGE)


def map_tool_result(result: Mapping[str, Any], *, call_id: str, source: str) -> ExternalResult:
    """Map McpToolResult fields to an ExternalResult; ``isError`` becomes ``failed`` with a safe error."""
    if not isinstance(result, Mapping):
        raise McpError(f"MCP call {source!r} returned {type(result).__name__}, not a result object")
    fields: dict[str, Any] = {}
    for key, alias in (
        ("content", "content"),
        ("structured_content", "structuredContent"),
        ("references", "references"),
    ):
        value = result.get(alias, result.get(key))
        if value is not None:
            fields[key] = value
    if bool(result.get("isError", result.get("is_error", False))):
        fields["status"] = "failed"
        fields["error"] = _safe_error(result.get("error"))
    else:
        if not fields:
            fields["content"] = []
        fields["status"] = "success"
    return parse_outcome(fields, call_id=call_id, source=source, what="MCP server")


class McpRegistry:
    """MCP clients by server name, with a discovery budget per discover call across servers."""

    def __init__(self, max_discovery_pages: int = 100, max_capabilities: int = 1000) -> None:
        self.max_discovery_pages = _positive("max_discovery_pages", max_discovery_pages)
        self.max_capabilities = _positive("max_capabilities", max_capabilities)
        self._clients: dict[str, McpClient] = {}
        self._capabilities: dict[tuple[str, str], McpCapability] = {}
        self._gate: CallGate | None = None

    def guard(self, gate: CallGate) -> None:
        """Route every invocation through ``gate`` from now on (one gate per registry)."""
        if self._gate is not None and self._gate is not gate:
            raise ValidationError("this MCP registry is already guarded by another approval gate")
        self._gate = gate

    def register(self, server: str, client: McpClient) -> Callable[[], bool]:
        """Add ``client`` as ``server``; an empty or duplicate name raises. Unregistering closes nothing."""
        if not isinstance(server, str) or not server.strip() or ":" in server:
            raise ValidationError(f"MCP server name {server!r} must be nonempty and contain no ':'")
        if server in self._clients:
            raise ValidationError(f"MCP server {server!r} is already registered")
        for method in ("list_tools", "call_tool"):
            if not callable(getattr(client, method, None)):
                raise ValidationError(f"MCP client for {server!r} has no {method}() method")
        self._clients[server] = client

        def unregister() -> bool:
            if self._clients.get(server) is not client:
                return False
            del self._clients[server]
            return True

        return unregister

    def servers(self) -> list[str]:
        """Registered server names in registration order."""
        return list(self._clients)

    def get(self, server: str) -> McpClient | None:
        """The client registered as ``server``, if any."""
        return self._clients.get(server)

    def known_capability(self, server: str, name: str) -> McpCapability | None:
        """The capability as last discovered, if a discovery saw it."""
        return self._capabilities.get((server, name))

    def _client(self, server: str) -> McpClient:
        client = self._clients.get(server)
        if client is None:
            raise ValidationError(f"no MCP server named {server!r} is registered")
        return client

    async def execute(
        self,
        input: McpInput | Mapping[str, Any],
        sandbox: Sandbox,
        signal: CancelSignal | None = None,
        *,
        context: WorkerContext | None = None,
    ) -> McpDiscovery | McpInvocation:
        """Run a discover or invoke request; permission and validation errors raise."""
        request = parse_mcp_input(input)
        if isinstance(request, McpDiscoverInput):
            return McpDiscovery(capabilities=tuple(await self.discover(request.server, sandbox, signal)))
        return McpInvocation(
            result=await self.invoke(request.server, request.call, sandbox, signal, context=context)
        )

    async def discover(
        self, server: str | None, sandbox: Sandbox, signal: CancelSignal | None = None
    ) -> list[McpCapability]:
        """List every tool of ``server`` (or of all servers) within the page and capability budget."""
        servers = [server] if server is not None else self.servers()
        for name in servers:
            sandbox.check_mcp(name)
            self._client(name)
        budget = _Budget(self.max_discovery_pages, self.max_capabilities)
        found: list[McpCapability] = []
        for name in servers:
            found.extend(await self._discover_server(name, budget, signal))
        for capability in found:
            self._capabilities[(capability.server, capability.name)] = capability
        return found

    async def _discover_server(
        self, server: str, budget: _Budget, signal: CancelSignal | None
    ) -> list[McpCapability]:
        client = self._client(server)
        found: list[McpCapability] = []
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            if signal is not None:
                signal.raise_if_cancelled()
            budget.take_page(server)
            page = await client.list_tools(cursor=cursor, signal=signal)
            if signal is not None:
                signal.raise_if_cancelled()
            tools, cursor = _page(server, page)
            budget.take_capabilities(server, len(tools))
            found.extend(_capability(server, tool) for tool in tools)
            if cursor is None:
                return found
            if cursor in seen:
                raise McpError(f"server {server!r} repeated a discovery cursor", code="MCP_REPEATED_CURSOR")
            seen.add(cursor)

    async def invoke(
        self,
        server: str,
        call: ToolCall | Mapping[str, Any],
        sandbox: Sandbox,
        signal: CancelSignal | None = None,
        *,
        context: WorkerContext | None = None,
    ) -> ExternalResult:
        """Call one tool on ``server``; ``source`` is ``server:tool`` and ``call_id`` is preserved."""
        sandbox.check_mcp(server)
        self._client(server)
        parsed = call if isinstance(call, ToolCall) else _parse_call(call)
        if self._gate is not None:
            return await self._gate.invoke_mcp(self, server, parsed, sandbox, signal, context)
        return await self.invoke_unguarded(server, parsed, sandbox, signal)

    async def invoke_unguarded(
        self, server: str, call: ToolCall, sandbox: Sandbox, signal: CancelSignal | None = None
    ) -> ExternalResult:
        """Invoke without consulting a gate: only the gate itself calls this, after its decision."""
        sandbox.check_mcp(server)
        client = self._client(server)
        parsed = call
        result = await client.call_tool(parsed.name, parsed.arguments, signal=signal)
        return map_tool_result(result, call_id=parsed.id, source=f"{server}:{parsed.name}")


def _parse_call(call: Mapping[str, Any]) -> ToolCall:
    try:
        return ToolCall.model_validate(call)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid MCP tool call: {validation_summary(exc)}") from None


def _page(server: str, page: Any) -> tuple[Sequence[Any], str | None]:
    if not isinstance(page, Mapping) or not isinstance(page.get("tools"), list | tuple):
        raise McpError(
            f"server {server!r} returned a discovery page without a tools list", code="MCP_INVALID_PAGE"
        )
    cursor = page.get("nextCursor", page.get("next_cursor"))
    if cursor is not None and not isinstance(cursor, str):
        raise McpError(f"server {server!r} returned a cursor that is not a string", code="MCP_INVALID_PAGE")
    return page["tools"], cursor


class _Budget:
    """The page and capability budget of one discover call, shared across servers."""

    def __init__(self, pages: int, capabilities: int) -> None:
        self.pages = pages
        self.capabilities = capabilities

    def take_page(self, server: str) -> None:
        if self.pages <= 0:
            raise McpError(
                f"discovery needs more than the page limit (at server {server!r})", code="MCP_PAGE_LIMIT"
            )
        self.pages -= 1

    def take_capabilities(self, server: str, count: int) -> None:
        if count > self.capabilities:
            raise McpError(
                f"discovery exceeds the capability limit (at server {server!r})", code="MCP_CAPABILITY_LIMIT"
            )
        self.capabilities -= count
