"""Fault injection, MCP: a server killed with SIGKILL mid-call, and a server that never answers.

Each ends in a typed result, the application stays up and shows it, and the server executed the call
exactly once (the victim server counts its executions in a file, across any restart).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from ditto_tui.session import open_runtime
from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.screens.grants import GrantsModal
from tests.faults.fault_fixtures import (
    SIZE,
    app_for,
    executions,
    finished_run,
    make_workspace,
    mcp_program,
    run_screen,
    screen_text,
    server_pid,
    still_answers,
    victim_settings,
    wait_until,
)


async def test_a_server_killed_mid_call_is_a_typed_failure_and_never_replayed(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    config = victim_settings(root)
    program = mcp_program("work", {"seconds": 30})
    async with open_runtime(program, config, root, StaticApprover("allow"), journal=False) as session:
        runtime = session.runtime
        call: dict[str, Any] = {
            "operation": "invoke",
            "server": "victim",
            "call": {"id": "k-1", "name": "work", "arguments": {"seconds": 30}},
        }
        pending = asyncio.ensure_future(runtime.invoke("INTERACTION.ACT.MCP", call))
        deadline = time.monotonic() + 15
        while executions(root) != ["work"] or server_pid(root) is None:
            assert time.monotonic() < deadline and not pending.done()
            await asyncio.sleep(0.02)
        pid = server_pid(root)
        assert pid is not None
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        invocation = await pending
        waited = time.monotonic() - killed
        again = await runtime.invoke("INTERACTION.ACT.MCP", {**call, "call": {**call["call"], "id": "k-2"}})
        status = session.mcp.status("victim")
    result = invocation.result
    assert waited < 1.0
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_SERVER_DISCONNECTED" and result.error.retryable is False
    assert again.result.status == "failed"  # no silent restart: the call is not run again
    assert status is not None and status.state == "disconnected"
    assert executions(root) == ["work"]


async def test_the_ui_stays_up_and_shows_a_server_killed_mid_call(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    app = app_for(root, victim_settings(root), mcp_program("work", {"seconds": 30}))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: executions(root) == ["work"] and server_pid(root) is not None, 15)
        pid = server_pid(root)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        worker = await finished_run(pilot)
        outputs = worker.result
        assert isinstance(outputs, dict), worker.error
        assert outputs["call"].result.error.code == "MCP_SERVER_DISCONNECTED"
        assert outputs["observe"].status == "failed"
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.finished)
        entry = screen.model.nodes["call"].entry
        assert entry is not None
        screen.timeline.focus()
        screen.timeline.select(entry.index)
        await pilot.press("up", "down")
        await pilot.pause()
        assert "MCP_SERVER_DISCONNECTED" in screen.detail.text.plain
        assert "failed" in screen_text(app)
        await still_answers(pilot)
    assert executions(root) == ["work"]


async def test_a_hanging_server_times_out_while_the_ui_answers_keys(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    app = app_for(root, victim_settings(root, timeout=2.0), mcp_program("hang", {}))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: executions(root) == ["hang"], 15)
        await pilot.press("g")  # the Run screen's grants panel opens while the call hangs
        await wait_until(pilot, lambda: isinstance(app.screen, GrantsModal), 2.0)
        assert not run_screen(app).model.finished  # the call is still hanging behind it
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, GrantsModal), 2.0)
        worker = await finished_run(pilot)
        outputs = worker.result
        assert isinstance(outputs, dict), worker.error
        result = outputs["call"].result
        assert result.status == "timeout" and result.error.code == "MCP_TIMEOUT"
        assert outputs["observe"].status == "timeout"
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.finished)
        assert "timeout" in screen_text(app)
        await still_answers(pilot)
    assert executions(root) == ["hang"]
