"""``ditto-tui mcp serve`` driven by the SDK's own client, over stdio, in front of real servers: the demo
server (Python, stdio) and the reference ``server-everything`` (npm, stdio).

Tools, resources, templates, prompts, completion, progress and cancellation pass through; a write asks
the client's person through its form (elicitation) and runs only when approved; a client without a form
gets a refusal that says how to approve; each connection is a run of ``mcp-gateway`` in the journal, its
calls nodes with their decisions and results.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from ditto_tui.demo.servers import demo_server_args
from ditto_tui.runtime.events import (
    ApprovalResolved,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    RunFinished,
    RunStarted,
)
from ditto_tui.supervise.journal import list_runs, read_journal
from tests.mcp.mcp_helpers import node_server

Elicitation = Any
"""The SDK client's elicitation callback (a protocol the test's functions satisfy)."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    monkeypatch.setenv("DITTO_TUI_HOME", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("# a project\n", encoding="utf-8")
    return folder


def two_servers(tmp_path: Path) -> Path:
    """A user's config fronting the demo server and server-everything, with everything's calls allowed."""
    config = tmp_path / "gateway.yaml"
    everything = node_server("mcp-server-everything", "stdio")
    demo = [sys.executable, *demo_server_args(tmp_path / "notes")]
    config.write_text(
        json.dumps(
            {
                "sandbox": {"mcp": ["demo", "everything"]},
                "mcp": {
                    "servers": {
                        "demo": {"command": demo[0], "args": demo[1:]},
                        "everything": everything,
                    }
                },
                "approval": {"rules": [{"mcp": "everything:*", "decision": "allow"}]},
            }
        ),
        encoding="utf-8",
    )
    return config


