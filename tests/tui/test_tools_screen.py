"""The Tools screen: every registered tool with effects, approval, sandbox permission and schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from ditto_tui.supervise import ApprovalPolicy
from ditto_tui.tui.screens.tools import ToolsScreen, tool_definitions, tool_rows
from tests.tui.browser_fixtures import ScreenApp, runtime_config, sample_tools, sandbox_for, screen_text


def _screen(workspace: Path, always: tuple[str, ...] = ()) -> ToolsScreen:
    config = runtime_config()
    policy = ApprovalPolicy(rule.model_dump(exclude_none=True) for rule in config.approval.rules)
    return ToolsScreen(
        tool_definitions(sample_tools()), sandbox_for(workspace, config), policy, always=always
    )


def test_rows_say_what_the_policy_and_the_sandbox_decide(tmp_path: Path) -> None:
    config = runtime_config()
    policy = ApprovalPolicy(rule.model_dump(exclude_none=True) for rule in config.approval.rules)
    rows = {
        row.definition.name: row
        for row in tool_rows(tool_definitions(sample_tools()), sandbox_for(tmp_path), policy)
    }
    assert rows["read_text"].permitted and rows["read_text"].verdict.decision == "allow"
    assert (
        rows["write_text"].verdict.decision == "ask"
        and rows["write_text"].verdict.rule == "tool:write_* → ask"
    )
    assert (
        not rows["write_text"].permitted
        and rows["write_text"].denial
        == "writing files is not allowed by the sandbox (to allow it, set sandbox.write: true in ditto.yaml)"
    )
    assert not rows["grep"].permitted and rows["grep"].denial == (
        "tool 'grep' is not allowed by the sandbox (to allow it, add it to sandbox.tools in ditto.yaml)"
    )


async def test_keyboard_moves_through_tools_and_the_detail_follows(tmp_path: Path) -> None:
    app = ScreenApp(lambda: _screen(tmp_path, always=("write_text",)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert "Search files for a pattern." in screen_text(app)
        await pilot.press("down", "down")
        await pilot.pause()
        text = screen_text(app)
        assert "Write a text file inside the workspace." in text
        assert "always approved for this session" in text
        assert "writing files" in text
        await pilot.press("d")
        assert app.screen.focused is not None and app.screen.focused.id == "tools-detail-scroll"
        await pilot.press("t")
        assert isinstance(app.screen.focused, DataTable)


async def test_clicking_a_row_shows_that_tool(tmp_path: Path) -> None:
    app = ScreenApp(lambda: _screen(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.click("#tools-table", offset=(3, 3))
        await pilot.pause()
        assert "Read a UTF-8 text file inside the workspace." in screen_text(app)


def test_tools_screen_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    workspace = Path(__file__).parent
    assert snap_compare(ScreenApp(lambda: _screen(workspace)), press=["down"], terminal_size=(120, 36))
