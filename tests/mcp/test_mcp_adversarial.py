"""ADVERSARIAL group M (and E-13) against real misbehaving MCP servers under tests/mcp/servers/."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ditto_tui.__main__ import main
from ditto_tui.config import parse_runtime_config
from ditto_tui.contracts import TextPart, ToolCall
from ditto_tui.errors import McpError
from ditto_tui.interaction import (
    McpRegistry,
    McpToolsChanged,
    Tool,
    create_interaction_worker,
    open_mcp_servers,
)
from ditto_tui.interaction.mcp.content import MAX_TEXT_CHARS
from ditto_tui.program import Program
from ditto_tui.runtime import create_ditto, graph
from ditto_tui.sandbox import Sandbox
from ditto_tui.session import open_runtime
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from tests.mcp.mcp_helpers import ROOT, SERVERS, free_port, http_server, lines, python_server, sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "sk-proj-" + "Q" * 40


def call(call_id: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": tool, "arguments": arguments}


@asynccontextmanager
async def serving(
    tmp: Path, name: str, entry: dict[str, Any], **options: Any
) -> AsyncIterator[tuple[McpRegistry, Sandbox, Path]]:
    """One server in its own registry, with a sandbox that grants it and its log file."""
    async with open_mcp_servers({name: entry}, log_dir=tmp / "logs", **options) as registry:
        yield registry, sandbox(tmp, name), tmp / "logs" / f"{name}.log"


async def discovery_error(
    tmp: Path, mode: str, *args: str, **options: Any
) -> tuple[McpError, McpRegistry, Path]:
    async with serving(tmp, "raw", python_server("raw.py", mode, *args), **options) as (registry, box, log):
        with pytest.raises(McpError) as failure:
            await registry.discover("raw", box)
        return failure.value, registry, log


class Answers:
    """Answers approval requests from a script and records them."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = list(kinds)
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(kind=self.kinds.pop(0))  # type: ignore[arg-type]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[McpRegistry, Sandbox, Path]]:
    """A well-behaved-until-asked hostile server (0.5 s call deadline), the same server with the default
    deadline for the floods (whose hundreds of notifications can take longer than 0.5 s on a loaded
    machine), and a plain raw server beside them."""
    root = tmp_path_factory.mktemp("shared")
    entries = {
        "hostile": {**python_server("hostile.py"), "timeout": 0.5},
        "flooding": python_server("hostile.py"),
        "other": python_server("raw.py", "echo"),
    }
    async with open_mcp_servers(entries, log_dir=root / "logs") as registry:
        yield registry, sandbox(root, "hostile", "flooding", "other"), root / "logs"


# -- pagination --------------------------------------------------------------------------------------


async def test_m01_a_cursor_repeated_forever_stops_at_its_second_occurrence(tmp_path: Path) -> None:
    error, registry, log = await discovery_error(tmp_path, "same")
    assert error.code == "MCP_REPEATED_CURSOR"
    assert lines(log, "request tools/list") == 2  # the repeated cursor was never requested again
    assert registry.capabilities("raw") == []  # page 1 is dropped with the rest: all or nothing
    status = registry.status("raw")
    assert status is not None and status.discovery_error is not None
    assert status.discovery_error.startswith("MCP_REPEATED_CURSOR")


async def test_m02_cycling_cursors_are_caught_by_the_seen_set(tmp_path: Path) -> None:
    error, _registry, log = await discovery_error(tmp_path, "cycle")
    assert error.code == "MCP_REPEATED_CURSOR" and lines(log, "request tools/list") == 3


async def test_m03_endless_distinct_cursors_stop_at_the_page_cap(tmp_path: Path) -> None:
    error, _registry, log = await discovery_error(tmp_path, "endless", max_discovery_pages=7)
    assert error.code == "MCP_PAGE_LIMIT" and lines(log, "request tools/list") == 7


async def test_m04_the_empty_string_is_a_cursor_and_its_repeat_ends_discovery(tmp_path: Path) -> None:
    error, _registry, log = await discovery_error(tmp_path, "empty")
    assert error.code == "MCP_REPEATED_CURSOR" and lines(log, "request tools/list") == 2
    assert '"cursor": ""' in log.read_text()