@contextlib.asynccontextmanager
async def gateway(
    workspace: Path,
    home: Path,
    *options: str,
    elicit: Elicitation | None = None,
    name: str = "gateway-test",
    **callbacks: Any,
) -> AsyncIterator[ClientSession]:
    """A client session with ``ditto-tui mcp serve`` started by the SDK's stdio client (``callbacks``:
    the session's other callbacks, for sampling, logging or every message)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ditto_tui", "--workspace", str(workspace), *options, "mcp", "serve", "--stdio"],
        env={**os.environ, "DITTO_TUI_HOME": str(home)},
    )
    with open(home.parent / "gateway-stderr.log", "a", encoding="utf-8") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(
                read,
                write,
                elicitation_callback=elicit,
                client_info=types.Implementation(name=name, version="1.2"),
                **callbacks,
            ) as session,
        ):
            await session.initialize()
            yield session


def answer(decision: str, reason: str | None = None, asked: list[str] | None = None) -> Elicitation:
    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if asked is not None:
            asked.append(params.message)
        content: dict[str, Any] = {"decision": decision}
        if reason is not None:
            content["reason"] = reason
        return types.ElicitResult(action="accept", content=content)

    return elicit


def gateway_runs(workspace: Path) -> list[Any]:
    return [read_journal(run.path) for run in list_runs(workspace) if run.graph == "mcp-gateway"]


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


# -- one server: names unchanged, a write asks -------------------------------------------------------------


async def test_a_write_asks_the_clients_form_runs_once_approved_and_is_journaled(
    workspace: Path, home: Path
) -> None:
    asked: list[str] = []
    async with gateway(workspace, home, elicit=answer("approve", "looks right", asked)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"list_notes", "read_note", "write_note"} <= set(tools)  # one server: names unchanged
        assert tools["write_note"].annotations is not None
        assert tools["write_note"].annotations.destructive_hint is True  # the server's hints pass on
        listed = await client.call_tool("list_notes", {})  # a read the default policy allows: not asked
        assert not listed.is_error and "welcome.md" in text_of(listed) and asked == []
        wrote = await client.call_tool("write_note", {"name": "gateway.md", "text": "through the gateway"})
    assert not wrote.is_error and "Wrote" in text_of(wrote)
    (message,) = asked
    assert "Tool: demo:write_note" in message and '"name": "gateway.md"' in message
    (journal,) = gateway_runs(workspace)
    (session,) = [run for run in list_runs(workspace) if run.graph == "mcp-gateway"]
    assert session.client == "gateway-test 1.2"  # the runs list names the client
    started = next(e for e in journal.events if isinstance(e, RunStarted))
    assert started.plan == "mcp-gateway"
    nodes = [e.node_id for e in journal.events if isinstance(e, NodeStarted)]
    assert nodes[0] == "session" and {"session/call-2", "session/call-3"} <= set(nodes)
    (resolved,) = [
        e for e in journal.events if isinstance(e, ApprovalResolved) and e.tool == "demo:write_note"
    ]
    assert (resolved.tool, resolved.decision, resolved.decided_by, resolved.via) == (
        "demo:write_note",
        "approve",
        "human",
        "client",
    )
    assert resolved.reason == "looks right"
    assert ended(journal)[resolved_node(journal)] == "finished"
    assert journal.events[-1].kind == "run_finished" and isinstance(journal.events[-1], RunFinished)
    audit = journal_audit(workspace, started.run_id)
    assert "approve by the person at the MCP client" in audit and "via client" in audit


def ended(journal: Any) -> dict[str, str]:
    """How each node of the run ended: finished, failed or cancelled."""
    outcomes = {}
    for event in journal.events:
        if isinstance(event, NodeFinished):
            outcomes[event.node_id] = "finished"
        elif isinstance(event, NodeFailed):
            outcomes[event.node_id] = "cancelled" if event.cancelled else "failed"
    return outcomes


def resolved_node(journal: Any) -> str:
    requested = next(e for e in journal.events if e.kind == "approval_requested")
    return str(requested.node_id)


def journal_audit(workspace: Path, run_id: str) -> str:
    from ditto_tui.__main__ import main

    out = workspace.parent / "audit.txt"
    with open(out, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        assert main(["--workspace", str(workspace), "audit", run_id]) == 0
    return out.read_text(encoding="utf-8")


async def test_a_denied_write_does_not_run_and_the_client_reads_why(workspace: Path, home: Path) -> None:
    async with gateway(workspace, home, elicit=answer("deny", "not that note")) as client:
        denied = await client.call_tool("write_note", {"name": "gateway.md", "text": "no"})
        notes = text_of(await client.call_tool("list_notes", {}))
    assert denied.is_error and "APPROVAL_DENIED" in text_of(denied) and "not that note" in text_of(denied)
    assert "gateway.md" not in notes  # it never ran
    (journal,) = gateway_runs(workspace)
    (resolved,) = [
        e for e in journal.events if isinstance(e, ApprovalResolved) and e.tool == "demo:write_note"
    ]
    assert (resolved.decision, resolved.decided_by, resolved.via) == ("deny", "human", "client")


async def test_without_a_form_a_call_that_asks_is_refused_saying_how_to_approve(
    workspace: Path, home: Path
) -> None:
    async with gateway(workspace, home, name="no-forms") as client:
        refused = await client.call_tool("write_note", {"name": "gateway.md", "text": "no"})
        notes = text_of(await client.call_tool("list_notes", {}))
    text = text_of(refused)
    assert refused.is_error and "no-forms 1.2 cannot ask for it" in text
    assert "ditto-tui inbox" in text and "runs: {host: local}" in text
    assert "gateway.md" not in notes
    (journal,) = gateway_runs(workspace)
    (resolved,) = [
        e for e in journal.events if isinstance(e, ApprovalResolved) and e.tool == "demo:write_note"
    ]
    assert (resolved.decision, resolved.decided_by) == ("deny", "approver")  # no person decided


# -- two servers: SERVER__NAME, everything passes through --------------------------------------------------


async def test_two_servers_tools_resources_prompts_and_completion_pass_through(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    config = two_servers(tmp_path)
    async with gateway(workspace, home, "--config", str(config)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"demo__write_note", "everything__echo", "everything__get-sum"} <= names
        echoed = await client.call_tool("everything__echo", {"message": "hi <b>there</b>\x1b[31m"})
        assert text_of(echoed) == "Echo: hi <b>there</b>\x1b[31m"  # passed on unchanged
        summed = await client.call_tool("everything__get-sum", {"a": 2, "b": 3})
        assert "5" in text_of(summed)
        image = await client.call_tool("everything__get-tiny-image", {})
        assert any(isinstance(block, types.ImageContent) for block in image.content)
        structured = await client.call_tool("everything__get-structured-content", {"location": "Chicago"})
        assert structured.structured_content is not None

        uris: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:  # one server's page at a time, the cursor naming the server
            page = await client.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
            uris += [str(resource.uri) for resource in page.resources]
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
        assert "notes://index" in uris and any(uri.startswith("demo://resource/") for uri in uris)
        assert pages >= 2
        index = await client.read_resource("notes://index")
        assert "welcome.md" in json.dumps(index.model_dump(mode="json"))
        templates: list[str] = []
        cursor = None
        while True:
            listed = await client.list_resource_templates(params=types.PaginatedRequestParams(cursor=cursor))
            templates += [template.uri_template for template in listed.resource_templates]
            cursor = listed.next_cursor
            if cursor is None:
                break
        assert any("demo://resource/dynamic/text/" in template for template in templates)
        dynamic = await client.read_resource("demo://resource/dynamic/text/2")
        assert dynamic.contents and "2" in json.dumps(dynamic.model_dump(mode="json"))

        prompts: set[str] = set()
        cursor = None
        while True:
            offered = await client.list_prompts(params=types.PaginatedRequestParams(cursor=cursor))
            prompts |= {prompt.name for prompt in offered.prompts}
            cursor = offered.next_cursor
            if cursor is None:
                break
        assert {"demo__summarise_note", "everything__simple-prompt", "everything__args-prompt"} <= prompts
        got = await client.get_prompt("everything__args-prompt", {"city": "Chicago", "state": "IL"})
        assert "Chicago" in json.dumps(got.model_dump(mode="json"))
        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name="everything__completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
        assert "Engineering" in completed.completion.values
        with pytest.raises(Exception, match="no fronted server offers a prompt"):
            await client.get_prompt("nobody__nothing")
        unknown = await client.call_tool("nobody__nothing", {})
        assert unknown.is_error and "no fronted server offers a tool" in text_of(unknown)
    (journal,) = gateway_runs(workspace)
    allowed = [
        e for e in journal.events if isinstance(e, ApprovalResolved) and e.tool.startswith("everything")
    ]
    assert {e.decided_by for e in allowed} <= {"rule"} and all(e.decision == "approve" for e in allowed)


async def test_progress_reaches_the_client_and_a_cancelled_call_ends_in_the_run(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    config = two_servers(tmp_path)
    steps: list[float] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    async with gateway(workspace, home, "--config", str(config)) as client:
        done = await client.call_tool(
            "everything__trigger-long-running-operation",
            {"duration": 0.5, "steps": 5},
            progress_callback=progressed,
        )
        assert not done.is_error and steps == [1, 2, 3, 4, 5]
        running = asyncio.ensure_future(
            client.call_tool("everything__trigger-long-running-operation", {"duration": 30, "steps": 3})
        )
        await asyncio.sleep(1.0)
        running.cancel()  # the SDK sends notifications/cancelled
        with contextlib.suppress(asyncio.CancelledError):
            await running
        echoed = await client.call_tool("everything__echo", {"message": "still here"})
        assert text_of(echoed) == "Echo: still here"
    (journal,) = gateway_runs(workspace)
    outcomes = ended(journal)
    calls = [e.node_id for e in journal.events if isinstance(e, NodeStarted) and "/call-" in e.node_id]
    assert [outcomes[call] for call in calls] == ["finished", "cancelled", "finished"]


async def test_a_servers_sampling_elicitation_and_logs_reach_the_client_whose_call_runs(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    """server-everything asks for a sampling and an elicitation inside its tool calls: they reach the
    client that made the call (its model and its person answer), and the server's log messages during a
    call reach that client too."""
    config = two_servers(tmp_path)
    sampled: list[Any] = []
    logged: list[Any] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="the client's model says hello"),
            model="client-model",
        )

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schema = getattr(params, "requested_schema", {}) or {}
        content = {
            name: "Ada" for name, prop in schema.get("properties", {}).items() if prop.get("type") == "string"
        }
        return types.ElicitResult(action="accept", content=content)

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async with gateway(
        workspace,
        home,
        "--config",
        str(config),
        elicit=elicit,
        name="full-client",
        sampling_callback=sample,
        logging_callback=log,
    ) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "everything__trigger-sampling-request",
            "everything__trigger-elicitation-request",
        } <= names
        answered = await client.call_tool(
            "everything__trigger-sampling-request", {"prompt": "Say hello", "maxTokens": 20}
        )
        assert "the client's model says hello" in text_of(answered)
        (asked,) = sampled
        assert "Say hello" in json.dumps(asked.model_dump(mode="json"))
        elicited = await client.call_tool("everything__trigger-elicitation-request", {})
        assert "Ada" in text_of(elicited)
        with pytest.warns(MCPDeprecationWarning):  # deprecated in the newest era only: still served
            await client.set_logging_level("debug")
        await client.call_tool("everything__toggle-simulated-logging", {})
        for _ in range(50):
            if logged:
                break
            await client.call_tool(
                "everything__trigger-long-running-operation", {"duration": 0.2, "steps": 2}
            )
        await client.call_tool("everything__toggle-simulated-logging", {})
    assert logged, "no log message of the server reached the client"


async def test_a_tool_that_changed_is_announced_to_the_client_after_the_drift_check_and_not_called(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    """The upstream changes ``search``'s description and says so: the gateway relists it, the drift
    check holds the changed tool, the client hears tools/list_changed, and a call of it is refused (the
    person accepts the change first, as for a run's call)."""
    hostile = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "hostile.py"
    config = tmp_path / "hostile.yaml"
    config.write_text(
        json.dumps(
            {
                "sandbox": {"mcp": ["hostile"]},
                "mcp": {"servers": {"hostile": {"command": sys.executable, "args": [str(hostile)]}}},
                "approval": {"rules": [{"mcp": "hostile:*", "decision": "allow"}]},
            }
        ),
        encoding="utf-8",
    )
    announced = asyncio.Event()

    async def heard(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            announced.set()

    async with gateway(workspace, home, "--config", str(config), message_handler=heard) as client:
        before = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "search" in before and "id_rsa" not in (before["search"].description or "")
        assert not (await client.call_tool("search", {"query": "x"})).is_error
        await client.call_tool("mutate", {})
        await asyncio.wait_for(announced.wait(), 30)
        refused = await client.call_tool("search", {"query": "x"})
    assert refused.is_error and "MCP_TOOL_CHANGED" in text_of(refused)


async def test_the_sdks_own_client_in_its_default_mode_gets_the_handshake_and_the_form(
    workspace: Path, home: Path
) -> None:
    """``mcp.Client`` offers the newest protocol era first; the gateway answers in the handshake era,
    where it may ask the client's person, and the write is asked and approved there."""
    from mcp import Client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ditto_tui", "--workspace", str(workspace), "mcp", "serve"],
        env={**os.environ, "DITTO_TUI_HOME": str(home)},
    )
    asked: list[str] = []
    async with Client(params, elicitation_callback=answer("approve", None, asked)) as client:
        wrote = await client.call_tool("write_note", {"name": "default.md", "text": "x"})
    assert not wrote.is_error and "Wrote" in text_of(wrote) and len(asked) == 1


async def test_in_read_only_mode_the_gateway_refuses_a_write_without_asking(
    workspace: Path, home: Path
) -> None:
    asked: list[str] = []
    async with gateway(
        workspace, home, "--mode", "read-only", elicit=answer("approve", None, asked)
    ) as client:
        refused = await client.call_tool("write_note", {"name": "ro.md", "text": "x"})
    assert refused.is_error and "APPROVAL_DENIED_BY_MODE" in text_of(refused) and asked == []  # not asked
    (journal,) = gateway_runs(workspace)
    (resolved,) = [
        e for e in journal.events if isinstance(e, ApprovalResolved) and e.tool == "demo:write_note"
    ]
    assert (resolved.decision, resolved.decided_by) == ("deny", "mode")


async def test_x21_a_message_longer_than_the_gateway_takes_is_refused_and_the_connection_goes_on(
    workspace: Path, home: Path
) -> None:
    """Over stdio a client sends one line longer than ``MAX_LINE_BYTES``: the gateway does not hold it
    (the SDK's own reader would, whatever its length), answers nothing for it, and the next request on
    the same connection is served."""
    from ditto_tui.gateway.stdio import MAX_LINE_BYTES

    gateway = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "ditto_tui", "--workspace", str(workspace), "mcp", "serve"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "DITTO_TUI_HOME": str(home)},
        limit=4 * 1024 * 1024,
    )
    assert gateway.stdin is not None and gateway.stdout is not None

    async def send(message: dict[str, Any]) -> None:
        assert gateway.stdin is not None
        gateway.stdin.write(json.dumps(message).encode() + b"\n")
        await gateway.stdin.drain()

    answered: list[object] = []

    async def answer(request_id: int) -> dict[str, Any]:
        assert gateway.stdout is not None
        while True:
            line = await asyncio.wait_for(gateway.stdout.readline(), 60)
            assert line, "the gateway closed its stdout"
            message: dict[str, Any] = json.loads(line)
            answered.append(message.get("id"))
            if message.get("id") == request_id:
                return message

    try:
        client = {"name": "long-lines", "version": "1"}
        await send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
            }
        )
        assert "result" in await answer(1)
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        gateway.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "x": "')
        gateway.stdin.write(b"a" * (MAX_LINE_BYTES + 1024) + b'"}\n')
        await send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        listed = await answer(3)
        assert "write_note" in [tool["name"] for tool in listed["result"]["tools"]]
        assert 2 not in answered  # the long one was not taken in
    finally:
        gateway.stdin.close()
        await asyncio.wait_for(gateway.wait(), 30)
