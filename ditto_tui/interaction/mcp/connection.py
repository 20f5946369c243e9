"""One MCP server connection: a task that owns its transport and session from start to close."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.metadata
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    Implementation,
    InitializeResult,
    LoggingMessageNotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)

from ditto_tui.config import McpServerConfig
from ditto_tui.errors import McpError
from ditto_tui.home import StateDirError
from ditto_tui.interaction.mcp.command import McpCommandError
from ditto_tui.interaction.mcp.logs import LogSink
from ditto_tui.interaction.mcp.loopback import free_redirect_uri
from ditto_tui.interaction.mcp.oauth import Authorize, SignInProvider, TokenStore, sign_in_problem
from ditto_tui.interaction.mcp.port import (
    McpBrowser,
    McpCallError,
    McpClientRequests,
    McpServerInfo,
    ProgressListener,
)
from ditto_tui.interaction.mcp.registry import McpRegistry
from ditto_tui.interaction.mcp.requests import SessionCallbacks
from ditto_tui.interaction.mcp.sdk import SessionClient, disconnected_error
from ditto_tui.interaction.mcp.status import McpServerState, McpServerStatus, McpTransportKind
from ditto_tui.interaction.mcp.stdio import StdioTransport
from ditto_tui.interaction.mcp.watch import bounded
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.signal import CancelSignal

_CLOSE_SECONDS = 10.0
_URI_LIMIT = 4096

IDLE_PING_SECONDS = 15.0
"""How often a connected HTTP server is pinged to notice that it went away."""

PING_TIMEOUT_SECONDS = 10.0


class ConnectionLost(Exception):
    """The server went away while connected (its process exited, or it stopped answering pings)."""


@functools.cache
def client_info() -> Implementation:
    """How the client names itself in its initialize request: ``ditto-tui`` and the package version."""
    try:
        version = importlib.metadata.version("ditto-tui")
    except importlib.metadata.PackageNotFoundError:
        version = "0+unknown"
    return Implementation(name="ditto-tui", version=version)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Unavailable:
    """The client of a server that never connected: every call fails with the reason."""

    def __init__(self, error: McpCallError) -> None:
        self.error = error

    async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        raise self.error

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: Any = None
    ) -> Mapping[str, Any]:
        raise self.error

    def server_info(self) -> McpServerInfo:
        raise self.error

    async def list_resources(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        raise self.error

    async def list_resource_templates(
        self, cursor: str | None = None, signal: Any = None
    ) -> Mapping[str, Any]:
        raise self.error

    async def read_resource(self, uri: str, signal: Any = None) -> Mapping[str, Any]:
        raise self.error

    async def list_prompts(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        raise self.error

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, signal: Any = None
    ) -> Mapping[str, Any]:
        raise self.error

    async def ping(self, signal: Any = None) -> float:
        raise self.error

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        signal: Any = None,
    ) -> Mapping[str, Any]:
        raise self.error

    async def set_logging_level(self, level: str, signal: Any = None) -> None:
        raise self.error

    async def subscribe_resource(self, uri: str, signal: Any = None) -> None:
        raise self.error

    async def unsubscribe_resource(self, uri: str, signal: Any = None) -> None:
        raise self.error

    async def roots_changed(self) -> None:
        raise self.error


class Starting:
    """The registered client of a server that may still be starting: each call waits for it first."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        client = await self.connection.client(signal)
        result: Mapping[str, Any] = await client.list_tools(cursor=cursor, signal=signal)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        signal: CancelSignal | None = None,
        progress: ProgressListener | None = None,
    ) -> Mapping[str, Any]:
        client = await self.connection.client(signal)
        if isinstance(client, SessionClient):
            return await client.call_tool(name, arguments, signal=signal, progress=progress)
        result: Mapping[str, Any] = await client.call_tool(name, arguments, signal=signal)
        return result

    def server_info(self) -> McpServerInfo:
        """The initialize result of a server that started; a server still starting raises."""
        browser: McpBrowser = self.connection.started()
        return browser.server_info()

    async def list_resources(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.list_resources(cursor, signal)

    async def list_resource_templates(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.list_resource_templates(cursor, signal)

    async def read_resource(self, uri: str, signal: CancelSignal | None = None) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.read_resource(uri, signal)

    async def list_prompts(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.list_prompts(cursor, signal)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.get_prompt(name, arguments, signal)

    async def ping(self, signal: CancelSignal | None = None) -> float:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.ping(signal)

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        signal: CancelSignal | None = None,
    ) -> Mapping[str, Any]:
        browser: McpBrowser = await self.connection.client(signal)
        return await browser.complete(ref, argument, context_arguments, signal)

    async def set_logging_level(self, level: str, signal: CancelSignal | None = None) -> None:
        browser: McpBrowser = await self.connection.client(signal)
        await browser.set_logging_level(level, signal)

    async def subscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        browser: McpBrowser = await self.connection.client(signal)
        await browser.subscribe_resource(uri, signal)

    async def unsubscribe_resource(self, uri: str, signal: CancelSignal | None = None) -> None:
        browser: McpBrowser = await self.connection.client(signal)
        await browser.unsubscribe_resource(uri, signal)

    async def roots_changed(self) -> None:
        client = await self.connection.client()
        await client.roots_changed()


@dataclasses.dataclass(frozen=True)
class SignIn:
    """How the connections of one open sign in to servers that ask: ``authorize`` and the token store."""

    authorize: Authorize | None
    store: TokenStore


class Connection:
    """One server: a task that owns its transport and session from start to close."""

    def __init__(
        self,
        server: str,
        config: McpServerConfig,
        *,
        registry: McpRegistry,
        log_path: Path,
        timeout: float | None,
        cwd: str | None,
        workspace: str | None = None,
        secrets: tuple[str, ...],
        client_requests: McpClientRequests | None = None,
        reconnect_delays: tuple[float, ...] = (),
        sign_in: SignIn | None = None,
    ) -> None:
        self.server = server
        self.sign_in = sign_in
        self._signing_in = False
        self.reconnect_delays = reconnect_delays
        self.client_requests = client_requests
        self.config = config
        self.registry = registry
        self.log_path = log_path
        self.timeout = config.timeout or timeout
        self.cwd = config.cwd or cwd
        self.workspace = workspace
        self.secrets = secrets
        self._log_error: str | None = None
        self.kind: McpTransportKind = "stdio" if config.command is not None else "http"
        self._stop = asyncio.Event()
        self._stdio: StdioTransport | None = None
        self._sink: LogSink | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[SessionClient] | None = None
        self._startup: asyncio.Task[Any] | None = None
        self._init: InitializeResult | None = None
        self._lost = False
        self._generation = 0
        self._startup_timeout = 0.0
        self._retrying: asyncio.Task[None] | None = None
        self._closing = False

    # -- status -------------------------------------------------------------------------------------

    def _report(self, state: McpServerState, error: str | None = None) -> None:
        info = self._init.server_info if self._init is not None else None
        self.registry.report_status(
            McpServerStatus(
                server=self.server,
                state=state,
                transport=self.kind,
                error=error,
                log_path=None if self._log_error is not None else str(self.log_path),
                protocol_version=self._init.protocol_version if self._init is not None else None,
                server_info=f"{info.name} {info.version}".strip() if info is not None else None,
            )
        )

    def _describe(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        signing_in = sign_in_problem(leaf)
        if signing_in is not None:
            return sanitize_public_message(signing_in, secrets=self.secrets)
        if self._stdio is not None and self._stdio.failure is not None:
            return f"protocol error: {self._stdio.failure}"
        if isinstance(leaf, McpCommandError):
            return leaf.message
        if isinstance(leaf, ConnectionLost):
            return sanitize_public_message(str(leaf), secrets=self.secrets)
        if isinstance(leaf, FileNotFoundError):
            return f"command {self.config.command!r} was not found"
        return sanitize_public_message(leaf, secrets=self.secrets) or type(leaf).__name__

    def _closed(self, generation: int) -> McpCallError:
        """The error a call gets once the connection is gone; the first one marks the server disconnected.

        A call of an earlier session (one replaced by :meth:`reconnect`) just fails: it is never replayed.
        """
        if generation != self._generation:
            return disconnected_error()
        failure = self._stdio.failure if self._stdio is not None else None
        if not self._lost and not self._stop.is_set():
            self._lost = True
            self._report("disconnected", f"protocol error: {failure}" if failure else "the connection closed")
            self._retry_later()
        if failure is not None:
            message = f"The connection to the MCP server was closed: {failure}"
            return McpCallError(message, code="MCP_PROTOCOL_ERROR", retryable=False)
        return disconnected_error()

    # -- the connection task ------------------------------------------------------------------------

    def _transport(self, sink: LogSink) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        config = self.config
        if config.command is not None:
            self._stdio = StdioTransport(
                config.command,
                list(config.args),
                env=dict(config.env),
                cwd=self.cwd,
                workspace=self.workspace,
                sink=sink,
                shown=config.shown,
            )
            return self._stdio.connect()
        assert config.url is not None
        if config.type == "sse":
            return sse_client(config.url, headers=dict(config.headers), auth=self._oauth(config.url))
        return self._http(config.url, dict(config.headers))

    def _oauth(self, url: str) -> SignInProvider | None:
        """The SDK's OAuth provider for this server, bound to the token store and ``authorize``; it only
        acts when the server answers with a challenge (401, or 403 ``insufficient_scope``)."""
        if self.sign_in is None:
            return None
        store = self.sign_in.store
        return SignInProvider(
            self.server,
            url,
            store=store,
            authorize=self.sign_in.authorize,
            redirect_uri=store.redirect_uri(self.server) or free_redirect_uri(),
            auth=self.config.auth,
            on_sign_in=self._waiting_on_person,
        )

    def _waiting_on_person(self, waiting: bool) -> None:
        """A sign-in started (the start-up deadline waits for the person) or ended (it starts again)."""
        self._signing_in = waiting
        if self._sink is not None:
            self._sink.note("waiting for the sign-in in the browser" if waiting else "sign-in step done")

    @asynccontextmanager
    async def _http(self, url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
        # The SDK's own defaults: 30 s to connect and write, 5 min between reads of an open stream.
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with httpx2.AsyncClient(headers=headers, timeout=timeout, auth=self._oauth(url)) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                yield read, write

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.registry.tools_list_changed(self.server)
        elif isinstance(message, ResourceUpdatedNotification):
            self.registry.offer_changed(self.server, "resource", str(message.params.uri)[:_URI_LIMIT])
        elif isinstance(message, ResourceListChangedNotification):
            self.registry.offer_changed(self.server, "resources")
        elif isinstance(message, PromptListChangedNotification):
            self.registry.offer_changed(self.server, "prompts")
        elif isinstance(message, Exception) and self._sink is not None:
            self._sink.note_limited(f"transport error: {message}")

    async def _on_log(self, params: LoggingMessageNotificationParams) -> None:
        """The session's ``logging_callback``: each ``notifications/message`` goes, sanitised, to the log."""
        if self._sink is not None:
            self._sink.log(params.level, params.logger, params.data)
        self.registry.server_message(self.server, params.level, params.logger, params.data)

    def _callbacks(self, sink: LogSink) -> dict[str, Any]:
        """Sampling, elicitation and roots callbacks when the application answers them; none otherwise."""
        if self.client_requests is None:
            return {}
        return SessionCallbacks(self.server, self.client_requests, sink.note).keywords()

    async def _serve(self, sink: LogSink) -> None:
        try:
            async with self._transport(sink) as (read, write):
                async with ClientSession(
                    read,
                    write,
                    message_handler=self._on_message,
                    logging_callback=self._on_log,
                    client_info=client_info(),
                    **self._callbacks(sink),
                ) as session:
                    self._init = await session.initialize()
                    assert self._ready is not None
                    closed = functools.partial(self._closed, self._generation)
                    client = SessionClient(session, timeout=self.timeout, closed=closed)
                    await self._set_log_level(client, sink)
                    self._ready.set_result(client)
                    await self._watch(client)
        except Exception as exc:
            self._ended(exc)

    async def _set_log_level(self, client: SessionClient, sink: LogSink) -> None:
        """Ask for the configured ``logLevel``; a server that cannot is noted in its log, and still used."""
        level = self.config.log_level
        if level is None:
            return
        try:
            async with asyncio.timeout(PING_TIMEOUT_SECONDS):
                await client.set_logging_level(level)
        except (McpError, TimeoutError) as exc:
            reason = exc.message if isinstance(exc, McpError) else "no answer in time"
            sink.note(f"logLevel {level!r} not set: {reason}")
        else:
            sink.note(f"asked for log messages of level {level!r} and above (logLevel)")

    async def _watch(self, client: SessionClient) -> None:
        """Return when the connection is to stop; raise :class:`ConnectionLost` as soon as it is lost.

        A stdio server is lost when its output ends (it exited), noticed at once whether or not a call
        is running; an HTTP server when a ping, sent every ``IDLE_PING_SECONDS``, gets no answer.
        """
        stop = asyncio.ensure_future(self._stop.wait())
        watcher = asyncio.ensure_future(
            self._stdio.gone.wait() if self._stdio is not None else self._pings(client)
        )
        try:
            await asyncio.wait({stop, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stop, watcher):
                task.cancel()
        if self._stop.is_set():
            return
        lost = watcher.exception() if watcher.done() and not watcher.cancelled() else None
        raise lost if lost is not None else ConnectionLost("the server exited")

    async def _pings(self, client: SessionClient) -> None:
        while True:
            await asyncio.sleep(IDLE_PING_SECONDS)
            try:
                async with asyncio.timeout(PING_TIMEOUT_SECONDS):
                    await client.ping()
            except TimeoutError:
                raise ConnectionLost(f"no answer to a ping within {PING_TIMEOUT_SECONDS:g} s") from None
            except McpCallError as exc:
                raise ConnectionLost(f"a ping failed: {exc.message}") from None

    def _ended(self, exc: Exception) -> None:
        reason = self._describe(exc)
        if self._sink is not None:
            self._sink.note(f"connection ended: {reason}")
        assert self._ready is not None
        if not self._ready.done():
            self._ready.set_exception(McpCallError(reason, code="MCP_SERVER_UNAVAILABLE"))
        elif not self._stop.is_set() and not self._lost:
            self._lost = True
            self._report("disconnected", reason)
            self._retry_later()

    # -- start and close ----------------------------------------------------------------------------

    def launch(self, startup_timeout: float) -> None:
        """Start the server in the background; :meth:`client` waits for the outcome.

        A log file that cannot be opened safely (a link planted as the file or its directory) fails the
        server with the reason instead: nothing is written through the link, and the server never starts.
        """
        self._startup_timeout = startup_timeout
        self._report("connecting")
        self._ready = asyncio.get_running_loop().create_future()
        try:
            if self._sink is None:
                self._sink = LogSink.open(self.log_path, self.secrets)  # closed by close()
                self._sink.listener = functools.partial(self.registry.report_log, self.server)
        except StateDirError as exc:
            self._log_error = f"its log file cannot be written: {exc.message}"
            self._ready.set_exception(McpCallError(self._log_error, code="MCP_SERVER_UNAVAILABLE"))
        else:
            self._sink.note(f"starting MCP server {self.server!r} ({self.kind})")
            self._task = asyncio.create_task(self._serve(self._sink), name=f"mcp:{self.server}")
        self._startup = asyncio.create_task(self._started(startup_timeout), name=f"mcp-start:{self.server}")

    async def reconnect(self) -> Any:
        """Stop this server's session (and process) and start a new one; returns the new client.

        Calls still running on the old session end failed (``MCP_SERVER_DISCONNECTED``) and are never
        sent again. Raises nothing: a server that does not come back is a stand-in whose calls fail.
        """
        if self._startup is not None and not self._startup.done():
            self._startup.cancel()
            await asyncio.wait({self._startup})
        await self._halt(grace=0.0)
        if self._closing:
            return Unavailable(
                McpCallError(f"MCP server {self.server!r} was closed", code="MCP_SERVER_UNAVAILABLE")
            )
        if self._sink is not None:
            self._sink.note("reconnecting")
        self._generation += 1
        self._stop = asyncio.Event()
        self._lost = False
        self._init = None
        self._stdio = None
        self.launch(self._startup_timeout)
        return await self.client()

    def _retry_later(self) -> None:
        """After a lost connection, reconnect in the background after each of ``reconnect_delays``."""
        if not self.reconnect_delays or self._stop.is_set():
            return
        if self._retrying is None or self._retrying.done():
            self._retrying = asyncio.get_running_loop().create_task(
                self._retry(), name=f"mcp-reconnect:{self.server}"
            )

    async def _retry(self) -> None:
        for delay in self.reconnect_delays:
            await asyncio.sleep(delay)
            if self._closing:
                return
            await self.registry.reconnect(self.server)
            status = self.registry.status(self.server)
            if status is not None and status.state == "connected":
                return

    async def client(self, signal: CancelSignal | None = None) -> Any:
        """The server's client once it started, or a stand-in whose calls fail with the reason it did not."""
        startup = self._startup
        assert startup is not None
        if startup.done():
            return startup.result()
        return await bounded(lambda: asyncio.shield(startup), signal, None)

    def started(self) -> Any:
        """The server's client if its start has ended (see :meth:`client`); raises while it is starting."""
        startup = self._startup
        if startup is None or not startup.done() or startup.cancelled():
            message = f"MCP server {self.server!r} has not finished starting"
            raise McpCallError(message, code="MCP_SERVER_UNAVAILABLE")
        return startup.result()

    async def _started(self, startup_timeout: float) -> Any:
        assert self._ready is not None
        try:
            client = await self._ready_in_time(startup_timeout)
        except TimeoutError:
            return await self._failed(f"it did not finish starting within {startup_timeout:g} s")
        except McpCallError as exc:
            return await self._failed(exc.message)
        assert self._sink is not None
        self._sink.note(f"connected ({self._init.protocol_version if self._init else 'unknown'} protocol)")
        self._report("connected")
        return client

    async def _ready_in_time(self, startup_timeout: float) -> Any:
        """The connected client, within ``startup_timeout``; time spent waiting for a person to sign in
        does not count (the deadline starts again when the sign-in step ends)."""
        assert self._ready is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + startup_timeout
        while True:
            left = max(0.0, deadline - loop.time())
            done, _ = await asyncio.wait({self._ready}, timeout=min(0.5, left))
            if done:
                return self._ready.result()
            if self._signing_in:
                deadline = loop.time() + startup_timeout
            elif loop.time() >= deadline:
                raise TimeoutError

    async def _failed(self, reason: str) -> Unavailable:
        stdio = self._stdio
        if stdio is not None:
            stdio.hurry = True
        await self._halt(grace=0.0)
        # An exit status tells why the server went (a signal, perhaps ours, is left out).
        if stdio is not None and stdio.exit_status is not None and stdio.exit_status > 0:
            reason += f"; the process exited with status {stdio.exit_status}"
        where = "" if self._log_error is not None else f" (see {self.log_path.name})"
        self._report("failed", sanitize_public_message(f"{reason}{where}", secrets=self.secrets))
        message = sanitize_public_message(f"MCP server {self.server!r} is not available: {reason}")
        return Unavailable(McpCallError(message, code="MCP_SERVER_UNAVAILABLE", retryable=False))

    async def _halt(self, grace: float = _CLOSE_SECONDS) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait({task}, timeout=grace) if grace > 0 else (set(), set())
        if not done:
            task.cancel()
            await asyncio.wait({task})

    async def close(self) -> None:
        """Stop the server (one still starting at once) and close its log; the state becomes ``closed``
        unless it failed to start."""
        self._closing = True
        retrying = self._retrying
        if retrying is not None and not retrying.done() and retrying is not asyncio.current_task():
            retrying.cancel()
            await asyncio.wait({retrying})
        starting = self._startup is not None and not self._startup.done()
        if starting and self._startup is not None:
            if self._stdio is not None:
                self._stdio.hurry = True
            self._startup.cancel()
            await asyncio.wait({self._startup})
        failed = self._startup is not None and not self._startup.cancelled() and self._init is None
        await self._halt(grace=0.0 if starting else _CLOSE_SECONDS)
        if self._sink is not None:
            self._sink.note("closed")
            self._sink.close()
        if not failed:
            self._report("closed")
