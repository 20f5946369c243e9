"""The bundled demo MCP server, a real subprocess, over stdio and streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ditto_tui import __version__
from ditto_tui.config import load_runtime_config_file, parse_runtime_config
from ditto_tui.contracts import JsonPart, TextPart
from ditto_tui.demo.servers import MODULE, demo_server_args, demo_server_entry
from ditto_tui.errors import McpError
from ditto_tui.home import workspace_state_dir
from ditto_tui.interaction import (
    McpRegistry,
    create_interaction_worker,
    observe_external_result,
    open_mcp_servers,
)
from ditto_tui.runtime import create_ditto
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from tests.mcp.mcp_helpers import ROOT, free_port, http_server, sandbox
from tests.typed import json_object, structured

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULES = [{"mcp": "demo:write_*", "decision": "ask"}, {"mcp": "demo:*", "decision": "allow"}]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def demo(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[McpRegistry, Path]]:
    root = tmp_path_factory.mktemp("demo")
    servers = {"demo": demo_server_entry(root / "notes", catalogue=995)}
    async with open_mcp_servers(servers, log_dir=root / "logs") as registry:
        yield registry, root


def call(call_id: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": tool, "arguments": arguments}


async def test_demo_lists_1000_tools_in_real_pages_of_100(demo: tuple[McpRegistry, Path]) -> None:
    registry, root = demo
    found = await registry.discover("demo", sandbox(root, "demo"))
    names = [capability.name for capability in found]
    assert len(names) == len(set(names)) == 1000
    assert {"list_notes", "read_note", "search_notes", "check_note", "write_note"} <= set(names)
    status = registry.status("demo")
    assert status is not None and (status.state, status.pages, status.tools) == ("connected", 10, 1000)
    assert status.transport == "stdio" and status.server_info == f"ditto-demo {__version__}"


async def test_capabilities_keep_output_schema_and_annotations(demo: tuple[McpRegistry, Path]) -> None:
    registry, root = demo
    await registry.discover("demo", sandbox(root, "demo"))
    search = registry.known_capability("demo", "search_notes")
    write = registry.known_capability("demo", "write_note")
    read = registry.known_capability("demo", "read_note")
    assert search is not None and search.output_schema is not None
    assert "matches" in json_object(search.output_schema["properties"])
    assert (
        write is not None and write.annotations is not None and write.annotations["destructiveHint"] is True
    )
    assert read is not None and read.annotations is not None and read.annotations["readOnlyHint"] is True


async def test_search_keeps_structured_content(demo: tuple[McpRegistry, Path]) -> None:
    registry, root = demo
    result = await registry.invoke(
        "demo", call("s-1", "search_notes", query="approval"), sandbox(root, "demo")
    )
    assert (result.call_id, result.source, result.status) == ("s-1", "demo:search_notes", "success")
    assert structured(result)["count"] >= 2
    assert isinstance(result.content, list) and isinstance(result.content[0], TextPart)


async def test_m12_is_error_is_a_failed_result_never_success(demo: tuple[McpRegistry, Path]) -> None:
    registry, root = demo
    result = await registry.invoke("demo", call("c-1", "check_note", name="scratch"), sandbox(root, "demo"))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_TOOL_ERROR" and "no '# ' title line" in result.error.message
    observation = observe_external_result(result)
    assert observation.status == "failed" and "ended failed" in str(observation.message.content)


class Answers:
    """Answers approval requests from a script, recording each request."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = list(kinds)
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(kind=self.kinds.pop(0))  # type: ignore[arg-type]


def act(call_id: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"operation": "invoke", "server": "demo", "call": call(call_id, tool, **arguments)}


async def test_read_tools_run_and_the_write_tool_asks_through_act_mcp(demo: tuple[McpRegistry, Path]) -> None:
    registry, root = demo
    approver = Answers("deny", "approve")
    gate = ApprovalGate(policy=ApprovalPolicy(RULES), approver=approver)
    worker = create_interaction_worker(mcp=registry, approval=gate)
    async with create_ditto(sandbox={"mcp": ["demo"]}, workspace=root, workers=[worker]) as runtime:
        read = await runtime.invoke("INTERACTION.ACT.MCP", act("r", "read_note", name="welcome"))
        denied = await runtime.invoke(
            "INTERACTION.ACT.MCP", act("w1", "write_note", name="one", text="# 1\n")
        )
        written = await runtime.invoke(
            "INTERACTION.ACT.MCP", act("w2", "write_note", name="two", text="# 2\n")
        )
    assert read.result.status == "success" and "# Welcome" in read.result.content[0].text
    assert [request.tool for request in approver.requests] == ["demo:write_note", "demo:write_note"]
    assert denied.result.error.code == "APPROVAL_DENIED" and not (root / "notes" / "one.md").exists()
    assert written.result.status == "success" and (root / "notes" / "two.md").read_text() == "# 2\n"


