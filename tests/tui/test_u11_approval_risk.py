"""ADVERSARIAL U-11 (display side): the approval view shows what a person needs to judge the risk.

The server's title and hints (ToolAnnotations) are shown as its claims; a destructive call, said so or
by the MCP default, is marked in a strong style; "none declared" appears only when nothing is declared;
and a call that writes a workspace file shows its diff, MCP calls included (the demo server's
``write_note``), read without following a link out of the workspace.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from ditto_tui.config import parse_runtime_config
from ditto_tui.demo.servers import SAMPLE_NOTES, demo_server_entry
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.write_targets import server_roots, write_targets
from tests.tui.browser_fixtures import FakeMcpServer
from tests.tui.run_fixtures import SIZE, approval_view, screen_text, wait_until

HOSTILE_TITLE = "Tidy [bold red]up[/] \x1b[31mnow\u202e"
OBJECT = {"type": "object", "properties": {"name": {"type": "string"}}}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "drop_table",
        "description": "Drop a table.",
        "inputSchema": OBJECT,
        "annotations": {"title": HOSTILE_TITLE, "destructiveHint": True, "idempotentHint": True},
    },
    {"name": "mystery", "description": "Says nothing about itself.", "inputSchema": OBJECT},
    {
        "name": "peek",
        "description": "Only looks.",
        "inputSchema": OBJECT,
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))


def _app(workspace: Path, sandbox: dict[str, Any], servers: dict[str, Any], server: str) -> DittoApp:
    config = parse_runtime_config(
        {
            "sandbox": sandbox,
            "mcp": {"servers": servers},
            "approval": {"rules": [{"mcp": f"{server}:*", "decision": "ask"}]},
        },
        {},
    )
    return DittoApp(RunSpec(config=config, workspace=workspace, program=None, journal=False))


async def _browser(pilot: Pilot[Any]) -> McpScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, McpScreen), timeout=20)
    screen = app.screen
    assert isinstance(screen, McpScreen)
    return screen


async def _ask(
    pilot: Pilot[Any], screen: McpScreen, server: str, tool: str, **arguments: Any
) -> ApprovalModal:
    screen.invoke(server, tool, arguments)
    return await approval_view(pilot)


async def _answer_no(pilot: Pilot[Any], view: ApprovalModal) -> None:
    await pilot.press("c")  # cancel the call: nothing runs
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: app.desk.open is None)
    await wait_until(pilot, lambda: app.keys.armed)


def _risk(view: ApprovalModal) -> Static:
    return view.query_one("#risk", Static)


async def test_u11_destructive_annotation_shown(tmp_path: Path) -> None:
    server = FakeMcpServer(TOOLS)
    app = _app(tmp_path, {"mcp": ["db"]}, {}, "db")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _browser(pilot)
        assert app.bridge.mcp is not None
        app.bridge.mcp.register("db", server)
        screen.discover(["db"])
        await wait_until(pilot, lambda: len(screen.source.tools("db")) == 3)

        view = await _ask(pilot, screen, "db", "drop_table", name="users")
        text = screen_text(app)
        assert _risk(view).has_class("destructive")
        assert "⚠ Destructive (server says): the call may delete or overwrite data" in text
        assert "Title        Tidy [bold red]up[/] ⟨ESC⟩[31mnow⟨U+202E⟩" in text  # literal, never markup
        assert "destructive yes (server says)" in text and "idempotent yes (server says)" in text
        assert "open-world yes (default)" in text and "claims of the server, not checked" in text
        assert "Effects      not declared by the tool; see the server's hints" in text
        assert "none declared" not in text
        await _answer_no(pilot, view)

        view = await _ask(pilot, screen, "db", "mystery", name="x")
        text = screen_text(app)
        assert _risk(view).has_class("destructive")
        assert "⚠ Destructive (server default): the call may delete or overwrite data" in text
        assert "Effects      none declared" in text
        await _answer_no(pilot, view)

        # The legitimate path: a read-only tool is not marked destructive, and approving it runs it.
        view = await _ask(pilot, screen, "db", "peek", name="users")
        text = screen_text(app)
        assert not _risk(view).has_class("destructive") and _risk(view).has_class("harmless")
        assert "Read-only (server says): the call only reads, by the server's claim" in text
        assert "open-world no (server says)" in text
        await pilot.press("a")
        await wait_until(pilot, lambda: ("peek", {"name": "users"}) in server.calls)
    assert [name for name, _ in server.calls] == ["peek"]


async def test_u11_mcp_write_diff(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copytree(SAMPLE_NOTES, root / "notes")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET outside the workspace\n", encoding="utf-8")
    (root / "notes" / "leak.md").symlink_to(secret)
    welcome = (root / "notes" / "welcome.md").read_text(encoding="utf-8")
    first_line = welcome.splitlines()[0]
    app = _app(root, {"mcp": ["demo"], "read": True}, {"demo": demo_server_entry(root / "notes")}, "demo")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _browser(pilot)
        await wait_until(pilot, lambda: len(screen.source.tools("demo")) >= 5, timeout=20)

        # A note behind a link out of the workspace: its text never shows.
        view = await _ask(pilot, screen, "demo", "write_note", name="leak", text="harmless\n")
        text = screen_text(app)
        assert "TOP SECRET" not in text
        assert "The current file cannot be read" in text
        await _answer_no(pilot, view)

        # The legitimate path: the diff against the note as it is now, then the write.
        view = await _ask(pilot, screen, "demo", "write_note", name="welcome", text="Replaced.\n")
        shown = view.diff_text
        assert "Diff against the current notes/welcome.md (the file this call most likely writes" in shown
        assert f"-{first_line}" in shown and "+Replaced." in shown
        await pilot.press("a")
        await wait_until(
            pilot, lambda: (root / "notes" / "welcome.md").read_text(encoding="utf-8") == "Replaced.\n"
        )


def test_u11_write_targets_stay_inside_the_workspace(tmp_path: Path) -> None:
    config = parse_runtime_config(
        {"mcp": {"servers": {"n": {"command": "x", "args": ["--root", str(tmp_path), "--notes", "notes"]}}}},
        {},
    )
    roots = server_roots(config.mcp.servers["n"], tmp_path)
    assert roots == ["notes", "."]
    assert write_targets("memo", roots, tmp_path) == ["notes/memo", "notes/memo.md", "memo", "memo.md"]
    assert write_targets("../../etc/passwd", roots, tmp_path) == []
    assert write_targets("/etc/passwd", roots, tmp_path) == []
    assert write_targets(str(tmp_path / "notes" / "a.md"), roots, tmp_path) == ["notes/a.md"]
    outside = parse_runtime_config(
        {"mcp": {"servers": {"o": {"command": "x", "args": ["--dir", "/etc"]}}}}, {}
    )
    assert server_roots(outside.mcp.servers["o"], tmp_path) == ["."]
