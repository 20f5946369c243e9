"""Reconnecting a server from the MCP browser: R (or the Detail tab's button) starts it again."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ditto_tui.tui.screens.mcp import McpScreen
from tests.mcp.mcp_helpers import python_server
from tests.tui.browser_fixtures import ScreenApp, screen_text
from tests.tui.mcp_browser_helpers import browser_source, select_server, server_node, shows
from tests.tui.run_fixtures import wait_until


async def test_r_starts_the_selected_server_again_and_lists_its_tools(tmp_path: Path) -> None:
    servers = {"hostile": python_server("hostile.py")}
    rules = [{"mcp": "hostile:*", "decision": "allow"}]
    async with browser_source(tmp_path, servers, rules=rules) as source:
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            await select_server(pilot, "hostile")
            before = source.registry.get("hostile")
            await pilot.press("R")
            await wait_until(pilot, lambda: source.registry.get("hostile") is not before)
            view = source.server
            await wait_until(pilot, lambda: view("hostile").callable and bool(source.tools("hostile")))
            log = (tmp_path / "logs" / "hostile.log").read_text(encoding="utf-8")
            assert "[ditto] reconnecting" in log
            observation = await source.invoke("hostile", "echo", {"text": "again"})
            assert observation.status == "success"


def _fails_until(flag: Path) -> dict[str, Any]:
    """A server that exits with status 3 at start until ``flag`` exists, then is ``hostile.py``."""
    script = python_server("hostile.py")["args"][0]
    program = (
        "import os, runpy, sys\n"
        "if not os.path.exists(sys.argv[1]):\n"
        "    sys.exit(3)\n"
        "sys.argv = sys.argv[2:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    return {"command": sys.executable, "args": ["-c", program, str(flag), script]}


async def test_a_server_that_failed_to_start_is_started_again_by_r_and_stays_selected(tmp_path: Path) -> None:
    flag = tmp_path / "fixed"
    servers = {"hostile": python_server("hostile.py"), "flaky": _fails_until(flag)}
    rules = [{"mcp": "*:*", "decision": "allow"}]
    async with browser_source(tmp_path, servers, rules=rules) as source:
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: source.server("flaky").state == "failed")
            screen = await select_server(pilot, "flaky")
            await pilot.press("p")
            await wait_until(pilot, lambda: "'flaky' is failed: R starts it again." in _notices(app))
            await pilot.press("R")  # still failing: it stays failed, and says so
            await wait_until(pilot, lambda: "Reconnecting 'flaky'…" in _notices(app))
            await wait_until(pilot, lambda: "[ditto] reconnecting" in _log(tmp_path, "flaky"))
            await wait_until(pilot, lambda: source.server("flaky").state == "failed")
            flag.touch()
            await pilot.press("R")
            await wait_until(pilot, lambda: source.server("flaky").callable and bool(source.tools("flaky")))
            await pilot.pause()
            assert screen.selected == ("flaky", None)
            await shows(pilot, "flaky  ● connected")  # in the list, and in its detail beside it:
            assert "server: hostile (protocol" in screen_text(app)
            observation = await source.invoke("flaky", "echo", {"text": "back"})
            assert observation.status == "success"


async def test_p_on_a_tool_pings_its_server_and_shows_the_round_trip(tmp_path: Path) -> None:
    servers = {"hostile": python_server("hostile.py")}
    async with browser_source(tmp_path, servers) as source:
        app = ScreenApp(lambda: McpScreen(source))
        async with app.run_test(size=(120, 40)) as pilot:
            node = await server_node(pilot, "hostile")
            node.expand()
            await pilot.pause()
            node.tree.move_cursor(node.children[0])
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, McpScreen) and screen.selected is not None and screen.selected[1]
            await pilot.press("p")
            await shows(pilot, "ms round trip")
            assert screen.selected == ("hostile", None)


def _notices(app: ScreenApp) -> list[str]:
    return [str(note.message) for note in app._notifications]


def _log(tmp_path: Path, server: str) -> str:
    path = tmp_path / "logs" / f"{server}.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""
