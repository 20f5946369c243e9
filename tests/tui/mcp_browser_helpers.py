"""Shared pieces for the MCP browser tests against real stdio servers: sources, keys, hand-written servers."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import OptionList, Tree
from textual.widgets.tree import TreeNode

from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import McpSource, open_mcp_source
from ditto_tui.tui.screens.mcp import McpScreen
from tests.tui.browser_fixtures import runtime_config, screen_text
from tests.tui.run_fixtures import wait_until

LINE_SERVER = r'''
import json, sys

PAGES = {None: (0, "p2"), "p2": (2, "p3"), "p3": (4, None)}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def paged(key, items, cursor):
    """The page of two ``items`` at ``cursor`` under ``key``, with the cursor of the next page if any."""
    start, following = PAGES[cursor]
    page = {key: items[start:start + 2]}
    if following:
        page["nextCursor"] = following
    return page


def serve(info, capabilities, answer):
    """Answer each JSON-RPC request on stdin, one a line: ``initialize`` with ``info`` and
    ``capabilities``, every other with ``answer(method, params)``, or Method not found where it is None."""
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": capabilities,
                "serverInfo": info,
            }
        else:
            result = answer(method, params)
        if result is None:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
'''
"""The start of a hand-written stdio MCP server script: ``send``, ``paged`` (two items a page, three
pages) and ``serve``; the script goes on with its data and an ``answer`` and ends calling ``serve``."""


def line_server(script: Path, body: str, *args: str) -> dict[str, Any]:
    """Write :data:`LINE_SERVER` followed by ``body`` to ``script``; its ``mcpServers`` stdio entry."""
    script.write_text(LINE_SERVER + body, encoding="utf-8")
    return {"command": sys.executable, "args": [str(script), *args]}


@contextlib.asynccontextmanager
async def browser_source(
    tmp_path: Path,
    servers: Mapping[str, Any],
    *,
    granted: Sequence[str] | None = None,
    rules: Sequence[Mapping[str, Any]] = (),
) -> AsyncIterator[McpSource]:
    """The MCP browser's source over ``servers`` (all granted unless ``granted`` names some), workspace
    ``tmp_path/work``, logs under ``tmp_path/logs``; a call the approval ``rules`` leave to a person is
    denied."""
    (tmp_path / "work").mkdir()
    config = runtime_config(
        {
            "sandbox": {"mcp": list(servers if granted is None else granted)},
            "mcp": {"servers": dict(servers)},
            "approval": {"rules": list(rules)},
        }
    )
    async with open_mcp_source(
        config, tmp_path / "work", StaticApprover("deny"), log_dir=tmp_path / "logs"
    ) as opened:
        yield opened


async def server_node(pilot: Pilot[Any], server: str) -> TreeNode[Any]:
    """Wait for discovery, focus the server tree and give ``server``'s node."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    tree: Tree[Any] = pilot.app.screen.query_one("#mcp-tree", Tree)
    tree.focus()
    return next(node for node in tree.root.children if node.data == (server, None))


async def select_server(pilot: Pilot[Any], server: str) -> McpScreen:
    """Wait for discovery, then put the tree cursor on ``server``."""
    node = await server_node(pilot, server)
    node.tree.move_cursor(node)
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, McpScreen) and screen.selected == (server, None)
    return screen


async def shows(pilot: Pilot[Any], text: str, timeout: float = 15) -> None:
    """Wait until ``text`` is on the screen; print the screen if it never is."""
    try:
        await wait_until(pilot, lambda: text in screen_text(pilot.app), timeout=timeout)
    except AssertionError:
        print(screen_text(pilot.app))
        raise


async def open_tab(pilot: Pilot[Any], server: str, key: str, listed: str) -> McpScreen:
    """Select ``server``, press ``key`` (the key of a tab) and wait until the screen shows ``listed``."""
    screen = await select_server(pilot, server)
    await pilot.press(key)
    await shows(pilot, listed)
    return screen


async def highlight(pilot: Pilot[Any], listing: OptionList, option_id: str) -> None:
    """Move the list's highlight with the keyboard to the option ``option_id``."""
    listing.focus()
    for _ in range(40):
        option = listing.highlighted_option
        if option is not None and option.id == option_id:
            return
        await pilot.press("down")
    raise AssertionError(f"no option {option_id!r}")
