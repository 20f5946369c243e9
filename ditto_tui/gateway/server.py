"""The gateway's MCP server: the SDK's low-level server, each request handed to :class:`Gateway`.

Tools are the fronted servers' (``SERVER__TOOL`` names, unchanged for one server), and each call goes
through the gate as a node of the connection's run; what the server answers is passed on unchanged.
Resources, templates, prompts and completion pass through to the server that offers them (pages one
server at a time: the cursor names the server and its own cursor). A drift check that finds a tool
changed, and a server's resources or prompts changing, are announced to every client.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import warnings
from collections.abc import Mapping
from typing import Any

from mcp import types
from mcp.server.connection import Connection as SdkConnection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.uri_template import UriTemplate

from ditto_tui.contracts import ExternalResult, McpCapability
from ditto_tui.errors import DittoError
from ditto_tui.gateway.core import CallOutcome, ClientInfo, Connection, Gateway
from ditto_tui.interaction.mcp import McpOfferChanged, McpToolsChanged

logger = logging.getLogger(__name__)

_STATE = "ditto.gateway"
INVALID_PARAMS = -32602
_NOTIFICATIONS = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


class GatewayServer(Server[Any]):
    """The low-level server, announcing that its lists change (the fronted servers' do)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _NOTIFICATIONS, experimental_capabilities, extensions
        )


def _sdk_connection(ctx: ServerRequestContext[Any, Any]) -> SdkConnection:
    return ctx.session._connection  # the one per-connection handle the low-level context carries


def _client(ctx: ServerRequestContext[Any, Any]) -> ClientInfo:
    params = ctx.session.client_params
    capabilities = ctx.session.client_capabilities
    info = params.client_info if params is not None else None
    return ClientInfo(
        name=(info.name if info is not None else "unknown client")[:100],
        version=((info.version or "") if info is not None else "")[:50],
        elicitation=capabilities is not None and capabilities.elicitation is not None,
        sampling=capabilities is not None and capabilities.sampling is not None,
        roots=capabilities is not None and capabilities.roots is not None,
    )


def _failed(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _cursor(index: int, upstream: str | None) -> str:
    return base64.urlsafe_b64encode(json.dumps([index, upstream]).encode()).decode()


def _uncursor(cursor: str | None, servers: int) -> tuple[int, str | None]:
    if cursor is None:
        return 0, None
    try:
        index, upstream = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, binascii.Error):
        raise _failed("invalid cursor") from None
    if not isinstance(index, int) or not 0 <= index < servers or not isinstance(upstream, str | None):
        raise _failed("invalid cursor")
    return index, upstream


def tool_of(exposed: str, capability: McpCapability) -> types.Tool:
    """The SDK tool a client sees for an upstream capability, under its exposed name."""
    wire: dict[str, Any] = {"name": exposed, "inputSchema": capability.input_schema or {"type": "object"}}
    if capability.title is not None:
        wire["title"] = capability.title
    if capability.description is not None:
        wire["description"] = capability.description
    if capability.output_schema is not None:
        wire["outputSchema"] = capability.output_schema
    if capability.annotations is not None:
        wire["annotations"] = capability.annotations
    return types.Tool.model_validate(wire)


def call_result(outcome: CallOutcome) -> types.CallToolResult:
    """The server's own result when the call ran; else the gate's refusal (or the failure) as an error
    result the model and the person read."""
    if isinstance(outcome.raw, types.CallToolResult):
        return outcome.raw
    return error_result(outcome.result)


def error_result(result: ExternalResult) -> types.CallToolResult:
    error = result.error
    if error is None:  # a result the run made without the server's (cannot happen for a call that ran)
        text = json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    text = f"{error.code}: {error.message}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class Routes:
    """Which fronted server offers a resource (by uri, or by one of its uri templates)."""

    def __init__(self) -> None:
        self.uris: dict[str, str] = {}
        self.templates: dict[str, tuple[str, UriTemplate]] = {}

    def resource(self, uri: str, server: str) -> None:
        if len(self.uris) < 100_000:
            self.uris[uri] = server

    def template(self, template: str, server: str) -> None:
        with contextlib.suppress(Exception):  # a template the SDK cannot parse routes nothing
            self.templates[template] = (server, UriTemplate.parse(template))

    def server_of(self, uri: str, servers: list[str]) -> str | None:
        if len(servers) == 1:
            return servers[0]
        found = self.uris.get(uri)
        if found is not None:
            return found
        for server, template in self.templates.values():
            with contextlib.suppress(Exception):
                if template.match(uri) is not None:
                    return server
        return None


