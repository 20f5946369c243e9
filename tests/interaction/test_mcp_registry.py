"""McpRegistry at the port level: budgets, cursors, schemas, permission and result mapping."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import McpError, PermissionDeniedError, ValidationError
from ditto_tui.interaction import McpRegistry
from ditto_tui.sandbox import Sandbox, SandboxPermissions


class PagedServer:
    """Serves ``pages`` (lists of tool names) with cursors from ``cursors``."""

    def __init__(
        self,
        pages: list[list[str]],
        cursors: list[str | None] | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> None:
        self.pages = pages
        self.cursors = cursors or [f"p{i + 1}" for i in range(len(pages) - 1)] + [None]
        self.listed: list[str | None] = []
        self.result = result or {"content": "done"}

    async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        self.listed.append(cursor)
        index = len(self.listed) - 1
        tools = [{"name": name, "inputSchema": {"type": "object"}} for name in self.pages[index]]
        page: dict[str, Any] = {"tools": tools}
        if self.cursors[index] is not None:
            page["nextCursor"] = self.cursors[index]
        return page

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: Any = None
    ) -> Mapping[str, Any]:
        return self.result


def sandbox(tmp_path: Path, *servers: str) -> Sandbox:
    return Sandbox(SandboxPermissions(mcp=servers), workspace=tmp_path)


async def test_discovery_follows_cursors_across_servers_in_order(tmp_path: Path) -> None:
    registry = McpRegistry()
    registry.register("a", PagedServer([["a1"], ["a2"]]))
    registry.register("b", PagedServer([["b1"]]))
    found = await registry.discover(None, sandbox(tmp_path, "a", "b"))
    assert [(c.server, c.name) for c in found] == [("a", "a1"), ("a", "a2"), ("b", "b1")]


async def test_a_denied_server_raises_and_is_never_skipped(tmp_path: Path) -> None:
    registry = McpRegistry()
    allowed, denied = PagedServer([["x"]]), PagedServer([["y"]])
    registry.register("allowed", allowed)
    registry.register("denied", denied)
    with pytest.raises(PermissionDeniedError):
        await registry.discover(None, sandbox(tmp_path, "allowed"))
    assert allowed.listed == [] and denied.listed == []


@pytest.mark.parametrize("cursors", [["c", "c", None], ["", "", None], ["a", "b", "a"]])
async def test_a_repeated_cursor_fails(tmp_path: Path, cursors: list[str | None]) -> None:
    registry = McpRegistry()
    registry.register("s", PagedServer([["t1"], ["t2"], ["t3"], ["t4"]], cursors + [None]))
    with pytest.raises(McpError, match="repeated"):
        await registry.discover("s", sandbox(tmp_path, "s"))


async def test_the_empty_string_is_a_cursor(tmp_path: Path) -> None:
    server = PagedServer([["t1"], ["t2"]], ["", None])
    registry = McpRegistry()
    registry.register("s", server)
    assert len(await registry.discover("s", sandbox(tmp_path, "s"))) == 2
    assert server.listed == [None, ""]


async def test_page_budget_is_per_discover_call_across_servers(tmp_path: Path) -> None:
    registry = McpRegistry(max_discovery_pages=2)
    registry.register("a", PagedServer([["a1"]]))
    registry.register("b", PagedServer([["b1"], ["b2"]]))
    with pytest.raises(McpError, match="page limit"):
        await registry.discover(None, sandbox(tmp_path, "a", "b"))
    fresh = McpRegistry(max_discovery_pages=2)
    fresh.register("b", PagedServer([["b1"], ["b2"]]))
    assert len(await fresh.discover("b", sandbox(tmp_path, "b"))) == 2


async def test_capability_limit_is_never_exceeded_by_merging_a_page(tmp_path: Path) -> None:
    registry = McpRegistry(max_capabilities=3)
    registry.register("s", PagedServer([["a", "b"], ["c", "d"]]))
    with pytest.raises(McpError, match="capability limit"):
        await registry.discover("s", sandbox(tmp_path, "s"))


@pytest.mark.parametrize(
    "tool",
    [
        {"name": "x"},
        {"name": "x", "inputSchema": "object"},
        {"name": "", "inputSchema": {}},
        {"name": "x", "inputSchema": {}, "outputSchema": []},
        "x",
    ],
)
async def test_invalid_schemas_fail_the_discovery(tmp_path: Path, tool: Any) -> None:
    class Bad(PagedServer):
        async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
            return {"tools": [tool]}

    registry = McpRegistry()
    registry.register("s", Bad([[]]))
    with pytest.raises(McpError):
        await registry.discover("s", sandbox(tmp_path, "s"))


def test_register_rules() -> None:
    registry = McpRegistry()
    unregister = registry.register("s", PagedServer([[]]))
    with pytest.raises(ValidationError):
        registry.register("s", PagedServer([[]]))
    with pytest.raises(ValidationError):
        registry.register("", PagedServer([[]]))
    assert unregister() is True and unregister() is False
    with pytest.raises(ValidationError):
        McpRegistry(max_discovery_pages=0)


async def test_invoke_preserves_the_call_id_and_names_the_source(tmp_path: Path) -> None:
    registry = McpRegistry()
    registry.register(
        "files",
        PagedServer([[]], result={"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": 1}}),
    )
    result = await registry.invoke(
        "files", {"id": "m-1", "name": "read", "arguments": {}}, sandbox(tmp_path, "files")
    )
    assert (result.call_id, result.source, result.status) == ("m-1", "files:read", "success")
    assert result.structured_content == {"n": 1}


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (None, "MCP_TOOL_ERROR", "The MCP server reported a tool error"),
        ({"code": "NOT_FOUND", "message": "No such note"}, "NOT_FOUND", "No such note"),
        (
            {"code": "E", "message": "Traceback at /srv/app.py line 3\nKeyError"},
            "MCP_TOOL_ERROR",
            "The MCP server reported a tool error",
        ),
        (
            {"code": "E", "message": "token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"},
            "MCP_TOOL_ERROR",
            "The MCP server reported a tool error",
        ),
    ],
)
async def test_is_error_becomes_failed_with_a_safe_error(
    tmp_path: Path, error: Any, code: str, message: str
) -> None:
    registry = McpRegistry()
    registry.register(
        "s", PagedServer([[]], result={"content": "raw diagnostics", "isError": True, "error": error})
    )
    result = await registry.invoke("s", {"id": "m", "name": "t", "arguments": {}}, sandbox(tmp_path, "s"))
    assert result.status == "failed" and result.error is not None
    assert (result.error.code, result.error.message) == (code, message)
