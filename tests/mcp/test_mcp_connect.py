"""open_mcp_servers: start-up failures, start-up deadlines, not waiting, closing, and headless reporting."""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from ditto_tui.config import parse_runtime_config
from ditto_tui.errors import McpError
from ditto_tui.headless import run_headless
from ditto_tui.home import logs_dir
from ditto_tui.interaction import open_mcp_servers
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from tests.mcp.mcp_helpers import python_server, sandbox

CRASHES = {
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stderr.write('boom at start'); sys.exit(2)"],
}
SILENT = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}


def call(call_id: str) -> dict[str, object]:
    return {"id": call_id, "name": "echo", "arguments": {"text": "x"}}


async def test_a_server_that_fails_to_start_is_reported_and_the_others_work(tmp_path: Path) -> None:
    entries: dict[str, Mapping[str, object]] = {
        "missing": {"command": "no-such-mcp-server"},
        "crashes": CRASHES,
        "ok": python_server("raw.py", "echo"),
    }
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as registry:
        box = sandbox(tmp_path, "missing", "crashes", "ok")
        missing, crashes = registry.status("missing"), registry.status("crashes")
        unavailable = await registry.invoke("crashes", call("c"), box)
        working = await registry.invoke("ok", call("o"), box)
        with pytest.raises(McpError, match="'missing' is not available"):  # the first failing server
            await registry.discover(None, box)
    assert missing is not None and missing.state == "failed"
    assert "'no-such-mcp-server' was not found" in (missing.error or "") and "missing.log" in (
        missing.error or ""
    )
    assert crashes is not None and crashes.state == "failed" and crashes.log_path is not None
    assert "boom at start" in Path(crashes.log_path).read_text()
    assert "the process exited with status 2 (see crashes.log)" in (crashes.error or "")
    assert unavailable.error is not None and unavailable.error.code == "MCP_SERVER_UNAVAILABLE"
    assert working.status == "success"
    assert registry.servers() == ["missing", "crashes", "ok"]  # configuration order, whatever finished first


async def test_a_server_that_never_finishes_starting_fails_at_its_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    async with open_mcp_servers(
        {"silent": SILENT}, log_dir=tmp_path / "logs", startup_timeout=0.5
    ) as registry:
        status = registry.status("silent")
    assert time.monotonic() - started < 2.0
    assert status is not None and status.state == "failed" and "within 0.5 s" in (status.error or "")


async def test_without_waiting_calls_wait_for_the_server(tmp_path: Path) -> None:
    async with open_mcp_servers(
        {"ok": python_server("raw.py", "echo")}, log_dir=tmp_path / "logs", wait=False
    ) as registry:
        first = registry.status("ok")
        result = await registry.invoke("ok", call("w"), sandbox(tmp_path, "ok"))
        later = registry.status("ok")
    assert first is not None and first.state == "connecting"
    assert result.status == "success" and later is not None and later.state == "connected"
    assert registry.status("ok").state == "closed"  # type: ignore[union-attr]


async def test_a_server_still_starting_at_exit_is_stopped_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    async with open_mcp_servers({"silent": SILENT}, log_dir=tmp_path / "logs", wait=False):
        pass
    assert time.monotonic() - started < 1.5


async def test_a_headless_run_that_needs_a_broken_server_says_why(tmp_path: Path) -> None:
    config = parse_runtime_config(
        {"sandbox": {"mcp": ["missing"]}, "mcp": {"servers": {"missing": {"command": "no-such-mcp-server"}}}},
        {},
    )
    plan = graph("discover").node("d", "INTERACTION.ACT.MCP", [], _discover)
    err = io.StringIO()
    code = await run_headless(
        Program(name="d", description="", plan=plan), config, tmp_path, out=io.StringIO(), err=err
    )
    assert code == 1
    assert (
        "MCP server 'missing' failed to start: command 'no-such-mcp-server' was not found" in err.getvalue()
    )
    assert "MCP_SERVER_UNAVAILABLE" in err.getvalue() or "not available" in err.getvalue()
    assert (logs_dir(tmp_path) / "missing.log").exists() and not (tmp_path / ".ditto").exists()


def _discover(_input: object, _deps: object) -> dict[str, object]:
    return {"operation": "discover", "server": "missing"}
