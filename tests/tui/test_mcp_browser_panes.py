"""The MCP browser's server detail, Resources and Prompts tabs against real stdio servers.

``mcp-server-everything`` (the reference server) for info, ping, resources, templates, prompts and
completion; ``shop``, a hand-written JSON-RPC server started from a file written here, for paging and for
hostile names and text.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList, Select, Static

from ditto_tui.contracts import ToolCall
from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from tests.mcp.mcp_helpers import node_server
from tests.tui.browser_fixtures import ScreenApp, foreign_sequences, screen_text, terminal_output
from tests.tui.mcp_browser_helpers import (
    browser_source,
    highlight,
    line_server,
    open_tab,
    select_server,
    shows,
)
from tests.tui.run_fixtures import wait_until

HOSTILE = "[bold]loud[/bold] \x1b]52;c;ZXZpbA==\x07 [link=x]y[/link]"

SHOP = r"""
HOSTILE = __HOSTILE__
RESOURCES = [
    {"uri": "shop://item/%d" % index, "name": "item-%d" % index, "mimeType": "text/plain"}
    for index in range(5)
]
RESOURCES[0] = {"uri": "shop://hostile", "name": HOSTILE, "title": "Hostile " + HOSTILE}


def answer(method, params):
    match method:
        case "tools/list":
            return {"tools": []}
        case "resources/list":
            return paged("resources", RESOURCES, params.get("cursor"))
        case "resources/templates/list":
            return {"resourceTemplates": []}
        case "resources/read":
            return {"contents": [{"uri": params["uri"], "text": "text of " + HOSTILE}]}
        case "prompts/list":
            return {"prompts": [{"name": "greet", "description": HOSTILE}]}
        case "prompts/get":
            text = {"type": "text", "text": "Say " + HOSTILE}
            return {"description": HOSTILE, "messages": [{"role": "user", "content": text}]}
    return None


serve({"name": "shop", "version": "3.1"}, {"tools": {}, "resources": {}, "prompts": {}}, answer)
""".replace("__HOSTILE__", repr(HOSTILE))

BARE = r"""
EMPTY = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def answer(method, params):
    return {EMPTY[method]: []} if method in EMPTY else None


