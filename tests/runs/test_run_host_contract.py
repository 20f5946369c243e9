"""The RunHost contract (API.md section 11), run against every host built: start, the waiting requests
of every run, decide, a stale or mismatched decision refused, a timeout, cancel, events history then
live, breakpoints, result reviews and an MCP server's sampling request: the embedded host and the durable
one on the time-skipping Temporal server pass the same suite."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import ValidationError
from ditto_tui.runs import DecisionRejected, LocalRunHost, open_run_host
from ditto_tui.runtime import (
    ApprovalResolved,
    Graph,
    NodeFailed,
    NodeFinished,
    RunFinished,
    create_ditto,
    define_worker,
    graph,
)
from ditto_tui.runtime.breakpoints import BreakpointDecision, BreakpointRequest
from ditto_tui.runtime.events import BreakpointResolved, ReviewResolved
from ditto_tui.supervise import ApprovalDecision, QueueApprover
from ditto_tui.supervise.breakpoints import InboxBreakpoints
from ditto_tui.supervise.clients import GATEWAY_GRAPH
from ditto_tui.supervise.mcp_requests import SamplingAnswer, SamplingRequest
from ditto_tui.supervise.requests import ApprovalRequest, ReviewDecision, ReviewRequest
from ditto_tui.tui.screens.runs import host_run_label
from tests.runs.durable import Hosted, temporal_host
from tests.supervise.test_gate import Recorder, act, setup


def _writes(*ids: str) -> Graph:
    plan = graph("writes")
    for call_id in ids:
        plan.node(
            call_id, "INTERACTION.ACT.TOOL", [], lambda _i, _d, c=call_id: act(arguments={"text": c}, id=c)
        )
    return plan


HOSTS = ["embedded", "temporal"]


@contextlib.asynccontextmanager
async def hosting(
    kind: str, tmp_path: Path, *, timeout: float | None = None, rules: Sequence[Mapping[str, Any]] = ()
) -> AsyncIterator[Hosted]:
    """A host of ``kind`` over a fresh runtime whose gate asks for the write tool (``timeout``, ``rules``
    as the gate takes them)."""
    recorder = Recorder()
    inbox = QueueApprover()
    runtime, _gate, _events = setup(tmp_path, [recorder.tool], approver=inbox, timeout=timeout, rules=rules)
    runtime.approver = InboxBreakpoints(inbox)  # breakpoints ask the same inbox, as in a session
    async with runtime:
        if kind == "embedded":
            host = open_run_host(runtime, inbox, {"host": kind})
            assert isinstance(host, LocalRunHost)
            yield Hosted(host, recorder, runtime)
            host.close()
            return
        async with temporal_host(runtime, inbox) as durable:
            yield Hosted(durable, recorder, runtime)


@pytest.fixture(params=HOSTS)
async def hosted(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Hosted]:
    async with hosting(request.param, tmp_path) as given:
        yield given


async def test_a_gateway_session_is_listed_with_its_client_and_no_other_run_is(hosted: Hosted) -> None:
    """A run of the gateway's graph names the MCP client it serves (untrusted text, shown inert); the
    same input on any other graph names none."""
    given = {"connection": "gw-1", "client": {"name": "Claude Code\x1b[31m", "version": "2.1"}}
    session = _writes("w-1")
    session.name = GATEWAY_GRAPH
    gateway_run = await hosted.host.start(session, given)
    other_run = await hosted.host.start(_writes("w-2"), given)
    assert len(await hosted.waiting(2)) == 2
    listed = {summary.run_id: summary.client for summary in await hosted.host.runs()}
    assert listed == {gateway_run: "Claude Code\x1b[31m 2.1", other_run: None}
    line = host_run_label(next(s for s in await hosted.host.runs() if s.run_id == gateway_run), live=False)
    assert "Claude Code" in line.plain and "\x1b" not in line.plain
    for run_id in (gateway_run, other_run):
        await hosted.host.cancel(run_id, "the test is over")
        await hosted.finished(run_id)


async def test_a_started_run_is_listed_with_its_waiting_request_and_a_decision_lets_it_finish(
    hosted: Hosted,
) -> None:
    run_id = await hosted.host.start(_writes("w-1"), None)
    (waiting,) = await hosted.waiting()
    assert (waiting.run_id, waiting.kind, waiting.summary) == (
        run_id,
        "tool_call",
        "approve write_note (w-1)",
    )
    assert waiting.expires_at is None and isinstance(waiting.request, ApprovalRequest)
    (summary,) = await hosted.host.runs()
    assert (summary.run_id, summary.status, summary.pending, summary.graph) == (
        run_id,
        "running",
        1,
        "writes",
    )
    resolution = await hosted.host.decide(
        waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human"
    )
    assert (resolution.run_id, resolution.decision, resolution.decided_by) == (run_id, "approve", "human")
    events = await hosted.finished(run_id)
    assert isinstance(events[-1], RunFinished) and events[-1].status == "succeeded"
    assert [call_id for call_id, _args, _approval in hosted.recorder.executed] == ["w-1"]
    assert await hosted.host.pending() == [] and (await hosted.host.runs(status="succeeded"))[0].pending == 0


async def test_a_stale_or_mismatched_decision_is_refused_and_applies_nothing(hosted: Hosted) -> None:
    run_id = await hosted.host.start(_writes("w-1"), None)
    (waiting,) = await hosted.waiting()
    with pytest.raises(DecisionRejected, match="not pending"):
        await hosted.host.decide("forged", ApprovalDecision(kind="approve"), decided_by="human")
    edited = ApprovalDecision(kind="approve", arguments={"text": 5})
    with pytest.raises(DecisionRejected, match="edited arguments do not fit"):
        await hosted.host.decide(waiting.request_id, edited, decided_by="human")
    assert hosted.recorder.executed == [] and len(await hosted.host.pending()) == 1
    await hosted.host.decide(
        waiting.request_id, ApprovalDecision(kind="deny", reason="no"), decided_by="human"
    )
    with pytest.raises(DecisionRejected, match="no longer pending"):  # answered: a second one is refused
        await hosted.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
    events = await hosted.finished(run_id)
    assert isinstance(events[-1], RunFinished) and hosted.recorder.executed == []


async def test_the_requests_of_every_run_are_listed_oldest_first(hosted: Hosted) -> None:
    first = await hosted.host.start(_writes("a-1"), None)
    await hosted.waiting(1)
    second = await hosted.host.start(_writes("b-1"), None)
    pending = await hosted.waiting(2)
    assert [request.run_id for request in pending] == [first, second]
    assert pending[0].created_at <= pending[1].created_at
    for request in pending:
        await hosted.host.decide(request.request_id, ApprovalDecision(kind="approve"), decided_by="human")
    for run_id in (first, second):
        assert (await hosted.finished(run_id))[-1].status == "succeeded"


async def test_events_give_the_history_then_the_live_run_and_after_skips_what_was_seen(
    hosted: Hosted,
) -> None:
    run_id = await hosted.host.start(_writes("w-1"), None)
    (waiting,) = await hosted.waiting()
    seen: list[Any] = []

    async def follow() -> None:
        async for event in hosted.host.events(run_id):
            seen.append(event)

    following = asyncio.ensure_future(follow())
    await asyncio.sleep(0.05)
    assert seen and seen[0].kind == "run_started" and not following.done()
    await hosted.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
    await asyncio.wait_for(following, 10)
    assert seen[-1].kind == "run_finished" and [e.seq for e in seen] == sorted(e.seq for e in seen)
    later = [event async for event in hosted.host.events(run_id, after=seen[-2].seq)]
    assert later == [seen[-1]]


async def test_cancel_ends_the_run_cancelled_and_its_request_with_it(hosted: Hosted) -> None:
    run_id = await hosted.host.start(_writes("w-1"), None)
    await hosted.waiting()
    await hosted.host.cancel(run_id, "not needed")
    events = await hosted.finished(run_id)
    assert isinstance(events[-1], RunFinished) and events[-1].status == "cancelled"
    assert await hosted.host.pending() == [] and hosted.recorder.executed == []
    assert (await hosted.host.runs(status="cancelled"))[0].run_id == run_id
    (stopped,) = [event for event in events if isinstance(event, NodeFailed)]  # in words, not the engine's
    assert stopped.cancelled and stopped.error.startswith("cancelled") and "Activity" not in stopped.error


@pytest.mark.parametrize("kind", HOSTS)
async def test_a_timeout_ends_the_request_without_executing(kind: str, tmp_path: Path) -> None:
    async with hosting(kind, tmp_path, timeout=0.2) as hosted:
        run_id = await hosted.host.start(_writes("w-1"), None)
        (waiting,) = await hosted.waiting()
        assert waiting.expires_at is not None and 0 < waiting.expires_at - waiting.created_at <= 0.21
        events = await hosted.finished(run_id)
        assert any(isinstance(e, ApprovalResolved) and e.decision == "timeout" for e in events)
        assert hosted.recorder.executed == [] and await hosted.host.pending() == []


@pytest.mark.parametrize("kind", HOSTS)
async def test_on_timeout_wait_keeps_the_request_open_until_someone_answers(
    kind: str, tmp_path: Path
) -> None:
    rules = [{"tool": "write_note", "decision": "ask", "timeoutSeconds": 0.1, "onTimeout": "wait"}]
    async with hosting(kind, tmp_path, timeout=0.1, rules=rules) as hosted:
        run_id = await hosted.host.start(_writes("w-1"), None)
        (waiting,) = await hosted.waiting()
        assert waiting.expires_at is None and waiting.request.timeout_seconds is None
        await asyncio.sleep(0.4)  # past both timeouts: still waiting
        (still,) = await hosted.host.pending()
        assert still.request_id == waiting.request_id and hosted.recorder.executed == []
        await hosted.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
        assert (await hosted.finished(run_id))[-1].status == "succeeded"
        assert [call_id for call_id, _args, _approval in hosted.recorder.executed] == ["w-1"]


async def test_what_the_host_cannot_do_is_said(tmp_path: Path) -> None:
    recorder, inbox = Recorder(), QueueApprover()
    runtime, _gate, _events = setup(tmp_path, [recorder.tool], approver=inbox)
    async with runtime:
        with pytest.raises(ValidationError, match="must be embedded, local or remote"):
            open_run_host(runtime, inbox, {"host": "elsewhere"})
        host = LocalRunHost(runtime, inbox)
        with pytest.raises(ValidationError, match="names its runs itself"):
            await host.start(_writes("w-1"), None, run_id="mine")
        with pytest.raises(ValidationError, match="no run 'nope'"):
            await host.cancel("nope", "x")
        host.close()


@pytest.mark.parametrize("kind", HOSTS)
async def test_a_result_review_waits_on_the_host_and_is_answered_through_it(
    kind: str, tmp_path: Path
) -> None:
    rules = [{"tool": "write_note", "decision": "allow", "review": "results"}]
    async with hosting(kind, tmp_path, rules=rules) as hosted:
        run_id = await hosted.host.start(_writes("w-1"), None)
        (waiting,) = await hosted.waiting()
        assert waiting.kind == "result_review" and isinstance(waiting.request, ReviewRequest)
        assert waiting.request.call.id == "w-1"
        assert [call_id for call_id, _args, _approval in hosted.recorder.executed] == ["w-1"]  # result held
        with pytest.raises(DecisionRejected):  # a tool call's answer does not fit a review
            await hosted.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
        await hosted.host.decide(
            waiting.request_id, ReviewDecision(action="fail", reason="looks wrong"), decided_by="human"
        )
        events = await hosted.finished(run_id)
        assert events[-1].status == "succeeded"
        (reviewed,) = [e for e in events if isinstance(e, ReviewResolved)]
        assert (reviewed.action, reviewed.decided_by) == ("fail", "human")


@pytest.mark.parametrize("kind", HOSTS)
async def test_a_breakpoint_pauses_before_the_node_and_is_answered_through_the_host(
    kind: str, tmp_path: Path
) -> None:
    async with hosting(kind, tmp_path) as hosted:
        assert hosted.runtime is not None
        hosted.runtime.breakpoints.add("w-*")
        run_id = await hosted.host.start(_writes("w-1"), None)
        (paused,) = await hosted.waiting()
        assert paused.kind == "breakpoint" and isinstance(paused.request, BreakpointRequest)
        assert (paused.request.node_id, paused.summary) == ("w-1", "paused before node w-1")
        assert hosted.recorder.executed == []
        with pytest.raises(DecisionRejected):  # a tool call's answer does not fit a breakpoint
            await hosted.host.decide(paused.request_id, ApprovalDecision(kind="approve"), decided_by="human")
        await hosted.host.decide(paused.request_id, BreakpointDecision(action="continue"), decided_by="human")
        (asked,) = [p for p in await hosted.waiting() if p.kind == "tool_call"]
        assert hosted.recorder.executed == []
        await hosted.host.decide(asked.request_id, ApprovalDecision(kind="approve"), decided_by="human")
        events = await hosted.finished(run_id)
        assert events[-1].status == "succeeded"
        (resumed,) = [e for e in events if isinstance(e, BreakpointResolved)]
        assert (resumed.node_id, resumed.action, resumed.decided_by) == ("w-1", "continue", "human")
        assert [call_id for call_id, _args, _approval in hosted.recorder.executed] == ["w-1"]


@pytest.mark.parametrize("kind", HOSTS)
async def test_an_mcp_servers_sampling_request_during_a_node_is_answered_through_the_host(
    kind: str, tmp_path: Path
) -> None:
    """A server's ``sampling/createMessage`` arrives in the inbox while a node's call runs (it carries no
    run): it is listed by the host and the person's answer, given through it, reaches the server."""
    inbox = QueueApprover()

    async def sample(_input: Any, _context: Any) -> str:
        request = SamplingRequest(
            request_id="sampling-1",
            server="notes",
            messages=({"role": "user", "content": {"type": "text", "text": "Summarise the notes"}},),
            system_prompt=None,
            model_preferences=None,
            max_tokens=64,
            params={},
            requested_at=time.time(),
            has_model=False,
        )
        answer = await inbox.ask(request)
        return str(answer.text) if isinstance(answer, SamplingAnswer) else f"not answered: {answer}"

    plan = graph("samples").node("ask", "T.SAMPLE", [], lambda _i, _d: {})
    runtime = create_ditto(workspace=tmp_path, workers=[define_worker(type="T", nodes={"T.SAMPLE": sample})])
    async with runtime, contextlib.AsyncExitStack() as stack:
        if kind == "embedded":
            host: Any = LocalRunHost(runtime, inbox)
            stack.callback(host.close)
        else:
            host = await stack.enter_async_context(temporal_host(runtime, inbox))
        hosted = Hosted(host, None, runtime)
        run_id = await host.start(plan, None)
        (waiting,) = await hosted.waiting()
        assert (waiting.kind, waiting.request_id) == ("sampling", "sampling-1")
        assert waiting.run_id == (run_id if kind == "temporal" else None)
        with pytest.raises(DecisionRejected):  # a tool call's answer does not fit a sampling request
            await host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
        await host.decide(
            waiting.request_id, SamplingAnswer(approves=True, text="Three notes."), decided_by="human"
        )
        events = await hosted.finished(run_id)
        finished = [e for e in events if isinstance(e, NodeFinished)]
        assert events[-1].status == "succeeded" and finished[0].output == "Three notes."