class GatewayHandlers:
    """The server's request handlers over one :class:`Gateway`."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.routes = Routes()
        self.subscribed: dict[str, set[SdkConnection]] = {}
        self._stops: list[Any] = []

    def server(self, name: str = "ditto-tui", version: str = "") -> GatewayServer:
        instructions = (
            "Every tool call goes through ditto-tui's supervision: calls that need a person's approval "
            "wait for it, and a denied call returns an error result that says why."
        )
        with warnings.catch_warnings():  # logging/setLevel is deprecated in the newest protocol era only
            warnings.simplefilter("ignore")
            return self._server(name, version, instructions)

    def _server(self, name: str, version: str, instructions: str) -> GatewayServer:
        return GatewayServer(
            name,
            version=version,
            instructions=instructions,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_completion=self.complete,
            on_set_logging_level=self.set_level,
        )

    # -- connections --------------------------------------------------------------------------------------

    async def connection(self, ctx: ServerRequestContext[Any, Any]) -> Connection:
        """The gateway connection of the client's connection: made (its run started) on first use, ended
        with it."""
        sdk = _sdk_connection(ctx)
        started: asyncio.Future[Connection] | None = sdk.state.get(_STATE)
        if started is None:
            channel = SessionChannel(ctx.session, None)  # the connection's own channel
            started = asyncio.ensure_future(self.gateway.connect(_client(ctx), channel))
            sdk.state[_STATE] = started
            sdk.exit_stack.push_async_callback(self._closed, sdk, started)
        return await asyncio.shield(started)

    async def _closed(self, sdk: SdkConnection, started: asyncio.Future[Connection]) -> None:
        for subscribers in self.subscribed.values():
            subscribers.discard(sdk)
        if started.done() and not started.cancelled() and started.exception() is None:
            self.gateway.disconnect(started.result())

    def watch(self) -> None:
        """Announce to every client the changes the fronted servers report."""
        mcp = self.gateway.mcp
        if mcp is None:
            return
        self._stops = [
            mcp.on_change(self._tools_changed),
            mcp.on_offer_change(self._offer_changed),
            mcp.on_message(self._logged),
        ]

    def close(self) -> None:
        for stop in self._stops:
            stop()
        self._stops = []

    def _announce(self, send: Any) -> None:
        for connection in list(self.gateway.connections.values()):
            if isinstance(connection.channel, SessionChannel):  # the connection's own: no request's stream
                task = asyncio.ensure_future(send(connection.channel.session))
                task.add_done_callback(_quiet)

    def _logged(self, server: str, level: str, logger: str | None, data: Any) -> None:
        """A server's log message during calls of clients: to each of them, on the call's stream."""
        for channel in self.gateway.calling(server):
            task = asyncio.ensure_future(channel.log(level, logger or server, data))
            task.add_done_callback(_quiet)

    def _tools_changed(self, change: McpToolsChanged) -> None:
        if change.server in self.gateway.servers():
            self._announce(lambda sdk: sdk.send_tool_list_changed())

    def _offer_changed(self, change: McpOfferChanged) -> None:
        if change.server not in self.gateway.servers():
            return
        if change.kind == "resources":
            self._announce(lambda sdk: sdk.send_resource_list_changed())
        elif change.kind == "prompts":
            self._announce(lambda sdk: sdk.send_prompt_list_changed())
        elif change.kind == "resource" and change.uri is not None:
            for sdk in list(self.subscribed.get(change.uri, ())):
                task = asyncio.ensure_future(sdk.send_resource_updated(change.uri))
                task.add_done_callback(_quiet)

    # -- tools --------------------------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        connection = await self.connection(ctx)
        listed = await self.gateway.tools(connection)
        return types.ListToolsResult(tools=[tool_of(exposed, capability) for exposed, capability in listed])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        connection = await self.connection(ctx)
        session = ctx.session
        token = ctx.meta.get("progress_token") if ctx.meta is not None else None

        def progress(done: float, total: float | None, message: str | None) -> None:
            if token is not None:
                task = asyncio.ensure_future(session.report_progress(done, total, message))
                task.add_done_callback(_quiet)

        try:
            outcome = await self.gateway.call(
                connection,
                params.name,
                params.arguments or {},
                progress if token is not None else None,
                SessionChannel(ctx.session, ctx.request_id),
            )
        except DittoError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=exc.message)], is_error=True
            )
        return call_result(outcome)

    # -- resources ----------------------------------------------------------------------------------------

    def _mcp(self) -> Any:
        if self.gateway.mcp is None:
            raise _failed("the gateway has no servers yet")
        return self.gateway.mcp

    async def _page(self, cursor: str | None, list_page: Any) -> tuple[dict[str, Any], str, str | None]:
        servers = self.gateway.servers()
        if not servers:
            return {}, "", None
        index, upstream = _uncursor(cursor, len(servers))
        server = servers[index]
        try:
            page = dict(await list_page(server, upstream))
        except DittoError as exc:
            logger.warning("listing %s through the gateway failed: %s", server, exc)
            page = {}
        following = page.pop("nextCursor", None)
        if following is not None:
            return page, server, _cursor(index, following)
        if index + 1 < len(servers):
            return page, server, _cursor(index + 1, None)
        return page, server, None

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await self.connection(ctx)
        mcp = self._mcp()
        page, server, following = await self._page(
            params.cursor if params else None, lambda s, c: mcp.list_resources(s, cursor=c)
        )
        resources = page.get("resources") or []
        for resource in resources:
            if isinstance(resource, Mapping) and isinstance(resource.get("uri"), str):
                self.routes.resource(resource["uri"], server)
        return types.ListResourcesResult.model_validate({"resources": resources, "nextCursor": following})

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        await self.connection(ctx)
        mcp = self._mcp()
        page, server, following = await self._page(
            params.cursor if params else None, lambda s, c: mcp.list_resource_templates(s, cursor=c)
        )
        templates = page.get("resourceTemplates") or []
        for template in templates:
            if isinstance(template, Mapping) and isinstance(template.get("uriTemplate"), str):
                self.routes.template(template["uriTemplate"], server)
        return types.ListResourceTemplatesResult.model_validate(
            {"resourceTemplates": templates, "nextCursor": following}
        )

    def _server_of(self, uri: str) -> str:
        server = self.routes.server_of(uri, self.gateway.servers())
        if server is None:
            raise _failed(f"no fronted server lists the resource {uri[:200]!r}: list resources first")
        return server

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        await self.connection(ctx)
        uri = str(params.uri)
        try:
            read = await self._mcp().read_resource(self._server_of(uri), uri)
        except DittoError as exc:
            raise _failed(exc.message) from None
        return types.ReadResourceResult.model_validate(read)

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        await self.connection(ctx)
        uri = str(params.uri)
        try:
            await self._mcp().subscribe_resource(self._server_of(uri), uri)
        except DittoError as exc:
            raise _failed(exc.message) from None
        self.subscribed.setdefault(uri, set()).add(_sdk_connection(ctx))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        await self.connection(ctx)
        uri = str(params.uri)
        subscribers = self.subscribed.get(uri, set())
        subscribers.discard(_sdk_connection(ctx))
        if not subscribers:
            self.subscribed.pop(uri, None)
            with contextlib.suppress(DittoError):
                await self._mcp().unsubscribe_resource(self._server_of(uri), uri)
        return types.EmptyResult()

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The client's log level, asked of every fronted server that logs."""
        await self.connection(ctx)
        mcp = self._mcp()

        async def one(server: str) -> None:
            with contextlib.suppress(DittoError):
                await mcp.set_logging_level(server, params.level)

        await asyncio.gather(*(one(server) for server in self.gateway.servers()))
        return types.EmptyResult()

    # -- prompts and completion ---------------------------------------------------------------------------

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        await self.connection(ctx)
        mcp = self._mcp()
        page, server, following = await self._page(
            params.cursor if params else None, lambda s, c: mcp.list_prompts(s, cursor=c)
        )
        prompts = []
        for prompt in page.get("prompts") or []:
            if isinstance(prompt, Mapping) and isinstance(prompt.get("name"), str):
                prompts.append({**prompt, "name": self.gateway.exposed(server, prompt["name"])})
        return types.ListPromptsResult.model_validate({"prompts": prompts, "nextCursor": following})

    def _prompt(self, exposed: str) -> tuple[str, str]:
        routed = self.gateway.route(exposed)
        if routed is None:
            raise _failed(f"no fronted server offers a prompt named {exposed[:200]!r}")
        return routed

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        await self.connection(ctx)
        server, name = self._prompt(params.name)
        try:
            got = await self._mcp().get_prompt(server, name, params.arguments)
        except DittoError as exc:
            raise _failed(exc.message) from None
        return types.GetPromptResult.model_validate(got)

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        await self.connection(ctx)
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            server, name = self._prompt(ref.name)
            upstream_ref: dict[str, Any] = {"type": "ref/prompt", "name": name}
        else:
            server = self._server_of(str(ref.uri))
            upstream_ref = {"type": "ref/resource", "uri": str(ref.uri)}
        context = params.context.arguments if params.context is not None else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        try:
            done = await self._mcp().complete(server, upstream_ref, argument, context)
        except DittoError as exc:
            raise _failed(exc.message) from None
        return types.CompleteResult.model_validate({"completion": done})