serve({"name": "bare", "version": "1"}, {"tools": {}, "resources": {}, "prompts": {}}, answer)
"""


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[McpSource]:
    (tmp_path / "notes").mkdir()
    servers = {
        "everything": node_server("mcp-server-everything", "stdio"),
        "shop": line_server(tmp_path / "shop.py", SHOP),
        "demo": demo_server_entry(tmp_path / "notes"),
        "bare": line_server(tmp_path / "bare.py", BARE),
        "elsewhere": {"command": "elsewhere-server"},
    }
    granted = ["everything", "shop", "demo", "bare"]
    async with browser_source(tmp_path, servers, granted=granted) as opened:
        yield opened


def _typed(app: ScreenApp, selector: str) -> Input:
    return app.screen.query_one(selector, Input)


async def test_server_detail_shows_title_version_capabilities_and_a_ping(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await select_server(pilot, "everything")
        text = screen_text(app)
        assert "title: Everything Reference Server" in text
        assert "version: 2.0.0" in text and "protocol version: 2025-11-25" in text
        assert "capabilities: logging, prompts (listChanged), resources (subscribe," in text
        assert "Audience: These instructions are written for an LLM" in text
        await pilot.press("p")
        await shows(pilot, "ms round trip")
        await pilot.press("l")
        assert app.screen.focused is app.screen.query_one("#mcp-log-level")
        await pilot.press("enter")
        select = app.screen.query_one("#mcp-log-level", Select)
        await wait_until(pilot, lambda: select.expanded)
        await pilot.press("down", "enter")  # the first level below the prompt: debug
        await shows(pilot, "log level: debug (set from here)")


async def test_resources_are_listed_page_by_page_and_a_text_resource_is_read(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "shop", "e", "2 resources, 0 templates; more resources to list (m)")
        await pilot.press("m")
        await shows(pilot, "4 resources, 0 templates; more resources to list (m)")
        await pilot.click("#mcp-resource-more")
        await shows(pilot, "5 resources, 0 templates")
        assert "… more resources" not in screen_text(app)
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        template = str(listing.get_option("templates:0").prompt)
        assert template.startswith("Dynamic Text Resource  demo://resource/dynamic/text/{resourceId}")
        await highlight(pilot, listing, "resources:0")
        await pilot.press("enter")
        await shows(pilot, "# Everything Server – Architecture")
        assert "demo://resource/static/document/architecture.md  text/markdown" in screen_text(app)


async def test_a_template_is_filled_in_and_read(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        await highlight(pilot, app.screen.query_one("#mcp-resource-list", OptionList), "templates:0")
        await pilot.press("enter")
        box = _typed(app, "#mcp-resource-uri")
        assert box.has_focus and box.value == "demo://resource/dynamic/text/{resourceId}"
        box.value = "demo://resource/dynamic/text/7"
        await pilot.press("enter")
        await shows(pilot, "Read demo://resource/dynamic/text/7")
        await shows(pilot, "Resource 7: This is a plaintext resource")  # the server's text for that URI


async def test_a_binary_resource_saves_under_the_workspace_and_nowhere_else(
    source: McpSource, tmp_path: Path
) -> None:
    workspace = tmp_path / "work"
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", workspace / "link")
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        box = _typed(app, "#mcp-resource-uri")
        box.focus()
        box.value = "demo://resource/dynamic/blob/1"
        await pilot.press("enter")
        await shows(pilot, "bytes: w saves it under the workspace")
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
            await shows(pilot, why)
            app.screen.query_one("#mcp-resource-list", OptionList).focus()
        assert sorted(os.listdir(tmp_path / "outside")) == [] and not (tmp_path / "escaped.bin").exists()
        await pilot.press("w")
        _typed(app, "#mcp-save-name").value = "saved/blob.bin"
        await pilot.press("enter")
        await shows(pilot, f"Saved {len(expected):,} bytes to saved/blob.bin")
        assert (workspace / "saved" / "blob.bin").read_bytes() == expected
        app.screen.query_one("#mcp-resource-list", OptionList).focus()
        await pilot.press("w")
        _typed(app, "#mcp-save-name").value = "saved/blob.bin"
        await pilot.press("enter")
        await shows(pilot, "a file of that name already exists")


async def test_subscribing_toggles_and_a_server_without_it_says_so_in_one_line(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await highlight(pilot, listing, "resources:1")
        await pilot.press("u")
        await shows(pilot, "Subscribed to demo://resource/static/document/extension.md")
        assert "◉ extension.md" in screen_text(app)
        await pilot.press("u")
        await shows(pilot, "Unsubscribed from demo://resource/static/document/extension.md")
        assert "◉ extension.md" not in screen_text(app)
        await open_tab(pilot, "shop", "e", "2 resources")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await highlight(pilot, listing, "resources:1")
        await pilot.press("u")
        await shows(pilot, "Subscribing failed: MCP error: The MCP server does not offer")
        status = app.screen.query_one("#mcp-resources .mcp-pane-status", Static)
        assert "does not offer resources.subscribe" in str(status.render())


async def test_a_prompt_form_offers_completions_and_shows_the_messages(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "o", "4 prompts")
        listing = app.screen.query_one("#mcp-prompt-list", OptionList)
        await highlight(pilot, listing, "prompt:2")  # completable-prompt, titled Team Management
        assert "Team Management  completable-prompt" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        department = app.screen.focused
        assert isinstance(department, Input)
        await pilot.press("S")
        await shows(pilot, "suggestions for department: Sales, Support")
        await wait_until(pilot, lambda: department._suggestion == "Sales")
        await pilot.press("right")
        assert department.value == "Sales"
        await pilot.press("tab", *"Ann")
        await pilot.press("ctrl+g")
        await shows(pilot, "Please promote Ann to the head of the Sales team.")
        assert "user" in screen_text(app)


async def test_a_prompt_whose_server_lacks_completions_still_fills_and_runs_by_mouse(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "shop", "o", "1 prompt")
        await highlight(pilot, app.screen.query_one("#mcp-prompt-list", OptionList), "prompt:0")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.click("#mcp-prompt-get")
        await shows(pilot, "Say [bold]loud[/bold]")


async def test_hostile_resource_and_prompt_text_is_shown_literally(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "shop", "e", "2 resources")
        shown = "[bold]loud[/bold] ⟨ESC⟩]52;c;ZXZpbA==⟨BEL⟩ [link=x]y[/link]"
        assert f"Hostile {shown}" in screen_text(app)
        await highlight(pilot, app.screen.query_one("#mcp-resource-list", OptionList), "resources:0")
        await pilot.press("enter")
        await shows(pilot, f"text of {shown}")
        assert foreign_sequences(terminal_output(app)) == []
        await pilot.press("o")
        await shows(pilot, "1 prompt")
        assert f"greet  {shown}" in screen_text(app)
        await highlight(pilot, app.screen.query_one("#mcp-prompt-list", OptionList), "prompt:0")
        await pilot.press("enter", "ctrl+g")
        await shows(pilot, f"Say {shown}")
        assert foreign_sequences(terminal_output(app)) == []


async def test_a_server_that_lists_nothing_and_one_not_connected(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "bare", "e", "0 resources, 0 templates")
        await pilot.press("o")
        await shows(pilot, "0 prompts")
        await open_tab(pilot, "elsewhere", "e", "The server is not connected")
        await open_tab(pilot, "demo", "e", "1 resource, 1 template")  # its notes, as resources
        await pilot.press("o")
        await shows(pilot, "1 prompt")


async def test_a_subscribed_resource_that_the_server_updates_is_read_again_and_marked(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        listing = app.screen.query_one("#mcp-resource-list", OptionList)
        await highlight(pilot, listing, "resources:1")
        await pilot.press("enter")
        await shows(pilot, "Read demo://resource/static/document/extension.md")
        await pilot.press("u")
        await shows(pilot, "Subscribed to demo://resource/static/document/extension.md")
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
        await open_tab(pilot, "shop", "e", "2 resources, 0 templates; more resources to list (m)")
        await pilot.press("m")
        await shows(pilot, "4 resources, 0 templates; more resources to list (m)")
        source.registry.offer_changed("shop", "resources")
        source.registry.offer_changed("shop", "resources")
        await shows(pilot, "2 resources, 0 templates; more resources to list (m)")
        source.registry.offer_changed("demo", "resources")
        await pilot.pause()
        assert "2 resources, 0 templates" in screen_text(app)


async def test_a_required_prompt_argument_left_empty_is_refused_at_its_field_and_nothing_is_sent(
    source: McpSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, str, dict[str, str]]] = []
    get_prompt = source.registry.get_prompt

    async def recorded(server: str, name: str, arguments: dict[str, str]) -> Any:
        sent.append((server, name, dict(arguments)))
        return await get_prompt(server, name, arguments)

    monkeypatch.setattr(source.registry, "get_prompt", recorded)
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "o", "4 prompts")
        await highlight(pilot, app.screen.query_one("#mcp-prompt-list", OptionList), "prompt:1")
        assert "args-prompt" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        city = app.screen.focused
        assert isinstance(city, Input) and "city *" in screen_text(app)
        for keys in (["ctrl+g"], ["tab", "ctrl+g"], [*"  ", "enter"]):  # from city, from state, blank
            await pilot.press(*keys)
            await shows(pilot, "city is required: type a value, then ctrl+g")
            assert app.screen.focused is city
            assert "Not sent: city is required." in screen_text(app)
            assert "What's weather in" not in screen_text(app)
            city.value = ""
        await app.workers.wait_for_complete()
        assert sent == []
        await pilot.press(*"Paris")
        await pilot.pause()
        assert "city is required: type a value" not in screen_text(app)
        await pilot.press("ctrl+g")
        await shows(pilot, "What's weather in Paris?")
        assert sent == [("everything", "args-prompt", {"city": "Paris"})]


async def test_a_binary_template_resource_read_from_its_variable_saves_with_w_and_says_so_beside_it(
    source: McpSource, tmp_path: Path
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_tab(pilot, "everything", "e", "7 resources, 2 templates")
        pane = app.screen.query_one(McpResourcesPane)
        await highlight(pilot, app.screen.query_one("#mcp-resource-list", OptionList), "templates:1")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.screen.query("#mcp-template-var-0")))
        await pilot.press("tab")
        variable = app.screen.focused
        assert isinstance(variable, Input) and variable.id == "mcp-template-var-0"
        await pilot.press("3", "enter")
        await shows(pilot, "Read demo://resource/dynamic/blob/3; the focus is on the result")
        await shows(pilot, "bytes: w saves it under the workspace")
        assert app.screen.focused is pane.query_one(".mcp-pane-scroll")
        await pilot.press("w")
        name_box = _typed(app, "#mcp-save-name")
        assert name_box.has_focus and variable.value == "3"
        said = app.screen.query_one("#mcp-save-said", Static)
        await pilot.press(*"../out.bin", "enter")
        await shows(pilot, "path contains a '..' component")
        assert said.display and str(said.render()).startswith("Saving failed: ")
        assert "path contains a '..' component" in str(said.render())
        assert name_box.has_focus and not (tmp_path / "out.bin").exists()
        name_box.value = "blob3.bin"
        await pilot.press("enter")
        data = pane.contents[0].data
        assert data is not None
        await shows(pilot, f"Saved {len(data):,} bytes to blob3.bin")
        assert str(said.render()) == f"Saved {len(data):,} bytes to blob3.bin"
        assert (tmp_path / "work" / "blob3.bin").read_bytes() == data
        assert app.screen.focused is pane.query_one(".mcp-pane-scroll") and variable.value == "3"
