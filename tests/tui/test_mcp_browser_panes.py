"""The MCP browser's server detail, Resources and Prompts tabs against real stdio servers.

``mcp-server-everything`` (the reference server) for info, ping, resources, templates, prompts and
completion; ``shop``, a hand-written JSON-RPC server started from a file written here, for paging and for
hostile names and text.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList, Select, Static, Tree

from ditto_tui.contracts import ToolCall
from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.supervise import StaticApprover
from ditto_tui.tui.mcp_source import McpSource, open_mcp_source
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from tests.mcp.mcp_helpers import node_server
from tests.tui.browser_fixtures import (
    ScreenApp,
    foreign_sequences,
    runtime_config,
    screen_text,
    terminal_output,
)
from tests.tui.run_fixtures import wait_until

HOSTILE = "[bold]loud[/bold] \x1b]52;c;ZXZpbA==\x07 [link=x]y[/link]"

SHOP = r"""
import base64, json, sys

HOSTILE = __HOSTILE__
RESOURCES = [
    {"uri": "shop://item/%d" % index, "name": "item-%d" % index, "mimeType": "text/plain"}
    for index in range(5)
]
RESOURCES[0] = {"uri": "shop://hostile", "name": HOSTILE, "title": "Hostile " + HOSTILE}
PAGES = {None: (0, "p2"), "p2": (2, "p3"), "p3": (4, None)}