class SessionChannel:
    """The gateway's requests to a client through the SDK session, on the stream of the request
    ``related`` (a call's), or the connection's own when it is None."""

    def __init__(self, session: ServerSession, related: types.RequestId | None) -> None:
        self.session, self.related = session, related

    async def elicit_form(
        self, message: str, schema: Mapping[str, Any]
    ) -> tuple[str, Mapping[str, Any] | None]:
        answer = await self.session.elicit_form(message, dict(schema), related_request_id=self.related)
        return answer.action, dict(answer.content) if answer.content is not None else None

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> str:
        answer = await self.session.elicit_url(message, url, elicitation_id, related_request_id=self.related)
        return answer.action

    async def sample(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams.model_validate(dict(params))
        )
        metadata = ServerMessageMetadata(related_request_id=self.related)
        result = await self.session.send_request(request, types.CreateMessageResult, metadata=metadata)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def log(self, level: str, logger: str | None, data: Any) -> None:
        chosen = level if level in _LEVELS else "info"
        await self.session.send_log_message(chosen, data, logger=logger, related_request_id=self.related)  # type: ignore[arg-type]


_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _quiet(task: asyncio.Future[Any]) -> None:
    """A notification that could not be sent (the client left) is dropped."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("a notification to a gateway client failed: %s", task.exception())
