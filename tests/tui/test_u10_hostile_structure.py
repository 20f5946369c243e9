"""ADVERSARIAL U-10: hostile structure never kills the supervisor.

A server whose input schema nests 96 objects deep used to end the whole app with ``RecursionError`` as
soon as its invoke form or the approval edit form opened; an exception in any screen ended the app and
the live run with it. Now the form falls back to the JSON editor with a note, and an error is shown and
logged while the run and its pending approvals stay alive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static, TextArea, Tree

from ditto_tui.config import parse_runtime_config
from ditto_tui.home import logs_dir
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.faults import UI_ERRORS_LOG, Guarded
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.schema_form import MAX_DEPTH, SchemaForm, json_only_reason, plan_fields
from tests.tui.browser_fixtures import FakeMcpServer
from tests.tui.run_fixtures import (
    SIZE,
    app_for,
    approval_view,
    browse_server,
    keys_armed,
    outputs,
    screen_text,
    wait_until,
    workspace,
)

NOTE = ".ditto/notes/hello.md"


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))


def _deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _deep_value(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


DEEP = _deep_schema(96)
DEEP_TOOLS = [
    {"name": "read_deep", "description": "Read through 96 levels.", "inputSchema": DEEP},
    {"name": "write_deep", "description": "Write through 96 levels.", "inputSchema": DEEP},
]


def _mcp_app(root: Path) -> DittoApp:
    config = parse_runtime_config(
        {
            "sandbox": {"mcp": ["deep"]},
            "approval": {
                "rules": [
                    {"mcp": "deep:read_*", "decision": "allow"},
                    {"mcp": "deep:write_*", "decision": "ask"},
                ]
            },
        },
        {},
    )
    return DittoApp(RunSpec(config=config, workspace=root, program=None, journal=False))


async def _browser(pilot: Pilot[Any], server: FakeMcpServer) -> McpScreen:
    return await browse_server(pilot, "deep", server, tools=2)


async def _select(pilot: Pilot[Any], screen: McpScreen, tool: str) -> None:
    screen.query_one("#mcp-tree", Tree).focus()
    for _ in range(10):
        if screen.selected == ("deep", tool):
            return
        await pilot.press("down")
    raise AssertionError(f"no tree node {tool!r}")


def test_u10_depth_limits_pick_the_json_editor() -> None:
    shallow = {"type": "object", "properties": {"doc": {"type": "object", "properties": {"a": {}}}}}
    assert plan_fields(shallow, {"doc": {"a": 1}}) is not None
    assert plan_fields(shallow, {"doc": {"a": _deep_value(MAX_DEPTH)}}) is None
    reason = json_only_reason(shallow, {"doc": _deep_value(9)}) or ""
    assert "The arguments nest more than 8 levels" in reason
    assert plan_fields(_deep_schema(MAX_DEPTH)) is not None
    assert plan_fields(DEEP) is None
    assert "too deep to check here" in (json_only_reason(DEEP) or "")


async def test_u10_deep_schema_falls_back_to_json(tmp_path: Path) -> None:
    server = FakeMcpServer(DEEP_TOOLS)
    app = _mcp_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _browser(pilot, server)
        # The invoke form of the MCP browser.
        await _select(pilot, screen, "read_deep")
        await pilot.press("enter")
        form = await _form(pilot, screen)
        assert form.json_mode and app.is_running
        assert "nests more than 8 levels deep" in screen_text(app)
        form.query_one("#schema-json", TextArea).text = json.dumps({"a": _deep_value(20)})
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: len(server.calls) == 1)
        assert server.calls[0] == ("read_deep", {"a": _deep_value(20)})
        # The edit form of the approval view.
        screen.invoke("deep", "write_deep", {"a": _deep_value(30)})
        view = await approval_view(pilot)
        await pilot.press("e")
        editor = await wait_for_editor(pilot, view)
        assert app.is_running and "nests more than 8 levels deep" in screen_text(app)
        editor.text = json.dumps({"a": "edited"})
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "edited")
        await pilot.press("a")
        await wait_until(pilot, lambda: len(server.calls) == 2)
        assert server.calls[1] == ("write_deep", {"a": "edited"})


async def _form(pilot: Pilot[Any], screen: McpScreen) -> SchemaForm:
    await wait_until(pilot, lambda: bool(screen.form_holder.query(SchemaForm)))
    await pilot.pause()
    return screen.form_holder.query_one(SchemaForm)


async def wait_for_editor(pilot: Pilot[Any], view: Any) -> TextArea:
    await wait_until(pilot, lambda: bool(view.editor_box.query("#schema-json")))
    await pilot.pause()
    editor = view.editor_box.query_one("#schema-json", TextArea)
    assert isinstance(editor, TextArea)
    return editor


class _RaisingAction(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "explode", "Explode")]

    def compose(self) -> ComposeResult:
        yield Static("a screen with a faulty action")

    def action_explode(self) -> None:
        raise RuntimeError("the action exploded")


class _RaisingCompose(Screen[None]):
    def compose(self) -> ComposeResult:
        raise RuntimeError("the compose exploded")
        yield Static("never")


class _RaisingHandler(Guarded, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Static("a screen whose mount handler fails")

    def on_mount(self) -> None:
        raise ValueError("the mount handler exploded")


async def test_u10_screen_error_keeps_run_alive(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    log = logs_dir(root) / UI_ERRORS_LOG
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")  # later: the request stays pending while the screens fail
        await wait_until(pilot, lambda: app.desk.open is None)
        await keys_armed(pilot)
        base = app.screen
        await app.push_screen(_RaisingAction())
        await pilot.press("x")
        await wait_until(pilot, lambda: "the action exploded" in _logged(log))
        await app.push_screen(_RaisingCompose())
        await wait_until(pilot, lambda: "the compose exploded" in _logged(log))
        await wait_until(pilot, lambda: isinstance(app.screen, _RaisingAction))  # the broken one closed
        app.pop_screen()
        await app.push_screen(_RaisingHandler())
        await wait_until(pilot, lambda: "the mount handler exploded" in _logged(log))
        await keys_armed(pilot)
        await pilot.press("escape")  # its loop still runs: its keys still work
        await wait_until(pilot, lambda: app.screen is base)
        assert app.is_running and app.return_code is None
        assert "RuntimeError: the action exploded" in _logged(log)
        assert len(app.bridge.pending()) == 1  # the run's approval is still waiting
        await keys_armed(pilot)
        await pilot.press("p")
        await approval_view(pilot)
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"
    assert (root / NOTE).read_text(encoding="utf-8").startswith("# Hello")


def _logged(log: Path) -> str:
    return log.read_text(encoding="utf-8") if log.exists() else ""


async def test_u10_a_failing_worker_is_shown_and_logged_and_the_run_goes_on(tmp_path: Path) -> None:
    """A background worker of the app that raises (one that would end the app, and one that would not)
    is shown in one line and its traceback logged; the run and its pending approval live on."""
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    log = logs_dir(root) / UI_ERRORS_LOG

    async def exploding(what: str) -> None:
        raise RuntimeError(f"the {what} worker exploded")

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.desk.open is None)
        app.run_worker(exploding("fatal"), group="session")  # exit_on_error: Textual would end the app
        await wait_until(pilot, lambda: "the fatal worker exploded" in _logged(log))
        app.run_worker(exploding("quiet"), group="session", exit_on_error=False)
        await wait_until(
            pilot, lambda: any("the quiet worker exploded" in str(n.message) for n in app._notifications)
        )
        await wait_until(pilot, lambda: "the quiet worker exploded" in _logged(log))
        assert app.is_running and app.return_code is None
        assert len(app.bridge.pending()) == 1
        await keys_armed(pilot)
        await pilot.press("p")
        await approval_view(pilot)
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"
