"""A conformance client for the MCP conformance suite's client scenarios, on ditto-tui's public API.

The suite runs ``python client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario; the client
connects to the suite's test server through ``open_mcp_servers`` and does what the scenario checks. It
exits 0 when every step it took succeeded; the suite judges the rest from what its server saw.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ditto_tui.errors import McpError
from ditto_tui.interaction.mcp import McpClient, McpRegistry, open_mcp_servers

SERVER = "conformance"

Scenario = Callable[[McpClient], Awaitable[None]]


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every property of an elicitation's ``requestedSchema`` that has one."""
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    return {name: field["default"] for name, field in properties.items() if "default" in field}


class AcceptDefaults:
    """Answers the server's requests: elicitations are accepted with the schema's defaults."""

    async def create_message(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        raise McpError("this client does not sample")

    async def elicit(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"action": "accept", "content": schema_defaults(params.get("requestedSchema", {}))}

    async def list_roots(self, server: str) -> list[Mapping[str, Any]]:
        return []


async def tool_names(client: McpClient) -> list[str]:
    """The names of every tool the server lists, over all pages."""
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        names.extend(tool["name"] for tool in page["tools"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return names


async def call_checked(client: McpClient, name: str, arguments: Mapping[str, Any]) -> None:
    """Call one tool; a tool error is a failure of the scenario."""
    result = await client.call_tool(name, arguments)
    if result.get("isError"):
        raise SystemExit(f"tool {name!r} reported an error: {result.get('content')!r}")


async def list_only(client: McpClient) -> None:
    await tool_names(client)


async def call_every_tool(client: McpClient) -> None:
    """Call each listed tool: ``add_numbers`` with two numbers, others without arguments."""
    for name in await tool_names(client):
        arguments = {"a": 2, "b": 3} if name == "add_numbers" else {}
        await call_checked(client, name, arguments)


SCENARIOS: dict[str, Scenario] = {
    "initialize": list_only,
    "tools_call": call_every_tool,
    "elicitation-sep1034-client-defaults": call_every_tool,
    "sse-retry": call_every_tool,
}


def scenario(name: str | None) -> Scenario:
    if name is None or name not in SCENARIOS:
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def connected(registry: McpRegistry) -> McpClient:
    client = registry.get(SERVER)
    if client is None:
        raise SystemExit(f"server {SERVER!r} is not registered")
    info = registry.server_info(SERVER)
    print(f"connected to {info.name} {info.version} (protocol {info.protocol_version})")
    return client


async def run(url: str, steps: Scenario) -> None:
    with tempfile.TemporaryDirectory(prefix="ditto-conformance-") as logs:
        servers = {SERVER: {"url": url}}
        async with open_mcp_servers(servers, client_requests=AcceptDefaults(), log_dir=logs) as registry:
            await steps(connected(registry))


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: client.py SERVER_URL")
    asyncio.run(run(argv[0], scenario(os.environ.get("MCP_CONFORMANCE_SCENARIO"))))


if __name__ == "__main__":
    main(sys.argv[1:])
