"""The MCP browser's Prompts tab lists each page once, and its Resources tab draws an image it read.

``gallery``, a hand-written JSON-RPC server started from a file written here, answers its prompt list
slowly, page by page, so a second key press comes while a page is on its way, and serves a small PNG
(made with Pillow) as a resource.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image
from rich.text import Text
from textual.widgets import Input, OptionList

from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_browse_text import ReadContent, resource_text
from ditto_tui.tui.widgets.mcp_image import image_cells
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from tests.tui.browser_fixtures import ScreenApp, screen_text
from tests.tui.mcp_browser_helpers import browser_source, line_server, open_tab, shows
from tests.tui.run_fixtures import wait_until

GALLERY = r"""
import base64, time

PICTURE = base64.b64encode(open(sys.argv[1], "rb").read()).decode("ascii")
PROMPTS = [{"name": "prompt-%d" % index, "description": "number %d" % index} for index in range(6)]
RESOURCES = [
    {"uri": "gallery://logo.png", "name": "logo", "mimeType": "image/png"},
    {"uri": "gallery://notes.txt", "name": "notes", "mimeType": "text/plain"},
]


def answer(method, params):
    match method:
        case "prompts/list":
            time.sleep(0.3)  # slow enough that a second key press comes while the page is on its way
            return paged("prompts", PROMPTS, params.get("cursor"))
        case "resources/list":
            return {"resources": RESOURCES}
        case "resources/templates/list":
            return {"resourceTemplates": []}
        case "resources/read" if params["uri"] == "gallery://logo.png":
            return {"contents": [{"uri": params["uri"], "mimeType": "image/png", "blob": PICTURE}]}
        case "resources/read":
            return {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "plain"}]}
    return None


serve({"name": "gallery", "version": "1"}, {"resources": {}, "prompts": {}}, answer)
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
    image = tmp_path / "logo.png"
    image.write_bytes(png)
    servers = {"gallery": line_server(tmp_path / "gallery.py", GALLERY, str(image))}
    async with browser_source(tmp_path, servers) as opened:
        yield opened


async def test_pressing_more_twice_while_a_prompt_page_is_on_its_way_lists_it_once(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "gallery", "o", "2 prompts; more to list (m)")
        pane = app.screen.query_one(McpPromptsPane)
        pane.query_one("#mcp-prompt-list", OptionList).focus()
        await pilot.press("m", "m")
        await shows(pilot, "4 prompts; more to list (m)")
        await app.workers.wait_for_complete()
        assert [prompt["name"] for prompt in pane.prompts] == [f"prompt-{i}" for i in range(4)]
        await pilot.press("m", "m")
        await wait_until(pilot, lambda: len(pane.prompts) >= 6)
        await app.workers.wait_for_complete()
        assert [prompt["name"] for prompt in pane.prompts] == [f"prompt-{i}" for i in range(6)]
        await shows(pilot, "6 prompts")
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
        await open_tab(pilot, "gallery", "e", "2 resources, 0 templates")
        box = app.screen.query_one("#mcp-resource-uri", Input)
        box.focus()
        box.value = "gallery://logo.png"
        await pilot.press("enter")
        await shows(pilot, "Read gallery://logo.png")
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
        await shows(pilot, f"Saved {len(png):,} bytes to logo.png")
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