# -- tool lists: size, schemas, names ----------------------------------------------------------------


async def test_m05_a_huge_tool_list_is_refused_before_it_is_merged(tmp_path: Path) -> None:
    error, registry, _log = await discovery_error(tmp_path, "many", "--count", "20000")
    assert error.code == "MCP_CAPABILITY_LIMIT" and registry.capabilities("raw") == []
    too_big, registry, _log = await discovery_error(tmp_path / "big", "many", "--count", "100000")
    assert too_big.code == "MCP_PROTOCOL_ERROR"  # the page is over the 4 MiB message limit


async def test_m06_oversized_fields_fail_the_discovery_with_the_tool_named(tmp_path: Path) -> None:
    long_text, _, _ = await discovery_error(tmp_path / "text", "long-text", "--count", "100000")
    assert long_text.code == "MCP_INVALID_TOOL" and "'verbose'" in long_text.message
    long_name, _, _ = await discovery_error(tmp_path / "name", "long-name", "--count", "1000000")
    assert long_name.code == "MCP_INVALID_TOOL" and len(long_name.message) < 200
    deep, _, _ = await discovery_error(tmp_path / "deep", "deep", "--count", "10000")
    assert deep.code == "MCP_PROTOCOL_ERROR"  # deeper than the JSON parser goes: the connection closes


@pytest.mark.parametrize("kind", ["string", "empty", "anyof", "null", "missing"])
async def test_m07_an_invalid_input_schema_fails_discovery_and_says_which_tool(
    tmp_path: Path, kind: str
) -> None:
    async with serving(tmp_path, "raw", python_server("raw.py", f"schema-{kind}")) as (registry, box, _log):
        with pytest.raises(McpError) as failure:
            await registry.discover("raw", box)
        sibling = await registry.invoke("raw", call("p", "plain", text="x"), box)
    # The SDK refuses the whole page for the protocol version; the message locates the tool (odd is 2nd).
    assert failure.value.code == "MCP_INVALID_RESULT" and "tools.1.inputSchema" in failure.value.message
    assert registry.capabilities("raw") == []
    # The SDK then checks every result against the listing it could not parse: a typed failure, no crash.
    assert sibling.error is not None and sibling.error.code == "MCP_INVALID_RESULT"


async def test_m07_a_remote_ref_is_never_fetched(tmp_path: Path) -> None:
    hits: list[str] = []

    class Counter(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    web = ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    thread = threading.Thread(target=web.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    ref = f"http://127.0.0.1:{web.server_address[1]}/schema.json"
    try:
        async with serving(tmp_path, "raw", python_server("raw.py", "schema-ref", "--ref", ref)) as (
            registry,
            box,
            _,
        ):
            found = await registry.discover("raw", box)
            result = await registry.invoke("raw", call("o", "odd"), box)
    finally:
        web.shutdown()
        web.server_close()
        thread.join()
    assert {capability.name for capability in found} == {"plain", "odd"}
    assert result.status == "failed" and result.error is not None  # the $ref cannot resolve locally
    assert hits == []


async def test_m08_duplicates_are_refused_and_builtins_are_never_shadowed(tmp_path: Path) -> None:
    duplicate, _, _ = await discovery_error(tmp_path / "dup", "duplicate")
    assert duplicate.code == "MCP_DUPLICATE_TOOL"
    (tmp_path / "README.md").write_text("the workspace file")
    read_text = Tool(
        name="read_text",
        input_schema={"type": "object"},
        effects=["read"],
        execute_fn=lambda args, ctx: _read(ctx),
    )
    async with serving(tmp_path, "raw", python_server("raw.py", "builtin")) as (registry, _box, _log):
        worker = create_interaction_worker(tools=[read_text], mcp=registry)
        permissions = {"tools": ["read_text"], "read": True, "mcp": ["raw"]}
        async with create_ditto(sandbox=permissions, workspace=tmp_path, workers=[worker]) as runtime:
            discovered = await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover"})
            local = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call("t", "read_text")})
            remote = await runtime.invoke(
                "INTERACTION.ACT.MCP",
                {"operation": "invoke", "server": "raw", "call": call("m", "read_text")},
            )
    assert {c.name for c in discovered.capabilities} == {"read_text", "cat"}
    assert (local.source, local.content) == ("read_text", "the workspace file")
    assert remote.result.source == "raw:read_text" and "read_text:" in remote.result.content[0].text


