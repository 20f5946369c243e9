"""Shared pieces of the fault-injection tests: workspaces, configs, the app over a program, waiting, text."""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.worker import Worker

from ditto_tui.config import RuntimeConfig, parse_runtime_config
from ditto_tui.home import logs_dir
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.run import RunScreen
from tests.tui.run_fixtures import wait_until as wait_until  # re-exported: the fault tests wait with it

SIZE = (120, 36)
VICTIM = Path(__file__).resolve().parent / "servers" / "victim.py"
COUNT_FILE = "executions.txt"


def make_workspace(tmp_path: Path) -> Path:
    """An empty workspace with a README."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    return root


def settings(data: Mapping[str, Any]) -> RuntimeConfig:
    """A configuration from ``ditto.yaml``-shaped data."""
    return parse_runtime_config(dict(data), {})


def victim_settings(root: Path, *, timeout: float | None = None) -> RuntimeConfig:
    """The ``victim`` server granted and allowed, counting its executions in ``<root>/executions.txt``."""
    server: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(VICTIM), "--count", str(root / COUNT_FILE)],
    }
    if timeout is not None:
        server["timeout"] = timeout
    return settings(
        {
            "sandbox": {"mcp": ["victim"]},
            "mcp": {"servers": {"victim": server}},
            "approval": {"rules": [{"mcp": "victim:*", "decision": "allow"}]},
        }
    )


def mcp_program(tool: str, arguments: Mapping[str, Any]) -> Program:
    """``call`` invokes ``victim:<tool>`` once; ``observe`` observes its result."""
    invoke = {
        "operation": "invoke",
        "server": "victim",
        "call": {"id": "c-1", "name": tool, "arguments": dict(arguments)},
    }
    plan = (
        graph("victim-call")
        .node("call", "INTERACTION.ACT.MCP", [], lambda _i, _d: invoke)
        .node("observe", "INTERACTION.OBSERVE", ["call"], lambda _i, deps: {"result": deps["call"].result})
    )
    return Program(name="victim-call", description="One call to the victim server.", plan=plan)


def executions(root: Path) -> list[str]:
    """The tools the victim server started executing, in order."""
    file = root / COUNT_FILE
    return file.read_text(encoding="utf-8").split() if file.exists() else []


def server_pid(root: Path) -> int | None:
    """The victim server's process id, from its log, once it has started."""
    log = logs_dir(root) / "victim.log"
    if not log.exists():
        return None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("[stderr] pid "):
            return int(line.split()[2])
    return None


def app_for(root: Path, config: RuntimeConfig, program: Program) -> DittoApp:
    """The application as ``ditto-tui run`` opens it, over ``program``."""
    return DittoApp(RunSpec(config=config, workspace=root, program=program))


def run_screen(app: DittoApp) -> RunScreen:
    """The Run screen (the base of the run mode)."""
    screen = app.screen_stack[0]
    assert isinstance(screen, RunScreen)
    return screen


async def finished_run(pilot: Pilot[Any], timeout: float = 10.0) -> Worker[Any]:
    """The worker that ran the program, once it has ended (in success or error)."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: run_screen(app).runner is not None)
    worker = run_screen(app).runner
    assert worker is not None
    await wait_until(pilot, lambda: worker.is_finished, timeout)
    await pilot.pause()
    return worker


def screen_text(app: DittoApp) -> str:
    """Everything on screen, toasts included, as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


async def still_answers(pilot: Pilot[Any]) -> None:
    """The app is up and handles keys: ``v`` switches the Run screen's detail view and back."""
    app = pilot.app
    assert isinstance(app, DittoApp) and app.is_running
    await wait_until(pilot, lambda: app.keys.armed)  # keys right after a modal closes are held back (U-09)
    screen = run_screen(app)
    if screen.prompt.display:  # an agent run that ended offers a follow-up: Esc gives the keys back
        await pilot.press("escape")
    before = screen.raw
    await pilot.press("v")
    assert screen.raw != before
    await pilot.press("v")
    assert screen.raw == before
