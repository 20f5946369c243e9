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

from ditto_tui.runs import RunHost
from ditto_tui.runs.temporal import DittoWorker, TemporalRunHost, data_converter
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
        try:
            yield TemporalRunHost(client, task_queue=queue, worker=worker, search=False, update_wait=2.0)
        finally:
            await worker.shutdown()
