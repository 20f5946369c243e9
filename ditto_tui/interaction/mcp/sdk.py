"""The official ``mcp`` SDK behind the ``McpClient`` port: deadlines, cancellation and typed failures."""

from __future__ import annotations

import asyncio
import functools
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast, get_args

import anyio
import pydantic
from mcp import Client, ClientSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    CompleteResult,
    EmptyResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingLevel,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
    Tool,
)

from ditto_tui.errors import McpError, ValidationError
from ditto_tui.interaction.mcp.blocks import BLOCKS_KEY, RAW_KEY
from ditto_tui.interaction.mcp.content import content_blocks, tool_result
from ditto_tui.interaction.mcp.port import McpCallError, McpServerInfo, ProgressListener
from ditto_tui.interaction.mcp.watch import CallWatch, Ticker, bounded
from ditto_tui.interaction.results import validation_summary
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.signal import CancelSignal

T = TypeVar("T")
R = TypeVar("R")

DISCONNECTED = "MCP_SERVER_DISCONNECTED"
TIMEOUT = "MCP_TIMEOUT"
INVALID_RESULT = "MCP_INVALID_RESULT"
REQUEST_ERROR = "MCP_REQUEST_ERROR"
CAPABILITY_MISSING = "MCP_CAPABILITY_MISSING"

TOTAL_TIMEOUT_FACTOR = 10
"""Progress restarts a call's deadline, but the whole call never takes more than this many deadlines."""


def _total(timeout: float | None) -> float | None:
    return None if timeout is None else timeout * TOTAL_TIMEOUT_FACTOR


_CLOSED_STREAM = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
_LOGGING_LEVELS: tuple[str, ...] = get_args(LoggingLevel)


def disconnected_error() -> McpCallError:
    """The failure of a call whose connection closed before it was answered (never replayed)."""
    return McpCallError(
        "The MCP server closed the connection before answering; the call was not retried",
        code=DISCONNECTED,
        retryable=False,
    )


def _timeout_error(seconds: float | None) -> McpCallError:
    after = f" within {seconds:g} s" if seconds is not None else ""
    return McpCallError(f"The MCP server did not answer{after}", code=TIMEOUT, status="timeout")


def _request_error(error: MCPError) -> McpCallError:
    """A JSON-RPC error from the server: its message is sanitised, its ``data`` is never passed on."""
    detail = sanitize_public_message(error.error.message, limit=300)
    return McpCallError(
        f"The MCP server refused the request ({error.error.code}): {detail}", code=REQUEST_ERROR
    )


def _invalid_result(what: str) -> McpCallError:
    return McpCallError(sanitize_public_message(f"The MCP server returned {what}"), code=INVALID_RESULT)


