"""Runs as OpenTelemetry traces, sent by the real OTLP/HTTP exporter to a receiver on 127.0.0.1 that
decodes them as a collector would: the tree of spans of a supervised run (a model turn with usage, a
person's denial and approval, a grant, an MCP call), content left out unless asked for, a planted secret
never exported, a dead collector that costs the run nothing, and no SDK imported when nothing is set."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import RuntimeConfig, parse_config_text
from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.infer.scripted import Script, ScriptedProvider, ScriptTurn
from ditto_tui.program import Program
from ditto_tui.runtime import Graph, graph
from ditto_tui.session import open_runtime
from ditto_tui.supervise import ApprovalDecision, Inbox
from ditto_tui.supervise.inbox import InboxRequest
from ditto_tui.telemetry import flush_tracing, run_tracer, trace_settings
from tests.telemetry.receiver import ReceivedSpan, otlp_grpc_receiver, otlp_receiver

GRAPH = Path(__file__).resolve().parents[2] / "graphs" / "write_note.py"
SECRET = "planted-secret-value-7c41"
"""A value of ``${OTEL_TEST_TOKEN}``: it is in the config, so no span may carry it."""

CONFIG = """\
sandbox:
  tools: [read_text, write_text]
  mcp: [demo]
  read: true
  write: true
mcp:
  servers:
    demo: {demo}
approval:
  rules:
    - tool: write_*
      decision: ask
    - mcp: "demo:*"
      decision: allow
otel:
  endpoint: {endpoint}
  headers: {{authorization: "Bearer ${{OTEL_TEST_TOKEN}}"}}
  captureContent: {capture}
  timeoutSeconds: 0.5
"""


class Person:
    """At the terminal: denies the first request, approves the second for the rest of the run (which
    grants the third), each after a moment, through the session's inbox as the app does."""

    def __init__(self) -> None:
        self.inbox = Inbox()
        self.decisions = [
            ApprovalDecision(kind="deny", reason="not that file", via="terminal"),
            ApprovalDecision(kind="approve_always", scope="tool", lifetime="run", via="terminal"),
        ]
        self.inbox.on_request(self._asked)

    def _asked(self, request: InboxRequest) -> None:
        request_id = request.request_id
        decision = self.decisions.pop(0) if self.decisions else ApprovalDecision(kind="approve")
        asyncio.get_running_loop().call_later(0.02, self.inbox.resolve, request_id, decision)


def _given(value: Any) -> Callable[[Any, Any], Any]:
    return lambda _input, _deps: value


def _program(text: str = "x\n") -> Program:
    """A model turn, three writes (denied, approved always, then granted) and an MCP call."""
    messages = {"messages": [{"role": "user", "content": "write the notes"}]}
    plan = graph("traced").node("think", "INFER.SAMPLE", [], _given(messages))
    before = ["think"]
    for index, path in enumerate(["notes/a.md", "notes/b.md", "notes/c.md"]):
        call = {"call": {"id": f"w-{index}", "name": "write_text", "arguments": {"path": path, "text": text}}}
        plan = plan.node(f"w{index}", "INTERACTION.ACT.TOOL", before, _given(call))
        before = [f"w{index}"]
    listed = {
        "operation": "invoke",
        "server": "demo",
        "call": {"id": "m-1", "name": "list_notes", "arguments": {}},
    }
    plan = plan.node("mcp", "INTERACTION.ACT.MCP", before, _given(listed))
    turn = ScriptTurn(content="On it.", usage={"inputTokens": 12, "outputTokens": 5})
    return Program(
        name="traced",
        description="",
        plan=plan,
        tools=(read_text_tool, write_text_tool),
        provider=ScriptedProvider(Script(turns=[turn])),
    )


