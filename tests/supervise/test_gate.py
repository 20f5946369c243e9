"""The approval gate: binding, decisions, timeouts, withdrawal and every ADVERSARIAL R/S case it covers."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import ApprovalError, PermissionDeniedError, ToolValidationError
from ditto_tui.interaction import McpRegistry, Tool, ToolRegistry, create_interaction_worker
from ditto_tui.runtime import ExecutionEvent, Runtime, WorkerContext, create_ditto, graph
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    QueueApprover,
)


def api_digest(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Recorder:
    """A write-like tool that needs approval and records what executed and under which approval."""

    def __init__(self, name: str = "write_note", description: str = "Write a note") -> None:
        self.executed: list[tuple[str, dict[str, Any], Any]] = []
        self.tool = Tool(
            name=name,
            description=description,
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "additionalProperties": False,
            },
            effects=[],
            requires_approval=True,
            validate_fn=self.validate,
            execute_fn=self.execute,
        )

    @staticmethod
    def validate(args: Mapping[str, Any]) -> None:
        unknown = set(args) - {"text"}
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        if not isinstance(args.get("text", ""), str):
            raise ValueError("text must be a string")

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        approval = context.approval
        assert approval is not None and approval.arguments_digest == api_digest(args)
        self.executed.append((approval.call_id, dict(args), approval))
        return {"status": "success", "content": "written"}


class Scripted:
    """An approver answering from a list of functions of the request."""

    def __init__(self, *answers: Callable[[ApprovalRequest], ApprovalDecision]) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.answers.pop(0)(request)


def approve(_request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(kind="approve")


def deny(_request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(kind="deny", reason="not today")


def setup(
    tmp_path: Path,
    tools: Sequence[Tool],
    approver: Any = None,
    rules: Sequence[Mapping[str, Any]] = (),
    timeout: float | None = None,
) -> tuple[Runtime, ApprovalGate, list[ExecutionEvent]]:
    gate = ApprovalGate(policy=ApprovalPolicy(rules), approver=approver, timeout=timeout)
    runtime = create_ditto(
        sandbox={"tools": [t.name for t in tools]},
        workspace=tmp_path,
        workers=[create_interaction_worker(tools=list(tools), approval=gate)],
    )
    events: list[ExecutionEvent] = []
    runtime.subscribe(events.append)
    return runtime, gate, events


def act(
    name: str = "write_note", arguments: Mapping[str, Any] | None = None, id: str = "c-1"
) -> dict[str, Any]:
    return {
        "call": {
            "id": id,
            "name": name,
            "arguments": dict(arguments if arguments is not None else {"text": "hi"}),
        }
    }


async def test_no_approver_means_deny(tmp_path: Path) -> None:
    recorder = Recorder()
    runtime, _gate, _ = setup(tmp_path, [recorder.tool])
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    # Not executed, and told apart from a denial (issue 16: three distinct codes).
    assert result.status == "failed" and result.error.code == "APPROVAL_NO_APPROVER"
    assert recorder.executed == []


async def test_approval_binds_to_call_id_and_the_api_arguments_digest(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve)
    runtime, _gate, events = setup(tmp_path, [recorder.tool], approver)
    arguments = {"text": "héllo ✓"}
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments=arguments))
    assert result.status == "success"
    request = approver.requests[0]
    assert request.arguments_digest == api_digest(arguments)
    assert request.call.arguments == arguments and request.tool == "write_note"
    assert request.description == "Write a note" and request.effects == ()
    call_id, executed, approval = recorder.executed[0]
    assert (call_id, executed) == ("c-1", arguments)
    assert approval.decision == "approve" and approval.request_id == request.request_id
    assert approval.tool_digest == request.tool_digest
    kinds = [e.kind for e in events]
    assert kinds == ["approval_requested", "approval_resolved"]
    assert events[1].decision == "approve"  # type: ignore[attr-defined]


async def test_tool_digest_changes_with_the_definition(tmp_path: Path) -> None:
    first, second = Recorder(), Recorder(description="Write a note somewhere else")
    approver = Scripted(approve, approve)
    for recorder in (first, second):
        runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
        await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert approver.requests[0].tool_digest != approver.requests[1].tool_digest


async def test_r09_denial_returns_a_typed_failure_and_a_repeat_prompts_again(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(deny, deny)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    for _ in range(2):
        result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
        assert (result.status, result.error.code, result.error.message) == (
            "failed",
            "APPROVAL_DENIED",
            "not today",
        )
    assert len(approver.requests) == 2 and recorder.executed == []


async def test_approve_always_covers_the_tool_for_the_session_only(tmp_path: Path) -> None:
    recorder, other = Recorder(), Recorder(name="other_tool")
    approver = Scripted(lambda r: ApprovalDecision(kind="approve_always"), approve)
    runtime, gate, _ = setup(tmp_path, [recorder.tool, other.tool], approver)
    for text in ("a", "b", "c"):
        result = await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": text}))
        assert result.status == "success"
    await runtime.invoke("INTERACTION.ACT.TOOL", act(name="other_tool"))
    assert len(approver.requests) == 2 and gate.always_approved() == ["write_note"]
    assert [e[2].decision for e in recorder.executed] == ["approve_always"] * 3


async def test_r12_a_new_gate_remembers_nothing(tmp_path: Path) -> None:
    recorder = Recorder()
    runtime, _gate, _ = setup(
        tmp_path, [recorder.tool], Scripted(lambda r: ApprovalDecision(kind="approve_always"))
    )
    await runtime.invoke("INTERACTION.ACT.TOOL", act())
    fresh = Recorder()
    runtime, _gate, _ = setup(tmp_path, [fresh.tool])
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert result.error.code == "APPROVAL_NO_APPROVER" and fresh.executed == []


async def test_r14_approve_once_does_not_cover_other_arguments(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve, deny)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "X"}))).status == "success"
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "Y"}))).status == "failed"
    assert [r.call.arguments for r in approver.requests] == [{"text": "X"}, {"text": "Y"}]


async def test_edited_arguments_are_revalidated_and_bound(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(
        lambda r: ApprovalDecision(kind="approve", arguments={"text": "edited"}),
        lambda r: ApprovalDecision(kind="approve", arguments={"text": "x", "sneaky": True}),
    )
    runtime, _gate, events = setup(tmp_path, [recorder.tool], approver)
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert result.status == "success"
    assert recorder.executed[0][1] == {"text": "edited"}
    assert recorder.executed[0][2].arguments_digest == api_digest({"text": "edited"})
    refused = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert refused.status == "failed" and refused.error.code == "APPROVAL_EDIT_INVALID"
    assert len(recorder.executed) == 1
    resolved = [e for e in events if e.kind == "approval_resolved"]
    assert resolved[0].edited is True  # type: ignore[attr-defined]


async def test_r01_arguments_mutated_after_approval_never_execute_and_a_fresh_approval_is_asked(
    tmp_path: Path,
) -> None:
    recorder = Recorder()

    def mutate_then_approve(request: ApprovalRequest) -> ApprovalDecision:
        request.call.arguments["text"] = "rm -rf /"
        return ApprovalDecision(kind="approve")

    approver = Scripted(mutate_then_approve, approve)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "safe"}))
    assert result.status == "success"
    assert len(approver.requests) == 2
    assert approver.requests[0].request_id != approver.requests[1].request_id
    assert [e[1] for e in recorder.executed] == [{"text": "safe"}]


async def test_r01_mutating_the_callers_dict_after_the_request_changes_nothing(tmp_path: Path) -> None:
    recorder = Recorder()
    payload = act(arguments={"text": "safe"})

    def approve_after_mutation(request: ApprovalRequest) -> ApprovalDecision:
        payload["call"]["arguments"]["text"] = "evil"
        return ApprovalDecision(kind="approve")

    runtime, _gate, _ = setup(tmp_path, [recorder.tool], Scripted(approve_after_mutation))
    await runtime.invoke("INTERACTION.ACT.TOOL", payload)
    assert [e[1] for e in recorder.executed] == [{"text": "safe"}]


async def test_r02_the_arguments_shown_are_the_arguments_executed_byte_for_byte(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "a/./b"}))
    shown = json.dumps(approver.requests[0].call.arguments, sort_keys=True, ensure_ascii=False)
    executed = json.dumps(recorder.executed[0][1], sort_keys=True, ensure_ascii=False)
    assert shown.encode() == executed.encode()


async def test_r03_a_reused_call_id_gets_a_new_request(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve, deny)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "one"}, id="same"))
    second = await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "two"}, id="same"))
    assert second.status == "failed"
    assert approver.requests[0].request_id != approver.requests[1].request_id
    assert [e[1] for e in recorder.executed] == [{"text": "one"}]


async def _pending(approver: QueueApprover, count: int) -> list[ApprovalRequest]:
    for _ in range(200):
        if len(approver.pending()) >= count:
            return approver.pending()
        await asyncio.sleep(0.005)
    raise AssertionError(f"expected {count} pending requests, saw {len(approver.pending())}")


async def test_r04_a_duplicate_approval_executes_once(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    assert approver.resolve(request.request_id, ApprovalDecision(kind="approve")) is True
    assert approver.resolve(request.request_id, ApprovalDecision(kind="approve")) is False
    assert (await task).status == "success"
    assert approver.resolve(request.request_id, ApprovalDecision(kind="approve")) is False
    assert len(recorder.executed) == 1


async def test_r05_a_stale_or_forged_request_id_is_refused_and_the_real_one_stays_pending(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    assert approver.resolve("approval-forged-1", ApprovalDecision(kind="approve")) is False
    await asyncio.sleep(0.01)
    assert approver.pending() == [request] and recorder.executed == []
    approver.resolve(request.request_id, ApprovalDecision(kind="deny", reason="no"))
    assert (await task).error.code == "APPROVAL_DENIED"


async def test_r06_a_tool_substituted_after_approval_is_refused(tmp_path: Path) -> None:
    original, impostor = Recorder(), Recorder()
    registry = ToolRegistry()
    unregister_original = registry.register(original.tool)

    def swap_then_approve(request: ApprovalRequest) -> ApprovalDecision:
        unregister_original()  # the tool is swapped while the prompt is open
        registry.register(impostor.tool)
        return ApprovalDecision(kind="approve")

    gate = ApprovalGate(approver=Scripted(swap_then_approve))
    runtime = create_ditto(
        sandbox={"tools": ["write_note"]},
        workspace=tmp_path,
        workers=[create_interaction_worker(tools=registry, approval=gate)],
    )
    with pytest.raises(ApprovalError):
        await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert original.executed == [] and impostor.executed == []


@pytest.mark.parametrize("order", [("approve", "deny"), ("deny", "approve")])
async def test_r07_approve_and_deny_together_fail_closed(tmp_path: Path, order: tuple[str, str]) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    for kind in order:
        approver.resolve(request.request_id, ApprovalDecision(kind=kind))  # type: ignore[arg-type]
    result = await task
    assert result.status == "failed" and result.error.code == "APPROVAL_DENIED"
    assert recorder.executed == []


async def test_r08_timeout_is_typed_distinct_from_denial_and_late_clicks_are_refused(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, gate, events = setup(tmp_path, [recorder.tool], approver, timeout=0.05)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    result = await task
    assert result.status == "timeout" and result.error.code == "APPROVAL_TIMEOUT"
    assert approver.pending() == [] and gate.pending() == []
    assert approver.resolve(request.request_id, ApprovalDecision(kind="approve")) is False
    assert recorder.executed == []
    assert events[-1].decision == "timeout"  # type: ignore[attr-defined]


async def test_r11_parallel_calls_each_get_their_own_decision_and_cancel_leaves_none_executed(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, gate, events = setup(tmp_path, [recorder.tool], approver)
    plan = graph("parallel")
    for name in ("A", "B", "C"):
        plan.node(
            name, "INTERACTION.ACT.TOOL", [], lambda _input, _deps, n=name: act(arguments={"text": n}, id=n)
        )
    run = asyncio.ensure_future(runtime.run(plan))
    requests = {r.call.id: r for r in await _pending(approver, 3)}
    assert [r.call.id for r in gate.pending()] == ["A", "B", "C"]
    approver.resolve(requests["B"].request_id, ApprovalDecision(kind="approve"))
    for _ in range(100):
        if recorder.executed:
            break
        await asyncio.sleep(0.005)
    assert [e[0] for e in recorder.executed] == ["B"]
    assert {r.call.id for r in approver.pending()} == {"A", "C"}
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert [e[0] for e in recorder.executed] == ["B"]
    cancelled = {e.call_id for e in events if e.kind == "approval_resolved" and e.decision == "cancelled"}  # type: ignore[attr-defined]
    assert cancelled == {"A", "C"}
    assert approver.pending() == [] and gate.pending() == []


async def test_withdrawing_a_pending_request_ends_the_call_cancelled(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, gate, _ = setup(tmp_path, [recorder.tool], approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    assert gate.withdraw(request.request_id) is True
    result = await task
    assert result.status == "cancelled" and result.error.code == "APPROVAL_CANCELLED"
    assert gate.withdraw(request.request_id) is False
    assert recorder.executed == []


async def test_an_approver_that_fails_denies(tmp_path: Path) -> None:
    recorder = Recorder()

    def explode(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("ui crashed")

    runtime, _gate, _ = setup(tmp_path, [recorder.tool], Scripted(explode))
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert result.error.code == "APPROVAL_DENIED" and recorder.executed == []


async def test_r13_model_supplied_approval_fields_are_refused_and_cannot_skip_the_prompt(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    approver = Scripted(approve)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    with pytest.raises(ToolValidationError, match="requiresApproval"):
        await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": "x", "requiresApproval": False}))
    assert approver.requests == [] and recorder.executed == []


async def test_r13_mcp_hints_do_not_lower_approval(tmp_path: Path) -> None:
    class HintedServer:
        def __init__(self) -> None:
            self.calls: list[str] = []

        async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
            return {
                "tools": [
                    {
                        "name": "peek",
                        "inputSchema": {"type": "object"},
                        "annotations": {"readOnlyHint": True, "destructiveHint": False},
                    }
                ]
            }

        async def call_tool(
            self, name: str, arguments: Mapping[str, Any], signal: Any = None
        ) -> Mapping[str, Any]:
            self.calls.append(name)
            return {"content": "peeked"}

    server = HintedServer()
    approver = Scripted(deny)
    gate = ApprovalGate(approver=approver)
    runtime = create_ditto(
        sandbox={"mcp": ["srv"]},
        workspace=tmp_path,
        workers=[create_interaction_worker(mcp={"srv": server}, approval=gate)],
    )
    await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover"})
    response = await runtime.invoke(
        "INTERACTION.ACT.MCP",
        {"operation": "invoke", "server": "srv", "call": {"id": "m", "name": "peek", "arguments": {}}},
    )
    assert response.result.error.code == "APPROVAL_DENIED" and server.calls == []
    assert approver.requests[0].tool == "srv:peek" and approver.requests[0].server == "srv"


async def test_r15_full_arguments_and_a_digest_over_the_raw_text(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve)
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver)
    text = ("x" * 10_000) + "\nline two\r\n" + "evil\u202etxt\u200b"
    await runtime.invoke("INTERACTION.ACT.TOOL", act(arguments={"text": text}))
    assert approver.requests[0].call.arguments["text"] == text
    assert approver.requests[0].arguments_digest == api_digest({"text": text})
    assert recorder.executed[0][1]["text"] == text


async def test_policy_rules_allow_deny_and_ask(tmp_path: Path) -> None:
    writer = Recorder()
    reader_tool = Tool(
        name="read_note", input_schema={"type": "object"}, effects=[], execute_fn=lambda args, ctx: _success()
    )
    approver = Scripted(approve)
    rules = [{"tool": "write_*", "decision": "deny"}, {"tool": "read_*", "decision": "ask"}]
    runtime, _gate, events = setup(tmp_path, [writer.tool, reader_tool], approver, rules=rules)
    denied = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert denied.error.code == "APPROVAL_DENIED" and "policy" in denied.error.message
    asked = await runtime.invoke("INTERACTION.ACT.TOOL", act(name="read_note", arguments={}))
    assert asked.status == "success" and approver.requests[0].rule == "tool:read_* → ask"
    kinds = [e.kind for e in events]  # the rule's denial is on the record too (V-07)
    assert writer.executed == [] and kinds == ["approval_resolved", "approval_requested", "approval_resolved"]


async def test_a_policy_allow_still_binds_an_approval_for_a_tool_that_requires_one(tmp_path: Path) -> None:
    recorder = Recorder()
    runtime, _gate, _ = setup(
        tmp_path, [recorder.tool], None, rules=[{"tool": "write_note", "decision": "allow"}]
    )
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", act())).status == "success"
    assert recorder.executed[0][2].rule == "tool:write_note → allow"


async def _success() -> dict[str, Any]:
    return {"status": "success", "content": "read"}


async def test_s08_permissions_are_a_snapshot_and_rechecked_before_execution(tmp_path: Path) -> None:
    recorder = Recorder()
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], Scripted(approve))
    with pytest.raises(AttributeError):
        runtime.services.sandbox.permissions.tools = ("anything",)  # type: ignore[misc]
    assert (await runtime.invoke("INTERACTION.ACT.TOOL", act())).status == "success"


async def test_s09_every_path_to_execution_goes_through_the_gate(tmp_path: Path) -> None:
    recorder = Recorder()
    registry = ToolRegistry([recorder.tool])
    approver = Scripted(*([deny] * 5))
    gate = ApprovalGate(approver=approver)
    runtime = create_ditto(
        sandbox={"tools": ["write_note"], "mcp": ["srv"]},
        workspace=tmp_path,
        workers=[create_interaction_worker(tools=registry, approval=gate)],
    )
    # 1. the node, 2. a graph run, 3. the registry called directly with a real context
    await runtime.invoke("INTERACTION.ACT.TOOL", act())
    await runtime.run(graph("g").node("w", "INTERACTION.ACT.TOOL", [], lambda _i, _d: act()))
    from ditto_tui.runtime import define_worker

    async def direct(input: Any, context: WorkerContext) -> ExternalResult:
        return await registry.call(act()["call"], context)

    probe = create_ditto(
        sandbox={"tools": ["write_note"]},
        workspace=tmp_path,
        workers=[define_worker(type="P", nodes={"P.DIRECT": direct})],
    )
    await probe.invoke("P.DIRECT", None)
    # 4. execute() without a bound approval refuses
    context = probe.create_context()
    with pytest.raises(ApprovalError):
        await registry.execute(registry.prepare(act()["call"], context), context)
    # 5. the MCP path
    mcp = McpRegistry()
    mcp.register("srv", _EchoServer())
    mcp.guard(gate)
    result = await mcp.invoke("srv", {"id": "m", "name": "echo", "arguments": {}}, runtime.services.sandbox)
    assert result.error is not None and result.error.code == "APPROVAL_DENIED"
    assert len(approver.requests) == 4 and recorder.executed == []


class _EchoServer:
    async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: Any = None
    ) -> Mapping[str, Any]:
        return {"content": "echo"}


async def test_permission_is_checked_before_the_gate_asks(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = Scripted(approve)
    gate = ApprovalGate(approver=approver)
    runtime = create_ditto(
        sandbox={"tools": []},
        workspace=tmp_path,
        workers=[create_interaction_worker(tools=[recorder.tool], approval=gate)],
    )
    with pytest.raises(PermissionDeniedError):
        await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert approver.requests == []


async def test_an_mcp_call_the_sandbox_refuses_is_never_put_to_the_person(tmp_path: Path) -> None:
    """The gate wraps a guarded MCP call: it checks the call with the registry before anyone is asked,
    from the worker and from a direct ``registry.invoke`` alike."""
    approver = Scripted(approve, approve)
    gate = ApprovalGate(approver=approver)
    mcp = McpRegistry()
    mcp.register("srv", _EchoServer())
    runtime = create_ditto(
        sandbox={"mcp": []}, workspace=tmp_path, workers=[create_interaction_worker(mcp=mcp, approval=gate)]
    )
    call = {"id": "m", "name": "echo", "arguments": {}}
    with pytest.raises(PermissionDeniedError):
        await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "invoke", "server": "srv", "call": call})
    with pytest.raises(PermissionDeniedError):
        await mcp.invoke("srv", call, runtime.services.sandbox)
    assert approver.requests == [] and gate.pending() == []


@pytest.mark.parametrize("answer", ["approve", True, None, {"kind": "approve"}, ApprovalDecision])
async def test_r10_only_an_explicit_decision_approves(tmp_path: Path, answer: Any) -> None:
    recorder = Recorder()

    class Sloppy:
        async def decide(self, request: ApprovalRequest) -> Any:
            return answer

    runtime, _gate, _ = setup(tmp_path, [recorder.tool], Sloppy())
    result = await runtime.invoke("INTERACTION.ACT.TOOL", act())
    assert result.error.code == "APPROVAL_DENIED" and recorder.executed == []


async def test_r10_a_queue_approver_never_decides_by_itself(tmp_path: Path) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    runtime, gate, _ = setup(tmp_path, [recorder.tool], approver)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    await asyncio.sleep(0.05)
    assert not task.done() and recorder.executed == []
    gate.withdraw(request.request_id)
    assert (await task).status == "cancelled"


async def test_a_rule_timeout_overrides_the_gate_default_and_is_carried_by_the_request(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    approver = QueueApprover()
    rules = [{"tool": "write_*", "decision": "ask", "timeoutSeconds": 0.05}]
    runtime, _gate, _ = setup(tmp_path, [recorder.tool], approver, rules=rules, timeout=60)
    task = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.TOOL", act()))
    (request,) = await _pending(approver, 1)
    assert request.timeout_seconds == 0.05
    result = await asyncio.wait_for(task, 5)
    assert result.status == "timeout" and result.error.code == "APPROVAL_TIMEOUT"
    assert recorder.executed == []


def test_the_gate_and_policy_come_from_the_config_section() -> None:
    from ditto_tui.config import parse_runtime_config

    config = parse_runtime_config(
        {
            "approval": {
                "timeoutSeconds": 30,
                "rules": [{"tool": "w*", "decision": "ask", "timeoutSeconds": 5}],
            }
        },
        {},
    )
    gate = ApprovalGate.from_config(config.approval, None)
    assert gate.timeout == 30
    assert gate.policy.for_tool("write", False).timeout == 5
    assert gate.policy.for_tool("read", False).timeout is None
