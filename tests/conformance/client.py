"""A conformance client for the MCP conformance suite's client scenarios, on ditto-tui's public API.

The suite runs ``python client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario (and
``MCP_CONFORMANCE_CONTEXT`` holding, for some, JSON such as pre-registered client credentials); the client
connects to the suite's test server through ``open_mcp_servers`` and does what the scenario checks. It
exits 0 when every step it took succeeded; the suite judges the rest from what its server saw.

For the ``auth/…`` scenarios the server asks for OAuth: ``authorize`` plays the browser by following the
authorization URL to the redirect the suite's authorization server answers with (it grants at once).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from ditto_tui.errors import McpError
from ditto_tui.interaction.mcp import McpClient, McpRegistry, open_mcp_servers

SERVER = "conformance"

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's ``auth/basic-cimd`` expects as the client ID."""

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
    if name is not None and name.startswith("auth/"):
        return call_every_tool  # tools/list, then tools/call: the scope step-up scenario needs both
    if name is None or name not in SCENARIOS:
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}, auth/…")
    return SCENARIOS[name]


async def follow_redirect(authorization_url: str) -> str:
    """The browser's part: open the authorization URL and return where the server redirects it."""
    async with httpx.AsyncClient() as http:
        response = await http.get(authorization_url, follow_redirects=False)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise McpError(f"the authorization endpoint answered {response.status_code} without a redirect")
    return str(httpx.URL(authorization_url).join(location))


def server_entry(url: str, context: Mapping[str, Any]) -> dict[str, Any]:
    """The ``mcpServers`` entry of the suite's server; pre-registered credentials from the context."""
    auth: dict[str, Any] = {"type": "oauth", "clientMetadataUrl": CLIENT_METADATA_URL}
    if isinstance(context.get("client_id"), str):
        auth["clientId"] = context["client_id"]
        if isinstance(context.get("client_secret"), str):
            auth["clientSecret"] = context["client_secret"]
    return {"url": url, "auth": auth}


def connected(registry: McpRegistry) -> McpClient:
    client = registry.get(SERVER)
    if client is None:
        raise SystemExit(f"server {SERVER!r} is not registered")
    info = registry.server_info(SERVER)
    print(f"connected to {info.name} {info.version} (protocol {info.protocol_version})")
    return client


async def run(url: str, steps: Scenario, context: Mapping[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="ditto-conformance-") as scratch:
        servers = {SERVER: server_entry(url, context)}
        async with open_mcp_servers(
            servers,
            client_requests=AcceptDefaults(),
            log_dir=Path(scratch) / "logs",
            authorize=follow_redirect,
            token_store=Path(scratch) / "oauth",
        ) as registry:
            status = registry.status(SERVER)
            if status is not None and status.state == "failed":
                raise SystemExit(f"the server failed to connect: {status.error}")
            await steps(connected(registry))


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: client.py SERVER_URL")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    asyncio.run(run(argv[0], scenario(os.environ.get("MCP_CONFORMANCE_SCENARIO")), context))


if __name__ == "__main__":
    main(sys.argv[1:])
