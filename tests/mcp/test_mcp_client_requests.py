"""Server-to-client requests and progress, against the real ``server-everything``.

With ``client_requests`` the client declares sampling, elicitation and roots, and the server's requests
reach the application's handler; without, the server never offers the tools that would ask. Every tool
call carries a progress token: progress reaches the caller and restarts the call's deadline.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ditto_tui.contracts import ExternalResult
from ditto_tui.demo.servers import demo_server_args
from ditto_tui.errors import McpError
from ditto_tui.interaction import McpRegistry, create_interaction_worker, open_mcp_servers
from ditto_tui.interaction.mcp import McpOfferChanged, connection
from ditto_tui.interaction.mcp.watch import CallWatch
from ditto_tui.runtime import create_ditto
from ditto_tui.sandbox import Sandbox
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from tests.mcp.mcp_helpers import free_port, http_server, node_server, python_server, sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASKING_TOOLS = {
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "get-roots-list",
}


class Answers:
    """A handler whose next answers the tests set; it records what each server asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, Mapping[str, Any]]] = []
        self.sample: Mapping[str, Any] | Exception = {}
        self.elicited: Mapping[str, Any] | Exception = {"action": "decline"}
        self.roots: list[Mapping[str, Any]] = [{"uri": "file:///tmp/work", "name": "work"}]

    async def create_message(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        self.asked.append((server, "sampling", params))
        if isinstance(self.sample, Exception):
            raise self.sample
        return self.sample

    async def elicit(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        self.asked.append((server, "elicitation", params))
        if isinstance(self.elicited, Exception):
            raise self.elicited
        return self.elicited

    async def list_roots(self, server: str) -> list[Mapping[str, Any]]:
        self.asked.append((server, "roots", {}))
        return self.roots


@pytest.fixture(scope="module")
def answers() -> Answers:
    return Answers()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def registry(tmp_path_factory: pytest.TempPathFactory, answers: Answers) -> AsyncIterator[McpRegistry]:
    base = tmp_path_factory.mktemp("asking")
    entries = {"everything": {**node_server("mcp-server-everything", "stdio"), "timeout": 1.0}}
    async with open_mcp_servers(entries, log_dir=base / "logs", client_requests=answers) as opened:
        yield opened


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return sandbox(tmp_path, "everything")


def _text(result: ExternalResult) -> str:
    """Everything the result says, content and error, as one string."""
    return result.model_dump_json()


async def _tool_names(registry: McpRegistry) -> set[str]:
    client = registry.get("everything")
    assert client is not None
    page = await client.list_tools()
    return {tool["name"] for tool in page["tools"]}


async def test_declaring_the_capabilities_offers_every_tool_of_everything(registry: McpRegistry) -> None:
    names = await _tool_names(registry)
    assert len(names) == 17 and ASKING_TOOLS <= names


async def test_without_client_requests_no_capability_is_declared(tmp_path: Path) -> None:
    entries = {"everything": node_server("mcp-server-everything", "stdio")}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        names = await _tool_names(opened)
    assert len(names) == 13 and not ASKING_TOOLS & names


async def test_a_sampling_request_reaches_the_handler_and_its_answer_the_server(
    registry: McpRegistry, answers: Answers, box: Sandbox
) -> None:
    answers.sample = {
        "role": "assistant",
        "content": {"type": "text", "text": "a haiku"},
        "model": "scripted",
    }
    call = {"id": "c1", "name": "trigger-sampling-request", "arguments": {"prompt": "write", "maxTokens": 50}}
    result = await registry.invoke("everything", call, box)
    server, kind, params = answers.asked[-1]
    assert (server, kind) == ("everything", "sampling")
    assert params["maxTokens"] == 50 and params["messages"][0]["content"]["text"].endswith("write")
    assert result.status == "success" and "a haiku" in _text(result)


async def test_a_refused_sampling_request_answers_the_server_with_the_refusal(
    registry: McpRegistry, answers: Answers, box: Sandbox
) -> None:
    answers.sample = McpError("the person rejected the sampling request")
    call = {"id": "c1", "name": "trigger-sampling-request", "arguments": {"prompt": "write", "maxTokens": 50}}
    result = await registry.invoke("everything", call, box)
    assert "the person rejected the sampling request" in _text(result)


async def test_an_answer_that_is_no_message_result_never_reaches_the_server_as_one(
    registry: McpRegistry, answers: Answers, box: Sandbox, tmp_path: Path
) -> None:
    answers.sample = {"role": "assistant", "content": "not content"}  # no model, content not a block
    call = {"id": "c1", "name": "trigger-sampling-request", "arguments": {"prompt": "write", "maxTokens": 50}}
    result = await registry.invoke("everything", call, box)
    assert "not content" not in _text(result)
    assert "the client's sampling answer was not valid" in _text(result)  # the server got an error instead
    status = registry.status("everything")
    assert status is not None and status.state == "connected"


async def test_an_elicitation_is_answered_by_the_handler(
    registry: McpRegistry, answers: Answers, box: Sandbox
) -> None:
    answers.elicited = {"action": "decline"}
    result = await registry.invoke(
        "everything", {"id": "c2", "name": "trigger-elicitation-request", "arguments": {}}, box
    )
    server, kind, params = answers.asked[-1]
    assert (server, kind) == ("everything", "elicitation")
    assert "requestedSchema" in params and params["requestedSchema"]["type"] == "object"
    assert "decline" in _text(result).lower()


async def test_roots_are_what_the_handler_offers(
    registry: McpRegistry, answers: Answers, box: Sandbox
) -> None:
    result = await registry.invoke("everything", {"id": "c3", "name": "get-roots-list", "arguments": {}}, box)
    assert "file:///tmp/work" in _text(result)


async def test_progress_reaches_the_caller_and_restarts_the_deadline(registry: McpRegistry) -> None:
    client = registry.get("everything")
    assert client is not None
    seen: list[tuple[float, float | None]] = []
    # Three seconds of work under a one-second deadline: each step's progress starts the deadline again.
    result = await client.call_tool(  # type: ignore[call-arg]
        "trigger-long-running-operation",
        {"duration": 3, "steps": 6},
        progress=lambda done, total, message: seen.append((done, total)),
    )
    assert "completed" in str(result["content"][0].text)
    assert seen[0] == (1.0, 6.0) and seen[-1] == (6.0, 6.0)


async def test_progress_never_extends_a_call_past_its_total_cap() -> None:
    loop = asyncio.get_running_loop()
    watch = CallWatch(None, timeout=1.0, cap=2.0)
    try:
        start = loop.time()
        for _ in range(5):
            watch.restart()
        assert watch.deadline is not None and watch.deadline <= start + 2.0 + 0.05
    finally:
        watch.stop()


# -- reconnect -------------------------------------------------------------------------------------------


def _marked_entry(mark: str) -> dict[str, Any]:
    """server-everything over stdio, its process marked by an environment variable so a test finds it."""
    entry = node_server("mcp-server-everything", "stdio")
    return {**entry, "env": {**entry.get("env", {}), "DITTO_TEST_MARK": mark}}


def _kill_server(mark: str) -> None:
    """Kill the processes of the server marked ``mark`` (as a crash would)."""
    killed = 0
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            marked = f"DITTO_TEST_MARK={mark}".encode() in environ.read_bytes().split(b"\0")
        except OSError:
            continue
        if marked:
            os.kill(int(environ.parent.name), signal.SIGKILL)
            killed += 1
    assert killed


async def _state(registry: McpRegistry, wanted: str, seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        while (status := registry.status("everything")) is None or status.state != wanted:
            await asyncio.sleep(0.05)


async def test_m14_reconnect_starts_a_lost_server_again_and_lists_its_tools(tmp_path: Path) -> None:
    entries = {"everything": _marked_entry(tmp_path.name)}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        await opened.discover("everything", sandbox(tmp_path, "everything"))
        _kill_server(tmp_path.name)
        await _state(opened, "disconnected", 1.0)  # noticed within a second, with no call running
        await opened.reconnect("everything")
        status = opened.status("everything")
        assert status is not None and (status.state, status.tools) == ("connected", 13)
        result = await opened.invoke(
            "everything",
            {"id": "e1", "name": "echo", "arguments": {"message": "back"}},
            sandbox(tmp_path, "everything"),
        )
        assert result.status == "success" and "back" in _text(result)


async def test_m14_a_call_in_flight_when_reconnecting_fails_and_is_not_replayed(tmp_path: Path) -> None:
    entries = {"everything": node_server("mcp-server-everything", "stdio")}
    box = sandbox(tmp_path, "everything")
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        call = {
            "id": "slow",
            "name": "trigger-long-running-operation",
            "arguments": {"duration": 5, "steps": 5},
        }
        running = asyncio.create_task(opened.invoke("everything", call, box))
        await asyncio.sleep(0.5)
        await opened.reconnect("everything")
        result = await asyncio.wait_for(running, 5)
        assert result.status != "success" and result.error is not None
        assert result.error.code == "MCP_SERVER_DISCONNECTED"


async def test_a_lost_server_is_started_again_automatically_with_backoff(tmp_path: Path) -> None:
    entries = {"everything": _marked_entry(tmp_path.name)}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs", reconnect_delays=(0.2, 0.5)) as opened:
        _kill_server(tmp_path.name)
        await _state(opened, "disconnected", 1.0)
        await _state(opened, "connected", 15.0)
        client = opened.get("everything")
        assert client is not None
        assert len((await client.list_tools())["tools"]) == 13


async def test_a_client_registered_directly_cannot_be_reconnected(registry: McpRegistry) -> None:
    bare = McpRegistry()
    client = registry.get("everything")
    assert client is not None
    bare.register("direct", client)
    with pytest.raises(McpError, match="cannot be reconnected"):
        await bare.reconnect("direct")


async def test_an_idle_http_server_that_goes_away_is_noticed_by_a_ping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "IDLE_PING_SECONDS", 0.2)
    port = free_port()
    with http_server(
        demo_server_args(tmp_path / "notes", http_port=port), port, tmp_path / "http.log"
    ) as process:
        servers = {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        async with open_mcp_servers(servers, log_dir=tmp_path / "logs") as opened:
            status = opened.status("web")
            assert status is not None and status.state == "connected"
            process.kill()
            async with asyncio.timeout(10):
                while (status := opened.status("web")) is not None and status.state == "connected":
                    await asyncio.sleep(0.05)
    assert status is not None and status.state == "disconnected"
    assert status.error  # the ping's failed request or the ping watch itself says why


async def test_changed_roots_are_announced_and_the_server_asks_again(
    registry: McpRegistry, answers: Answers, box: Sandbox
) -> None:
    answers.roots = [{"uri": "file:///tmp/elsewhere", "name": "elsewhere"}]
    before = sum(1 for _, kind, _ in answers.asked if kind == "roots")
    assert await registry.roots_changed() == ["everything"]
    async with asyncio.timeout(5):
        while sum(1 for _, kind, _ in answers.asked if kind == "roots") == before:
            await asyncio.sleep(0.05)
    result = await registry.invoke("everything", {"id": "c4", "name": "get-roots-list", "arguments": {}}, box)
    assert "file:///tmp/elsewhere" in _text(result)


async def test_progress_of_an_act_mcp_invoke_becomes_mcp_progress_events(tmp_path: Path) -> None:
    events: list[Any] = []
    entries = {"everything": node_server("mcp-server-everything", "stdio")}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        worker = create_interaction_worker(mcp=opened)
        async with create_ditto(
            sandbox={"mcp": ["everything"]}, workspace=tmp_path, workers=[worker]
        ) as runtime:
            runtime.subscribe(events.append)
            call = {
                "id": "p1",
                "name": "trigger-long-running-operation",
                "arguments": {"duration": 1, "steps": 3},
            }
            done = await runtime.invoke(
                "INTERACTION.ACT.MCP", {"operation": "invoke", "server": "everything", "call": call}
            )
    assert done.result.status == "success"
    progress = [event.data for event in events if getattr(event, "name", None) == "mcp_progress"]
    assert [(item["progress"], item["total"]) for item in progress] == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
    assert {(item["server"], item["tool"], item["call_id"]) for item in progress} == {
        ("everything", "trigger-long-running-operation", "p1")
    }


# -- tools this client cannot call -----------------------------------------------------------------------


class Recording:
    """An approver that approves and records every request put to it."""

    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(kind="approve")


async def test_a_tool_that_requires_tasks_is_listed_as_unsupported_and_refused_before_any_ask(
    tmp_path: Path,
) -> None:
    approver = Recording()
    gate = ApprovalGate(policy=ApprovalPolicy([{"mcp": "raw:*", "decision": "ask"}]), approver=approver)
    entries = {"raw": python_server("raw.py", "tasks")}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        worker = create_interaction_worker(mcp=opened, approval=gate)
        async with create_ditto(sandbox={"mcp": ["raw"]}, workspace=tmp_path, workers=[worker]) as runtime:
            listed = await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "raw"})
            call = {"id": "t1", "name": "background", "arguments": {}}
            done = await runtime.invoke(
                "INTERACTION.ACT.MCP", {"operation": "invoke", "server": "raw", "call": call}
            )
    found = {tool.name: tool for tool in listed.capabilities}
    assert found["plain"].title == "Plain tool" and found["plain"].unsupported is None
    assert found["either"].unsupported is None  # optional task support: called the ordinary way
    assert found["background"].unsupported is not None and "taskSupport" in found["background"].unsupported
    result = done.result
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_TOOL_UNSUPPORTED" and "task" in result.error.message
    assert approver.requests == []  # refused before anything was put to the person


# -- what a server says changed --------------------------------------------------------------------------


async def test_updates_of_a_subscribed_resource_reach_the_listeners(
    registry: McpRegistry, box: Sandbox
) -> None:
    seen: list[McpOfferChanged] = []
    unsubscribe = registry.on_offer_change(seen.append)
    try:
        listed = await registry.list_resources("everything")
        uri = listed["resources"][0]["uri"]
        await registry.subscribe_resource("everything", uri)
        toggle = {"id": "u1", "name": "toggle-subscriber-updates", "arguments": {}}
        assert (await registry.invoke("everything", toggle, box)).status == "success"
        try:
            async with asyncio.timeout(15):
                while not any(change.kind == "resource" and change.uri == uri for change in seen):
                    await asyncio.sleep(0.1)
        finally:
            await registry.invoke("everything", {**toggle, "id": "u2"}, box)
            await registry.unsubscribe_resource("everything", uri)
    finally:
        unsubscribe()
    assert all(change.server == "everything" for change in seen)
