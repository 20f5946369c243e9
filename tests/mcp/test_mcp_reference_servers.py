"""The npm reference servers (server-everything over stdio, server-filesystem on a temp root)."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ditto_tui.contracts import ExternalResult, JsonPart, ReferencePart, TextPart
from ditto_tui.interaction import McpRegistry, open_mcp_servers
from ditto_tui.sandbox import Sandbox
from tests.mcp.mcp_helpers import node_server, sandbox
from tests.typed import json_object

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass(frozen=True)
class Servers:
    registry: McpRegistry
    sandbox: Sandbox
    root: Path
    canary: str

    async def call(self, server: str, tool: str, **arguments: Any) -> ExternalResult:
        call = {"id": f"{server}-{tool}", "name": tool, "arguments": arguments}
        return await self.registry.invoke(server, call, self.sandbox)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def servers(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Servers]:
    base = tmp_path_factory.mktemp("reference")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "hello.txt").write_text("hello from inside the root\n")
    canary = secrets.token_hex(16)
    (outside / "secret.txt").write_text(canary)
    entries = {
        "everything": node_server("mcp-server-everything", "stdio"),
        "files": node_server("mcp-server-filesystem", str(root)),
    }
    async with open_mcp_servers(entries, log_dir=base / "logs") as registry:
        yield Servers(registry, sandbox(base, "everything", "files"), base, canary)


async def test_discovers_every_tool_of_both_servers(servers: Servers) -> None:
    found = await servers.registry.discover(None, servers.sandbox)
    names = {(capability.server, capability.name) for capability in found}
    assert {("everything", "echo"), ("everything", "get-sum"), ("files", "read_text_file")} <= names
    assert {status.state for status in servers.registry.statuses()} == {"connected"}
    read = servers.registry.known_capability("files", "read_text_file")
    assert read is not None and read.annotations is not None and read.annotations["readOnlyHint"] is True


async def test_everything_echo(servers: Servers) -> None:
    result = await servers.call("everything", "echo", message="hi there")
    assert (result.status, result.source, result.call_id) == ("success", "everything:echo", "everything-echo")
    assert result.content == [TextPart(type="text", text="Echo: hi there")]


async def test_everything_content_blocks_become_parts(servers: Servers) -> None:
    image = await servers.call("everything", "get-tiny-image")
    assert isinstance(image.content, list)
    (picture,) = [part for part in image.content if isinstance(part, JsonPart)]
    data = json_object(picture.data)
    assert data["mimeType"] == "image/png" and data["bytes"] > 0
    links = await servers.call("everything", "get-resource-links", count=2)
    assert links.references is not None and len(links.references) == 2
    assert isinstance(links.content, list) and sum(isinstance(p, ReferencePart) for p in links.content) == 2
    structured = await servers.call("everything", "get-structured-content", location="New York")
    assert isinstance(structured.structured_content, dict) and "temperature" in structured.structured_content


async def test_filesystem_reads_a_file_inside_its_root(servers: Servers) -> None:
    result = await servers.call("files", "read_text_file", path=str(servers.root / "root" / "hello.txt"))
    assert result.status == "success"
    assert result.content == [TextPart(type="text", text="hello from inside the root\n")]


async def test_filesystem_refuses_a_path_outside_its_root(servers: Servers) -> None:
    result = await servers.call("files", "read_text_file", path=str(servers.root / "outside" / "secret.txt"))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_TOOL_ERROR"
    assert str(servers.root) not in result.error.message  # the server's message names paths: replaced
    assert servers.canary not in json.dumps(result.to_wire())