def _config(
    root: Path, endpoint: str, *, capture: bool = False, protocol: str | None = None
) -> RuntimeConfig:
    demo = json.dumps(demo_server_entry(root / "notes"))
    text = CONFIG.format(demo=demo, endpoint=endpoint, capture=str(capture).lower())
    if protocol is not None:
        text = text.replace("otel:\n", f"otel:\n  protocol: {protocol}\n")
    return parse_config_text(text, {"OTEL_TEST_TOKEN": SECRET}, name=str(root / "ditto.yaml"), workspace=root)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ws"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "seen.md").write_text("# seen\n")
    yield folder
    flush_tracing(0.5)


async def _run_once(
    root: Path, config: RuntimeConfig, program: Program | None = None, times: int = 1
) -> float:
    """Run the program ``times`` times in one session under ``config``; the fastest run's seconds."""
    program = program or _program()
    assert isinstance(program.plan, Graph)
    took = []
    async with open_runtime(program, config, root, Person().inbox, wait_for_servers=True) as session:
        for _ in range(times):
            started = time.perf_counter()
            await session.runtime.run(program.plan, None)
            took.append(time.perf_counter() - started)
    return min(took)


async def _traced_run(root: Path, config: RuntimeConfig, program: Program | None = None) -> None:
    """Run the program under ``config`` and wait until its spans are exported."""
    await _run_once(root, config, program)
    tracer = run_tracer(config, root)
    assert tracer is not None and tracer.flush(10.0) is not None


def _chain(name: str, node_type: str, nodes: int) -> Graph:
    """``n0 -> n1 -> ... `` of ``nodes`` nodes of ``node_type``, the first given 1."""
    plan = graph(name).node("n0", node_type, [], _given(1))
    for index in range(1, nodes):
        plan = plan.node(f"n{index}", node_type, [f"n{index - 1}"])
    return plan


def _only(spans: list[ReceivedSpan]) -> ReceivedSpan:
    assert len(spans) == 1, [span.name for span in spans]
    return spans[0]


async def test_a_supervised_run_is_one_trace_of_its_nodes_requests_and_decisions(root: Path) -> None:
    with otlp_receiver() as received:
        await _traced_run(root, _config(root, received.url))
    spans = received.spans
    assert len({span.trace_id for span in spans}) == 1
    run = _only(received.named("invoke_agent"))
    assert run.name == "invoke_agent traced" and run.parent_id == ""
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["ditto.run.status"] == "succeeded" and run.attributes["ditto.mode"] == "ask"
    assert run.resource["service.name"] == "ditto-tui"
    chat = _only(received.named("chat"))
    assert chat.parent_id == run.span_id and chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert (chat.attributes["gen_ai.usage.input_tokens"], chat.attributes["gen_ai.usage.output_tokens"]) == (
        12,
        5,
    )
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    tools = {span.attributes["gen_ai.tool.call.id"]: span for span in received.named("execute_tool")}
    assert sorted(tools) == ["m-1", "w-0", "w-1", "w-2"]
    for span in tools.values():
        assert span.parent_id == run.span_id and span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert run.start <= span.start <= span.end <= run.end
    assert (
        tools["w-0"].name == "execute_tool write_text"
        and tools["w-0"].attributes["gen_ai.tool.type"] == "function"
    )
    assert tools["w-0"].attributes["ditto.tool.status"] == "failed" and tools["w-0"].status == 2  # denied
    assert tools["w-1"].attributes["ditto.tool.status"] == "success"
    # the person's two answers: a request span each, under its call, with the rule that asked
    approvals = {span.attributes["gen_ai.tool.call.id"]: span for span in received.named("ditto.approval")}
    assert sorted(approvals) == ["w-0", "w-1"]
    for call_id, decision in (("w-0", "deny"), ("w-1", "approve_always")):
        span = approvals[call_id]
        assert span.parent_id == tools[call_id].span_id
        assert span.attributes["ditto.request.kind"] == "approval"
        assert (span.attributes["ditto.decision"], span.attributes["ditto.decided_by"]) == (decision, "human")
        assert span.attributes["ditto.rule.file"] == str(root / "ditto.yaml")
        assert span.attributes["ditto.rule.line"] == 11
        assert span.attributes["ditto.request.wait_ms"] >= 20
        assert span.attributes["ditto.via"] == "terminal"
    # the grant decided the third write without asking: an event on its call's span, naming the grant
    ((name, granted),) = [event for event in tools["w-2"].events if event[0] == "ditto.decision"]
    assert granted["ditto.decided_by"] == "grant" and str(granted["ditto.grant"]).startswith("g-")
    # the MCP call: the rule allowed it, and the span says which server
    mcp = tools["m-1"]
    assert mcp.name == "execute_tool list_notes" and mcp.attributes["mcp.server"] == "demo"
    assert (
        mcp.attributes["gen_ai.tool.type"] == "extension"
        and mcp.attributes["mcp.method.name"] == "tools/call"
    )
    ((_name, allowed),) = [event for event in mcp.events if event[0] == "ditto.decision"]
    assert (allowed["ditto.decision"], allowed["ditto.decided_by"]) == ("approve", "rule")
    assert allowed["ditto.rule.line"] == 13
    # content is off: no argument, result, prompt or model text in any span
    everything = " ".join(text for span in spans for text in span.texts())
    for content in ("notes/a.md", "write the notes", "On it.", "seen.md", "not that file"):
        assert content not in everything
    assert SECRET not in everything
    assert all(f"Bearer {SECRET}" == headers.get("authorization") for headers in received.headers)


