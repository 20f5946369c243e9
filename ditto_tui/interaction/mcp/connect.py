"""``open_mcp_servers``: start and connect every configured server, and close them all on exit.

Stdio servers never start in the workspace unless their entry says so: by default each open gets a
private empty directory (removed on exit) as the servers' working directory, so a file of the workspace
cannot change what ``python -m …`` imports or what ``npx`` runs.

Servers start concurrently. One that fails to start does not fail the others: it is registered anyway,
its status says ``failed`` with the reason and its log file, and any call to it fails with
``MCP_SERVER_UNAVAILABLE`` (so a discovery of every server names it instead of silently skipping it).
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pydantic

from ditto_tui.config import McpConfig, McpServerConfig, RuntimeConfig
from ditto_tui.errors import ConfigError
from ditto_tui.home import logs_dir
from ditto_tui.interaction.mcp.connection import Connection, SignIn, Starting
from ditto_tui.interaction.mcp.oauth import Authorize, TokenStore, default_token_dir
from ditto_tui.interaction.mcp.port import McpClientRequests
from ditto_tui.interaction.mcp.registry import McpRegistry
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.interaction.results import validation_summary

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one call may take unless the server's entry says otherwise."""

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server may take to start and finish the MCP handshake."""

AUTO_RECONNECT_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0)
"""Backoff between automatic attempts to start a lost server again (the application's choice)."""

NEUTRAL_DIR_PREFIX = "ditto-tui-mcp-"
"""The name prefix of the private empty directory stdio servers start in by default."""

_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]")

ServerEntry = McpServerConfig | Mapping[str, Any]


def log_file(log_dir: str | os.PathLike[str], server: str) -> Path:
    """Where ``server``'s stderr and connection notes go: ``<log_dir>/<server>.log`` (name made file-safe)."""
    return Path(log_dir) / f"{_UNSAFE_FILE_CHARS.sub('_', server)}.log"


@contextmanager
def _working_dir(cwd: str | os.PathLike[str] | None) -> Iterator[str]:
    """``cwd`` as given, or a private empty directory made for this open and removed after it."""
    if cwd is not None:
        yield os.fspath(cwd)
        return
    with tempfile.TemporaryDirectory(prefix=NEUTRAL_DIR_PREFIX, ignore_cleanup_errors=True) as neutral:
        yield neutral


def _entry(name: str, entry: ServerEntry) -> McpServerConfig:
    if isinstance(entry, McpServerConfig):
        return entry
    try:
        return McpServerConfig.model_validate(entry)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"MCP server {name!r}: {validation_summary(exc)}") from None