def reply(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        reply(request_id, {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            "serverInfo": {"name": "shop", "version": "3.1"},
        })
    elif method == "tools/list":
        reply(request_id, {"tools": []})
    elif method == "resources/list":
        start, cursor = PAGES[params.get("cursor")]
        page = {"resources": RESOURCES[start:start + 2]}
        if cursor:
            page["nextCursor"] = cursor
        reply(request_id, page)
    elif method == "resources/templates/list":
        reply(request_id, {"resourceTemplates": []})
    elif method == "resources/read":
        reply(request_id, {"contents": [{"uri": params["uri"], "text": "text of " + HOSTILE}]})
    elif method == "prompts/list":
        reply(request_id, {"prompts": [{"name": "greet", "description": HOSTILE}]})
    elif method == "prompts/get":
        text = {"type": "text", "text": "Say " + HOSTILE}
        reply(request_id, {"description": HOSTILE, "messages": [{"role": "user", "content": text}]})
    elif request_id is not None:
        error = {"code": -32601, "message": "Method not found"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")
        sys.stdout.flush()
""".replace("__HOSTILE__", repr(HOSTILE))


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[McpSource]:
    (tmp_path / "work").mkdir()
    (tmp_path / "notes").mkdir()
    script = tmp_path / "shop.py"
    script.write_text(SHOP, encoding="utf-8")
    config = runtime_config(
        {
            "sandbox": {"mcp": ["everything", "shop", "demo"]},
            "mcp": {
                "servers": {
                    "everything": node_server("mcp-server-everything", "stdio"),
                    "shop": {"command": sys.executable, "args": [str(script)]},
                    "demo": demo_server_entry(tmp_path / "notes"),
                    "elsewhere": {"command": "elsewhere-server"},
                }
            },
            "approval": {"rules": []},
        }
    )
    workspace = tmp_path / "work"
    async with open_mcp_source(
        config, workspace, StaticApprover("deny"), log_dir=tmp_path / "logs"
    ) as opened:
        yield opened


async def _open(app: ScreenApp, pilot: Any, server: str) -> McpScreen:
    """Wait for discovery, then put the tree cursor on ``server``."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    tree: Tree[Any] = app.screen.query_one("#mcp-tree", Tree)
    tree.focus()
    tree.move_cursor(next(node for node in tree.root.children if node.data == (server, None)))
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, McpScreen) and screen.selected == (server, None)
    return screen


async def _shows(pilot: Any, text: str, timeout: float = 15) -> None:
    try:
        await wait_until(pilot, lambda: text in screen_text(pilot.app), timeout=timeout)
    except AssertionError:
        print(screen_text(pilot.app))
        raise


async def _highlight(pilot: Any, listing: OptionList, option_id: str) -> None:
    """Move the list's highlight with the keyboard to the option ``option_id``."""
    listing.focus()
    for _ in range(40):
        option = listing.highlighted_option
        if option is not None and option.id == option_id:
            return
        await pilot.press("down")
    raise AssertionError(f"no option {option_id!r}")


def _typed(app: ScreenApp, selector: str) -> Input:
    return app.screen.query_one(selector, Input)


async def test_server_detail_shows_title_version_capabilities_and_a_ping(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        text = screen_text(app)
        assert "title: Everything Reference Server" in text
        assert "version: 2.0.0" in text and "protocol version: 2025-11-25" in text
        assert "capabilities: logging, prompts (listChanged), resources (subscribe," in text
        assert "Audience: These instructions are written for an LLM" in text
        await pilot.press("p")
        await _shows(pilot, "ms round trip")
        await pilot.press("l")
        assert app.screen.focused is app.screen.query_one("#mcp-log-level")
        await pilot.press("enter")
        select = app.screen.query_one("#mcp-log-level", Select)
        await wait_until(pilot, lambda: select.expanded)
        await pilot.press("down", "enter")  # the first level below the prompt: debug
        await _shows(pilot, "log level: debug (set from here)")


async def test_resources_are_listed_page_by_page_and_a_text_resource_is_read(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "shop")
        await pilot.press("e")
        await _shows(pilot, "2 resources, 0 templates; more resources to list (m)")
        await pilot.press("m")
        await _shows(pilot, "4 resources, 0 templates; more resources to list (m)")
        await pilot.click("#mcp-resource-more")
        await _shows(pilot, "5 resources, 0 templates")
        assert "… more resources" not in screen_text(app)
        await _open(app, pilot, "everything")
        await pilot.press("e")
        await _shows(pilot, "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        template = str(listing.get_option("templates:0").prompt)
        assert template.startswith("Dynamic Text Resource  demo://resource/dynamic/text/{resourceId}")
        await _highlight(pilot, listing, "resources:0")
        await pilot.press("enter")
        await _shows(pilot, "# Everything Server – Architecture")
        assert "demo://resource/static/document/architecture.md  text/markdown" in screen_text(app)


async def test_a_template_is_filled_in_and_read(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        await pilot.press("e")
        await _shows(pilot, "7 resources, 2 templates")
        await _highlight(pilot, app.screen.query_one("#mcp-resource-list", OptionList), "templates:0")
        await pilot.press("enter")
        box = _typed(app, "#mcp-resource-uri")
        assert box.has_focus and box.value == "demo://resource/dynamic/text/{resourceId}"
        box.value = "demo://resource/dynamic/text/7"
        await pilot.press("enter")
        await _shows(pilot, "Read demo://resource/dynamic/text/7")
        await _shows(pilot, "Resource 7: This is a plaintext resource")  # the server's text for that URI


async def test_a_binary_resource_saves_under_the_workspace_and_nowhere_else(
    source: McpSource, tmp_path: Path
) -> None:
    workspace = tmp_path / "work"
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", workspace / "link")
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        await pilot.press("e")
        await _shows(pilot, "7 resources, 2 templates")
        box = _typed(app, "#mcp-resource-uri")
        box.focus()
        box.value = "demo://resource/dynamic/blob/1"
        await pilot.press("enter")
        await _shows(pilot, "bytes: w saves it under the workspace")
        # The blob carries the second it was made: compare with the bytes the pane read, and check they
        # are the server's base64 blob decoded (a second read can differ by a tick of the clock).
        expected = app.screen.query_one(McpResourcesPane).contents[0].data
        assert expected is not None and expected.startswith(b"Resource 1: This is a base64 blob created at")
        assert f"binary, {len(expected):,} bytes" in screen_text(app)
        app.screen.query_one("#mcp-resource-list", OptionList).focus()
        for name, why in [
            ("../escaped.bin", "path contains a '..' component"),
            (str(tmp_path / "outside" / "abs.bin"), "path must be relative to the workspace"),
            ("link/through.bin", "a folder on the way is a symbolic link"),
        ]:
            await pilot.press("w")
            name_box = _typed(app, "#mcp-save-name")
            assert name_box.has_focus
            name_box.value = name
            await pilot.press("enter")
            await _shows(pilot, why)
            app.screen.query_one("#mcp-resource-list", OptionList).focus()
        assert sorted(os.listdir(tmp_path / "outside")) == [] and not (tmp_path / "escaped.bin").exists()
        await pilot.press("w")
        _typed(app, "#mcp-save-name").value = "saved/blob.bin"
        await pilot.press("enter")
        await _shows(pilot, f"Saved {len(expected):,} bytes to saved/blob.bin")
        assert (workspace / "saved" / "blob.bin").read_bytes() == expected
        app.screen.query_one("#mcp-resource-list", OptionList).focus()
        await pilot.press("w")
        _typed(app, "#mcp-save-name").value = "saved/blob.bin"
        await pilot.press("enter")
        await _shows(pilot, "a file of that name already exists")


async def test_subscribing_toggles_and_a_server_without_it_says_so_in_one_line(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        await pilot.press("e")
        await _shows(pilot, "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await _highlight(pilot, listing, "resources:1")
        await pilot.press("u")
        await _shows(pilot, "Subscribed to demo://resource/static/document/extension.md")
        assert "◉ extension.md" in screen_text(app)
        await pilot.press("u")
        await _shows(pilot, "Unsubscribed from demo://resource/static/document/extension.md")
        assert "◉ extension.md" not in screen_text(app)
        await _open(app, pilot, "shop")
        await pilot.press("e")
        await _shows(pilot, "2 resources")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await _highlight(pilot, listing, "resources:1")
        await pilot.press("u")
        await _shows(pilot, "Subscribing failed: McpError: The MCP server does not offer")
        status = app.screen.query_one("#mcp-resources .mcp-pane-status", Static)
        assert "does not offer resources.subscribe" in str(status.render())


async def test_a_prompt_form_offers_completions_and_shows_the_messages(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        await pilot.press("o")
        await _shows(pilot, "4 prompts")
        listing = app.screen.query_one("#mcp-prompt-list", OptionList)
        await _highlight(pilot, listing, "prompt:2")  # completable-prompt, titled Team Management
        assert "Team Management  completable-prompt" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        department = app.screen.focused
        assert isinstance(department, Input)
        await pilot.press("S")
        await _shows(pilot, "suggestions for department: Sales, Support")
        await wait_until(pilot, lambda: department._suggestion == "Sales")
        await pilot.press("right")
        assert department.value == "Sales"
        await pilot.press("tab", *"Ann")
        await pilot.press("ctrl+g")
        await _shows(pilot, "Please promote Ann to the head of the Sales team.")
        assert "user" in screen_text(app)


async def test_a_prompt_whose_server_lacks_completions_still_fills_and_runs_by_mouse(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "shop")
        await pilot.press("o")
        await _shows(pilot, "1 prompts")
        await _highlight(pilot, app.screen.query_one("#mcp-prompt-list", OptionList), "prompt:0")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.click("#mcp-prompt-get")
        await _shows(pilot, "Say [bold]loud[/bold]")


async def test_hostile_resource_and_prompt_text_is_shown_literally(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "shop")
        await pilot.press("e")
        await _shows(pilot, "2 resources")
        shown = "[bold]loud[/bold] ⟨ESC⟩]52;c;ZXZpbA==⟨BEL⟩ [link=x]y[/link]"
        assert f"Hostile {shown}" in screen_text(app)
        await _highlight(pilot, app.screen.query_one("#mcp-resource-list", OptionList), "resources:0")
        await pilot.press("enter")
        await _shows(pilot, f"text of {shown}")
        assert foreign_sequences(terminal_output(app)) == []
        await pilot.press("o")
        await _shows(pilot, "1 prompts")
        assert f"greet  {shown}" in screen_text(app)
        await _highlight(pilot, app.screen.query_one("#mcp-prompt-list", OptionList), "prompt:0")
        await pilot.press("enter", "ctrl+g")
        await _shows(pilot, f"Say {shown}")
        assert foreign_sequences(terminal_output(app)) == []


async def test_a_server_that_lists_nothing_and_one_not_connected(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "demo")
        await pilot.press("e")
        await _shows(pilot, "0 resources, 0 templates")
        await pilot.press("o")
        await _shows(pilot, "0 prompts")
        await _open(app, pilot, "elsewhere")
        await pilot.press("e")
        await _shows(pilot, "The server is not connected")


async def test_a_subscribed_resource_that_the_server_updates_is_read_again_and_marked(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "everything")
        await pilot.press("e")
        await _shows(pilot, "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await _highlight(pilot, listing, "resources:1")
        await pilot.press("enter")
        await _shows(pilot, "Read demo://resource/static/document/extension.md")
        await pilot.press("u")
        await _shows(pilot, "Subscribed to demo://resource/static/document/extension.md")
        call = ToolCall(id="toggle-1", name="toggle-subscriber-updates", arguments={})
        box = source.runtime.services.sandbox
        result = await source.registry.invoke_unguarded("everything", call, box)
        assert result.status == "success", result.error
        content = app.screen.query_one("#mcp-resource-content", Static)
        await wait_until(pilot, lambda: str(content.render()).startswith("updated "), timeout=15)
        assert "demo://resource/static/document/extension.md" in str(content.render())
        option = next(
            listing.get_option_at_index(index)
            for index in range(listing.option_count)
            if listing.get_option_at_index(index).id == "resources:1"
        )
        assert "◉ extension.md" in str(option.prompt) and "updated " in str(option.prompt)


async def test_a_changed_resource_list_is_listed_again_from_its_first_page(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await _open(app, pilot, "shop")
        await pilot.press("e")
        await _shows(pilot, "2 resources, 0 templates; more resources to list (m)")
        await pilot.press("m")
        await _shows(pilot, "4 resources, 0 templates; more resources to list (m)")
        source.registry.offer_changed("shop", "resources")
        source.registry.offer_changed("shop", "resources")
        await _shows(pilot, "2 resources, 0 templates; more resources to list (m)")
        source.registry.offer_changed("demo", "resources")
        await pilot.pause()
        assert "2 resources, 0 templates" in screen_text(app)
