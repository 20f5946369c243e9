"""Durable runs on Temporal against the raw SDK, side by side on the same local server in one run.

- **Decision round trip**: ``RunHost.decide`` on a waiting approval (it finds the request across runs,
  then the workflow's update and its validator) against a raw ``execute_update`` with a validator on a
  bare workflow (target ≤ 2×).
- **Start to first node**: ``RunHost.start`` of a one-node graph until the node starts on the worker,
  against a raw start of a workflow until its first activity starts (target ≤ 1.5×).
- **inbox --json with 100 runs each waiting**: the command's wall time, a process of its own, against the
  local server ditto-tui starts (target ≤ 0.5 s).
- **The app's inbox with 1,000 requests waiting** (across 1,000 runs, no worker alive for them): the app
  (headless, Pilot) on the durable host lists them all in its inbox; a key in the open request (arrows)
  timed from the key event to its scroll having run (target p50 ≤ 50 ms; as ``bench_tui`` times keys),
  and setting it aside (``Escape``) until the next one's view is the screen, laid out.
- **Decision after a worker's SIGKILL**: a run waits on an approval in a ``ditto-tui worker`` process,
  which is killed; a new worker is started; the decision goes through ``RunHost.decide`` and the figure is
  the time until the approved call has run and the run has ended (target ≤ 2 s). Three times, first,
  while no other run is on the server.

The server is the user's local one (``runs.host: local``, in the benchmark's own home); client, worker
and server are on one machine, the worker in this process.

    python -m benchmarks.bench_durable [--json] [--quick]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from benchmarks.cli import run_benchmark
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runs.temporal import DittoWorker, TemporalRunHost, _reach, connect
from ditto_tui.runs.temporal.server import ensure_running, stop
from ditto_tui.runtime import create_ditto, graph
from ditto_tui.supervise import ApprovalDecision, ApprovalGate, ApprovalPolicy, QueueApprover

TARGETS = {"decide": 2.0, "start": 1.5, "inbox_seconds": 0.5, "app_key_ms": 50.0, "after_kill_seconds": 2.0}
_STARTED: dict[str, float] = {}


@activity.defn(name="bench_first")
async def _first(key: str) -> None:
    _STARTED[key] = time.perf_counter()


@workflow.defn(name="BenchRaw")
class _Raw:
    def __init__(self) -> None:
        self.answered = 0

    @workflow.run
    async def run(self, first: bool) -> None:
        if first:
            await workflow.execute_activity(
                "bench_first", workflow.info().workflow_id, start_to_close_timeout=timedelta(seconds=30)
            )
            return
        await workflow.wait_condition(lambda: self.answered < 0)

    @workflow.update
    def answer(self, value: dict[str, Any]) -> int:
        self.answered += 1
        return self.answered

    @answer.validator
    def _check(self, value: dict[str, Any]) -> None:
        if not isinstance(value, dict):
            raise ValueError("not a decision")


async def _written(_args: Any, _context: Any) -> dict[str, Any]:
    return {"status": "success", "content": "written"}


def _tool() -> Tool:
    return Tool(
        name="write_note",
        description="Write a note",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        effects=[],
        requires_approval=True,
        execute_fn=_written,
    )


def _plan(name: str, steps: int) -> Any:
    plan = graph(name)
    previous: list[str] = []
    for index in range(steps):
        call = {"call": {"id": f"w-{index}", "name": "write_note", "arguments": {"text": str(index)}}}
        plan.node(f"w{index}", "INTERACTION.ACT.TOOL", previous, lambda _i, _d, c=call: c)
        previous = [f"w{index}"]
    return plan


async def _raw_figures(client: Client, queue: str, rounds: int) -> dict[str, list[float]]:
    updates, starts = [], []
    handle = await client.start_workflow("BenchRaw", False, id=f"raw-{uuid.uuid4().hex}", task_queue=queue)
    for _ in range(rounds):
        began = time.perf_counter()
        await handle.execute_update("answer", {"kind": "approve"})
        updates.append(time.perf_counter() - began)
    await handle.terminate()
    for _ in range(rounds):
        key = f"raw-{uuid.uuid4().hex}"
        began = time.perf_counter()
        await client.start_workflow("BenchRaw", True, id=key, task_queue=queue)
        while key not in _STARTED:
            await asyncio.sleep(0.0005)
        starts.append(_STARTED[key] - began)
    return {"update": updates, "start_raw": starts}


async def _ditto_figures(
    host: TemporalRunHost, worker: DittoWorker, runtime: Any, rounds: int
) -> dict[str, list[float]]:
    decides, starts = [], []
    started: dict[str, float] = {}
    runtime.subscribe(
        lambda e: started.setdefault(e.run_id, time.perf_counter()) if e.kind == "node_started" else None
    )
    run_id = await host.start(_plan("bench-decide", rounds), None)
    decided: set[str] = set()  # the listing is the server's visibility store: it may lag a decision
    for _ in range(rounds):
        while not (
            pending := [p for p in await host.pending() if p.run_id == run_id and p.request_id not in decided]
        ):
            await asyncio.sleep(0.002)
        decided.add(pending[0].request_id)
        began = time.perf_counter()
        await host.decide(pending[0].request_id, ApprovalDecision(kind="approve"), decided_by="human")
        decides.append(time.perf_counter() - began)
    first = _plan("bench-start", 0).node("only", "BENCH.NOOP", [])
    worker.add_plan(first)
    await asyncio.sleep(0.2)
    for _ in range(rounds):
        began = time.perf_counter()
        started_id = await host.start(first, None)
        while started_id not in started:
            await asyncio.sleep(0.0005)
        starts.append(started[started_id] - began)
    return {"decide": decides, "start": starts}


async def _inbox_seconds(host: TemporalRunHost, workspace: Path, runs: int) -> tuple[float, int, float]:
    plan = _plan("bench-inbox", 1)
    for _ in range(runs):
        await host.start(plan, None)
    while len(await host.pending()) < runs:
        await asyncio.sleep(0.05)
    began = time.perf_counter()
    await host.pending()
    listing = time.perf_counter() - began
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ditto_tui", "inbox", "--json"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - began, len(done.stdout.splitlines()), listing


async def _app_keys(workspace: Path, waiting: int, presses: int) -> dict[str, Any]:
    """The app on the durable host with ``waiting`` requests in its inbox: the time of a key that scrolls
    the open request, from the key event to its action having run (as ``bench_tui`` times keys: Pilot's
    own ``press`` waits for the whole process to be idle, 40 ms at the least, whatever the key costs), and
    of one that sets it aside until the next one's view is open (each pressed once the view has armed its
    keys: it ignores them for ``ARM_SECONDS`` after it opens, on purpose)."""
    from textual import events

    from ditto_tui.config import RuntimeConfig
    from ditto_tui.tui import DittoApp, RunSpec
    from ditto_tui.tui.keys import ARM_SECONDS

    config = RuntimeConfig.model_validate({"runs": {"host": "local", "taskQueue": "bench"}})
    app = DittoApp(RunSpec(config=config, workspace=workspace, program=None, journal=False))
    actions: list[tuple[str, float]] = []
    run_action = app.run_action

    async def timed(action: Any, *args: Any, **kwargs: Any) -> bool:
        ran = await run_action(action, *args, **kwargs)
        actions.append((str(action), time.perf_counter()))
        return ran

    app.run_action = timed  # type: ignore[method-assign]
    scrolls: list[float] = []
    nexts: list[float] = []
    async with app.run_test(size=(120, 36)) as pilot:
        began = time.perf_counter()
        deadline = time.monotonic() + 600
        while app.bridge.mirror is None or app.bridge.mirror.asking < waiting:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the app listed {app.bridge.mirror and app.bridge.mirror.asking} requests"
                )
            await pilot.pause(0.05)
        listed_in = time.perf_counter() - began
        for _ in range(presses):
            while app.desk.open is None:
                await pilot.pause(0)
            shown = app.desk.open.request.request_id
            await asyncio.sleep(ARM_SECONDS + 0.05)
            for key in ("down", "up"):
                seen = len(actions)
                began = time.perf_counter()
                app.post_message(events.Key(key, None))
                while len(actions) == seen or f"scroll_{key}" not in actions[-1][0]:
                    if time.perf_counter() - began > 5:
                        raise RuntimeError(f"the {key} key ran no scroll action: {actions[seen:]}")
                    await asyncio.sleep(0)
                scrolls.append(actions[-1][1] - began)
            began = time.perf_counter()
            app.post_message(events.Key("escape", None))
            while not _laid_out(app, shown):
                await asyncio.sleep(0)
            nexts.append(time.perf_counter() - began)
        listed = app.bridge.mirror.asking
    return {"scrolls": scrolls, "nexts": nexts, "listed": listed, "listed_in": listed_in}


def _laid_out(app: Any, after: str) -> bool:
    """Whether the view of a request other than ``after`` is the screen, its widgets placed on it."""
    view = app.desk.open
    if view is None or view.request.request_id == after or app.screen is not view:
        return False
    return any(widget.region.area for widget in view.walk_children())


async def _more_waiting(
    client: Client, runtime: Any, inbox: QueueApprover, host: TemporalRunHost, waiting: int, total: int
) -> None:
    """Runs waiting on an approval until ``total`` wait, a hundred at a time, each hundred on a task queue
    of its own whose worker stops once they all wait: their requests stay listed (the runs' memos say
    them) while no node of theirs runs and heartbeats. A thousand waiting at once in live workers would
    be a thousand heartbeats every 1.6 s, more than the local server takes."""
    plan = _plan("bench-inbox", 1)
    batch = 0
    while waiting < total:
        queue = f"bench-wait-{batch}"
        worker = DittoWorker(client, runtime, inbox, task_queue=queue)
        batch_host = TemporalRunHost(client, task_queue=queue, worker=worker)
        await worker.start()
        try:
            count = min(100, total - waiting)
            for _ in range(count):
                await batch_host.start(plan, None)
            waiting += count
            await _until(lambda target=waiting: _count(host, target), f"{waiting} requests to wait")
        finally:
            await worker.shutdown()
        batch += 1


async def _count(host: TemporalRunHost, count: int) -> bool:
    return len(await host.pending()) >= count


async def _until(condition: Any, what: str, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def _after_kill(workspace: Path) -> float:
    """A run waits in a worker process that is killed; a new one starts; decide until the run ends."""
    env = dict(os.environ)

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ditto_tui", *args], cwd=workspace, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args}: {done.stderr}")
        return done.stdout

    def worker() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "ditto_tui", "worker", "graphs/write_note.py"],
            cwd=workspace,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    run_id = cli("run", "graphs/write_note.py", "--detach").split()[0]
    first = worker()
    request_id = None
    while request_id is None:
        for line in cli("inbox", "--json").splitlines():
            if f'"run_id": "{run_id}"' in line:
                request_id = line.split('"request_id": "')[1].split('"')[0]
        time.sleep(0.1)
    first.kill()
    first.wait()
    second = worker()
    assert second.stderr is not None
    second.stderr.readline()  # "worker for ... on the local run host": it polls
    try:
        return asyncio.run(_decide_until_done(run_id, request_id))
    finally:
        second.terminate()
        second.wait()


async def _decide_until_done(run_id: str, request_id: str) -> float:
    from ditto_tui.runs.temporal import open_durable_host

    host = open_durable_host({"host": "local", "task_queue": "bench"})
    began = time.perf_counter()
    await host.decide(request_id, ApprovalDecision(kind="approve"), decided_by="human")
    async for event in host.events(run_id):
        if event.kind == "run_finished":
            assert getattr(event, "status", None) == "succeeded", event
    return time.perf_counter() - began


def _workspace() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    subprocess.run([sys.executable, "-m", "ditto_tui", "init"], cwd=folder, capture_output=True, check=True)
    with open(folder / "ditto.yaml", "a") as config:
        config.write("runs:\n  host: local\n  taskQueue: bench\n")
    (folder / "graphs").mkdir()
    graph_file = Path(__file__).resolve().parents[1] / "graphs" / "write_note.py"
    (folder / "graphs" / "write_note.py").write_text(graph_file.read_text())
    (folder / "README.md").write_text("# bench\n")
    subprocess.run(
        [sys.executable, "-m", "ditto_tui", "trust", "."], cwd=folder, capture_output=True, check=True
    )
    return folder


async def benchmark(scale: float) -> dict[str, Any]:
    rounds = max(5, int(50 * scale))
    inbox_runs = max(10, int(100 * scale))
    app_waiting = max(inbox_runs, int(1000 * scale))
    presses = max(10, int(40 * scale))
    os.environ.setdefault("DITTO_TUI_HOME", tempfile.mkdtemp(prefix="bench-home-"))
    workspace = await asyncio.to_thread(_workspace)
    server = await asyncio.to_thread(ensure_running)
    try:
        client = await _reach(server.address, lambda: connect(server.address))
        inbox = QueueApprover()
        gate = ApprovalGate(policy=ApprovalPolicy(()), approver=inbox)

        async def noop(_input: Any, _context: Any) -> None:
            return None

        from ditto_tui.runtime import define_worker

        runtime = create_ditto(
            sandbox={"tools": ["write_note"]},
            workspace=workspace,
            workers=[
                create_interaction_worker(tools=[_tool()], approval=gate),
                define_worker(type="BENCH", nodes={"BENCH.NOOP": noop}),
            ],
        )
        raw_queue = f"raw-{uuid.uuid4().hex[:6]}"
        raw = Worker(
            client,
            task_queue=raw_queue,
            workflows=[_Raw],
            activities=[_first],
            workflow_runner=UnsandboxedWorkflowRunner(),
        )
        worker = DittoWorker(client, runtime, inbox, task_queue="bench")
        host = TemporalRunHost(client, task_queue="bench", worker=worker)
        async with runtime, raw:
            # first, on a server with no other run and with no worker of this process on the queue (it
            # would take the run's workflow tasks): one killed worker's recovery, not a thousand runs'
            kills = [await asyncio.to_thread(_after_kill, workspace) for _ in range(3)]
            after_kill = statistics.median(kills)
            await worker.start()
            try:
                raw_figures = await _raw_figures(client, raw_queue, rounds)
                ditto = await _ditto_figures(host, worker, runtime, rounds)
                inbox_seconds, listed, listing = await _inbox_seconds(host, workspace, inbox_runs)
            finally:
                await worker.shutdown()
            await _more_waiting(client, runtime, inbox, host, inbox_runs, app_waiting)
        app_figures = await _app_keys(workspace, app_waiting, presses)
    finally:
        await asyncio.to_thread(stop)
    median = {name: statistics.median(values) * 1000 for name, values in {**raw_figures, **ditto}.items()}
    return {
        "rounds": rounds,
        "ms": {name: round(value, 2) for name, value in median.items()},
        "decide_ratio": round(median["decide"] / median["update"], 2),
        "start_ratio": round(median["start"] / median["start_raw"], 2),
        "inbox_runs": inbox_runs,
        "inbox_listed": listed,
        "inbox_seconds": round(inbox_seconds, 3),
        "pending_seconds": round(listing, 3),
        "app_waiting": app_figures["listed"],
        "app_listed_seconds": round(app_figures["listed_in"], 2),
        "app_key_ms": round(statistics.median(app_figures["scrolls"]) * 1000, 1),
        "app_next_ms": round(statistics.median(app_figures["nexts"]) * 1000, 1),
        "app_next_p90_ms": round(
            sorted(app_figures["nexts"])[int(len(app_figures["nexts"]) * 0.9)] * 1000, 1
        ),
        "after_kill_seconds": round(after_kill, 2),
        "targets": TARGETS,
    }


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9)]


def print_report(report: dict[str, Any]) -> None:
    """The figures as text."""
    ms, targets = report["ms"], report["targets"]
    print("Durable runs on Temporal (local dev server, worker in process) — medians")
    print(
        f"  decision round trip: RunHost.decide {ms['decide']:.1f} ms vs raw update {ms['update']:.1f} ms = "
        f"{report['decide_ratio']:.2f}× (target ≤ {targets['decide']}×)"
    )
    print(
        f"  start to first node: {ms['start']:.1f} ms vs raw start to first activity "
        f"{ms['start_raw']:.1f} ms = {report['start_ratio']:.2f}× (target ≤ {targets['start']}×)"
    )
    print(
        f"  inbox --json, {report['inbox_runs']} runs each waiting: {report['inbox_seconds']:.2f} s "
        f"({report['inbox_listed']} listed; target ≤ {targets['inbox_seconds']} s), of which "
        f"RunHost.pending() {report['pending_seconds']:.3f} s, the rest the process's start"
    )
    print(
        f"  the app's inbox with {report['app_waiting']:,} requests waiting (all listed in "
        f"{report['app_listed_seconds']:.2f} s): a key in the open request p50 {report['app_key_ms']:.1f} ms "
        f"(target ≤ {targets['app_key_ms']:.0f} ms); set aside until the next one's view is open p50 "
        f"{report['app_next_ms']:.1f} ms, p90 {report['app_next_p90_ms']:.1f} ms"
    )
    print(
        f"  decision after the worker's SIGKILL (a new worker up): decide to the run's end "
        f"{report['after_kill_seconds']:.2f} s (target ≤ {targets['after_kill_seconds']} s)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_report, argv)


if __name__ == "__main__":
    sys.exit(main())
