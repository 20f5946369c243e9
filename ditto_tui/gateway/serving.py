"""The gateway's two doors, stdio and streamable HTTP, over one session: :func:`open_gateway` (see
:mod:`ditto_tui.gateway`)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from ditto_tui import __version__
from ditto_tui.config import GatewayOAuthConfig, RuntimeConfig
from ditto_tui.errors import ValidationError
from ditto_tui.gateway.core import ClientApprover, Gateway, GatewayInbox
from ditto_tui.headless import report_servers
from ditto_tui.loopback import is_loopback
from ditto_tui.runs import open_run_host
from ditto_tui.sanitize import escape_controls
from ditto_tui.session import open_runtime
from ditto_tui.supervise.modes import Mode
from ditto_tui.telemetry import flush_tracing, temporal_interceptors

HTTP_PATH = "/mcp"


@contextlib.asynccontextmanager
async def open_gateway(
    config: RuntimeConfig, workspace: Path, servers: Sequence[str] = (), mode: Mode = "ask"
) -> AsyncIterator[Any]:
    """The gateway's MCP server over the session's runtime and run host, its servers connected.

    With the embedded host, a call that needs a person is asked through the client's own form (when it
    has elicitation), else refused saying how to approve; on a durable host it waits in the inbox that
    ``ditto-tui inbox``, the app, a browser and a decision link answer. ``mode`` is the gate's mode
    (``--mode``: ``read-only`` refuses every call that writes, whatever the rules say).
    """
    from ditto_tui.gateway.server import GatewayHandlers

    gateway = Gateway(servers)
    durable = config.runs.host != "embedded"
    inbox = GatewayInbox(None if durable else ClientApprover(gateway))
    async with open_runtime(
        gateway.program, config, workspace, inbox, wait_for_servers=True, mode=mode
    ) as session:
        traced = temporal_interceptors(config, workspace) if durable else []
        host = open_run_host(session.runtime, session.inbox, config.runs.model_dump(), interceptors=traced)
        try:
            if durable:
                await host.work(session.runtime, session.inbox, [gateway.program.plan])  # type: ignore[attr-defined]
            report_servers(session.mcp, sys.stderr)  # a server that failed to start, now or later
            gateway.attach(session.mcp, host)
            if session.journal is not None:
                gateway.record_input = session.journal.next_input
            handlers = GatewayHandlers(gateway)
            handlers.watch()
            try:
                yield handlers.server(version=__version__)
            finally:
                handlers.close()
                for connection in list(gateway.connections.values()):
                    gateway.disconnect(connection)
        finally:
            if durable:
                with contextlib.suppress(Exception):
                    await host.stop_working()  # type: ignore[attr-defined]
            close = getattr(host, "close", None)
            if close is not None:
                close()


async def serve_stdio(
    config: RuntimeConfig, workspace: Path, servers: Sequence[str] = (), mode: Mode = "ask"
) -> int:
    """Serve one client over this process's stdin and stdout until it closes them (or until SIGINT or
    SIGTERM: the gateway is closed first, its runs recorded and its servers stopped).

    The connection speaks the handshake era of the protocol (``initialize`` first): a client offering
    the per-request era falls back to it. Only there may the gateway ask the client (its form for an
    approval, a server's sampling and elicitation), which supervising needs.
    """
    from mcp.server.runner import serve_loop

    from ditto_tui.gateway.stdio import loop_stdio

    if sys.stdin.isatty():
        print(
            "ditto-tui mcp serve speaks MCP on stdin and stdout: an MCP client starts it "
            "(`ditto-tui mcp config claude|cursor|claude-code` prints its settings). Ctrl+C ends it.",
            file=sys.stderr,
        )
    stopped = _stop_on_signals(asyncio.current_task())
    async with loop_stdio() as (read, write):
        try:
            async with (
                open_gateway(config, workspace, servers, mode) as server,
                server.lifespan(server) as state,
            ):
                options = server.create_initialization_options()
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)
        except asyncio.CancelledError:
            if not stopped:
                raise
        if stopped:  # the SDK reads stdin on a thread that a signal cannot wake: leave without it
            flush_tracing()  # the connection's last records, to the exporter (which sends them after)
            sys.stderr.flush()
            os._exit(0)
    return 0


def _stop_on_signals(task: asyncio.Task[Any] | None) -> list[int]:
    """Cancel ``task`` on SIGINT and SIGTERM; the list the signals received are put in."""
    received: list[int] = []
    loop = asyncio.get_running_loop()

    def stop(number: int) -> None:
        received.append(number)
        if task is not None:
            task.cancel()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop, number)
    return received


class StaticToken:
    """The SDK's token verifier for the one bearer token printed at start (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return None
        return AccessToken(token=token, client_id="ditto-tui-gateway", scopes=[])


def http_app(
    server: Any,
    verifier: Any,
    host: str,
    port: int,
    oauth: GatewayOAuthConfig | None = None,
    resource: str | None = None,
) -> Any:
    """The streamable HTTP app: the SDK's session manager behind its DNS-rebinding protection (the bound
    host and port only) and its bearer authentication (``verifier``: the printed token, or with
    ``oauth`` the authorization server's word for tokens issued for ``resource``, the gateway's URL as
    clients are given it (by default :func:`resource_url` of ``host``), the SDK's protected resource
    metadata served beside)."""
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from pydantic import AnyHttpUrl
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    names = [_authority(host), "localhost"] if host == "127.0.0.1" else [_authority(host)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names],
    )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    routes: list[Any] = []
    scopes: list[str] = []
    metadata = None
    backend = BearerAuthBackend(verifier)
    if oauth is not None:
        url = AnyHttpUrl(resource or resource_url(host, port))
        scopes = list(oauth.scopes)
        metadata = build_resource_metadata_url(url)
        issuer: Any = oauth.issuer  # as written: the metadata keeps a path-less issuer path-less (RFC 8414)
        routes += create_protected_resource_routes(
            url, [issuer], scopes_supported=scopes or None, resource_name="ditto-tui"
        )
        backend = BearerAuthBackend(verifier, resource_server_url=url)
    endpoint = RequireAuthMiddleware(StreamableHTTPASGIApp(manager), scopes, metadata)
    return Starlette(
        routes=[Route(HTTP_PATH, endpoint=endpoint), *routes],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=backend),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lambda _app: manager.run(),
    )


