"""The MCP browser's Prompts tab lists each page once, and its Resources tab draws an image it read.

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
from rich.text import Text
from textual.widgets import Input, OptionList, Tree

from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import McpSource, open_mcp_source
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_browse_text import ReadContent, resource_text
from ditto_tui.tui.widgets.mcp_image import image_cells
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
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


def _drawing(png: bytes) -> list[str]:
    drawn = image_cells(png)
    assert isinstance(drawn, Text)
    return [line.rstrip() for line in drawn.plain.splitlines()]


async def test_an_image_resource_is_drawn_under_its_type_and_size_and_still_saves(
    source: McpSource, png: bytes, tmp_path: Path
) -> None:
    lines = _drawing(png)
    red = "▀" * 8 + " " * 8 + "▀" * 8  # the red pairs drawn, the transparent ones left blank
    assert lines[:3] == [red, red, "▀" * 32]
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _tab(app, pilot, "e", "2 resources, 0 templates")
        box = app.screen.query_one("#mcp-resource-uri", Input)
        box.focus()
        box.value = "gallery://logo.png"
        await pilot.press("enter")
        await _shows(pilot, "Read gallery://logo.png")
        shown = screen_text(app).splitlines()
        size = next(i for i, row in enumerate(shown) if f"binary, {len(png):,} bytes" in row)
        assert "gallery://logo.png  image/png" in shown[size - 1]
        left = shown[size].index("binary,")
        drawn = [row[left : left + 32].rstrip() for row in shown[size + 1 : size + 4]]
        assert drawn == lines[:3]  # right under the size line, where the text starts
        app.screen.query_one("#mcp-resource-list", OptionList).focus()
        await pilot.press("w")
        app.screen.query_one("#mcp-save-name", Input).value = "logo.png"
        await pilot.press("enter")
        await _shows(pilot, f"Saved {len(png):,} bytes to logo.png")
        assert (tmp_path / "work" / "logo.png").read_bytes() == png
        assert app.screen.query_one(McpResourcesPane).contents[0].data == png


def test_only_image_contents_are_drawn_and_bytes_that_are_no_image_say_so(png: bytes) -> None:
    def shown(mime_type: str, data: bytes) -> list[str]:
        content = ReadContent(uri="x://r", mime_type=mime_type, data=data)
        return [line.rstrip() for line in resource_text([content], False).plain.splitlines()]

    assert shown("IMAGE/PNG", png)[2:] == _drawing(png)
    assert shown("application/octet-stream", png) == [
        "x://r  application/octet-stream",
        f"binary, {len(png):,} bytes: w saves it under the workspace",
    ]
    assert shown("image/png", b"\x1b]52;c;AAAA\x07 not a png")[2] == (
        "not drawn: the bytes are not an image of a known kind (PNG, JPEG, GIF, WebP, BMP)"
    )