def _tool(tool: Tool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": tool.name, "inputSchema": tool.input_schema}
    if tool.description is not None:
        entry["description"] = tool.description
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
    if tool.title is not None:
        entry["title"] = tool.title
    if tool.execution is not None:
        entry["execution"] = tool.execution.model_dump(mode="json", by_alias=True, exclude_none=True)
    return entry


def _wire(result: pydantic.BaseModel) -> dict[str, Any]:
    """A result model in the MCP wire form: camelCase, without the fields the server left out."""
    wire: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return wire


def _params(cursor: str | None) -> PaginatedRequestParams | None:
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


def _reference(ref: Mapping[str, Any]) -> PromptReference | ResourceTemplateReference:
    """A completion reference from its wire form, checked before anything is sent."""
    kind = ref.get("type") if isinstance(ref, Mapping) else None
    model: type[PromptReference | ResourceTemplateReference]
    if kind == "ref/prompt":
        model = PromptReference
    elif kind == "ref/resource":
        model = ResourceTemplateReference
    else:
        raise ValidationError('a completion ref needs the type "ref/prompt" or "ref/resource"')
    try:
        return model.model_validate(dict(ref))
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid completion ref: {validation_summary(exc)}") from None


def _strings(what: str, value: Mapping[str, str] | None) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise ValidationError(f"{what} must map names to strings")
    return dict(value)


def _argument(argument: Mapping[str, str]) -> dict[str, str]:
    checked = _strings("a completion argument", argument)
    if checked is None or checked.keys() != {"name", "value"}:
        raise ValidationError('a completion argument is {"name": ..., "value": ...}')
    return checked


def _deprecated(method: Callable[..., Awaitable[EmptyResult]], value: str) -> Awaitable[EmptyResult]:
    """Call an SDK method it marks deprecated (logging, resource subscriptions), which servers still offer.

    The SDK warns when the method is called, not when its request is sent; only that warning is silenced.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return method(value)


def _page(result: ListToolsResult) -> dict[str, Any]:
    page: dict[str, Any] = {"tools": [_tool(tool) for tool in result.tools]}
    if result.next_cursor is not None:
        page["nextCursor"] = result.next_cursor
    return page


class SessionClient:
    """The ``McpClient`` port over an ``mcp.ClientSession`` or ``mcp.Client``.

    ``timeout`` bounds every request (seconds); ``signal`` cancels one; a closed connection, a deadline,
    a JSON-RPC error and a malformed result each raise a typed :class:`McpCallError`, and nothing is
    retried. ``closed`` builds the error for a lost connection (the connection owner knows why it closed).
    """

    def __init__(
        self,
        session: ClientSession | Client,
        *,
        timeout: float | None = None,
        closed: Callable[[], McpCallError] = disconnected_error,
        total_timeout: float | None = None,
    ) -> None:
        if not isinstance(session, ClientSession | Client):
            raise ValidationError("mcp_session_client needs an mcp.ClientSession or mcp.Client")
        if timeout is not None and not timeout > 0:
            raise ValidationError("an MCP call timeout must be a positive number of seconds")
        self.session = session
        self.timeout = timeout
        self.total_timeout = total_timeout if total_timeout is not None else _total(timeout)
        self._closed = closed
        self._ticker: Ticker | None = None

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of the server's tool list."""
        return _page(await self._requested(lambda: self._list(cursor), "a tool list", signal))

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        signal: CancelSignal | None = None,
        progress: ProgressListener | None = None,
    ) -> Mapping[str, Any]:
        """Call one tool; the result as McpToolResult fields (and, unless they are plain text, its blocks
        under ``BLOCKS_KEY``).

        The request always carries a progress token. Each progress notification restarts the call's
        deadline (never past ``total_timeout``) and is passed to ``progress`` as (progress, total, message).
        """
        # The watch is entered here, not through _run: a call is the hot path, so no extra frames.
        watch = CallWatch(signal, self.timeout, self.total_timeout, self._watches())
        listener = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            watch.restart()
            if listener is not None:
                listener(progress, total, message)

        try:
            with watch:
                result = await self.session.call_tool(name, dict(arguments), progress_callback=on_progress)
        except TimeoutError:
            raise _timeout_error(self.timeout) from None
        except MCPError as exc:
            raise self._mapped(exc) from None
        except _CLOSED_STREAM:
            raise self._closed() from None
        except pydantic.ValidationError:
            raise _invalid_result("a tool result that does not match the protocol") from None
        except RuntimeError:  # the SDK checks structured content against the tool's output schema
            raise _invalid_result("structured content that does not match the tool's output schema") from None
        if not isinstance(result, CallToolResult):
            raise _invalid_result("a result of an unexpected kind")
        try:
            fields = tool_result(result)
            blocks = content_blocks(result)
        except pydantic.ValidationError:
            raise _invalid_result("content that cannot be represented") from None
        if blocks is not None:
            fields[BLOCKS_KEY] = blocks
        fields[RAW_KEY] = result
        return fields

    # -- what a server offers besides tools (the McpBrowser part of the port) ------------------------

    @property
    def _session(self) -> ClientSession:
        # The session itself: an mcp.Client would answer browse requests from its cache.
        return self.session.session if isinstance(self.session, Client) else self.session

    def server_info(self) -> McpServerInfo:
        """What the server said about itself in its initialize result."""
        init = self._session.initialize_result
        if init is None:
            raise McpCallError("The MCP session is not initialised", code=DISCONNECTED, retryable=False)
        info = init.server_info
        return McpServerInfo(
            name=info.name,
            title=info.title,
            version=info.version,
            protocol_version=init.protocol_version,
            instructions=init.instructions,
            capabilities=_wire(init.capabilities),
        )

    def _require(self, capability: str, feature: str | None = None) -> None:
        """Refuse what the server did not declare: ``capability``, or its ``feature`` flag when given."""
        declared = self.server_info().capabilities.get(capability)
        offered = declared is not None
        if offered and feature is not None:
            offered = isinstance(declared, Mapping) and declared.get(feature) is True
        if not offered:
            name = capability if feature is None else f"{capability}.{feature}"
            message = f"The MCP server does not offer {name} (it did not declare the capability)"
            raise McpError(message, code=CAPABILITY_MISSING)

    async def list_resources(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of the server's resources."""
        listing = self._session.list_resources
        return await self._page("resources", listing, ListResourcesResult, "a resource list", cursor, signal)

    async def list_resource_templates(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of the server's resource templates."""
        listing = self._session.list_resource_templates
        what = "a resource template list"
        return await self._page("resources", listing, ListResourceTemplatesResult, what, cursor, signal)

    async def read_resource(self, uri: str, signal: CancelSignal | None = None) -> Mapping[str, Any]:
        """The contents of one resource."""
        self._require("resources")
        operation = functools.partial(self._session.read_resource, uri)
        return _wire(await self._browse(operation, ReadResourceResult, "resource contents", signal))

    async def list_prompts(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of the server's prompts."""
        listing = self._session.list_prompts
        return await self._page("prompts", listing, ListPromptsResult, "a prompt list", cursor, signal)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One prompt, its arguments filled in."""
        filled = None if arguments is None else dict(arguments)
        self._require("prompts")
        operation = functools.partial(self._session.get_prompt, name, filled)
        return _wire(await self._browse(operation, GetPromptResult, "a prompt", signal))

    async def ping(self, signal: CancelSignal | None = None) -> float:
        """The round trip of one ``ping``, in seconds."""
        started = time.monotonic()
        await self._browse(self._session.send_ping, EmptyResult, "a ping answer", signal)
        return time.monotonic() - started

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        signal: CancelSignal | None = None,
    ) -> Mapping[str, Any]:
        """Completions of one argument: ``{"values": [...], "total"?, "hasMore"?}``."""
        reference = _reference(ref)
        filled = _argument(argument)
        context = _strings("completion context arguments", context_arguments)
        self._require("completions")
        operation = functools.partial(self._session.complete, reference, filled, context)
        result = await self._browse(operation, CompleteResult, "completions", signal)
        return _wire(result.completion)

    async def set_logging_level(self, level: str, signal: CancelSignal | None = None) -> None:
        """Ask the server for log messages of ``level`` and above."""
        if level not in _LOGGING_LEVELS:
            raise ValidationError(f"an MCP logging level is one of {', '.join(_LOGGING_LEVELS)}")
        self._require("logging")
        setting = self._session.set_logging_level
        operation = functools.partial(_deprecated, setting, cast(LoggingLevel, level))
        await self._browse(operation, EmptyResult, "a logging level answer", signal)

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``)."""
        with warnings.catch_warnings():  # deprecated in the newest protocol; servers still ask for roots
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = self._session.send_roots_list_changed()
        try:
            await sending
        except _CLOSED_STREAM:
            raise self._closed() from None

    async def subscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        """Ask the server to notify changes of one resource."""
        self._require("resources", "subscribe")
        operation = functools.partial(_deprecated, self._session.subscribe_resource, uri)
        await self._browse(operation, EmptyResult, "a subscription answer", signal)

    async def unsubscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        """Ask the server to stop notifying changes of one resource."""
        self._require("resources", "subscribe")
        operation = functools.partial(_deprecated, self._session.unsubscribe_resource, uri)
        await self._browse(operation, EmptyResult, "an unsubscription answer", signal)

    async def _page(
        self,
        capability: str,
        listing: Callable[..., Awaitable[object]],
        result: type[Any],
        what: str,
        cursor: str | None,
        signal: CancelSignal | None,
    ) -> Mapping[str, Any]:
        """One page of a listing the server offers under ``capability``, in the wire form."""
        self._require(capability)
        operation = functools.partial(listing, params=_params(cursor))
        return _wire(await self._browse(operation, result, what, signal))

    async def _browse(
        self,
        operation: Callable[[], Awaitable[object]],
        kind: type[T],
        what: str,
        signal: CancelSignal | None,
    ) -> T:
        result: object = await self._requested(operation, what, signal)
        if not isinstance(result, kind):
            raise _invalid_result("a result of an unexpected kind")
        return result

    async def _requested(
        self, operation: Callable[[], Awaitable[R]], what: str, signal: CancelSignal | None
    ) -> R:
        """Run one request; SDK errors, a closed stream and an invalid result become typed errors."""
        try:
            return await self._run(operation, signal)
        except MCPError as exc:
            raise self._mapped(exc) from None
        except _CLOSED_STREAM:
            raise self._closed() from None
        except pydantic.ValidationError as exc:
            # Locations only (e.g. tools.1.inputSchema.type), never the values the server sent.
            raise _invalid_result(
                f"{what} that does not match the protocol: {validation_summary(exc)}"
            ) from None

    def _list(self, cursor: str | None) -> Awaitable[ListToolsResult]:
        if isinstance(self.session, Client):
            # A cached listing would hide a changed tool definition.
            return self.session.list_tools(cursor=cursor, cache_mode="refresh")
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        return self.session.list_tools(params=params)

    def _mapped(self, exc: MCPError) -> McpCallError:
        if exc.error.code == CONNECTION_CLOSED:
            return self._closed()
        if exc.error.code == REQUEST_TIMEOUT:
            return _timeout_error(self.timeout)
        return _request_error(exc)

    def _watches(self) -> Ticker:
        """The one timer that watches every request of this session (made in the session's loop)."""
        if self._ticker is None:
            self._ticker = Ticker(asyncio.get_running_loop())
        return self._ticker

    async def _run(self, operation: Callable[[], Awaitable[T]], signal: CancelSignal | None) -> T:
        """Await ``operation()`` in this task until it ends, the deadline passes or ``signal`` fires."""
        try:
            return await bounded(operation, signal, self.timeout, self._watches())
        except TimeoutError:
            raise _timeout_error(self.timeout) from None


def mcp_session_client(session: ClientSession | Client, *, timeout: float | None = None) -> SessionClient:
    """Adapt a connected ``mcp.ClientSession`` or ``mcp.Client`` to the ``McpClient`` port.

    The caller keeps owning the session (and closes it after the runtime). ``timeout`` is the per-call
    deadline in seconds (``None``: no deadline beyond the SDK's own).
    """
    return SessionClient(session, timeout=timeout)