def resource_url(host: str, port: int) -> str:
    """The gateway's URL as it is printed: the resource its OAuth tokens must be issued for."""
    return f"http://{_authority(host)}:{port}{HTTP_PATH}"


def _authority(host: str) -> str:
    """``host`` as a URL or a Host header names it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def bound_socket(host: str, port: int) -> socket.socket:
    if not is_loopback(host):
        raise ValidationError(
            f"--http binds loopback only (127.0.0.1): {host!r} would let other machines call your tools"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as exc:
        sock.close()
        raise ValidationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(
    config: RuntimeConfig,
    workspace: Path,
    host: str,
    port: int,
    servers: Sequence[str] = (),
    out: TextIO = sys.stdout,
    token: str | None = None,
    mode: Mode = "ask",
) -> int:
    """Serve clients over streamable HTTP on ``host:port`` (loopback) until interrupted."""
    import uvicorn

    sock = bound_socket(host, port)
    port = sock.getsockname()[1]
    bound = "127.0.0.1" if host == "localhost" else host
    url = resource_url(host, port)
    oauth = config.mcp.gateway.oauth
    verifier: Any
    if oauth is None:
        token = token or secrets.token_urlsafe(32)
        verifier = StaticToken(token)
    else:
        from ditto_tui.gateway.oauth import IntrospectedTokens

        verifier = IntrospectedTokens(oauth, url)
    try:
        async with open_gateway(config, workspace, servers, mode) as server:
            app = http_app(server, verifier, bound, port, oauth, url)
            print(f"ditto-tui mcp serve: {url}", file=out)
            if oauth is None:
                print(f"token: {token}", file=out)
                print(f"clients send it as the header  Authorization: Bearer {token}", file=out)
            else:
                needs = f", with the scopes {' '.join(oauth.scopes)}" if oauth.scopes else ""
                print(f"oauth: clients sign in at {escape_controls(oauth.issuer)}{needs}", file=out)
                print(f"tokens are checked at {escape_controls(oauth.introspection_endpoint)}", file=out)
            out.flush()
            served = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
            try:
                await served.serve(sockets=[sock])
            except asyncio.CancelledError:
                served.should_exit = True
    finally:
        if oauth is not None:
            await verifier.close()
    return 0
