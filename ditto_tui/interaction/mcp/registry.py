"""``McpRegistry``: bounded discovery and invocation on registered servers, drift and server status."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import pydantic

from ditto_tui.contracts import ExternalResult, InteractionError, McpCapability, ToolCall
from ditto_tui.errors import McpError, ValidationError
from ditto_tui.interaction.gate import CallGate
from ditto_tui.interaction.mcp.blocks import BLOCKS_KEY, RAW_KEY, BlockShelf, CallTap, McpBlock
from ditto_tui.interaction.mcp.drift import ChangeTrigger, McpToolChange, McpToolsChanged, ToolCatalog
from ditto_tui.interaction.mcp.listing import Budget, list_server
from ditto_tui.interaction.mcp.port import (
    MCP_TOOL_ERROR_MESSAGE,
    McpBrowser,
    McpCallError,
    McpClient,
    McpClientRequests,
    McpDiscoverInput,
    McpDiscovery,
    McpInput,
    McpInvocation,
    McpInvokeInput,
    McpServerInfo,
    ProgressListener,
    map_tool_result,
    parse_mcp_input,
)
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.interaction.results import validation_summary
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sandbox import Sandbox
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.signal import CancelSignal

__all__ = [
    "MCP_TOOL_ERROR_MESSAGE",
    "PROGRESS_EVENT",
    "TOOLS_CHANGED_EVENT",
    "McpBrowser",
    "McpCallError",
    "McpClient",
    "McpClientRequests",
    "McpDiscoverInput",
    "McpDiscovery",
    "McpInput",
    "McpInvocation",
    "McpInvokeInput",
    "McpLogLine",
    "McpOfferChanged",
    "McpRegistry",
    "McpServerInfo",
    "map_tool_result",
    "parse_mcp_input",
]

logger = logging.getLogger(__name__)

PROGRESS_EVENT = "mcp_progress"
"""The custom event each progress notification of a running tool call becomes."""

_PROGRESS_MESSAGE_LIMIT = 500

PROGRESS_EVENT_INTERVAL = 0.1
"""Seconds between two ``mcp_progress`` events of a call: a flood is thinned; the final step always shows."""

TOOLS_CHANGED_EVENT = "mcp_tools_changed"
"""The custom event a discovery emits, inside a call, when a server's tools changed."""

ChangeListener = Callable[[McpToolsChanged], object]
StatusListener = Callable[[McpServerStatus], object]


@dataclasses.dataclass(frozen=True)
class McpOfferChanged:
    """A server said something it offers changed: ``kind`` is ``resources`` or ``prompts`` (its list
    changed), or ``resource`` (the subscribed resource ``uri`` was updated)."""

    server: str
    kind: str
    uri: str | None = None


OfferListener = Callable[[McpOfferChanged], object]


@dataclasses.dataclass(frozen=True)
class McpLogLine:
    """One line of a server's log as it is written: ``label`` is ``[ditto]``, ``[stderr]`` or ``[log]``,
    ``text`` is already sanitised (controls escaped, secrets redacted)."""

    server: str
    label: str
    text: str


LogListener = Callable[[McpLogLine], object]
MessageListener = Callable[[str, str, "str | None", Any], object]


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a positive integer")
    return value


def _ended(call: ToolCall, source: str, status: str, error: InteractionError) -> ExternalResult:
    return ExternalResult(call_id=call.id, source=source, status=status, error=error)


def _call_failure(call: ToolCall, source: str, exc: McpCallError) -> ExternalResult:
    message = sanitize_public_message(exc.message) or MCP_TOOL_ERROR_MESSAGE
    return _ended(
        call, source, exc.status, InteractionError(code=exc.code, message=message, retryable=exc.retryable)
    )


def _changed_tool(call: ToolCall, source: str) -> ExternalResult:
    message = (
        f"The definition of MCP tool {call.name!r} changed since it was first seen; "
        "review the change and accept it before calling the tool"
    )
    return _ended(call, source, "failed", InteractionError(code="MCP_TOOL_CHANGED", message=message))


def _unsupported_tool(call: ToolCall, source: str, reason: str) -> ExternalResult:
    message = f"MCP tool {call.name!r} cannot be called: {reason}"
    return _ended(call, source, "failed", InteractionError(code="MCP_TOOL_UNSUPPORTED", message=message))


def _parse_call(call: Mapping[str, Any]) -> ToolCall:
    try:
        return ToolCall.model_validate(call)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid MCP tool call: {validation_summary(exc)}") from None


