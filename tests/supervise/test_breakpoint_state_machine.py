"""Hypothesis state machine: with breakpoints before every node, nothing executes without its decision.

Runs of a two-node graph (a step, then a gated tool call) pause at a breakpoint before each node, asked
through the one inbox the approval gate also asks. Interleavings of starting runs, continue / edit / skip
/ abort / withdraw at breakpoints, approve / deny of tool calls, cancelled runs and time passing must
keep: a node runs only after a continue or edit of its breakpoint in that run, on exactly the input
decided; a skipped or aborted node never runs; a tool executes only after its node's breakpoint and an
approval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ditto_tui.digest import canonical_json
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import (
    BreakpointDecision,
    BreakpointRequested,
    BreakpointResolved,
    ExecutionEvent,
    WorkerContext,
    create_ditto,
    define_worker,
    graph,
)
from ditto_tui.supervise import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalRequest,
    BreakpointRequest,
    InboxBreakpoints,
    QueueApprover,
)
from tests.properties import examples

WORKSPACE = Path(__file__).parent
PLAN = (
    graph("paused")
    .node("step", "T.STEP", [], lambda input, _d: input)
    .node(
        "act",
        "INTERACTION.ACT.TOOL",
        ["step"],
        lambda _i, deps: {"call": {"id": f"call-{deps['step']['n']}", "name": "write", "arguments": {}}},
    )
)


class BreakpointMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.inbox = QueueApprover()
        self.steps: list[tuple[str, str]] = []
        self.tools: list[str] = []
        self.asked: dict[tuple[str, str], str] = {}
        self.decided: dict[tuple[str, str], BreakpointResolved] = {}
        self.approved_calls: set[str] = set()
        self.tasks: list[asyncio.Future[Any]] = []
        self.counter = 0
        tool = Tool(
            name="write",
            input_schema={"type": "object"},
            effects=[],
            requires_approval=True,
            execute_fn=self._execute,
        )
        gate = ApprovalGate(approver=self.inbox, timeout=None)
        self.runtime = create_ditto(
            sandbox={"tools": ["write"]},
            workspace=WORKSPACE,
            workers=[
                create_interaction_worker(tools=[tool], approval=gate),
                define_worker(type="T", nodes={"T.STEP": self._step}),
            ],
            approver=InboxBreakpoints(self.inbox),
        )
        self.runtime.subscribe(self._event)

    async def _step(self, input: Any, context: WorkerContext) -> Any:
        self.steps.append((context.run_id or "", canonical_json(input)))
        return input

    async def _execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        self.tools.append(context.run_id or "")
        return {"status": "success", "content": "ok"}

    def _event(self, event: ExecutionEvent) -> None:
        if isinstance(event, BreakpointRequested):
            self.asked[(event.run_id, event.node_id)] = canonical_json(event.input)
        elif isinstance(event, BreakpointResolved):
            self.decided[(event.run_id, event.node_id)] = event
        elif event.kind == "approval_resolved" and dict(event)["decision"] == "approve":
            self.approved_calls.add(event.run_id)

    def settle(self) -> None:
        async def pause() -> None:
            for _ in range(12):
                await asyncio.sleep(0)

        self.loop.run_until_complete(pause())

    def _pending(self, kind: type[Any], index: int) -> Any:
        pending = self.inbox.pending_of(kind)
        return pending[index % len(pending)] if pending else None

    @rule()
    def start_run(self) -> None:
        self.counter += 1
        run = self.runtime.run(PLAN, {"n": self.counter}, breakpoints=["*"])
        self.tasks.append(asyncio.ensure_future(run, loop=self.loop))
        self.settle()

    @rule(
        index=st.integers(0, 9),
        action=st.sampled_from(["continue", "edit", "skip", "abort", "withdraw"]),
        n=st.integers(0, 99),
    )
    def answer_breakpoint(self, index: int, action: str, n: int) -> None:
        request = self._pending(BreakpointRequest, index)
        if request is None:
            return
        if action == "withdraw":
            self.inbox.withdraw(request.request_id)
        elif action == "edit":
            decision = BreakpointDecision(action="edit", input=dict(request.input, n=n))
            self.inbox.resolve(request.request_id, decision)
        elif action == "skip":
            output = {"n": n} if request.node_id == "step" else {"status": "success", "content": "given"}
            self.inbox.resolve(request.request_id, BreakpointDecision(action="skip", output=output))
        else:
            self.inbox.resolve(request.request_id, BreakpointDecision(action=action))  # type: ignore[arg-type]
        self.settle()

    @rule(index=st.integers(0, 9), approve=st.booleans())
    def answer_call(self, index: int, approve: bool) -> None:
        request = self._pending(ApprovalRequest, index)
        if request is not None:
            decision = ApprovalDecision(kind="approve" if approve else "deny")
            self.inbox.resolve(request.request_id, decision)
            self.settle()

    @rule(index=st.integers(0, 9))
    def cancel_run(self, index: int) -> None:
        running = [task for task in self.tasks if not task.done()]
        if running:
            running[index % len(running)].cancel()
            self.settle()

    @invariant()
    def a_step_runs_only_on_the_input_its_breakpoint_decided(self) -> None:
        for run_id, ran in self.steps:
            decision = self.decided[(run_id, "step")]
            assert decision.action in ("continue", "edit")
            expected = self.asked[(run_id, "step")] if decision.action == "continue" else None
            assert ran == (expected or canonical_json(decision.input))

    @invariant()
    def a_tool_runs_only_after_its_breakpoint_and_an_approval(self) -> None:
        for run_id in self.tools:
            assert self.decided[(run_id, "act")].action in ("continue", "edit")
            assert run_id in self.approved_calls
        assert len(self.tools) == len(set(self.tools))

    def teardown(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            self.loop.run_until_complete(asyncio.gather(*self.tasks, return_exceptions=True))
        self.loop.run_until_complete(self.runtime.close())
        self.loop.close()


BreakpointMachine.TestCase.settings = settings(
    max_examples=examples(30),
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_breakpoint_state_machine = BreakpointMachine.TestCase