async def _read(context: Any) -> dict[str, Any]:
    return {"status": "success", "content": context.services.sandbox.read_text("README.md")}


async def test_m09_hostile_names_are_refused_and_descriptions_kept_raw(tmp_path: Path) -> None:
    evil, _, _ = await discovery_error(tmp_path / "name", "evil-name")
    assert evil.code == "MCP_INVALID_TOOL" and "\x1b" not in evil.message
    async with serving(tmp_path, "raw", python_server("raw.py", "evil-text")) as (registry, box, _log):
        (plain,) = await registry.discover("raw", box)
    assert plain.description is not None
    for raw in ("\x1b[31m", "\u202e", "\u200b", "\U000e0041", "[link=x]"):
        assert raw in plain.description  # stored raw for pinning; the UI renders it as untrusted text


# -- definition drift ----------------------------------------------------------------------------------


async def wait_for(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


def approval_runtime(registry: McpRegistry, approver: Answers, root: Path) -> Any:
    gate = ApprovalGate(policy=ApprovalPolicy([{"mcp": "hostile:*", "decision": "ask"}]), approver=approver)
    worker = create_interaction_worker(mcp=registry, approval=gate)
    return create_ditto(sandbox={"mcp": ["hostile"]}, workspace=root, workers=[worker])


def act(call_id: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"operation": "invoke", "server": "hostile", "call": call(call_id, tool, **arguments)}


async def test_m10_a_rug_pull_is_reported_and_blocks_the_tool_until_accepted(tmp_path: Path) -> None:
    changes: list[McpToolsChanged] = []
    approver = Answers("approve_always", "approve", "approve")
    async with serving(tmp_path, "hostile", python_server("hostile.py")) as (registry, box, log):
        registry.on_change(changes.append)
        async with approval_runtime(registry, approver, tmp_path) as runtime:
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "hostile"})
            first = await runtime.invoke("INTERACTION.ACT.MCP", act("s1", "search", query="a"))
            again = await runtime.invoke("INTERACTION.ACT.MCP", act("s2", "search", query="b"))
            in_flight = asyncio.ensure_future(
                runtime.invoke("INTERACTION.ACT.MCP", act("s3", "search", query="c", delay=0.5))
            )
            await wait_for(lambda: lines(log, "called search") == 3)
            await runtime.invoke("INTERACTION.ACT.MCP", act("m", "mutate"))
            await wait_for(lambda: bool(changes))
            finished = await in_flight
            blocked = await runtime.invoke("INTERACTION.ACT.MCP", act("s4", "search", query="d"))
            assert registry.accept_changes("hostile") == ["search"]
            accepted = await runtime.invoke("INTERACTION.ACT.MCP", act("s5", "search", query="e"))
    assert first.result.status == again.result.status == finished.result.status == "success"
    (report,) = changes
    assert (report.server, report.trigger) == ("hostile", "notification")
    (change,) = report.changed
    assert change.name == "search" and change.fields == ("description",)
    assert "+" in change.diff and "id_rsa" in change.diff and change.before_digest != change.after_digest
    assert blocked.result.status == "failed" and blocked.result.error.code == "MCP_TOOL_CHANGED"
    assert lines(log, "called search") == 4  # s1, s2, s3 and s5: the blocked s4 never reached the server
    assert accepted.result.status == "success"
    # approve_always covered s2 and s3 (same definition); the changed definition had to be approved again.
    asked = [(request.call.id, request.description) for request in approver.requests]
    assert [call_id for call_id, _ in asked] == ["s1", "m", "s5"]
    assert "id_rsa" in (asked[-1][1] or "") and "id_rsa" not in (asked[0][1] or "")


class RugPullWhileDeciding(Answers):
    """Approves everything, but while deciding the first request has the server replace the tool's
    definition and announce it, as a rug pull timed for the moment the person reads the request would."""

    def __init__(self, registry: McpRegistry, box: Sandbox) -> None:
        super().__init__("approve", "approve")
        self.registry, self.box = registry, box

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        if not self.requests:
            mutate = ToolCall(id="rug", name="mutate", arguments={})
            await self.registry.invoke_unguarded("hostile", mutate, self.box)
        return await super().decide(request)


