"""Where each MCP server stands: connection state, last error, log file and discovery figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

McpServerState: TypeAlias = Literal["connecting", "connected", "failed", "disconnected", "denied", "closed"]
"""``connecting`` while starting; ``connected`` once initialised; ``failed`` when it never started;
``disconnected`` when the connection was lost later; ``denied`` when the sandbox does not grant it (never
started); ``closed`` after a clean shutdown."""

McpTransportKind: TypeAlias = Literal["stdio", "http"]


@dataclass(frozen=True, kw_only=True)
class McpServerStatus:
    """One server as the MCP browser shows it.

    ``error`` (sanitised, one line) says why the connection failed or was lost; ``discovery_error`` why
    the last discovery of this server failed (a repeated cursor, a limit, an invalid tool); ``tools`` and
    ``pages`` are the figures of its last complete discovery.
    """

    server: str
    state: McpServerState
    transport: McpTransportKind | None = None
    error: str | None = None
    log_path: str | None = None
    protocol_version: str | None = None
    server_info: str | None = None
    tools: int | None = None
    pages: int | None = None
    discovery_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The status as JSON (camelCase keys, absent values omitted)."""
        fields = {
            "server": self.server,
            "state": self.state,
            "transport": self.transport,
            "error": self.error,
            "logPath": self.log_path,
            "protocolVersion": self.protocol_version,
            "serverInfo": self.server_info,
            "tools": self.tools,
            "pages": self.pages,
            "discoveryError": self.discovery_error,
        }
        return {key: value for key, value in fields.items() if value is not None}
