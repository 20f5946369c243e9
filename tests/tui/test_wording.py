"""What people read says what happened in words: no exception class names, no word said twice."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

from ditto_tui.config import parse_runtime_config
from ditto_tui.errors import GraphExecutionError, PermissionDeniedError
from ditto_tui.headless import run_headless
from ditto_tui.interaction import McpCallError
from ditto_tui.program import load_program
from ditto_tui.runtime import LoopIteration, NodeFailed, NodeInfo, NodeStarted, RunStarted
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.widgets.detail import entry_detail, entry_heading
from tests.tui.run_fixtures import ROOT, app_for, approval_view, run_screen, wait_until, workspace

CLASS_NAMES = ("CancelledError", "McpCallError", "McpError", "GraphExecutionError", "PermissionDeniedError")
RUN = "run-1"


def _headings(model: RunModel) -> list[str]:
    return [entry_detail(entry, raw=False).plain.splitlines()[0] for entry in model.entries]


def test_exceptions_are_told_in_words() -> None:
    assert public_message_from_exception(asyncio.CancelledError()) == "cancelled"
    assert (
        public_message_from_exception(asyncio.CancelledError("cancelled by the user"))
        == "cancelled by the user"
    )
    mcp = McpCallError("MCP server 'demo' is not available", code="MCP_SERVER_UNAVAILABLE")
    assert public_message_from_exception(mcp) == "MCP call failed: MCP server 'demo' is not available"
    denied = PermissionDeniedError("tool 'grep' is not allowed by the sandbox")
    assert (
        public_message_from_exception(denied)
        == "Permission denied: tool 'grep' is not allowed by the sandbox"
    )
    graph = GraphExecutionError("node 'a' (T.X) failed: boom", node_id="a")
    assert public_message_from_exception(graph) == "node 'a' (T.X) failed: boom"
    assert public_message_from_exception(TimeoutError()) == "timed out"
    assert public_message_from_exception(RuntimeError("backend said no")) == "backend said no"
    assert public_message_from_exception(RuntimeError()) == "unexpected error"


def test_run_and_iteration_headings_say_their_kind_once() -> None:
    model = RunModel()
    nodes = (NodeInfo(id="sample", type="INFER.SAMPLE"),)
    model.apply(
        [
            RunStarted(
                run_id=RUN, seq=1, at=1.0, plan="agent", plan_kind="loop", nodes=nodes, max_iterations=8
            ),
            LoopIteration(run_id=RUN, seq=2, at=1.1, iteration=1, max_iterations=8),
        ]
    )
    headings = _headings(model)
    assert headings[0].startswith("run agent · ") and headings[1].startswith("iteration 1/8 · ")
    assert not any(heading.startswith(("run run", "iteration iteration")) for heading in headings)


def test_a_cancellation_journaled_by_its_class_name_shows_as_cancelled() -> None:
    model = RunModel()
    ids = {"run_id": RUN, "node_id": "write", "node_type": "INTERACTION.ACT.TOOL", "execution_id": "exec-1"}
    call = {"call": {"id": "c", "name": "write_text", "arguments": {}}}
    old = {"error_type": "CancelledError", "error": "CancelledError", "cancelled": True}
    model.apply(
        [
            RunStarted(run_id=RUN, seq=1, at=1.0, plan="p", plan_kind="graph", nodes=()),
            NodeStarted(**ids, seq=2, at=1.1, input=call),
            NodeFailed(**ids, **old, seq=3, at=1.2, duration_ms=1.0),
        ]
    )
    row = model.entries[1]
    assert row.summary == "cancelled" and entry_heading(row) == "Tool call · write_text"


async def test_a_cancelled_run_shows_cancelled_in_words(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/write_note.py")
    async with app.run_test(size=(160, 45)) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")  # later: the approval stays pending
        screen = run_screen(app)
        await wait_until(pilot, lambda: app.screen is screen and app.keys.armed)
        await pilot.press("c")
        await wait_until(pilot, lambda: app.screen is not screen)
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.model.finished)
        entries = screen.model.entries
        write = next(entry for entry in entries if entry.kind == "call" and entry.title == "write_text")
        approval = next(entry for entry in entries if entry.kind == "approval")
        assert write.summary == "cancelled" and approval.summary == "the call was cancelled"
        for entry in entries:
            shown = entry_detail(entry, raw=False).plain + entry.summary
            assert not any(name in shown for name in CLASS_NAMES), shown
            assert "run run" not in shown and "cancelled: the call was cancelled" not in shown


async def test_a_headless_run_whose_mcp_server_fails_says_so_in_words(tmp_path: Path) -> None:
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    data = {"sandbox": {"mcp": ["demo"]}, "mcp": {"timeoutSeconds": 5, "servers": {"demo": broken}}}
    config = parse_runtime_config(data, {}, workspace=tmp_path)
    program = load_program(ROOT / "graphs/mcp_notes.py", config, tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(program, config, tmp_path, out=out, err=err, journal=False)
    assert code == 1
    last = err.getvalue().strip().splitlines()[-1]
    assert last.startswith("ditto-tui: run failed: node 'discover' failed: MCP call failed: "), last
    failed = [json.loads(line) for line in out.getvalue().splitlines() if '"node_failed"' in line]
    assert failed and failed[0]["error"].startswith("MCP call failed: MCP server 'demo' is not available")
    assert not any(name in err.getvalue() or name in failed[0]["error"] for name in CLASS_NAMES)