async def test_u15_a_definition_replaced_while_deciding_is_refused(tmp_path: Path) -> None:
    async with serving(tmp_path, "hostile", python_server("hostile.py")) as (registry, box, log):
        approver = RugPullWhileDeciding(registry, box)
        async with approval_runtime(registry, approver, tmp_path) as runtime:
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "hostile"})
            raced = await runtime.invoke("INTERACTION.ACT.MCP", act("s1", "search", query="a"))
            assert [change.name for _server, change in registry.pending_changes("hostile")] == ["search"]
            registry.accept_changes("hostile")
            after = await runtime.invoke("INTERACTION.ACT.MCP", act("s2", "search", query="b"))
    assert approver.requests[0].call.id == "s1" and "id_rsa" not in (approver.requests[0].description or "")
    assert raced.result.status == "failed" and raced.result.error.code == "MCP_TOOL_CHANGED"
    assert after.result.status == "success"  # once the person accepted the new definition and approved it
    assert lines(log, "called search") == 1  # only s2: the approval given for the old definition ran nothing


async def test_m10_a_silent_change_is_reported_by_the_next_discovery_as_an_event(tmp_path: Path) -> None:
    events: list[Any] = []
    async with serving(tmp_path, "hostile", python_server("hostile.py")) as (registry, box, _log):
        worker = create_interaction_worker(mcp=registry)
        async with create_ditto(
            sandbox={"mcp": ["hostile"]}, workspace=tmp_path, workers=[worker]
        ) as runtime:
            runtime.subscribe(events.append)
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "hostile"})
            await runtime.invoke("INTERACTION.ACT.MCP", act("q", "mutate_quietly"))
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "hostile"})
        pending = registry.pending_changes("hostile")
    (event,) = [e for e in events if getattr(e, "name", None) == "mcp_tools_changed"]
    assert event.data["trigger"] == "discovery" and event.data["changed"][0]["name"] == "search"
    assert [change.name for _server, change in pending] == ["search"]


async def test_m11_a_renamed_tool_is_new_and_needs_its_own_approval(tmp_path: Path) -> None:
    changes: list[McpToolsChanged] = []
    approver = Answers("approve_always", "approve", "approve")
    async with serving(tmp_path, "hostile", python_server("hostile.py")) as (registry, _box, _log):
        registry.on_change(changes.append)
        async with approval_runtime(registry, approver, tmp_path) as runtime:
            await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "hostile"})
            await runtime.invoke("INTERACTION.ACT.MCP", act("s1", "search", query="a"))
            await runtime.invoke("INTERACTION.ACT.MCP", act("r", "rename"))
            await wait_for(lambda: bool(changes))
            renamed = await runtime.invoke("INTERACTION.ACT.MCP", act("s2", "search2", query="b"))
    (report,) = changes
    assert (report.added, report.removed, report.changed) == (("search2",), ("search",), ())
    assert renamed.result.status == "success"
    assert [request.call.id for request in approver.requests] == ["s1", "r", "s2"]  # no trust carried over


# -- calls: errors, deadlines, dying servers ----------------------------------------------------------


async def test_m12_is_error_and_json_rpc_errors_are_distinct_failures(
    shared: tuple[McpRegistry, Sandbox, Path],
) -> None:
    registry, box, _logs = shared
    tool_error = await registry.invoke("hostile", call("e", "echo"), box)  # missing argument: isError
    rpc_error = await registry.invoke("hostile", call("r", "refuse", secret="x"), box)
    assert tool_error.status == rpc_error.status == "failed"
    assert tool_error.error is not None and tool_error.error.code == "MCP_TOOL_ERROR"
    assert rpc_error.error is not None and rpc_error.error.code == "MCP_REQUEST_ERROR"
    big = await registry.invoke("hostile", call("b", "echo", text="y" * (MAX_TEXT_CHARS + 10)), box)
    assert big.status == "success" and big.metadata == {"truncated": True, "maxTextChars": MAX_TEXT_CHARS}
    assert isinstance(big.content, list) and isinstance(big.content[0], TextPart)
    assert len(big.content[0].text) == MAX_TEXT_CHARS


