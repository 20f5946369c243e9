"""A tool call from the MCP browser against the real ``server-everything``: what it shows while it runs
(progress, a cancel key) and what came back (an image drawn, media saved, links opened, annotations)."""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from textual.widgets import Input, OptionList, ProgressBar

from ditto_tui.home import runs_dir
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_call_view import McpCallView
from ditto_tui.tui.widgets.mcp_image import MAX_COLUMNS, MAX_ROWS, image_cells
from ditto_tui.tui.widgets.schema_form import SchemaForm
from tests.mcp.mcp_helpers import node_server
from tests.tui.browser_fixtures import ScreenApp, screen_text
from tests.tui.mcp_browser_helpers import browser_source, server_node
from tests.tui.run_fixtures import wait_until


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[McpSource]:
    servers = {"everything": node_server("mcp-server-everything", "stdio")}
    async with browser_source(
        tmp_path, servers, rules=[{"mcp": "everything:*", "decision": "allow"}]
    ) as opened:
        yield opened


async def _call(
    app: ScreenApp, pilot: Any, tool: str, arguments: dict[str, Any] | None = None
) -> McpCallView:
    """Select ``tool`` in the tree, open its form, fill it (as JSON) and call it."""
    server = await server_node(pilot, "everything")
    screen = app.screen
    assert isinstance(screen, McpScreen)
    server.expand()
    await pilot.pause()
    server.tree.move_cursor(next(node for node in server.children if node.data == ("everything", tool)))
    await pilot.press("enter")
    await wait_until(pilot, lambda: bool(screen.form_holder.query(SchemaForm)))
    form = screen.form_holder.query_one(SchemaForm)
    if arguments is not None:
        await pilot.press("ctrl+t")  # the JSON editor
        await wait_until(pilot, lambda: form.json_mode)
        form.query_one("#schema-json").text = json.dumps(arguments)  # type: ignore[attr-defined]
    await pilot.press("ctrl+r")
    return screen.call_view


async def test_an_image_result_is_drawn_and_saved_under_the_workspace(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 60)) as pilot:
        view = await _call(app, pilot, "get-tiny-image")
        await wait_until(pilot, lambda: not view.running and bool(view.blocks))
        image = next(block for block in view.blocks if block.kind == "image")
        data = image.payload()
        assert data is not None
        text = screen_text(app)
        assert f"Image  image/png  {len(data):,} bytes  (w saves it)" in text
        drawn = image_cells(data)
        assert not isinstance(drawn, str) and drawn.plain.splitlines()[0] in text  # the half cells
        assert "Observation  success  everything:get-tiny-image" in text
        items = app.screen.query_one("#mcp-call-items", OptionList)
        items.focus()
        items.highlighted = 0
        await pilot.press("w")
        box = app.screen.query_one("#mcp-call-save-name", Input)
        assert box.has_focus
        box.value = "../outside.png"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not saved: path contains a '..' component" in screen_text(app))
        box.value = "images/tiny.png"
        await pilot.press("enter")
        await wait_until(pilot, lambda: f"Saved {len(data):,} bytes to images/tiny.png" in screen_text(app))
    assert (source.workspace / "images" / "tiny.png").read_bytes() == data
    assert not (source.workspace.parent / "outside.png").exists()


async def test_a_resource_link_in_a_result_opens_the_resource(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 60)) as pilot:
        view = await _call(app, pilot, "get-resource-links", {"count": 2})
        await wait_until(pilot, lambda: len(view.items) == 2)
        # The items exist before the screen has drawn them; wait for the drawing, then read it.
        link = "Resource link demo://resource/dynamic/text/2  text/plain"
        await wait_until(pilot, lambda: link in screen_text(app))
        assert "Text Resource 2 — Resource 2: plaintext resource" in screen_text(app)
        items = app.screen.query_one("#mcp-call-items", OptionList)
        items.focus()
        items.highlighted = 1
        await pilot.press("enter")
        assert app.screen.query_one("#mcp-tabs").active == "mcp-tab-resources"  # type: ignore[attr-defined]
        await wait_until(pilot, lambda: "Resource 2: This is a plaintext resource" in screen_text(app))


async def test_content_annotations_show_beside_their_block(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 60)) as pilot:
        view = await _call(
            app, pilot, "get-annotated-message", {"messageType": "error", "includeImage": False}
        )
        await wait_until(pilot, lambda: not view.running and bool(view.blocks))
        text = screen_text(app)
        assert "Text  [for user and assistant, priority 1.0]" in text and "Error: Operation failed" in text
        assert '"annotations"' in text  # kept in the Observation's metadata too


@pytest.mark.parametrize(
    ("key", "focused"),
    [("x", "#mcp-tree"), ("ctrl+x", "#schema-json")],
    ids=["x-from-the-list", "ctrl+x-from-the-form-where-x-is-text"],
)
async def test_a_long_call_shows_its_progress_and_a_key_cancels_it(
    source: McpSource, key: str, focused: str
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 60)) as pilot:
        view = await _call(app, pilot, "trigger-long-running-operation", {"duration": 30, "steps": 30})
        bar = view.query_one(ProgressBar)
        await wait_until(pilot, lambda: bar.total == 30 and (bar.progress or 0) >= 1)
        assert view.running and " of 30" in screen_text(app) and "Cancel call (x, ctrl+x)" in screen_text(app)
        target = app.screen.query_one(focused)
        target.focus()
        await pilot.pause()
        before = str(getattr(target, "text", ""))  # the form's JSON editor takes x as text
        await pilot.press(key)
        await wait_until(pilot, lambda: not view.running)
        assert "Cancelled: the server was told to stop the call." in screen_text(app)
        assert str(getattr(target, "text", "")) == before and app.screen.focused is target
        runs = [json.loads(line) for line in _journal_lines(source)]
        assert any(line.get("kind") == "run_finished" and line.get("status") == "cancelled" for line in runs)


def _journal_lines(source: McpSource) -> list[str]:
    return [
        line
        for path in sorted(runs_dir(source.workspace).rglob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def _png(width: int, height: int, colour: tuple[int, int, int] = (200, 10, 10)) -> bytes:
    picture = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(picture, "PNG")
    return picture.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` × ``height`` pixels and holds none."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def test_an_icon_is_drawn_larger_and_a_big_image_fits_the_bounds() -> None:
    icon = image_cells(_png(8, 8))
    assert not isinstance(icon, str) and [len(line) for line in icon.plain.splitlines()] == [32] * 16
    assert icon.spans and "rgb(200,10,10)" in str(icon.spans[0].style)
    big = image_cells(_png(1000, 400))
    assert not isinstance(big, str)
    lines = big.plain.splitlines()
    assert max(map(len, lines)) <= MAX_COLUMNS and len(lines) <= MAX_ROWS


def test_hostile_image_bytes_are_described_not_drawn() -> None:
    assert image_cells(b"<svg onload=alert(1)>") == (
        "not drawn: the bytes are not an image of a known kind (PNG, JPEG, GIF, WebP, BMP)"
    )
    assert "claims more than" in str(image_cells(_png_header(40_000, 40_000)))
    assert str(image_cells(_png_header(5_000, 4_000))).startswith("not drawn: 5,000 × 4,000 pixels is over")
    assert str(image_cells(_png(10, 10)[:40])).startswith("not drawn")
