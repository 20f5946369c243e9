"""Durable runs on Temporal beyond the shared contract: what the server holds, the user's key, a decision
with no worker alive, a worker that comes back, replay of a recorded history, listing on the dev server."""

from __future__ import annotations

import asyncio
import gc
import sys
import uuid
from pathlib import Path
from typing import Literal

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from ditto_tui.runs import DecisionRejected
from ditto_tui.runs.temporal import DittoWorker, TemporalRunHost, data_converter
from ditto_tui.runs.temporal.worker import MAX_WAITING_NODES
from ditto_tui.runs.temporal.workflow import DittoRun
from ditto_tui.runtime import ApprovalResolved, CustomEvent, Graph, Runtime, graph
from ditto_tui.supervise import ApprovalDecision, QueueApprover
from tests.runs.durable import (
    TEST_KEY,
    Hosted,
    ReplayedHost,
    assert_replays,
    dev_server,
    keyed,
    time_skipping,
)
from tests.supervise.test_gate import Recorder, act, setup

SECRET = "plain-text-7f3a9c-never-on-the-server"


def _write(text: str = SECRET, call_id: str = "w-1") -> Graph:
    return graph("durable-write").node(
        call_id, "INTERACTION.ACT.TOOL", [], lambda _i, _d: act(arguments={"text": text}, id=call_id)
    )


class Rig(Hosted):
    """A runtime whose write tool asks, a worker for it and a host, on one Temporal server."""

    host: ReplayedHost
    runtime: Runtime

    def __init__(self, client: Client, tmp_path: Path) -> None:
        self.client, self.queue = client, f"test-{uuid.uuid4().hex[:8]}"
        self.recorder, self.inbox = Recorder(), QueueApprover()
        self.runtime, _gate, _events = setup(tmp_path, [self.recorder.tool], approver=self.inbox)
        self.worker: DittoWorker | None = None
        self.cached_runs = 0
        """The time-skipping server keeps a stopped worker's sticky queue: no cache, no sticky queue."""
        self.host = ReplayedHost(client, task_queue=self.queue, search=False, update_wait=1.0)

    async def start_worker(self, *plans: Graph) -> DittoWorker:
        self.worker = DittoWorker(
            self.client,
            self.runtime,
            self.inbox,
            task_queue=self.queue,
            plans={p.name: p for p in plans},
            cached_runs=self.cached_runs,
        )
        await self.worker.start()
        return self.worker

    async def __aenter__(self) -> Rig:
        await self.runtime.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.worker is not None:  # first: the runtime's close waits for the calls the worker runs
            await self.stop_worker()
        await self.runtime.__aexit__(None, None, None)
        if exc[0] is None:
            await assert_replays(self.client, self.host.started)

    async def stop_worker(self) -> None:
        assert self.worker is not None
        await self.worker.shutdown()
        self.worker = None

    def executed(self) -> list[str]:
        return [call_id for call_id, _args, _approval in self.recorder.executed]


async def _history_bytes(client: Client, run_id: str) -> bytes:
    plain = keyed(client, None)
    history = await plain.get_workflow_handle(run_id).fetch_history()
    return history.to_json().encode() + b"".join(e.SerializeToString() for e in history.events)


async def test_the_server_holds_no_plain_argument_input_or_decision(tmp_path: Path) -> None:
    async with time_skipping() as env:
        rig = Rig(keyed(env.client), tmp_path)
        async with rig:
            plan = _write()
            await rig.start_worker(plan)
            run_id = await rig.host.start(plan, {"task": SECRET})
            (waiting,) = await rig.waiting()
            assert waiting.request.arguments == {"text": SECRET}  # the key holder reads it all
            await rig.host.decide(
                waiting.request_id, ApprovalDecision(kind="deny", reason=SECRET), decided_by="human"
            )
            assert (await rig.finished(run_id))[-1].status == "succeeded"
            stored = await _history_bytes(rig.client, run_id)
            assert SECRET.encode() not in stored and b"write_note" not in stored
            described = await rig.client.get_workflow_handle(run_id).describe()
            assert SECRET.encode() not in described.raw_description.SerializeToString()


