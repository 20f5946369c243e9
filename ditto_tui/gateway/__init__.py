"""``ditto-tui mcp serve``: ditto-tui as an MCP server in front of the configured servers.

Any MCP client (Claude Desktop, Claude Code, Cursor, an agent SDK) connects to the gateway instead of to
its servers; every tool call then goes through the same gate as a run's (:mod:`ditto_tui.gateway.core`),
on the configured run host. Over stdio the client starts the gateway itself; over streamable HTTP it
binds loopback, checks Host and Origin (the SDK's DNS-rebinding protection) and needs the bearer token it
prints (the SDK's bearer authentication) — :mod:`ditto_tui.gateway.serving`.

The names load on first use: the command line reads :mod:`ditto_tui.gateway.cli` for its parser without
the runtime, the MCP SDK and the servers' session behind them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ditto_tui._lazy import load

if TYPE_CHECKING:
    from ditto_tui.gateway.core import Gateway
    from ditto_tui.gateway.serving import open_gateway, serve_http, serve_stdio

__all__ = ["Gateway", "open_gateway", "serve_http", "serve_stdio"]

_MODULE_OF = {
    "Gateway": "ditto_tui.gateway.core",
    "open_gateway": "ditto_tui.gateway.serving",
    "serve_http": "ditto_tui.gateway.serving",
    "serve_stdio": "ditto_tui.gateway.serving",
}


def __getattr__(name: str) -> Any:
    return load(__name__, _MODULE_OF, name)