async def test_images_never_reach_the_model_as_base64(demo: tuple[McpRegistry, Path]) -> None:
    from mcp.types import CallToolResult, ImageContent

    from ditto_tui.interaction.mcp.content import tool_result

    data = "iVBORw0KGgo" * 100
    fields = tool_result(CallToolResult(content=[ImageContent(data=data, mime_type="image/png")]))
    (part,) = fields["content"]
    assert isinstance(part, JsonPart) and part.data == {
        "type": "image",
        "mimeType": "image/png",
        "bytes": 825,
    }
    assert data not in json.dumps(part.data)


async def test_server_stderr_goes_to_its_log_file_not_the_terminal(
    demo: tuple[McpRegistry, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    registry, root = demo
    await registry.invoke("demo", call("x", "read_note", name="nope"), sandbox(root, "demo"))
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    log = (root / "logs" / "demo.log").read_text()
    assert "[ditto] connected" in log


async def test_demo_over_streamable_http(tmp_path: Path) -> None:
    port = free_port()
    with http_server(demo_server_args(tmp_path / "notes", http_port=port), port, tmp_path / "http.log"):
        servers = {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        async with open_mcp_servers(servers, log_dir=tmp_path / "logs") as registry:
            found = await registry.discover("web", sandbox(tmp_path, "web"))
            result = await registry.invoke(
                "web", call("h", "read_note", name="mcp"), sandbox(tmp_path, "web")
            )
            status = registry.status("web")
    assert len(found) == 5 and result.status == "success"
    assert status is not None and status.transport == "http" and status.state == "connected"


async def test_demo_over_sse(tmp_path: Path) -> None:
    port = free_port()
    with http_server(demo_server_args(tmp_path / "notes", sse_port=port), port, tmp_path / "sse.log"):
        servers = {"old": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"}}
        async with open_mcp_servers(servers, log_dir=tmp_path / "logs") as registry:
            result = await registry.invoke("old", call("e", "list_notes"), sandbox(tmp_path, "old"))
    assert result.status == "success" and "welcome.md" in result.content[0].text  # type: ignore[index,union-attr]


async def test_a_pasted_claude_desktop_block_connects_unchanged(tmp_path: Path) -> None:
    pasted = json.dumps({"demo": demo_server_entry(tmp_path / "notes")})
    config = parse_runtime_config({"sandbox": {"mcp": ["demo"]}, "mcp": {"servers": json.loads(pasted)}}, {})
    async with open_mcp_servers(
        config.mcp.servers, log_dir=tmp_path / "logs", allowed=config.sandbox.mcp
    ) as registry:
        found = await registry.discover(None, sandbox(tmp_path, "demo"))
    assert len(found) == 5


async def test_the_repository_config_starts_the_demo_server_with_its_rules(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    config = load_runtime_config_file(ROOT / "ditto.yaml", {}, workspace=workspace)
    demo = config.mcp.servers["demo"]
    assert "demo" in config.sandbox.mcp and demo.command == "python" and demo.cwd is None
    assert demo.args == ("-m", MODULE, "--root", str(workspace_state_dir(workspace)), "--notes", "demo-notes")
    policy = ApprovalPolicy(rule.model_dump(exclude_none=True) for rule in config.approval.rules)
    read_only = {"readOnlyHint": True}
    assert policy.for_mcp("demo", "write_note", {"destructiveHint": True}).decision == "ask"
    assert all(
        policy.for_mcp("demo", name, read_only).decision == "allow" for name in ("read_note", "search_notes")
    )
    # It starts outside the workspace and keeps its notes outside it too, in its state folder (U-02, U-03).
    async with open_mcp_servers(
        config.mcp.servers, log_dir=tmp_path / "logs", workspace=workspace, allowed=config.sandbox.mcp
    ) as registry:
        listed = await registry.invoke("demo", call("l", "list_notes"), sandbox(workspace, "demo"))
    assert listed.status == "success" and "welcome.md" in listed.content[0].text  # type: ignore[index,union-attr]
    assert (workspace_state_dir(workspace) / "demo-notes" / "welcome.md").is_file()
    assert list(workspace.iterdir()) == []


async def test_the_demo_reads_its_notes_as_resources_completes_their_names_and_prompts(
    tmp_path: Path,
) -> None:
    servers = {"demo": demo_server_entry(tmp_path / "notes")}
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs") as registry:
        index = await registry.read_resource("demo", "notes://index")
        welcome = await registry.read_resource("demo", "note://welcome")
        done = await registry.complete(
            "demo", {"type": "ref/resource", "uri": "note://{name}"}, {"name": "name", "value": "w"}
        )
        prompt = await registry.get_prompt("demo", "summarise_note", {"name": "welcome"})
        with pytest.raises(McpError):
            await registry.read_resource("demo", "note://..%2Fsecret")
    assert "welcome.md" in index["contents"][0]["text"].splitlines()
    welcome_text = (tmp_path / "notes" / "welcome.md").read_text(encoding="utf-8")
    assert welcome["contents"][0]["text"] == welcome_text
    assert done["values"] == ["welcome"]
    (message,) = prompt["messages"]
    assert message["role"] == "user" and welcome_text in message["content"]["text"]