async def test_a_run_or_a_decision_made_without_the_users_key_executes_nothing(tmp_path: Path) -> None:
    async with time_skipping() as env:
        rig = Rig(keyed(env.client), tmp_path)
        stranger = TemporalRunHost(keyed(env.client, bytes(32)), task_queue=rig.queue, search=False)
        async with rig:
            plan = _write()
            await rig.start_worker(plan)
            forged = await stranger.start(plan, None)
            result = await rig.client.get_workflow_handle(forged).result()
            assert (
                result["status"] == "failed"
                and "not started with your key" in result["events"][-1]["data"]["error"]
            )
            assert rig.executed() == []
            run_id = await rig.host.start(plan, None)
            (waiting,) = await rig.waiting()
            handle = stranger.client.get_workflow_handle(run_id)
            approve = {"request_id": waiting.request_id, "answer": {}, "decided_by": "human", "seen": {}}
            with pytest.raises(WorkflowUpdateFailedError) as refused_update:
                await handle.execute_update("decide", approve)
            assert "not made with your key" in str(refused_update.value.cause)
            await handle.signal("queued_decide", approve)
            await asyncio.sleep(0.3)
            assert rig.executed() == [] and [p.request_id for p in await rig.host.pending()] == [
                waiting.request_id
            ]
            assert await stranger.pending() == []  # nothing of the user's runs is readable without the key
            await rig.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
            events = await rig.finished(run_id)
            refused = [e for e in events if isinstance(e, CustomEvent) and e.name == "decision_refused"]
            assert refused and "not made with your key" in refused[0].data["reason"]
            assert events[-1].status == "succeeded" and rig.executed() == ["w-1"]


async def test_a_worker_that_stops_while_a_run_waits_lets_go_of_the_run_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping a worker (the app quits) evicts the runs it holds: their workflow code is closed where it
    waits and must not try to wait again on its way out. A run that did printed "coroutine ignored
    GeneratorExit" with a traceback on the terminal for each run held."""
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: unraisable.append(hook.exc_value))
    async with dev_server(tmp_path) as env:
        rig = Rig(keyed(env.client), tmp_path)
        rig.cached_runs = 1000  # as the app's worker: the run is held between its tasks, then let go
        async with rig:
            plan = _write()
            await rig.start_worker(plan)
            await rig.host.start(plan, None)
            await rig.waiting()
            await rig.stop_worker()
            gc.collect()
            assert [p.kind for p in await rig.host.pending()] == ["tool_call"]  # on the server still
    assert not [error for error in unraisable if "GeneratorExit" in str(error)]


async def test_a_decision_with_no_worker_alive_is_queued_then_applied_once_and_a_stale_one_refused(
    tmp_path: Path,
) -> None:
    async with dev_server(tmp_path) as env:  # the time-skipping server loses a restarted worker's tasks
        rig = Rig(keyed(env.client), tmp_path)
        async with rig:
            plan = _write()
            await rig.start_worker(plan)
            run_id = await rig.host.start(plan, None)
            (waiting,) = await rig.waiting()
            await rig.stop_worker()  # quit: the run and its request stay on the server
            assert [p.request_id for p in await rig.host.pending()] == [waiting.request_id]
            first = await rig.host.decide(
                waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human"
            )
            second = await rig.host.decide(
                waiting.request_id, ApprovalDecision(kind="deny", reason="late"), decided_by="human"
            )
            assert first.queued and second.queued and rig.executed() == []
            await rig.start_worker(plan)
            events = await rig.finished(run_id)
            assert events[-1].status == "succeeded" and rig.executed() == ["w-1"]
            refused = [e for e in events if isinstance(e, CustomEvent) and e.name == "decision_refused"]
            assert [e.data["reason"] for e in refused] == [
                f"request {waiting.request_id!r} is no longer pending"
            ]
            (resolved,) = [e for e in events if isinstance(e, ApprovalResolved) and e.decision == "approve"]
            assert resolved.decided_by == "human"
            with pytest.raises(DecisionRejected, match="no longer pending"):
                await rig.host.decide(
                    waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human"
                )