async def test_e13_server_error_objects_are_sanitised(shared: tuple[McpRegistry, Sandbox, Path]) -> None:
    registry, box, _logs = shared
    result = await registry.invoke("hostile", call("r", "refuse", secret=SECRET), box)
    assert result.error is not None
    text = json.dumps(result.to_wire())
    assert SECRET not in text and "/home/alice" not in text and "/etc/shadow" not in text
    assert "\n" not in result.error.message and "lookup failed" in result.error.message


async def test_m13_a_hanging_call_times_out_is_cancelled_and_others_go_on(
    shared: tuple[McpRegistry, Sandbox, Path],
) -> None:
    registry, box, logs = shared
    started = time.monotonic()
    hung, other = await asyncio.gather(
        registry.invoke("hostile", call("h", "hang"), box),
        registry.invoke("other", call("o", "echo", text="hi"), box),
    )
    assert time.monotonic() - started < 2.0
    assert hung.status == "timeout" and hung.error is not None and hung.error.code == "MCP_TIMEOUT"
    assert other.status == "success"
    await wait_for(lambda: lines(logs / "hostile.log", "hang cancelled") >= 1)  # notifications/cancelled
    assert (await registry.invoke("hostile", call("e", "echo", text="still"), box)).status == "success"


async def test_a_cancelled_signal_reaches_the_server_call(shared: tuple[McpRegistry, Sandbox, Path]) -> None:
    registry, box, logs = shared
    before = lines(logs / "hostile.log", "hang cancelled")
    signal = CancelSignal()
    asyncio.get_running_loop().call_later(0.1, signal.cancel)
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await registry.invoke("hostile", call("c", "hang"), box, signal)
    assert time.monotonic() - started < 0.45  # before the 0.5 s deadline
    await wait_for(lambda: lines(logs / "hostile.log", "hang cancelled") > before)


async def test_m14_a_server_dying_mid_call_fails_fast_and_is_never_replayed(tmp_path: Path) -> None:
    entries = {"dies": python_server("hostile.py"), "other": python_server("raw.py", "echo")}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as registry:
        box = sandbox(tmp_path, "dies", "other")
        started = time.monotonic()
        result = await registry.invoke("dies", call("d", "die"), box)
        elapsed = time.monotonic() - started
        after = await registry.invoke("dies", call("e", "echo", text="x"), box)
        other = await registry.invoke("other", call("o", "echo", text="x"), box)
        status = registry.status("dies")
    assert elapsed < 1.0
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_SERVER_DISCONNECTED" and result.error.retryable is False
    assert after.status == "failed" and other.status == "success"
    assert status is not None and status.state == "disconnected"
    assert lines(tmp_path / "logs" / "dies.log", "called die") == 1


async def test_m14_a_streamable_http_server_dying_mid_call_fails_fast(tmp_path: Path) -> None:
    port = free_port()
    with http_server([str(SERVERS / "hostile.py"), "--http", str(port)], port, tmp_path / "http.log"):
        entries = {"web": {"url": f"http://127.0.0.1:{port}/mcp"}, "other": python_server("raw.py", "echo")}
        async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as registry:
            box = sandbox(tmp_path, "web", "other")
            started = time.monotonic()
            result = await registry.invoke("web", call("d", "die"), box)
            elapsed = time.monotonic() - started
            other = await registry.invoke("other", call("o", "echo", text="x"), box)
    assert elapsed < 1.0 and result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_SERVER_DISCONNECTED" and other.status == "success"


# -- the transport -------------------------------------------------------------------------------------


async def test_m15_an_endless_line_closes_the_connection_with_bounded_memory(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        async with serving(tmp_path, "raw", python_server("raw.py", "huge", "--count", "50000000")) as (
            registry,
            box,
            _log,
        ):
            result = await registry.invoke("raw", call("h", "anything"), box)
            status = registry.status("raw")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        result.status == "failed" and result.error is not None and result.error.code == "MCP_PROTOCOL_ERROR"
    )
    assert peak < 20_000_000  # the 50 MB line was never held
    assert status is not None and status.state == "disconnected" and "protocol error" in (status.error or "")


