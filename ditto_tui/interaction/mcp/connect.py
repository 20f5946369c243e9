"""``open_mcp_servers``: start and connect every configured server, and close them all on exit.

Servers start concurrently. One that fails to start does not fail the others: it is registered anyway,
its status says ``failed`` with the reason and its log file, and any call to it fails with
``MCP_SERVER_UNAVAILABLE`` (so a discovery of every server names it instead of silently skipping it).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pydantic

from ditto_tui.config import McpConfig, McpServerConfig, RuntimeConfig
from ditto_tui.errors import ConfigError
from ditto_tui.interaction.mcp.connection import Connection, Starting
from ditto_tui.interaction.mcp.registry import McpRegistry
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.interaction.results import validation_summary

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one call may take unless the server's entry says otherwise."""

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server may take to start and finish the MCP handshake."""

_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]")

ServerEntry = McpServerConfig | Mapping[str, Any]


def log_file(log_dir: str | os.PathLike[str], server: str) -> Path:
    """Where ``server``'s stderr and connection notes go: ``<log_dir>/<server>.log`` (name made file-safe)."""
    return Path(log_dir) / f"{_UNSAFE_FILE_CHARS.sub('_', server)}.log"


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
    log_dir: str | os.PathLike[str] = Path(".ditto") / "logs",
    cwd: str | os.PathLike[str] | None = None,
    allowed: Iterable[str] | None = None,
    secrets: Iterable[str] = (),
    wait: bool = True,
) -> AsyncIterator[McpRegistry]:
    """Start and connect every server of an ``mcpServers``-shaped mapping; yield an ``McpRegistry``.

    Each entry is stdio (``command``, ``args``, ``env``, ``cwd``) or HTTP (``url``, ``headers``; streamable
    HTTP, or SSE with ``type: sse``), as in a Claude Desktop or Cursor config; ``disabled`` entries are
    skipped, and ``timeout`` in an entry overrides the per-call ``timeout``. Servers not in ``allowed``
    (when given, normally the sandbox's ``mcp`` grants) are never started and report ``denied``. Stdio
    servers start in ``cwd`` unless their entry says otherwise; their stderr, and ditto's notes on each
    connection, go to ``<log_dir>/<server>.log``, never to the terminal. Every server is closed on exit,
    including ones that died. :meth:`McpRegistry.status` tells how each server stands.

    With ``wait=False`` the registry is yielded at once, while servers start; a call to a server still
    starting waits for it (the UI shows ``connecting`` meanwhile), and one still starting at exit is stopped.
    """
    entries = {name: _entry(name, entry) for name, entry in servers.items()}
    granted = None if allowed is None else set(allowed)
    # Header values, and env values whose names look secret, are redacted from every log line.
    hidden = tuple(secrets) + RuntimeConfig(mcp=McpConfig(servers=entries)).secret_values()
    registry = McpRegistry(max_discovery_pages, max_capabilities)
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
            log_path=log_file(log_dir, name),
            timeout=timeout,
            cwd=None if cwd is None else os.fspath(cwd),
            secrets=hidden,
        )
        connections.append(connection)
    try:
        for connection in connections:
            connection.launch(startup_timeout)
        if wait:
            clients = await asyncio.gather(*(connection.client() for connection in connections))
        else:
            clients = [Starting(connection) for connection in connections]
        for connection, client in zip(connections, clients, strict=True):
            registry.register(connection.server, client)
        yield registry
    finally:
        await registry.settle()
        await asyncio.gather(*(connection.close() for connection in connections))
