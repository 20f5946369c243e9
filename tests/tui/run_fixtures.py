"""Helpers for the Run screen and approval tests: a workspace, the app over a graph file, waiting."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.worker import Worker

from ditto_tui.config import RuntimeConfig, load_runtime_config_file
from ditto_tui.interaction import McpClient
from ditto_tui.program import load_program
from ditto_tui.runtime import ApprovalResolved
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.screens.run import RunScreen

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SIZE = (120, 36)


def workspace(tmp_path: Path) -> Path:
    """A workspace holding a README and a note, with the TUI test config."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(DATA / "ditto.tui.yaml", root / "ditto.yaml")
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    (root / "note.md").write_text("old note\n", encoding="utf-8")
    return root


def config(root: Path, **approval: Any) -> RuntimeConfig:
    """The workspace config, with ``approval`` fields (e.g. ``timeoutSeconds``) added."""
    loaded = load_runtime_config_file(root / "ditto.yaml", {})
    if approval:
        section = loaded.approval.model_copy(update=approval)
        loaded = loaded.model_copy(update={"approval": section})
    return loaded


def app_for(root: Path, graph_file: str, settings: RuntimeConfig | None = None) -> DittoApp:
    """The app the CLI opens for ``ditto-tui run GRAPH`` (``graph_file`` under graphs/ or tests/data)."""
    path = ROOT / graph_file
    settings = settings or config(root)
    program = load_program(path, settings, root)
    return DittoApp(RunSpec(config=settings, workspace=root, program=program))


async def wait_until(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 20.0) -> None:
    """Let the app run until ``condition()`` holds (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.01)


async def approval_view(pilot: Pilot[Any], *, armed: bool = True) -> ApprovalModal:
    """The approval view once it is open (and, by default, once its keys are armed)."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: app.desk.open is not None and app.screen is app.desk.open)
    view = app.desk.open
    assert view is not None
    await pilot.pause()
    if armed:
        await wait_until(pilot, lambda: view.armed)
    return view


async def keys_armed(pilot: Pilot[Any]) -> None:
    """Wait until keys run bindings again after a modal closed (U-09: keys meant for it are held back)."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: app.keys.armed)


async def approve_always(
    pilot: Pilot[Any], scope: str = "tool", lifetime: str = "session", count: int | None = None
) -> None:
    """In an open approval view: ``s``, choose the grant's scope and lifetime with the keys (and type the
    ``count`` of minutes or uses), ``ctrl+s``."""
    from textual.widgets import Input, RadioSet

    from ditto_tui.tui.widgets.grant_chooser import GrantChooser

    await pilot.press("s")
    await wait_until(pilot, lambda: bool(pilot.app.screen.query(GrantChooser)))
    chooser = pilot.app.screen.query_one(GrantChooser)
    for radio_id, wanted in (("#grant-scope", scope), ("#grant-lifetime", lifetime)):
        radios = chooser.query_one(radio_id, RadioSet)
        radios.focus()
        await pilot.pause()
        names = [button.name for button in radios.query("RadioButton")]
        start = radios._selected or 0  # the highlighted button, where the arrow keys move from
        target = names.index(wanted)
        for _ in range(abs(target - start)):
            await pilot.press("down" if target > start else "up")
        await pilot.press("enter")

        def chosen(radios: RadioSet = radios, wanted: str = wanted) -> bool:
            return radios.pressed_button is not None and radios.pressed_button.name == wanted

        await wait_until(pilot, chosen)
    if count is not None:
        field = chooser.query_one("#grant-count", Input)
        field.focus()
        await pilot.pause()
        field.value = ""
        await pilot.press(*str(count))
    await pilot.press("ctrl+s")


def run_screen(app: DittoApp) -> RunScreen:
    """The Run screen (the base of the run mode)."""
    screen = app.screen_stack[0]
    assert isinstance(screen, RunScreen)
    return screen


def decisions(app: DittoApp) -> list[ApprovalResolved]:
    """Every ``approval_resolved`` event the Run screen received, in order."""
    entries = run_screen(app).model.entries
    return [event for entry in entries for event in entry.events if isinstance(event, ApprovalResolved)]


def run_worker(app: DittoApp) -> Worker[Any]:
    """The worker that runs the program."""
    runner = run_screen(app).runner
    assert runner is not None
    return runner


async def outputs(pilot: Pilot[Any]) -> dict[str, Any]:
    """Wait for the run to end; its ``{node_id: output}``."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    worker = run_worker(app)
    await wait_until(pilot, lambda: worker.is_finished)
    result = worker.result
    assert isinstance(result, dict), worker.error
    return result


def screen_text(app: DittoApp) -> str:
    """Everything on screen as plain text, one line per row."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


async def browse_server(pilot: Pilot[Any], name: str, server: McpClient, *, tools: int) -> McpScreen:
    """The app's MCP browser with ``server`` registered as ``name`` and its ``tools`` tools discovered."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: isinstance(app.screen, McpScreen), timeout=20)
    screen = app.screen
    assert isinstance(screen, McpScreen) and app.bridge.mcp is not None
    app.bridge.mcp.register(name, server)
    screen.discover([name])
    await wait_until(pilot, lambda: len(screen.source.tools(name)) == tools)
    return screen