@pytest.mark.parametrize("mode", ["garbage", "bad-utf8"])
async def test_m15_garbage_on_stdout_is_a_protocol_error(tmp_path: Path, mode: str) -> None:
    async with serving(tmp_path, "raw", python_server("raw.py", mode)) as (registry, box, log):
        result = await registry.invoke("raw", call("g", "anything"), box)
    assert result.error is not None and result.error.code == "MCP_PROTOCOL_ERROR"
    assert "closing the connection" in log.read_text()


async def test_m16_stray_and_duplicate_responses_never_resolve_the_wrong_call(tmp_path: Path) -> None:
    async with serving(tmp_path, "raw", python_server("raw.py", "stray")) as (registry, box, _log):
        first = await registry.invoke("raw", call("1", "one", n=1), box)
        second = await registry.invoke("raw", call("2", "two", n=2), box)
    assert first.content[0].text == "one: {'n': 1}"  # type: ignore[index,union-attr]
    assert second.content[0].text == "two: {'n': 2}"  # type: ignore[index,union-attr]


async def test_m17_a_log_flood_is_rate_limited_and_redacted(
    shared: tuple[McpRegistry, Sandbox, Path],
) -> None:
    registry, box, logs = shared
    result = await registry.invoke("flooding", call("f", "flood", count=400, secret=SECRET), box)
    assert result.status == "success"
    await asyncio.sleep(0.05)
    log = (logs / "flooding.log").read_text()
    assert SECRET not in log
    assert 0 < log.count("[log] info flood") <= 100
    assert "dropping the rest" in log


async def test_m17_a_progress_flood_is_thinned_and_the_last_step_shows(
    tmp_path: Path,
) -> None:
    events: list[Any] = []
    async with serving(tmp_path, "hostile", python_server("hostile.py")) as (registry, _box, _log):
        worker = create_interaction_worker(mcp=registry)
        async with create_ditto(
            sandbox={"mcp": ["hostile"]}, workspace=tmp_path, workers=[worker]
        ) as runtime:
            runtime.subscribe(events.append)
            done = await runtime.invoke("INTERACTION.ACT.MCP", act("p", "progress_flood", count=5000))
    assert done.result.status == "success"
    progress = [event.data for event in events if getattr(event, "name", None) == "mcp_progress"]
    assert 1 <= len(progress) <= 100  # 5,000 notifications, a handful of events
    assert (progress[-1]["progress"], progress[-1]["total"]) == (5000, 5000)


# -- trust ---------------------------------------------------------------------------------------------


async def test_m18_a_server_the_sandbox_does_not_grant_is_never_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    spawn = {"command": "python3", "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    async with open_mcp_servers({"sneaky": spawn}, log_dir=tmp_path / "logs", allowed=[]) as registry:
        status = registry.status("sneaky")
        assert registry.servers() == []
    assert status is not None and status.state == "denied"
    config = parse_runtime_config({"mcp": {"servers": {"sneaky": spawn}}}, {})
    program = Program(name="noop", description="", plan=graph("noop"))
    async with open_runtime(program, config, tmp_path, approver=None) as session:
        denied = session.mcp.status("sneaky")
    assert denied is not None and denied.state == "denied"
    assert not marker.exists()


async def test_m18_a_workspace_config_adding_a_server_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    marker = tmp_path / "started"
    script = f"open({str(marker)!r}, 'w')"
    (workspace / "ditto.yaml").write_text(
        "sandbox:\n  mcp: [sneaky]\n"
        f"mcp:\n  servers:\n    sneaky:\n      command: python3\n      args: ['-c', {json.dumps(script)}]\n"
    )
    monkeypatch.chdir(elsewhere)
    graph_file = ROOT / "graphs" / "mcp_notes.py"
    arguments = ["run", str(graph_file), "--workspace", str(workspace), "--headless", "--no-journal"]
    code = await asyncio.to_thread(main, arguments)  # the CLI runs its own event loop
    assert code == 0 and "not using ditto.yaml of" in capsys.readouterr().err  # the defaults ran instead
    assert not marker.exists()
