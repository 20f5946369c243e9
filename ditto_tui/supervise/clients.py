"""Which MCP client a session of the gateway served, from the input its run was started on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GATEWAY_GRAPH = "mcp-gateway"
"""The graph of the gateway's client sessions: each client connection is a run of it."""

MAX_CLIENT_LABEL = 120


def client_label(graph: str, given: Any) -> str | None:
    """For a run of :data:`GATEWAY_GRAPH`: the client's name and version as the client gave them
    (untrusted text, cut to :data:`MAX_CLIENT_LABEL` characters); None for any other run."""
    client = given.get("client") if isinstance(given, Mapping) else None
    if graph != GATEWAY_GRAPH or not isinstance(client, Mapping):
        return None
    label = f"{client.get('name') or 'unknown client'} {client.get('version') or ''}".strip()
    return label[:MAX_CLIENT_LABEL]
