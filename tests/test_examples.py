"""Every ported seed example runs, the way the seed checks its examples file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.interaction import McpDiscovery, McpInvocation, create_interaction_worker
from ditto_tui.runtime import WorkerContext, create_ditto, define_worker
from ditto_tui.sandbox import create_local_sandbox_executor
from ditto_tui.signal import CancelSignal
from examples import interaction as ex
from tests.interaction.web.loopback import LoopbackServer, brave_json, hit

ROOT = Path(__file__).resolve().parents[1]


class FilesClient:
    """An in-process MCP client over a real directory: two discovery pages, one read tool."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        if cursor is None:
            return {
                "tools": [{"name": "read_text_file", "description": "Read a file", "inputSchema": schema}],
                "nextCursor": "page-2",
            }
        return {"tools": [{"name": "list_directory", "inputSchema": schema}]}

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        self.calls.append((name, dict(arguments)))
        text = Path(arguments["path"]).read_text(encoding="utf-8")
        return {"content": [{"type": "text", "text": text}], "isError": False}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "README.md").write_text("# Demo\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    ex.console_sink.delivered.clear()
    return tmp_path


def test_importing_the_examples_runs_none() -> None:
    code = "import examples.interaction as e; assert e.console_sink.delivered == []"
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""


async def test_invoke_tool(workspace: Path) -> None:
    assert await ex.invoke_tool(workspace) == "# Demo\n"


async def test_tool_registry_apis(workspace: Path) -> None:
    seen: dict[str, Any] = {}

    async def probe(input: Any, context: WorkerContext) -> Any:
        seen.update(await ex.tool_registry_apis(context))
        return None

    async with create_ditto(
        sandbox={"tools": ["read_text"], "read": True},
        workspace=workspace,
        workers=[define_worker(type="P", nodes={"P.PROBE": probe})],
    ) as runtime:
        await runtime.invoke("P.PROBE", None)
    assert [d.name for d in seen["definitions"]] == ["read_text"]
    assert seen["result"].content == "# Demo\n"


async def test_setup_interaction_and_invoke_mcp(workspace: Path) -> None:
    client = FilesClient()
    out = await ex.invoke_mcp(client, str(workspace / "README.md"), workspace)
    assert [c.name for c in out["capabilities"]] == ["read_text_file", "list_directory"]
    result: ExternalResult = out["result"]
    assert (result.status, result.call_id, result.source) == ("success", "mcp-read", "files:read_text_file")


async def test_mcp_registry_apis(workspace: Path) -> None:
    out = await ex.mcp_registry_apis(ex.mcp_client_adapter(FilesClient()), str(workspace / "README.md"))
    assert isinstance(out["discovery"], McpDiscovery) and len(out["discovery"].capabilities) == 2
    assert isinstance(out["result"], McpInvocation) and out["result"].result.status == "success"


async def test_observe_apis() -> None:
    out = await ex.observe_apis()
    for observation in (out["local"], out["routed"]):
        assert observation.message.to_wire() == {"role": "tool", "name": "read_text", "content": "file text"}
        assert observation.call_id == "read-1" and observation.status == "success"


async def test_output_api(capsys: pytest.CaptureFixture[str]) -> None:
    receipt = await ex.output_api()
    assert receipt.delivery_id == "report-1" and receipt.status == "accepted"
    assert receipt.artifacts is not None and receipt.artifacts[0].reference.uri == "urn:report:1"
    assert '"id": "report-1"' in capsys.readouterr().out


async def test_errors_permissions_and_configuration(workspace: Path) -> None:
    async with create_ditto(
        sandbox={"tools": ["lookup"]},
        workspace=workspace,
        workers=[create_interaction_worker(tools=[ex.missing_record_tool], output=ex.rejected_sink)],
    ) as runtime:
        result = await runtime.invoke(
            "INTERACTION.ACT.TOOL", {"call": {"id": "l-1", "name": "lookup", "arguments": {}}}
        )
        receipt = await runtime.invoke(
            "INTERACTION.OUTPUT", {"deliveryId": "d-1", "message": {"role": "assistant", "content": None}}
        )
    assert result.status == "failed" and result.error.code == "NOT_FOUND" and result.error.retryable is False
    assert receipt.status == "rejected" and receipt.error.code == "DELIVERY_REJECTED"


@pytest.mark.parametrize("factory", [ex.interaction_nodes, ex.interaction_handlers])
async def test_lower_level_composition(workspace: Path, factory: Any) -> None:
    definition = factory(FilesClient())
    assert set(definition.nodes) == {
        "INTERACTION.ACT.TOOL",
        "INTERACTION.ACT.MCP",
        "INTERACTION.OBSERVE",
        "INTERACTION.OUTPUT",
    }
    async with create_ditto(
        sandbox={"tools": ["read_text"], "read": True, "mcp": ["files"]},
        workspace=workspace,
        workers=[definition],
    ) as runtime:
        result = await runtime.invoke(
            "INTERACTION.ACT.TOOL",
            {"call": {"id": "r", "name": "read_text", "arguments": {"path": "README.md"}}},
        )
        discovery = await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover"})
    assert result.content == "# Demo\n" and len(discovery.capabilities) == 2


def test_node_descriptor_definition() -> None:
    assert ex.observation_definition.type == "INTERACTION.OBSERVE"
    assert ex.observation_definition.worker_type == "INTERACTION"


async def test_interaction_graph_loops_over_two_files(workspace: Path) -> None:
    assert await ex.interaction_graph(workspace) == 2
    assert [d["id"] for d in ex.console_sink.delivered] == ["read:0:delivery", "read:1:delivery"]
    assert ex.console_sink.delivered[0]["message"]["content"] == "# Demo\n"


async def test_tool_to_cached_context(workspace: Path) -> None:
    from ditto_tui.context import ContextStore, create_context_worker

    store = ContextStore()
    async with create_ditto(
        sandbox={"tools": ["read_text", "lookup"], "read": True},
        workspace=workspace,
        workers=[
            create_interaction_worker(tools=[ex.read_text_tool, ex.missing_record_tool]),
            create_context_worker(store=store),
        ],
    ) as runtime:
        call = {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}
        update = await ex.tool_to_cached_context(runtime, "session-1", call)
        with pytest.raises(RuntimeError, match="NOT_FOUND"):
            await ex.tool_to_cached_context(
                runtime, "session-1", {"id": "l-1", "name": "lookup", "arguments": {}}
            )
    assert update.accepted == ("observation:read-1",) and update.size == 1
    [item] = store.items("session-1")
    assert item.content == "# Demo\n" and item.source_node == "INTERACTION.OBSERVE"
    assert item.metadata == {"callId": "read-1", "source": "read_text", "status": "success"}


async def test_command_tools_runtime(workspace: Path) -> None:
    async with ex.command_tools_runtime(create_local_sandbox_executor(workspace), workspace) as runtime:
        assert runtime.services.sandbox.permissions.execute is True
        assert len(runtime.services.sandbox.permissions.tools) == 14
        result = await runtime.invoke(
            "INTERACTION.ACT.TOOL",
            {"call": {"id": "cat-1", "name": "cat", "arguments": {"path": "README.md"}}},
        )
        listing = await runtime.invoke(
            "INTERACTION.ACT.TOOL", {"call": {"id": "ls-1", "name": "ls", "arguments": {}}}
        )
    assert result.status == "success" and result.content == "# Demo\n"
    assert listing.content == "README.md\npyproject.toml\n"


async def test_web_search_runtime_is_built_for_brave(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DITTO_WORKER_INTERACTION_BRAVE_SEARCH_API_KEY", "example-key-0123")
    runtime = ex.web_search_runtime()
    try:
        permissions = runtime.services.sandbox.permissions
        assert permissions.tools == ("web_search",) and permissions.network == (
            "https://api.search.brave.com",
        )
    finally:
        await runtime.close()


async def test_web_search_runtime_against_a_loopback_server(workspace: Path) -> None:
    async with LoopbackServer(
        lambda _: brave_json([hit("Ditto", "https://ditto.example/", "A runtime")])
    ) as server:
        async with ex.web_search_runtime("example-key-0123", server.base_url, workspace) as runtime:
            result = await runtime.invoke(
                "INTERACTION.ACT.TOOL",
                {"call": {"id": "search-1", "name": "web_search", "arguments": {"query": "ditto runtime"}}},
            )
    assert result.status == "success"
    assert [reference.uri for reference in result.references] == ["https://ditto.example/"]
    assert server.requests[0].headers["x-subscription-token"] == "example-key-0123"