async def test_with_capture_content_the_text_is_there_and_a_planted_secret_never_is(root: Path) -> None:
    with otlp_receiver() as received:
        await _traced_run(root, _config(root, received.url, capture=True), _program(f"token {SECRET}\n"))
    tools = {span.attributes["gen_ai.tool.call.id"]: span for span in received.named("execute_tool")}
    arguments = json.loads(tools["w-1"].attributes["gen_ai.tool.call.arguments"])
    assert arguments == {"path": "notes/b.md", "text": "token [REDACTED]\n"}
    assert "seen.md" in tools["m-1"].attributes["gen_ai.tool.call.result"]
    chat = _only(received.named("chat"))
    assert "write the notes" in chat.attributes["gen_ai.input.messages"]
    assert "On it." in chat.attributes["gen_ai.output.messages"]
    (denied,) = [
        span for span in received.named("ditto.approval") if span.attributes["ditto.decision"] == "deny"
    ]
    assert "not that file" in denied.attributes["ditto.reason"]
    everything = " ".join(text for span in received.spans for text in span.texts())
    assert SECRET not in everything and "[REDACTED]" in everything


def _silent_port() -> tuple[socket.socket, int]:
    """A port that accepts connections and never answers: a collector that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener, listener.getsockname()[1]


async def test_a_dead_collector_costs_the_run_nothing_and_its_failures_are_counted(root: Path) -> None:
    listener, port = _silent_port()
    try:
        off = _config(root, "http://127.0.0.1:1")
        off = off.model_copy(update={"otel": off.otel.model_copy(update={"endpoint": None})})
        assert trace_settings(off, {}) is None
        plain = await _run_once(root, off, times=3)
        dead = _config(root, f"http://127.0.0.1:{port}")
        hanging = await _run_once(root, dead, times=3)
        assert hanging < plain * 1.5 + 0.05, (hanging, plain)
        tracer = run_tracer(dead, root)
        assert tracer is not None
        started = time.perf_counter()
        counts = tracer.flush(3.0)  # each export gives up after otel.timeoutSeconds (0.5 s)
        assert time.perf_counter() - started < 3.5
        assert counts is not None and counts["failed"] > 0 and counts["exported"] == 0, counts
    finally:
        listener.close()


def test_with_nothing_set_nothing_is_exported_and_the_sdk_is_never_imported(tmp_path: Path) -> None:
    """A headless run with no ``otel:`` and no ``OTEL_*`` variable imports no SDK; the same run with the
    standard variables set is exported, its last spans sent as the command leaves."""
    (tmp_path / "README.md").write_text("# readme\n")
    run = ["--workspace", str(tmp_path), "--headless", "--no-journal", "run", str(GRAPH)]
    script = (
        "import sys\n"
        "from ditto_tui.__main__ import main\n"
        f"code = main({run!r})\n"
        "loaded = 'opentelemetry.sdk.trace' in sys.modules, 'ditto_tui.telemetry.feed' in sys.modules\n"
        "print('SDK %s spans %s' % loaded)\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env["DITTO_TUI_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "SDK False spans False" in done.stdout, done.stderr
    with otlp_receiver() as received:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = received.url
        env["OTEL_SERVICE_NAME"] = "from-the-environment"
        command = [sys.executable, "-m", "ditto_tui", *run]
        started = time.monotonic()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        left = time.monotonic() - started
        # the exporter sends them after the command left, at a lower priority than the tests around it
        received.wait_for("invoke_agent", seconds=60.0, log=lambda: _exporter_logs(tmp_path / "home"))
    assert left < 20
    (root,) = received.named("invoke_agent")
    assert root.name == "invoke_agent write-note" and root.resource["service.name"] == "from-the-environment"
    assert {span.trace_id for span in received.spans} == {root.trace_id} and len(received.spans) > 3


def _exporter_logs(home: Path) -> str:
    """Everything the exporters under ``home`` logged (said when no span came)."""
    return "".join(log.read_text() for log in home.rglob("otel.log"))


async def test_a_nested_call_is_a_child_of_its_callers_span(root: Path) -> None:
    """A node that calls another node (``context.invoke`` with a node id) has that call's span under
    its own, with the times of each; plain nodes around it are spans too."""

    async def outer(input: Any, context: Any) -> Any:
        first = await context.invoke("T.INNER", input, node_id="step")
        return await context.invoke("T.INNER", first, node_id="again")

    async def inner(input: Any, context: Any) -> Any:
        await asyncio.sleep(0.01)
        return input

    from ditto_tui.runtime import create_ditto, define_worker
    from ditto_tui.telemetry import TraceSettings
    from ditto_tui.telemetry.feed import RunTracer

    with otlp_receiver() as received:
        tracer = RunTracer(TraceSettings(endpoint=f"{received.url}/v1/traces"), root)
        runtime = create_ditto(workers=[define_worker(type="T", nodes={"T.OUTER": outer, "T.INNER": inner})])
        tracer.attach(runtime)
        plan = graph("nested").node("first", "T.INNER", [], _given(1)).node("outer", "T.OUTER", ["first"])
        async with runtime:
            await runtime.run(plan, None)
        assert tracer.flush(10.0) is not None
        tracer.close()
    spans = {span.attributes.get("ditto.node.id"): span for span in received.spans}
    run = _only(received.named("invoke_agent"))
    assert spans["first"].parent_id == spans["outer"].parent_id == run.span_id
    for child in ("outer/step", "outer/again"):
        assert spans[child].parent_id == spans["outer"].span_id
        assert spans["outer"].start <= spans[child].start <= spans[child].end <= spans["outer"].end
    assert spans["outer/step"].end <= spans["outer/again"].start
    assert spans["first"].end <= spans["outer"].start


def test_a_run_whose_loop_ends_before_the_first_write_is_still_exported_at_close(root: Path) -> None:
    """The records are written to the exporter a beat after they are made (``WRITE_EVERY_SECONDS``, on
    the run's loop); a run that finishes, and whose loop closes, inside that beat loses none of them:
    ``close`` (what the command does as it leaves) starts the exporter and hands them over."""
    from ditto_tui.runtime import create_ditto, define_worker
    from ditto_tui.telemetry import TraceSettings
    from ditto_tui.telemetry.feed import RunTracer

    async def quick(input: Any, context: Any) -> Any:
        return input

    async def whole_run(tracer: RunTracer) -> None:
        runtime = create_ditto(workers=[define_worker(type="T", nodes={"T.QUICK": quick})])
        tracer.attach(runtime)
        async with runtime:
            await runtime.run(graph("quick").node("only", "T.QUICK", [], _given(1)), None)

    with otlp_receiver() as received:
        tracer = RunTracer(TraceSettings(endpoint=f"{received.url}/v1/traces"), root)
        asyncio.run(whole_run(tracer))  # the loop is gone before the scheduled write could run
        assert tracer._process is None, "the run outlasted the first write: nothing left to check"
        tracer.close()
        received.wait_for("invoke_agent")
    assert _only(received.named("invoke_agent")).name == "invoke_agent quick"


async def test_over_grpc_the_same_run_is_the_same_trace_with_the_configured_headers(root: Path) -> None:
    """``otel.protocol: grpc`` exports through the collector's gRPC service: the same tree of spans (the
    run, its model turn, its four calls, the person's two answers), the headers sent as call metadata
    with the ``${VAR}`` value, and that value in no span."""
    with otlp_grpc_receiver() as received:
        config = _config(root, received.url, protocol="grpc")
        settings = trace_settings(config, {})
        assert settings is not None and settings.protocol == "grpc"
        await _traced_run(root, config)
    run = _only(received.named("invoke_agent"))
    assert run.name == "invoke_agent traced" and run.parent_id == ""
    assert _only(received.named("chat")).parent_id == run.span_id
    tools = {span.attributes["gen_ai.tool.call.id"]: span for span in received.named("execute_tool")}
    assert sorted(tools) == ["m-1", "w-0", "w-1", "w-2"]
    assert all(span.parent_id == run.span_id for span in tools.values())
    approvals = {span.attributes["gen_ai.tool.call.id"] for span in received.named("ditto.approval")}
    assert approvals == {"w-0", "w-1"}
    assert {span.trace_id for span in received.spans} == {run.trace_id}
    assert received.headers and all(h.get("authorization") == f"Bearer {SECRET}" for h in received.headers)
    assert SECRET not in " ".join(text for span in received.spans for text in span.texts())


@pytest.mark.parametrize("sampling", [0.0, 0.5])
async def test_sampling_keeps_a_share_of_the_runs_each_whole(root: Path, sampling: float) -> None:
    """``otel.sampling`` below 1 keeps that share of the runs (by trace), each with all of its spans: no
    node span of a run left out is ever exported on its own. At 0 nothing is exported, and the runs
    still run."""
    from ditto_tui.runtime import create_ditto, define_worker
    from ditto_tui.telemetry import TraceSettings
    from ditto_tui.telemetry.feed import RunTracer

    async def step(input: Any, context: Any) -> Any:
        return input

    runs = 40
    with otlp_receiver() as received:
        tracer = RunTracer(TraceSettings(endpoint=f"{received.url}/v1/traces", sampling=sampling), root)
        runtime = create_ditto(workers=[define_worker(type="T", nodes={"T.STEP": step})])
        tracer.attach(runtime)
        plan = graph("sampled").node("first", "T.STEP", [], _given(1)).node("second", "T.STEP", ["first"])
        async with runtime:
            outputs = [await runtime.run(plan, None) for _ in range(runs)]
        counts = tracer.flush(10.0)
        tracer.close()
    assert counts is not None and counts["failed"] == 0
    assert all({"first", "second"} <= set(output) for output in outputs)
    roots = received.named("invoke_agent")
    if sampling == 0.0:
        assert received.spans == []
        return
    assert runs * 0.2 <= len(roots) <= runs * 0.8  # binomial(40, 0.5): outside this once in ~10^5
    kept = {span.trace_id for span in roots}
    assert {span.trace_id for span in received.spans} == kept  # no span of a run left out
    for trace_id in kept:
        nodes = {s.attributes.get("ditto.node.id") for s in received.spans if s.trace_id == trace_id}
        assert {"first", "second"} <= nodes


async def test_plain_nodes_slower_than_the_write_beat_are_all_exported(root: Path) -> None:
    """A plain node's record goes on the tracer's queue through the runtime subscriber's fast path; each
    write to the exporter empties that same queue, so nodes that end after the first write (each slower
    than ``WRITE_EVERY_SECONDS``) are exported too, every one of them."""
    from ditto_tui.runtime import create_ditto, define_worker
    from ditto_tui.telemetry import TraceSettings
    from ditto_tui.telemetry.feed import WRITE_EVERY_SECONDS, RunTracer

    async def slow(input: Any, context: Any) -> Any:
        await asyncio.sleep(WRITE_EVERY_SECONDS + 0.02)
        return input

    with otlp_receiver() as received:
        tracer = RunTracer(TraceSettings(endpoint=f"{received.url}/v1/traces"), root)
        runtime = create_ditto(workers=[define_worker(type="T", nodes={"T.SLOW": slow})])
        tracer.attach(runtime)
        plan = _chain("slow", "T.SLOW", 5)
        async with runtime:
            await runtime.run(plan, None)
        assert tracer.flush(10.0) is not None
        tracer.close()
    run = _only(received.named("invoke_agent"))
    nodes = {str(span.attributes.get("ditto.node.id")): span for span in received.spans if span is not run}
    assert sorted(nodes) == ["n0", "n1", "n2", "n3", "n4"]
    assert all(span.parent_id == run.span_id for span in nodes.values())


async def test_a_run_that_never_yields_to_its_loop_hands_its_records_over_in_bounded_batches(
    root: Path,
) -> None:
    """A line of quick synchronous nodes runs without giving its loop a turn, so the write beat never
    fires during the run: the queue is handed to the exporter each time it holds ``HELD`` records, not
    kept whole until the run ends, and every node's span still arrives."""
    from ditto_tui.runtime import create_ditto, define_worker
    from ditto_tui.telemetry import TraceSettings
    from ditto_tui.telemetry.feed import HELD, PIPE_BYTES, RunTracer

    nodes = HELD * 2 + 10
    longest = 0

    async def quick(input: Any, context: Any) -> Any:
        nonlocal longest
        longest = max(longest, len(tracer._records))
        return input

    with otlp_receiver() as received:
        tracer = RunTracer(TraceSettings(endpoint=f"{received.url}/v1/traces"), root)
        runtime = create_ditto(workers=[define_worker(type="T", nodes={"T.QUICK": quick})])
        tracer.attach(runtime)
        plan = _chain("quick", "T.QUICK", nodes)
        async with runtime:
            await runtime.run(plan, None)
            assert tracer._process is not None  # handed over during the run, before any loop turn
            assert tracer._process.stdin is not None
            if hasattr(fcntl, "F_GETPIPE_SZ"):  # Linux: the pipe holds a megabyte, not 64 KiB
                assert fcntl.fcntl(tracer._process.stdin.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BYTES
        counts = tracer.flush(30.0)
        tracer.close()
    assert longest <= HELD
    assert counts is not None and counts["failed"] == 0
    names = {span.attributes.get("ditto.node.id") for span in received.spans}
    assert {f"n{index}" for index in range(nodes)} <= names


def test_past_the_waiting_bound_whole_frames_are_dropped_never_the_rest_of_one_begun(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exporter reads frames (a length, then that many bytes): when too much waits, what is dropped
    is whole frames it has not begun, so the one it is reading ends where it said and the next it reads
    starts with a length, not in the middle of a dropped frame."""
    from ditto_tui.telemetry import TraceSettings, feed

    monkeypatch.setattr(feed, "MAX_WAITING_BYTES", 100)
    tracer = feed.RunTracer(TraceSettings(endpoint="http://127.0.0.1:9/v1/traces"), root)
    frames = [bytes([index]) * 60 for index in range(4)]
    for frame in frames:
        tracer._waiting += frame
        tracer._frames.append(len(frame))
    del tracer._waiting[:30]  # half the first frame went into the pipe
    tracer._written(30)
    assert bytes(tracer._waiting) == frames[0][30:] and tracer.dropped == 3
    del tracer._waiting[:30]
    tracer._written(30)
    assert not tracer._waiting and not tracer._frames and tracer._into == 0
    for frame in frames:  # none begun: all dropped
        tracer._waiting += frame
        tracer._frames.append(len(frame))
    tracer._written(0)
    assert not tracer._waiting and not tracer._frames and tracer.dropped == 7
