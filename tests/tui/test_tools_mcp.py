"""The Tools screen lists the MCP tools a graph can reach (graphs/mcp_notes.py on the demo server), each with
the approval rule that applies; ``x`` with nothing to cancel says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig, parse_runtime_config
from ditto_tui.contracts import McpCapability
from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.interaction import ToolRegistry, create_interaction_worker, open_mcp_servers
from ditto_tui.program import load_program
from ditto_tui.runtime import create_ditto
from ditto_tui.sandbox import Sandbox
from ditto_tui.supervise import ApprovalPolicy
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.tools import ToolsScreen, mcp_tool_rows, reachable_mcp_tools, tool_definitions
from tests.tui.browser_fixtures import ScreenApp
from tests.tui.run_fixtures import ROOT, SIZE, run_screen, screen_text, wait_until

GRAPH = ROOT / "graphs" / "mcp_notes.py"
RULES: list[dict[str, Any]] = [
    {"mcp": "demo:*", "hints": {"readOnly": True}, "decision": "allow"},
    {"mcp": "demo:write_*", "decision": "allow"},
]


def _config(root: Path, rules: list[dict[str, Any]]) -> RuntimeConfig:
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    return parse_runtime_config(
        {
            "sandbox": {"mcp": ["demo"]},
            "mcp": {"servers": {"demo": demo_server_entry(notes)}},
            "approval": {"rules": rules},
        },
        {},
    )


async def _discovered(config: RuntimeConfig, root: Path) -> dict[str, list[McpCapability]]:
    """The demo server's tools as the Tools screen lists them: through a runtime over the real server."""
    async with open_mcp_servers(config.mcp.enabled_servers()) as registry:
        worker = create_interaction_worker(mcp=registry)
        async with create_ditto(
            sandbox=config.sandbox.to_permissions_kwargs(), workspace=root, workers=[worker]
        ) as runtime:
            return await reachable_mcp_tools(runtime, registry)


def test_rows_carry_each_tools_rule(tmp_path: Path) -> None:
    config = _config(tmp_path, [*RULES[:1], {"mcp": "demo:write_*", "decision": "ask"}])
    tools = asyncio.run(_discovered(config, tmp_path))
    policy = ApprovalPolicy.from_config(config.approval)
    rows = {
        row.capability.name: row
        for row in mcp_tool_rows(tools, Sandbox(config.sandbox.to_permissions_kwargs()), policy)
    }
    assert {"read_note", "search_notes", "write_note"} <= set(rows)
    assert rows["read_note"].verdict.decision == "allow" and rows["read_note"].permitted
    assert rows["write_note"].verdict.decision == "ask"
    assert rows["write_note"].verdict.rule is not None and "demo:write_*" in rows["write_note"].verdict.rule


def test_snapshot_tools_screen_for_mcp_notes(snap_compare: Any, tmp_path: Path) -> None:
    config = _config(tmp_path, [*RULES[:1], {"mcp": "demo:write_*", "decision": "ask"}])
    program = load_program(GRAPH, config, tmp_path)
    tools = asyncio.run(_discovered(config, tmp_path))
    policy = ApprovalPolicy.from_config(config.approval)
    sandbox = Sandbox(config.sandbox.to_permissions_kwargs(), workspace=tmp_path)
    definitions = tool_definitions(ToolRegistry(program.tools))

    def make() -> ToolsScreen:
        return ToolsScreen(definitions, sandbox, policy, mcp=tools)

    assert snap_compare(ScreenApp(make), press=["down"], terminal_size=SIZE)


async def test_the_app_lists_the_mcp_tools_of_mcp_notes_and_x_says_when_nothing_can_be_cancelled(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, RULES)
    program = load_program(GRAPH, config, tmp_path)
    app = DittoApp(RunSpec(config=config, workspace=tmp_path, program=program, journal=False))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("f4")
        await wait_until(pilot, lambda: "demo:search_notes" in screen_text(app), timeout=30)
        text = screen_text(app)
        assert "No tools are registered." not in text
        assert "demo:write_note" in text and "demo:read_note" in text
        await pilot.press("f2")
        await wait_until(
            pilot, lambda: "mcp-notes:1" in screen_text(app) or run_screen(app).model.finished, timeout=30
        )
        await wait_until(pilot, lambda: run_screen(app).model.finished, timeout=30)
        await pilot.press("x")
        await wait_until(pilot, lambda: "Nothing to cancel: the run has ended." in screen_text(app))
