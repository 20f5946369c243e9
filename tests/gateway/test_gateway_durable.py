"""The gateway on a durable host (``runs: {host: local}``): a client's connection is a run of the local
run server, and a call that asks waits in the inbox every door answers: here ``ditto-tui inbox`` and
``ditto-tui decide`` in another process, as a person at another terminal would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.gateway.test_gateway import text_of
from tests.runs.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))
    given = Workspace(root, tmp_path / "home")
    yield given
    given.close()


@contextlib.asynccontextmanager
async def gateway_client(workspace: Workspace) -> AsyncIterator[ClientSession]:
    """An SDK client (``durable-client 3``) of ``ditto-tui mcp serve`` in the workspace, initialized; the
    gateway's stderr goes to ``gateway.log`` beside the workspace."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ditto_tui", "--workspace", str(workspace.root), "mcp", "serve"],
        env={**os.environ, "DITTO_TUI_HOME": str(workspace.home)},
    )
    with open(workspace.root.parent / "gateway.log", "w", encoding="utf-8") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="durable-client", version="3")
            ) as client,
        ):
            await client.initialize()
            yield client


async def through_the_gateway(workspace: Workspace) -> tuple[types.CallToolResult, dict[str, object], str]:
    async with gateway_client(workspace) as client:
        call = asyncio.ensure_future(client.call_tool("write_note", {"name": "durable.md", "text": "kept"}))
        (waiting,) = await asyncio.to_thread(workspace.waiting)
        assert not call.done()  # it waits for a person, not for the client's form
        decided = await asyncio.to_thread(workspace.cli, "decide", str(waiting["request_id"]), "approve")
        result = await asyncio.wait_for(call, 60)
        return result, waiting, decided.stdout


def test_on_a_durable_host_a_gateway_call_waits_in_the_inbox_and_is_decided_from_another_terminal(
    workspace: Workspace,
) -> None:
    result, waiting, decided = asyncio.run(through_the_gateway(workspace))
    assert waiting["tool"] == "demo:write_note" and "approved" in decided
    assert not result.is_error and "Wrote" in text_of(result)
    runs = workspace.cli("runs").stdout
    assert "mcp-gateway" in runs and "durable-client 3" in runs  # the client its session served
    audit = workspace.cli("audit", str(waiting["run_id"])).stdout
    assert "demo:write_note" in audit and "via cli" in audit