@asynccontextmanager
async def open_mcp_servers(
    servers: Mapping[str, ServerEntry],
    max_discovery_pages: int = 100,
    max_capabilities: int = 1000,
    *,
    timeout: float | None = DEFAULT_CALL_TIMEOUT,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    log_dir: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    allowed: Iterable[str] | None = None,
    secrets: Iterable[str] = (),
    wait: bool = True,
    client_requests: McpClientRequests | None = None,
    reconnect_delays: Iterable[float] = (),
    authorize: Authorize | None = None,
    token_store: str | os.PathLike[str] | None = None,
) -> AsyncIterator[McpRegistry]:
    """Start and connect every server of an ``mcpServers``-shaped mapping; yield an ``McpRegistry``.

    Each entry is stdio (``command``, ``args``, ``env``, ``cwd``) or HTTP (``url``, ``headers``; streamable
    HTTP, or SSE with ``type: sse``), as in a Claude Desktop or Cursor config; ``disabled`` entries are
    skipped, and ``timeout`` in an entry overrides the per-call ``timeout``. Servers not in ``allowed``
    (when given, normally the sandbox's ``mcp`` grants) are never started and report ``denied``.

    Stdio servers start in their entry's ``cwd``, else in ``cwd``, else (the default) in a private empty
    directory made for this open and removed on exit. ``workspace`` is the untrusted folder the agent works
    on: no command is ever found in it (nor through a relative ``PATH`` entry), and the servers' ``PATH``
    loses its entries inside it. Their stderr, their log notifications and ditto's notes on each
    connection go, sanitised line by line, to ``<log_dir>/<server>.log`` (default: the user state
    directory's logs of ``workspace``, or of the current directory), never to the terminal; a log file or
    directory that is a symbolic link fails its server instead of being followed. Every server is closed
    on exit, including ones that died. :meth:`McpRegistry.status` tells how each server stands.

    With ``client_requests`` (an :class:`McpClientRequests`) the client declares the ``sampling``,
    ``elicitation`` and ``roots`` capabilities and every such request of a server goes to it; without,
    it declares none of them and servers cannot ask.

    An HTTP server that answers with an OAuth challenge (or has ``auth`` in its entry) is signed in to
    through the SDK's OAuth support: ``authorize`` (``async (server, authorization_url) -> redirected_url``,
    or without ``server``; default: the system browser and a 127.0.0.1 loopback redirect) sends the
    person to the authorization server, and tokens are kept in ``token_store`` (default: the user config
    directory's ``oauth/``, files mode 0600, never inside the workspace).

    :meth:`McpRegistry.reconnect` starts a server again; with ``reconnect_delays`` (seconds, e.g.
    :data:`AUTO_RECONNECT_DELAYS`) a lost connection is started again after each delay in turn until
    one attempt connects. Calls in flight when a connection is lost end failed and are never replayed.

    With ``wait=False`` the registry is yielded at once, while servers start; a call to a server still
    starting waits for it (the UI shows ``connecting`` meanwhile), and one still starting at exit is stopped.
    """
    entries = {name: _entry(name, entry) for name, entry in servers.items()}
    # Header values, and env values whose names look secret, are redacted from every log line.
    hidden = tuple(secrets) + RuntimeConfig(mcp=McpConfig(servers=entries)).secret_values()
    registry = McpRegistry(max_discovery_pages, max_capabilities)
    logs = Path(log_dir) if log_dir is not None else logs_dir(workspace if workspace is not None else ".")
    with _working_dir(cwd) as working_dir:
        connections = _connections(
            entries,
            registry,
            allowed,
            logs=logs,
            timeout=timeout,
            cwd=working_dir,
            workspace=None if workspace is None else os.fspath(workspace),
            secrets=hidden,
            client_requests=client_requests,
            reconnect_delays=tuple(reconnect_delays),
            sign_in=SignIn(
                authorize, TokenStore(token_store if token_store is not None else default_token_dir())
            ),
        )
        try:
            for connection in connections:
                connection.launch(startup_timeout)
            if wait:
                clients = await asyncio.gather(*(connection.client() for connection in connections))
            else:
                clients = [Starting(connection) for connection in connections]
            for connection, client in zip(connections, clients, strict=True):
                registry.register(connection.server, client, reconnect=connection.reconnect)
            yield registry
        finally:
            await registry.settle()
            await asyncio.gather(*(connection.close() for connection in connections))


def _connections(
    entries: Mapping[str, McpServerConfig],
    registry: McpRegistry,
    allowed: Iterable[str] | None,
    *,
    logs: Path,
    timeout: float | None,
    cwd: str,
    workspace: str | None,
    secrets: tuple[str, ...],
    client_requests: McpClientRequests | None,
    reconnect_delays: tuple[float, ...],
    sign_in: SignIn,
) -> list[Connection]:
    """A connection per enabled, granted entry; entries the sandbox does not grant report ``denied``."""
    granted = None if allowed is None else set(allowed)
    connections: list[Connection] = []
    for name, entry in entries.items():
        if entry.disabled:
            continue
        if granted is not None and name not in granted:
            message = "not started: the sandbox does not grant it (sandbox.mcp)"
            registry.report_status(McpServerStatus(server=name, state="denied", error=message))
            continue
        connection = Connection(
            name,
            entry,
            registry=registry,
            log_path=log_file(logs, name),
            timeout=timeout,
            cwd=cwd,
            workspace=workspace,
            secrets=secrets,
            client_requests=client_requests,
            reconnect_delays=reconnect_delays,
            sign_in=sign_in,
        )
        connections.append(connection)
    return connections
