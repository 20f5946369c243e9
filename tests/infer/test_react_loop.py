"""The ReAct loop on the scripted model: approvals, denials, timeouts, runaways, parallel calls, cancels."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.errors import GraphExecutionError, LoopLimitError
from ditto_tui.infer import (
    InferError,
    InferMessage,
    ModelTurn,
    ReactState,
    ToolSpec,
    create_infer_worker,
    create_scripted_provider,
    react_loop,
)
from ditto_tui.interaction import McpClient, RegisteredTool, Tool, create_interaction_worker
from ditto_tui.runtime import ExecutionEvent, Runtime, WorkerContext, create_ditto
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    QueueApprover,
    StaticApprover,
)

TOOLS = ["read_text", "write_text"]


class Sink:
    """Accepts and keeps every delivery."""

    def __init__(self) -> None:
        self.delivered: list[OutputRequest] = []

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        self.delivered.append(input)
        return OutputReceipt(delivery_id=input.delivery_id, status="accepted")


class Harness:
    """A runtime with the file tools, an approval gate, a recording sink and a model; events are kept."""

    def __init__(
        self,
        workspace: Path,
        provider: Any,
        *,
        approver: Any = None,
        timeout: float | None = None,
        tools: Sequence[RegisteredTool] = (read_text_tool, write_text_tool),
        mcp: Mapping[str, McpClient] | None = None,
    ) -> None:
        self.sink = Sink()
        self.gate = ApprovalGate(
            policy=ApprovalPolicy([{"tool": "read_*", "decision": "allow"}]),
            approver=approver,
            timeout=timeout,
        )
        self.events: list[ExecutionEvent] = []
        names = [tool.name for tool in tools]
        self.runtime: Runtime = create_ditto(
            sandbox={"tools": names, "read": True, "write": True, "mcp": list(mcp or {})},
            workspace=workspace,
            workers=[
                create_interaction_worker(tools=list(tools), mcp=mcp, output=self.sink, approval=self.gate),
                create_infer_worker(provider=provider),
            ],
        )
        self.runtime.subscribe(self.events.append)

    async def run(
        self,
        task: Any = "Write a note about the README.",
        *,
        tools: Sequence[str] = TOOLS,
        max_steps: int = 6,
        **kwargs: Any,
    ) -> ReactState:
        async with self.runtime:
            state: ReactState = await self.runtime.loop(
                react_loop(tools=tools, max_steps=max_steps), task, **kwargs
            )
        return state

    def kinds(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.kind == kind]

    def asked(self) -> list[str]:
        """The decisions on the requests that were asked (the policy's decisions are on the record too)."""
        resolved = self.kinds("approval_resolved")
        return [event.decision for event in resolved if event.decided_by not in ("rule", "default")]

    def nodes(self, kind: str = "node_finished") -> list[str]:
        return [event.node_id for event in self.kinds(kind)]


def error_code(message: InferMessage) -> object:
    error = message.metadata.get("error")
    return error.get("code") if isinstance(error, dict) else None


WRITE_THEN_ANSWER = [
    {
        "content": "I will read the README and write a note.",
        "actions": [
            {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}},
            {"id": "write-1", "name": "write_text", "arguments": {"path": "note.md", "text": "A note."}},
        ],
    },
    {
        "choose": [
            {"when": {"call": "write-1", "status": "success"}, "content": "The note is written."},
            {
                "when": {"call": "write-1", "code": "APPROVAL_DENIED"},
                "content": "I was not allowed to write.",
            },
            {"when": {"call": "write-1", "code": "APPROVAL_TIMEOUT"}, "content": "Nobody approved in time."},
        ]
    },
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# Demo\n", encoding="utf-8")
    return tmp_path


async def test_an_approved_call_runs_and_the_answer_is_delivered(workspace: Path) -> None:
    harness = Harness(
        workspace, create_scripted_provider(WRITE_THEN_ANSWER), approver=StaticApprover("allow")
    )
    state = await harness.run()
    assert state.finished and state.steps == 2
    assert state.answer is not None and state.answer.content == "The note is written."
    assert state.receipt is not None and state.receipt.status == "accepted"
    assert (workspace / "note.md").read_text() == "A note."
    assert [d.message.content for d in harness.sink.delivered] == ["The note is written."]
    tool_messages = [m for m in state.messages if m.role == "tool"]
    assert [m.metadata["actionRequestId"] for m in tool_messages] == ["read-1", "write-1"]
    assert tool_messages[0].content == "# Demo\n"
    # Each step is a node; each call, observation and delivery a nested node named after it.
    assert harness.nodes() == [
        "tools",
        "sample",
        "act/read-1",
        "act/write-1",
        "act",
        "observe/read-1",
        "observe/write-1",
        "observe",
        "output",
        "tools",
        "sample",
        "act",
        "observe",
        "output/react:answer",
        "output",
    ]
    [requested] = harness.kinds("approval_requested")
    assert (requested.node_id, requested.call_id, requested.tool) == ("act/write-1", "write-1", "write_text")
    iterations = {e.node_id: e.iteration for e in harness.kinds("node_finished") if e.iteration == 1}
    assert iterations["act/write-1"] == 1


async def test_r09_a_denial_reaches_the_model_as_a_failed_result(workspace: Path) -> None:
    harness = Harness(workspace, create_scripted_provider(WRITE_THEN_ANSWER), approver=StaticApprover("deny"))
    state = await harness.run()
    assert state.answer is not None and state.answer.content == "I was not allowed to write."
    assert not (workspace / "note.md").exists()
    denial = next(m for m in state.messages if m.action_request_id == "write-1")
    assert denial.role == "tool" and denial.metadata["status"] == "failed"
    assert error_code(denial) == "APPROVAL_DENIED"
    assert "did not succeed" in str(denial.content) and "APPROVAL_DENIED" in str(denial.content)
    assert harness.asked() == ["deny"]


async def test_r09_an_identical_request_after_a_denial_prompts_again(workspace: Path) -> None:
    write = {"name": "write_text", "arguments": {"path": "note.md", "text": "A note."}}
    script = [{"actions": [{"id": "w1", **write}]}, {"actions": [{"id": "w2", **write}]}, {"content": "ok"}]
    answers = iter([ApprovalDecision(kind="deny", reason="not now"), ApprovalDecision(kind="approve")])

    class Answers:
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            return next(answers)

    harness = Harness(workspace, create_scripted_provider(script), approver=Answers())
    await harness.run()
    assert harness.asked() == ["deny", "approve"]
    assert (workspace / "note.md").exists()


async def test_r08_an_approval_timeout_is_not_executed_and_the_model_is_told(workspace: Path) -> None:
    harness = Harness(
        workspace, create_scripted_provider(WRITE_THEN_ANSWER), approver=QueueApprover(), timeout=0.1
    )
    state = await harness.run()
    assert state.answer is not None and state.answer.content == "Nobody approved in time."
    timed_out = next(m for m in state.messages if m.action_request_id == "write-1")
    assert timed_out.metadata["status"] == "timeout" and "did not succeed" in str(timed_out.content)
    assert not (workspace / "note.md").exists()
    assert harness.asked() == ["timeout"]


async def test_max_steps_ends_a_runaway_with_a_clear_failure(workspace: Path) -> None:
    runaway = create_scripted_provider(
        {
            "turns": [
                {"content": "Again.", "actions": [{"name": "read_text", "arguments": {"path": "README.md"}}]}
            ],
            "repeatLast": True,
        }
    )
    harness = Harness(workspace, runaway)
    with pytest.raises(LoopLimitError, match=r"no final answer in 3 turns \(max_steps\)"):
        await harness.run(max_steps=3)
    [finished] = harness.kinds("run_finished")
    assert finished.status == "failed" and "max_steps" in finished.error
    assert len(harness.kinds("loop_iteration")) == 3 and not harness.sink.delivered


async def test_r11_parallel_calls_are_approved_one_by_one(workspace: Path) -> None:
    writes = [
        {"id": f"w-{name}", "name": "write_text", "arguments": {"path": f"{name}.md", "text": name}}
        for name in ("a", "b", "c")
    ]
    approver = QueueApprover()
    harness = Harness(
        workspace, create_scripted_provider([{"actions": writes}, {"content": "done"}]), approver=approver
    )
    run = asyncio.ensure_future(harness.run())
    while len(approver.pending()) < 3:
        await asyncio.sleep(0.01)
    pending = {request.call.id: request for request in approver.pending()}
    assert approver.resolve(pending["w-b"].request_id, ApprovalDecision(kind="approve"))
    while not (workspace / "b.md").exists():
        await asyncio.sleep(0.01)
    assert {r.call.id for r in approver.pending()} == {"w-a", "w-c"}
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert not (workspace / "a.md").exists() and not (workspace / "c.md").exists()
    resolved = {e.call_id: e.decision for e in harness.kinds("approval_resolved")}
    assert resolved == {"w-a": "cancelled", "w-b": "approve", "w-c": "cancelled"}
    assert harness.kinds("run_finished")[0].status == "cancelled"


async def test_parallel_action_requests_run_concurrently(workspace: Path) -> None:
    both = asyncio.Barrier(2)

    async def meet(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        async with asyncio.timeout(2):
            await both.wait()
        return {"status": "success", "content": f"met {args['who']}"}

    meet_tool = Tool(name="meet", input_schema={"type": "object"}, effects=[], execute_fn=meet)
    script = [
        {
            "actions": [
                {"id": "m1", "name": "meet", "arguments": {"who": "a"}},
                {"id": "m2", "name": "meet", "arguments": {"who": "b"}},
            ]
        },
        {"content": "both met"},
    ]
    harness = Harness(workspace, create_scripted_provider(script), tools=[meet_tool])
    state = await harness.run(tools=["meet"])
    assert [m.content for m in state.messages if m.role == "tool"] == ["met a", "met b"]


async def test_r13_a_model_cannot_lower_the_approval_requirement(workspace: Path) -> None:
    sneaky = {
        "id": "w1",
        "name": "write_text",
        "arguments": {"path": "n.md", "text": "x", "requiresApproval": False},
    }
    script = [{"actions": [sneaky]}, {"content": "ok"}]
    harness = Harness(workspace, create_scripted_provider(script), approver=StaticApprover("allow"))
    state = await harness.run()
    refused = next(m for m in state.messages if m.action_request_id == "w1")
    assert error_code(refused) == "INVALID_ARGUMENTS"
    assert not (workspace / "n.md").exists() and not harness.kinds("approval_requested")


async def test_r03_a_reused_call_id_gets_a_new_request_and_runs_with_its_own_arguments(
    workspace: Path,
) -> None:
    first = {"id": "w", "name": "write_text", "arguments": {"path": "n.md", "text": "one"}}
    second = {"id": "w", "name": "write_text", "arguments": {"path": "n.md", "text": "two"}}
    script = [{"actions": [first]}, {"actions": [second]}, {"content": "ok"}]
    harness = Harness(workspace, create_scripted_provider(script), approver=StaticApprover("allow"))
    await harness.run()
    requests = harness.kinds("approval_requested")
    assert len(requests) == 2 and requests[0].request_id != requests[1].request_id
    assert requests[0].arguments_digest != requests[1].arguments_digest
    assert (workspace / "n.md").read_text() == "two"


async def test_unknown_unoffered_and_repeated_requests_fail_without_running(workspace: Path) -> None:
    script = [
        {
            "actions": [
                {"id": "x", "name": "rm_rf", "arguments": {}},
                {"id": "y", "name": "write_text", "arguments": {"path": "n.md", "text": "x"}},
                {"id": "z", "name": "read_text", "arguments": {"path": "README.md"}},
                {"id": "z", "name": "read_text", "arguments": {"path": "README.md"}},
                {"id": "p", "name": "read_text", "arguments": {"path": "../outside"}},
            ]
        },
        {"content": "ok"},
    ]
    harness = Harness(workspace, create_scripted_provider(script), approver=StaticApprover("allow"))
    state = await harness.run(tools=["read_text"])
    codes = [error_code(m) for m in state.messages if m.role == "tool"]
    assert codes == [
        "UNKNOWN_TOOL",
        "UNKNOWN_TOOL",
        None,
        "DUPLICATE_CALL_ID",
        "path_traversal",
    ]
    assert not (workspace / "n.md").exists()
    assert "act/p" in harness.nodes("node_failed")


async def test_the_system_prompt_and_messages_start_the_conversation(workspace: Path) -> None:
    seen: list[list[InferMessage]] = []

    class Echo:
        async def sample(
            self,
            messages: Sequence[InferMessage],
            tools: Sequence[ToolSpec],
            signal: CancelSignal | None = None,
        ) -> ModelTurn:
            seen.append(list(messages))
            return ModelTurn(
                message=InferMessage(role="assistant", content=f"{len(tools)} tools"), finish_reason="stop"
            )

    harness = Harness(workspace, Echo())
    async with harness.runtime:
        definition = react_loop(tools=TOOLS, max_steps=2, system="Be careful.")
        state = await harness.runtime.loop(definition, {"prompt": "Hi", "deliveryId": "d-7"})
    assert [m.role for m in seen[0]] == ["system", "user"] and seen[0][0].content == "Be careful."
    assert state.answer is not None and state.answer.content == "2 tools"
    assert harness.sink.delivered[0].delivery_id == "d-7"


async def test_cancellation_reaches_sampling(workspace: Path) -> None:
    waiting = asyncio.Event()
    seen: list[bool] = []

    class Hanging:
        async def sample(
            self,
            messages: Sequence[InferMessage],
            tools: Sequence[ToolSpec],
            signal: CancelSignal | None = None,
        ) -> ModelTurn:
            assert signal is not None
            waiting.set()
            await signal.wait()
            seen.append(signal.cancelled)
            raise asyncio.CancelledError

    harness = Harness(workspace, Hanging())
    signal = CancelSignal()
    run = asyncio.ensure_future(harness.run(signal=signal))
    await waiting.wait()
    signal.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await run
    assert seen == [True]
    assert harness.kinds("node_failed")[-1].node_id == "sample"


async def test_cancellation_reaches_actions_and_nothing_is_observed_after(workspace: Path) -> None:
    started = asyncio.Event()
    seen: list[bool] = []

    async def hang(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        started.set()
        await context.signal.wait()
        seen.append(context.signal.cancelled)
        return {"status": "cancelled", "error": {"code": "CANCELLED", "message": "stopped"}}

    hang_tool = Tool(name="hang", input_schema={"type": "object"}, effects=[], execute_fn=hang)
    script = [{"actions": [{"id": "h", "name": "hang"}]}, {"content": "never"}]
    harness = Harness(workspace, create_scripted_provider(script), tools=[hang_tool])
    signal = CancelSignal()
    run = asyncio.ensure_future(harness.run(tools=["hang"], signal=signal))
    await started.wait()
    signal.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await run
    assert seen == [True]
    assert (
        "observe/h" not in harness.nodes("node_started")
        and harness.nodes("node_started").count("sample") == 1
    )
    [observe] = [e for e in harness.kinds("node_failed") if e.node_id == "observe"]
    assert observe.cancelled


class FilesClient:
    """An in-process MCP client with two tools."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        return {
            "tools": [
                {"name": "get_note", "description": "Get a note", "inputSchema": schema},
                {"name": "odd.name", "inputSchema": schema},
            ]
        }

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        self.calls.append((name, dict(arguments)))
        return {
            "content": [{"type": "text", "text": f"note {arguments['name']}"}],
            "structuredContent": {"name": arguments["name"]},
        }


async def test_mcp_tools_are_discovered_named_and_invoked_through_the_gate(workspace: Path) -> None:
    client = FilesClient()
    script = [
        {"actions": [{"id": "n1", "name": "mcp__files__get_note", "arguments": {"name": "todo"}}]},
        {"content": "ok"},
    ]
    seen_tools: list[list[str]] = []
    scripted = create_scripted_provider(script)

    class Watching:
        async def sample(
            self,
            messages: Sequence[InferMessage],
            tools: Sequence[ToolSpec],
            signal: CancelSignal | None = None,
        ) -> ModelTurn:
            seen_tools.append([tool.name for tool in tools])
            return await scripted.sample(messages, tools, signal)

    harness = Harness(workspace, Watching(), approver=StaticApprover("allow"), mcp={"files": client})
    state = await harness.run(tools=["read_text", "mcp__files__*"])
    assert seen_tools[0] == ["read_text", "mcp__files__get_note"]
    assert client.calls == [("get_note", {"name": "todo"})]
    answer = next(m for m in state.messages if m.role == "tool")
    assert answer.metadata["source"] == "files:get_note" and answer.metadata["actionRequestId"] == "n1"
    assert "tools/discover-files" in harness.nodes() and "act/n1" in harness.nodes()
    [requested] = harness.kinds("approval_requested")
    assert (requested.tool, requested.node_id) == ("files:get_note", "act/n1")
    tools_output = next(e.output for e in harness.kinds("node_finished") if e.node_id == "tools")
    assert tools_output["omitted"] == ["files:odd.name (its name cannot be a model function name)"]


async def test_a_failed_model_call_fails_the_run_naming_the_sample_node(workspace: Path) -> None:
    harness = Harness(
        workspace,
        create_scripted_provider([{"actions": [{"name": "read_text", "arguments": {"path": "README.md"}}]}]),
    )
    with pytest.raises(GraphExecutionError) as caught:
        await harness.run()
    assert (
        caught.value.node_id == "sample" and "Model call failed: script has no turn 2" in caught.value.message
    )
    assert (
        isinstance(caught.value.__cause__, InferError)
        and caught.value.__cause__.code == "INFER_SCRIPT_EXHAUSTED"
    )
    [finished] = harness.kinds("run_finished")
    assert finished.status == "failed" and finished.failed_node == "sample"


async def test_without_an_output_sink_the_answer_stays_in_the_final_state(workspace: Path) -> None:
    provider = create_scripted_provider([{"content": "Nothing to deliver."}])
    async with create_ditto(
        workspace=workspace, workers=[create_interaction_worker(), create_infer_worker(provider=provider)]
    ) as runtime:
        state = await runtime.loop(react_loop(tools=[], max_steps=1), [{"role": "user", "content": "Hi"}])
    assert (
        state.answer is not None and state.answer.content == "Nothing to deliver." and state.receipt is None
    )
