"""The MCP browser's Prompts tab lists each page once, however often "more" is asked for meanwhile.

``gallery``, a hand-written JSON-RPC server started from a file written here, answers its prompt list
slowly, page by page, so a second key press comes while a page is on its way, and serves a small PNG
(made with Pillow) as a resource.
"""

from __future__ import annotations

import io
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from textual.widgets import OptionList, Tree

from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import McpSource, open_mcp_source
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from tests.tui.browser_fixtures import ScreenApp, runtime_config, screen_text
from tests.tui.run_fixtures import wait_until

GALLERY = r"""
import base64, json, sys, time

PICTURE = base64.b64encode(open(sys.argv[1], "rb").read()).decode("ascii")
PROMPTS = [{"name": "prompt-%d" % index, "description": "number %d" % index} for index in range(6)]
PAGES = {None: (0, "p2"), "p2": (2, "p3"), "p3": (4, None)}
RESOURCES = [
    {"uri": "gallery://logo.png", "name": "logo", "mimeType": "image/png"},
    {"uri": "gallery://notes.txt", "name": "notes", "mimeType": "text/plain"},
]


def reply(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        reply(request_id, {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"resources": {}, "prompts": {}},
            "serverInfo": {"name": "gallery", "version": "1"},
        })
    elif method == "prompts/list":
        time.sleep(0.3)  # slow enough that a second key press comes while the page is on its way
        start, cursor = PAGES[params.get("cursor")]
        page = {"prompts": PROMPTS[start:start + 2]}
        if cursor:
            page["nextCursor"] = cursor
        reply(request_id, page)
    elif method == "resources/list":
        reply(request_id, {"resources": RESOURCES})
    elif method == "resources/templates/list":
        reply(request_id, {"resourceTemplates": []})
    elif method == "resources/read" and params["uri"] == "gallery://logo.png":
        reply(request_id, {"contents": [{"uri": params["uri"], "mimeType": "image/png", "blob": PICTURE}]})
    elif method == "resources/read":
        reply(request_id, {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "plain"}]})
    elif request_id is not None:
        error = {"code": -32601, "message": "Method not found"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")
        sys.stdout.flush()
"""


def picture() -> bytes:
    """An 8 × 4 PNG: a top row of red pairs between transparent ones, the rest blue."""
    image = Image.new("RGBA", (8, 4), (0, 0, 255, 255))
    for x in range(8):
        if x % 4 >= 2:
            image.putpixel((x, 0), (0, 0, 0, 0))
        else:
            image.putpixel((x, 0), (255, 0, 0, 255))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def png() -> bytes:
    return picture()


@pytest.fixture
async def source(tmp_path: Path, png: bytes) -> AsyncIterator[McpSource]:
    (tmp_path / "work").mkdir()
    script, image = tmp_path / "gallery.py", tmp_path / "logo.png"
    script.write_text(GALLERY, encoding="utf-8")
    image.write_bytes(png)
    config = runtime_config(
        {
            "sandbox": {"mcp": ["gallery"]},
            "mcp": {"servers": {"gallery": {"command": sys.executable, "args": [str(script), str(image)]}}},
            "approval": {"rules": []},
        }
    )
    async with open_mcp_source(
        config, tmp_path / "work", StaticApprover("deny"), log_dir=tmp_path / "logs"
    ) as opened:
        yield opened


async def _tab(app: ScreenApp, pilot: Any, key: str, listed: str) -> None:
    """Put the tree cursor on ``gallery``, open the tab of ``key`` and wait for ``listed``."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    tree: Tree[Any] = app.screen.query_one("#mcp-tree", Tree)
    tree.focus()
    tree.move_cursor(next(node for node in tree.root.children if node.data == ("gallery", None)))
    await pilot.pause()
    await pilot.press(key)
    await _shows(pilot, listed)


async def _shows(pilot: Any, text: str, timeout: float = 15) -> None:
    try:
        await wait_until(pilot, lambda: text in screen_text(pilot.app), timeout=timeout)
    except AssertionError:
        print(screen_text(pilot.app))
        raise


async def test_pressing_more_twice_while_a_prompt_page_is_on_its_way_lists_it_once(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _tab(app, pilot, "o", "2 prompts; more to list (m)")
        pane = app.screen.query_one(McpPromptsPane)
        pane.query_one("#mcp-prompt-list", OptionList).focus()
        await pilot.press("m", "m")
        await _shows(pilot, "4 prompts; more to list (m)")
        await app.workers.wait_for_complete()
        assert [prompt["name"] for prompt in pane.prompts] == [f"prompt-{i}" for i in range(4)]
        await pilot.press("m", "m")
        await wait_until(pilot, lambda: len(pane.prompts) >= 6)
        await app.workers.wait_for_complete()
        assert [prompt["name"] for prompt in pane.prompts] == [f"prompt-{i}" for i in range(6)]
        await _shows(pilot, "6 prompts")
        assert "more to list" not in screen_text(app)