def _subscribe(listeners: list[Any], callback: Any) -> Callable[[], bool]:
    if not callable(callback):
        raise ValidationError("an MCP listener must be callable")
    listeners.append(callback)

    def unsubscribe() -> bool:
        if callback not in listeners:
            return False
        listeners.remove(callback)
        return True

    return unsubscribe


def _notify(listeners: Iterable[Callable[[Any], object]], value: object) -> None:
    for listener in tuple(listeners):
        try:
            listener(value)
        except Exception:  # a failing listener must not break discovery or a connection
            logger.exception("MCP listener %r failed", listener)


class McpRegistry:
    """MCP clients by server name, with a discovery budget per discover call across servers.

    The registry also keeps what each server last listed. A tool whose definition (description, schemas,
    annotations) differs from the one first seen is reported to :meth:`on_change` listeners (and, inside a
    call, as a ``mcp_tools_changed`` event) and is not invoked until :meth:`accept_changes` pins it.
    """

    def __init__(self, max_discovery_pages: int = 100, max_capabilities: int = 1000) -> None:
        self.max_discovery_pages = _positive("max_discovery_pages", max_discovery_pages)
        self.max_capabilities = _positive("max_capabilities", max_capabilities)
        self._clients: dict[str, McpClient] = {}
        self._catalog = ToolCatalog()
        self._gate: CallGate | None = None
        self._statuses: dict[str, McpServerStatus] = {}
        self._figures: dict[str, tuple[int, int]] = {}
        self._discovery_errors: dict[str, str] = {}
        self._change_listeners: list[ChangeListener] = []
        self._status_listeners: list[StatusListener] = []
        self._offer_listeners: list[OfferListener] = []
        self._log_listeners: list[LogListener] = []
        self._shelf = BlockShelf()
        self._stale: set[str] = set()
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._reconnectors: dict[str, Callable[[], Awaitable[McpClient]]] = {}
        self._reconnecting: dict[str, asyncio.Task[None]] = {}
        self._taps: dict[tuple[str, str], CallTap] = {}
        self._message_listeners: list[MessageListener] = []

    def tap(self, server: str, call_id: str, tap: CallTap) -> Callable[[], None]:
        """Let ``tap`` watch the call ``call_id`` on ``server`` when it runs (its progress, its result as
        the server sent it); returns the function that stops the watching."""
        key = (server, call_id)
        self._taps[key] = tap

        def untap() -> None:
            self._taps.pop(key, None)

        return untap

    def guard(self, gate: CallGate) -> None:
        """Route every invocation through ``gate`` from now on (one gate per registry)."""
        if self._gate is not None and self._gate is not gate:
            raise ValidationError("this MCP registry is already guarded by another approval gate")
        self._gate = gate

    @property
    def gate(self) -> CallGate | None:
        """The approval gate every invocation goes through, once :meth:`guard` set one."""
        return self._gate

    def register(
        self,
        server: str,
        client: McpClient,
        *,
        reconnect: Callable[[], Awaitable[McpClient]] | None = None,
    ) -> Callable[[], bool]:
        """Add ``client`` as ``server``; an empty or duplicate name raises. Unregistering closes nothing.

        ``reconnect`` (``open_mcp_servers`` gives one) starts a new session and returns its client; it is
        what :meth:`reconnect` calls.
        """
        if not isinstance(server, str) or not server.strip() or ":" in server:
            raise ValidationError(f"MCP server name {server!r} must be nonempty and contain no ':'")
        if server in self._clients:
            raise ValidationError(f"MCP server {server!r} is already registered")
        for method in ("list_tools", "call_tool"):
            if not callable(getattr(client, method, None)):
                raise ValidationError(f"MCP client for {server!r} has no {method}() method")
        self._clients[server] = client
        if reconnect is not None:
            self._reconnectors[server] = reconnect

        def unregister() -> bool:
            if server not in self._clients:
                return False
            del self._clients[server]
            self._reconnectors.pop(server, None)
            return True

        return unregister

    def servers(self) -> list[str]:
        """Registered server names in registration order."""
        return list(self._clients)

    def get(self, server: str) -> McpClient | None:
        """The client registered as ``server``, if any."""
        return self._clients.get(server)

    # -- what the UI reads --------------------------------------------------------------------------------

    def known_capability(self, server: str, name: str) -> McpCapability | None:
        """The capability as last listed by its server, if a discovery saw it."""
        return self._catalog.known(server, name)

    def capabilities(self, server: str) -> list[McpCapability]:
        """What ``server`` listed at its last complete discovery (empty before one)."""
        return self._catalog.tools(server)

    def listed(self, server: str) -> list[McpCapability] | None:
        """What ``server`` listed last, while it holds: None before a complete listing, after the server
        said its list changed (until relisted), or while it is not connected."""
        if server in self._stale or server in self._refreshing or server not in self._clients:
            return None
        status = self._statuses.get(server)
        if status is not None and status.state != "connected":
            return None
        return self._catalog.tools(server) if self._catalog.listed(server) else None

    def pending_changes(self, server: str | None = None) -> list[tuple[str, McpToolChange]]:
        """Tools whose definition moved from the one first seen, as ``(server, change)``."""
        return self._catalog.pending(server)

    def accept_changes(self, server: str, names: Iterable[str] | None = None) -> list[str]:
        """Accept the current definitions of ``names`` (default: all changed tools of ``server``)."""
        return self._catalog.accept(server, names)

    def on_change(self, callback: ChangeListener) -> Callable[[], bool]:
        """Call ``callback(McpToolsChanged)`` whenever a listing differs from the previous one."""
        return _subscribe(self._change_listeners, callback)

    def on_status(self, callback: StatusListener) -> Callable[[], bool]:
        """Call ``callback(McpServerStatus)`` whenever a server's connection state changes."""
        return _subscribe(self._status_listeners, callback)

    def on_offer_change(self, callback: OfferListener) -> Callable[[], bool]:
        """Call ``callback(McpOfferChanged)`` when a server's resources or prompts list changes, or a
        resource subscribed to with :meth:`subscribe_resource` is updated (the browser reloads it)."""
        return _subscribe(self._offer_listeners, callback)

    def offer_changed(self, server: str, kind: str, uri: str | None = None) -> None:
        """A server's notification that ``kind`` changed (the connection calls this); listeners are told."""
        if server in self._clients:
            _notify(self._offer_listeners, McpOfferChanged(server, kind, uri))

    def on_message(self, callback: MessageListener) -> Callable[[], bool]:
        """Hear each log message a server sends (``notifications/message``) as it sent it: (server,
        level, logger, data); untrusted, for passing on (the log lines are the sanitised record)."""
        return _subscribe(self._message_listeners, callback)

    def server_message(self, server: str, level: str, name: str | None, data: Any) -> None:
        """A server sent a log message, ``name`` its logger (the SDK adapter calls this)."""
        for listener in list(self._message_listeners):
            try:
                listener(server, level, name, data)
            except Exception:
                logger.exception("a log message listener failed")

    def on_log(self, callback: LogListener) -> Callable[[], bool]:
        """Call ``callback`` with every :class:`McpLogLine` a server's log gets from now on."""
        return _subscribe(self._log_listeners, callback)

    def report_log(self, server: str, label: str, text: str) -> None:
        """Tell the log listeners about one line written to ``server``'s log."""
        if self._log_listeners:
            _notify(self._log_listeners, McpLogLine(server, label, text))

    def call_blocks(self, server: str, call_id: str) -> tuple[McpBlock, ...] | None:
        """The content blocks of a recent call on ``server`` as the server sent them (images, audio,
        links, embedded resources, annotations), or ``None`` when it sent only text or is long gone."""
        return self._shelf.get(server, call_id)

    def status(self, server: str) -> McpServerStatus | None:
        """How ``server`` stands, with its discovery figures; ``None`` for a server it has never heard of.

        A client registered directly (not through ``open_mcp_servers``) counts as ``connected``.
        """
        status = self._statuses.get(server)
        if status is None:
            if server not in self._clients:
                return None
            status = McpServerStatus(server=server, state="connected")
        pages, tools = self._figures.get(server, (status.pages, status.tools))
        return dataclasses.replace(
            status, pages=pages, tools=tools, discovery_error=self._discovery_errors.get(server)
        )

    def statuses(self) -> list[McpServerStatus]:
        """Every reported or registered server's status: reported ones first, in report order."""
        names = [*self._statuses, *(name for name in self._clients if name not in self._statuses)]
        return [status for name in names if (status := self.status(name)) is not None]

    def report_status(self, status: McpServerStatus) -> None:
        """Record a server's connection state (``open_mcp_servers`` does this) and tell listeners."""
        self._statuses[status.server] = status
        _notify(self._status_listeners, status)

    async def roots_changed(self) -> list[str]:
        """Tell every connected server that offers to listen that the roots changed; returns their names.

        A server that is not connected, or a client that cannot send the notification, is passed over.
        """
        told: list[str] = []
        for server, client in list(self._clients.items()):
            status = self.status(server)
            send = getattr(client, "roots_changed", None)
            if send is None or status is None or status.state != "connected":
                continue
            try:
                await send()
            except McpError:
                continue
            told.append(server)
        return told

    async def reconnect(self, server: str) -> None:
        """Start ``server``'s session again and list its tools; calls in flight on the old one end failed.

        Concurrent requests to reconnect the same server share one attempt. A server registered without
        a way to reconnect (a client given to :meth:`register` directly) raises :class:`McpError`.
        """
        self._client(server)
        reconnector = self._reconnectors.get(server)
        if reconnector is None:
            raise McpError(f"MCP server {server!r} cannot be reconnected", code="MCP_SERVER_UNAVAILABLE")
        task = self._reconnecting.get(server)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._reconnect(server, reconnector))
            self._reconnecting[server] = task
            task.add_done_callback(lambda _task: self._reconnecting.pop(server, None))
        await asyncio.shield(task)

    async def _reconnect(self, server: str, reconnector: Callable[[], Awaitable[McpClient]]) -> None:
        client = await reconnector()
        if server not in self._clients:
            return  # unregistered meanwhile
        self._clients[server] = client
        status = self._statuses.get(server)
        if status is None or status.state == "connected":
            self._stale.add(server)
            await self._settled(server)

    # -- tool-list changes announced by a server ---------------------------------------------------------

    def tools_list_changed(self, server: str) -> None:
        """A server said its tool list changed: list it again in the background and report the change.

        Until that listing finishes, invocations on the server wait for it, so the approval gate never
        decides on a definition the server has already replaced.
        """
        if server not in self._clients:
            return
        self._stale.add(server)
        self._start_refresh(server)

    def _start_refresh(self, server: str) -> None:
        if server in self._refreshing:
            return
        try:
            task = asyncio.get_running_loop().create_task(self._refresh(server), name=f"mcp-refresh:{server}")
        except RuntimeError:  # no running loop: the next invocation lists the server first
            return
        self._refreshing[server] = task
        task.add_done_callback(lambda _task: self._refreshing.pop(server, None))

    async def _refresh(self, server: str) -> None:
        while server in self._stale and server in self._clients:
            self._stale.discard(server)
            budget = Budget(self.max_discovery_pages, self.max_capabilities)
            try:
                tools, pages = await list_server(
                    server, self._clients[server], budget, None, self._known(server)
                )
            except McpError as exc:
                logger.warning("relisting MCP server %r failed: %s", server, exc.message)
                self._catalog.forget(server)
                return
            self._record(server, tools, pages, "notification", None)

    async def _settled(self, server: str) -> None:
        if server in self._stale:
            self._start_refresh(server)
        task = self._refreshing.get(server)
        if task is not None:
            await asyncio.shield(task)

    async def settle(self) -> None:
        """Stop background relisting (``open_mcp_servers`` calls this before closing connections)."""
        tasks = list(self._refreshing.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- calls ---------------------------------------------------------------------------------------------

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
            found = await self.discover(request.server, sandbox, signal, context=context)
            return McpDiscovery(capabilities=tuple(found))
        result = await self.invoke(request.server, request.call, sandbox, signal, context=context)
        # An ExternalResult instance is taken as it is (not validated again), quicker than model_construct.
        return McpInvocation(result=result)

    async def discover(
        self,
        server: str | None,
        sandbox: Sandbox,
        signal: CancelSignal | None = None,
        *,
        context: WorkerContext | None = None,
    ) -> list[McpCapability]:
        """List every tool of ``server`` (or of all servers) within the page and capability budget.

        The discovery succeeds or fails as a whole: nothing it listed is kept when any server fails.
        """
        servers = [server] if server is not None else self.servers()
        for name in servers:
            sandbox.check_mcp(name)
            self._client(name)
        budget = Budget(self.max_discovery_pages, self.max_capabilities)
        listings = [(name, *await self._list(name, budget, signal)) for name in servers]
        found: list[McpCapability] = []
        for name, tools, pages in listings:
            self._record(name, tools, pages, "discovery", context)
            found.extend(tools)
        return found

    async def _list(
        self, server: str, budget: Budget, signal: CancelSignal | None
    ) -> tuple[list[McpCapability], int]:
        try:
            listing = await list_server(server, self._client(server), budget, signal, self._known(server))
        except McpError as exc:
            self._discovery_errors[server] = f"{exc.code}: {sanitize_public_message(exc.message)}"
            raise
        self._discovery_errors.pop(server, None)
        return listing

    def _known(self, server: str) -> Callable[[str], McpCapability | None]:
        return lambda name: self._catalog.known(server, name)

    def _record(
        self,
        server: str,
        tools: list[McpCapability],
        pages: int,
        trigger: ChangeTrigger,
        context: WorkerContext | None,
    ) -> None:
        self._figures[server] = (pages, len(tools))
        change = self._catalog.update(server, tools, trigger)
        if change is None:
            return
        if context is not None:
            context.emit(TOOLS_CHANGED_EVENT, data=change.to_json())
        _notify(self._change_listeners, change)

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
        parsed = call if isinstance(call, ToolCall) else _parse_call(call)
        # Called directly (not by the INTERACTION worker, which hands a guarded call to the gate itself),
        # a guarded registry hands the call to its gate: every path reaches the policy (S-09).
        if self._gate is not None:
            return await self._gate.invoke_mcp(self, server, parsed, sandbox, signal, context)
        refused = await self.refusal(server, parsed, sandbox)
        if refused is not None:
            return refused
        return await self._call(server, parsed, signal, context)

    async def invoke_unguarded(
        self,
        server: str,
        call: ToolCall,
        sandbox: Sandbox,
        signal: CancelSignal | None = None,
        *,
        decided_on: McpCapability | None = None,
        context: WorkerContext | None = None,
    ) -> ExternalResult:
        """Invoke without consulting a gate: only the gate itself calls this, after its decision.

        ``decided_on`` is the definition the decision was made on. A relisting of the server still in
        progress (a ``tools/list_changed`` that arrived while the person was deciding) is waited for
        first, and a definition that moved meanwhile is refused (``MCP_TOOL_CHANGED``): the person
        approved the tool they were shown, not its replacement.
        """
        refused = await self.refusal(server, call, sandbox, decided_on)
        if refused is not None:
            return refused
        return await self._call(server, call, signal, context)

    async def refusal(
        self, server: str, call: ToolCall, sandbox: Sandbox, decided_on: McpCapability | None = None
    ) -> ExternalResult | None:
        """Why ``call`` may not go to ``server`` now, as its result; ``None`` when it may.

        Checked before a decision is asked (by the gate, when there is one) and again before the call
        runs: the sandbox grant, a relisting in progress (waited for), a definition that changed (or moved
        from ``decided_on``), and a tool this client cannot call.
        """
        sandbox.check_mcp(server)
        self._client(server)
        if self._refreshing or self._stale:
            await self._settled(server)
        known = self._catalog.known(server, call.name)
        moved = decided_on is not None and known != decided_on
        if moved or self._catalog.changed(server, call.name) is not None:
            return _changed_tool(call, f"{server}:{call.name}")
        if known is not None and known.unsupported is not None:
            return _unsupported_tool(call, f"{server}:{call.name}", known.unsupported)
        return None

    async def _call(
        self, server: str, call: ToolCall, signal: CancelSignal | None, context: WorkerContext | None
    ) -> ExternalResult:
        client = self._client(server)
        source = f"{server}:{call.name}"
        tap = self._taps.get((server, call.id)) if self._taps else None
        try:
            if _accepts_progress(type(client)):
                progress = _progress_events(server, call, context)
                if tap is not None and tap.progress is not None:
                    progress = _both(progress, tap.progress)
                result = await client.call_tool(call.name, call.arguments, signal=signal, progress=progress)  # type: ignore[call-arg]
            else:
                result = await client.call_tool(call.name, call.arguments, signal=signal)
        except McpCallError as exc:
            return _call_failure(call, source, exc)
        if tap is not None and isinstance(result, Mapping):
            tap.raw = result.get(RAW_KEY)
        blocks = result.get(BLOCKS_KEY) if isinstance(result, Mapping) else None
        if isinstance(blocks, tuple):
            self._shelf.keep(server, call.id, blocks)
        return map_tool_result(result, call_id=call.id, source=source)

    # -- what a server offers besides tools ----------------------------------------------------------------

    def _browser(self, server: str) -> McpBrowser:
        client = self._client(server)
        if not isinstance(client, McpBrowser):
            raise McpError(f"the MCP client of {server!r} cannot browse what its server offers besides tools")
        return client

    def server_info(self, server: str) -> McpServerInfo:
        """What ``server`` said about itself when it connected (name, version, capabilities, ...)."""
        return self._browser(server).server_info()

    async def list_resources(
        self, server: str, cursor: str | None = None, *, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of ``server``'s resources: ``{"resources": [...], "nextCursor"?}``."""
        return await self._browser(server).list_resources(cursor, signal)

    async def list_resource_templates(
        self, server: str, cursor: str | None = None, *, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of ``server``'s resource templates: ``{"resourceTemplates": [...], "nextCursor"?}``."""
        browser = self._browser(server)
        return await browser.list_resource_templates(cursor, signal)

    async def read_resource(
        self, server: str, uri: str, *, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """The contents of one resource of ``server``: ``{"contents": [...]}``."""
        return await self._browser(server).read_resource(uri, signal)

    async def list_prompts(
        self, server: str, cursor: str | None = None, *, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page of ``server``'s prompts: ``{"prompts": [...], "nextCursor"?}``."""
        return await self._browser(server).list_prompts(cursor, signal)

    async def get_prompt(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        signal: CancelSignal | None = None,
    ) -> Mapping[str, Any]:
        """One prompt of ``server`` with ``arguments`` filled in: ``{"description"?, "messages": [...]}``."""
        return await self._browser(server).get_prompt(name, arguments, signal)

    async def ping(self, server: str, *, signal: CancelSignal | None = None) -> float:
        """How long ``server`` took to answer a ``ping``, in seconds."""
        return await self._browser(server).ping(signal)

    async def complete(
        self,
        server: str,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        signal: CancelSignal | None = None,
    ) -> Mapping[str, Any]:
        """Completions of one argument of a prompt or resource template of ``server``.

        ``ref`` is ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource", "uri"}``, ``argument``
        is ``{"name", "value"}``; the result is ``{"values": [...], "total"?, "hasMore"?}``.
        """
        return await self._browser(server).complete(ref, argument, context_arguments, signal)

    async def set_logging_level(self, server: str, level: str, *, signal: CancelSignal | None = None) -> None:
        """Ask ``server`` to send log messages of ``level`` (an MCP ``LoggingLevel``) and above."""
        await self._browser(server).set_logging_level(level, signal)

    async def subscribe_resource(self, server: str, uri: str, *, signal: CancelSignal | None = None) -> None:
        """Ask ``server`` to notify changes of the resource ``uri``."""
        await self._browser(server).subscribe_resource(uri, signal)

    async def unsubscribe_resource(
        self, server: str, uri: str, *, signal: CancelSignal | None = None
    ) -> None:
        """Ask ``server`` to stop notifying changes of the resource ``uri``."""
        await self._browser(server).unsubscribe_resource(uri, signal)


@functools.cache
def _accepts_progress(kind: type) -> bool:
    """Whether ``kind.call_tool`` takes ``progress=`` (the SDK adapter does; a minimal fake need not)."""
    method = getattr(kind, "call_tool", None)
    try:
        return method is not None and "progress" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _both(
    first: ProgressListener, second: Callable[[float, float | None, str | None], object]
) -> ProgressListener:
    def progress(done: float, total: float | None, message: str | None) -> None:
        first(done, total, message)
        second(done, total, message)

    return progress


def _progress_events(server: str, call: ToolCall, context: WorkerContext | None) -> ProgressListener:
    """Each progress notification of ``call`` as an ``mcp_progress`` event of the running node."""

    last = -PROGRESS_EVENT_INTERVAL

    def progress(done: float, total: float | None, message: str | None) -> None:
        nonlocal last
        if context is None:
            return
        now = time.monotonic()
        final = total is not None and done >= total
        if now - last < PROGRESS_EVENT_INTERVAL and not final:
            return
        last = now
        fields: dict[str, Any] = {"server": server, "tool": call.name, "call_id": call.id, "progress": done}
        if total is not None:
            fields["total"] = total
        if message is not None:
            fields["message"] = message[:_PROGRESS_MESSAGE_LIMIT]
        context.emit(PROGRESS_EVENT, **fields)

    return progress