async def test_a_recorded_history_replays_to_the_same_decisions(tmp_path: Path) -> None:
    async with time_skipping() as env:
        rig = Rig(keyed(env.client), tmp_path)
        async with rig:
            plan = graph("two").node("a", "INTERACTION.ACT.TOOL", [], lambda _i, _d: act(id="a"))
            plan.node("b", "INTERACTION.ACT.TOOL", ["a"], lambda _i, _d: act(id="b"))
            await rig.start_worker(plan)
            run_id = await rig.host.start(plan, None)
            answers: tuple[tuple[str, Literal["approve", "deny"]], ...] = (("a", "approve"), ("b", "deny"))
            for call_id, kind in answers:
                (waiting,) = await rig.waiting()
                assert waiting.request.call.id == call_id
                await rig.host.decide(waiting.request_id, ApprovalDecision(kind=kind), decided_by="human")
            assert (await rig.finished(run_id))[-1].status == "succeeded"
            history = await rig.client.get_workflow_handle(run_id).fetch_history()
        replayer = Replayer(
            workflows=[DittoRun],
            workflow_runner=UnsandboxedWorkflowRunner(),
            data_converter=data_converter(TEST_KEY),
        )
        replayed = await replayer.replay_workflow(history)
        assert replayed.replay_failure is None


async def test_on_the_dev_server_waiting_runs_are_found_by_search_attribute(tmp_path: Path) -> None:
    async with dev_server(tmp_path) as env:
        rig = Rig(keyed(env.client), tmp_path)
        rig.host.search = True
        async with rig:
            plan = _write()
            await rig.start_worker(plan)
            run_id = await rig.host.start(plan, None)
            (waiting,) = await rig.waiting()
            found: list[str] = []
            for _ in range(100):  # the visibility store is updated just after the change
                found = [
                    w.id async for w in rig.client.list_workflows(f"DittoPending = '{waiting.request_id}'")
                ]
                if found:
                    break
                await asyncio.sleep(0.05)
            assert found == [run_id]
            assert [r.run_id for r in await rig.host.runs(status="running")] == [run_id]
            await rig.host.decide(waiting.request_id, ApprovalDecision(kind="approve"), decided_by="human")
            assert (await rig.finished(run_id))[-1].status == "succeeded"


async def test_a_worker_holds_more_waiting_nodes_than_the_sdks_default_of_a_hundred(tmp_path: Path) -> None:
    """Most of a worker's nodes wait for a person: its node queues take thousands at once, not the SDK's
    default of 100 (with which the 101st waiting run's node never started; 101 runs on the dev server
    take 18 s to show it, so the worker's own settings are read here, with the runs that fit a test)."""
    async with dev_server(tmp_path) as env:
        rig = Rig(keyed(env.client), tmp_path)
        rig.host.search = True
        async with rig:
            plan = _write()
            worker = await rig.start_worker(plan)
            nodes = [w for queue, (w, _task) in worker._workers.items() if queue != rig.queue]
            assert [w.config()["max_concurrent_activities"] for w in nodes] == [MAX_WAITING_NODES]
            assert MAX_WAITING_NODES >= 1000
            await asyncio.gather(*(rig.host.start(plan, None) for _ in range(5)))
            for _ in range(240):
                waiting = await rig.host.pending()
                if len(waiting) == 5:
                    break
                await asyncio.sleep(0.1)
            assert len({p.run_id for p in waiting}) == 5
