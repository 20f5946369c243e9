"""Resource templates in the MCP browser: a form per template, the server's completions, paging once.

``mcp-server-everything`` (the reference server) completes ``demo://resource/dynamic/text/{resourceId}``;
``atlas``, a hand-written JSON-RPC server started from a file written here, has a template of several
variables, completes one from another, sends hostile values, records what it was asked and answers its
resource list slowly, page by page.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList

from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.widgets.mcp_browse_text import (
    completion_page,
    expand_template,
    template_variables,
    unfilled_variables,
)
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from ditto_tui.tui.widgets.mcp_template_form import TemplateForm, TemplateVariable
from tests.mcp.mcp_helpers import node_server
from tests.tui.browser_fixtures import (
    ScreenApp,
    foreign_sequences,
    screen_text,
    terminal_output,
)
from tests.tui.mcp_browser_helpers import browser_source, highlight, line_server, open_tab, shows
from tests.tui.run_fixtures import wait_until

HOSTILE = "[bold]x[/bold]\x1b]52;c;ZXZpbA==\x07"
SHOWN_HOSTILE = "[bold]x[/bold]⟨ESC⟩]52;c;ZXZpbA==⟨BEL⟩"
MAP = "atlas://maps/{region}/{city}{?zoom,lang}"

ATLAS = r"""
import time

RECORD, COMPLETES = sys.argv[1], sys.argv[2] == "completes"
HOSTILE = __HOSTILE__
TEMPLATES = [
    {"uriTemplate": "atlas://maps/{region}/{city}{?zoom,lang}", "name": "map", "title": "City map"},
    {"uriTemplate": "atlas://about", "name": "about"},
    {"uriTemplate": "atlas://odd/{" + HOSTILE + "}", "name": HOSTILE},
]
RESOURCES = [{"uri": "atlas://r/%d" % index, "name": "r-%d" % index} for index in range(6)]
REGIONS = ["north", "north east", "nordic", "south"]
CITIES = {"north east": ["Oslo", "Bergen", HOSTILE, "two\nlines"], "south": ["Rome"]}


def complete(params):
    with open(RECORD, "a", encoding="utf-8") as record:
        record.write(json.dumps(params) + "\n")
    argument = params["argument"]
    context = (params.get("context") or {}).get("arguments") or {}
    if argument["name"] == "region":
        values = [name for name in REGIONS if name.startswith(argument["value"])]
    elif argument["name"] == "city":
        values = CITIES.get(context.get("region"), [])
    else:
        values = []
    return {"completion": {"values": values, "total": len(values) + 40, "hasMore": True}}


def answer(method, params):
    match method:
        case "resources/list":
            time.sleep(0.3)  # slow enough that a second key press comes while the page is on its way
            return paged("resources", RESOURCES, params.get("cursor"))
        case "resources/templates/list":
            return {"resourceTemplates": TEMPLATES}
        case "resources/read":
            return {"contents": [{"uri": params["uri"], "text": "read " + params["uri"]}]}
        case "completion/complete" if COMPLETES:
            return complete(params)
    return None


capabilities = {"resources": {}, "completions": {}} if COMPLETES else {"resources": {}}
serve({"name": "atlas", "version": "1"}, capabilities, answer)
""".replace("__HOSTILE__", repr(HOSTILE))


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """Where ``atlas`` writes the params of every ``completion/complete`` it was sent, one JSON a line."""
    return tmp_path / "completions.jsonl"


@pytest.fixture
async def source(tmp_path: Path, record: Path) -> AsyncIterator[McpSource]:
    script = tmp_path / "atlas.py"
    servers = {
        "everything": node_server("mcp-server-everything", "stdio"),
        "atlas": line_server(script, ATLAS, str(record), "completes"),
        "mute": line_server(script, ATLAS, str(record), "mute"),
    }
    async with browser_source(tmp_path, servers) as opened:
        yield opened


async def _resources(pilot: Any, server: str, listed: str) -> McpResourcesPane:
    """Put the tree cursor on ``server``, open its Resources tab and wait for ``listed``."""
    screen = await open_tab(pilot, server, "e", listed)
    return screen.query_one(McpResourcesPane)


async def _choose_template(pilot: Any, pane: McpResourcesPane, option_id: str) -> TemplateForm:
    """Highlight the template with the keyboard and press Enter on it: its form opens."""
    await highlight(pilot, pane.query_one("#mcp-resource-list", OptionList), option_id)
    await pilot.press("enter")
    await wait_until(pilot, lambda: bool(pane.query(TemplateForm)))
    return pane.query_one(TemplateForm)


def _uri_box(pane: McpResourcesPane) -> Input:
    return pane.query_one("#mcp-resource-uri", Input)


def _completions(form: TemplateForm) -> list[str]:
    listing = form.query_one("#mcp-template-completions", OptionList)
    return [str(listing.get_option_at_index(index).prompt) for index in range(listing.option_count)]


# -- the URI template rules, without an app ---------------------------------------------------------


def test_variables_are_named_from_every_form_of_expression() -> None:
    assert template_variables("demo://resource/dynamic/text/{resourceId}") == ["resourceId"]
    template = "x://h{+base}{/seg,id}{.ext}{;m}{?q,lang*}{&page:3}{#frag}{base}"
    assert template_variables(template) == ["base", "seg", "id", "ext", "m", "q", "lang", "page", "frag"]
    assert template_variables("x://{=reserved}{}{ }{unclosed") == []
    assert unfilled_variables(template, {"base": "b"}) == []
    assert unfilled_variables(MAP, {"city": "Oslo"}) == ["region"]


def test_values_are_percent_encoded_as_their_operator_requires() -> None:
    values = {"region": "north east", "city": "Zürich/1", "zoom": "3", "lang": "a&b=c"}
    assert expand_template(MAP, values) == "atlas://maps/north%20east/Z%C3%BCrich%2F1?zoom=3&lang=a%26b%3Dc"
    assert expand_template("x://{+path}{#frag}", {"path": "a/b c%2F%zz", "frag": "x#y"}) == (
        "x://a/b%20c%2F%25zz#x#y"
    )
    assert expand_template("x://{/a,b}{.e}{;m,n}{&p:2}", {"a": "1", "e": "j", "m": "v", "p": "abc"}) == (
        "x:///1.j;m=v&p=ab"
    )


def test_an_unfilled_expression_expands_to_nothing_or_stays_in_the_preview() -> None:
    assert expand_template(MAP, {"region": "n"}) == "atlas://maps/n/"
    assert expand_template(MAP, {"region": "n", "lang": "de"}, keep_unfilled=True) == (
        "atlas://maps/n/{city}?lang=de"
    )


def test_a_completion_result_gives_its_string_values_and_how_many_more() -> None:
    assert completion_page({"values": ["a", 1, "b"], "total": 10}) == (["a", "b"], 8)
    assert completion_page({"values": ["a"], "hasMore": True}) == (["a"], 1)
    assert completion_page({"values": [str(index) for index in range(150)]}) == (
        [str(index) for index in range(100)],
        50,
    )
    assert completion_page({"values": "nope", "total": True}) == ([], 0)


# -- the pane ---------------------------------------------------------------------------------------


async def test_the_reference_servers_completion_fills_the_template_and_the_read_shows_its_text(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "everything", "7 resources, 2 templates")
        form = await _choose_template(pilot, pane, "templates:0")
        assert (
            _uri_box(pane).has_focus and _uri_box(pane).value == "demo://resource/dynamic/text/{resourceId}"
        )
        await pilot.press("tab")
        field = app.screen.focused
        assert isinstance(field, TemplateVariable) and field.variable == "resourceId"
        await pilot.press(*"42", "ctrl+g")
        await shows(pilot, "1 completion of resourceId from the server")
        assert _completions(form) == ["42"]  # what the server's completer sent for "42"
        await pilot.press("enter")  # picks the highlighted value, back in the variable's input
        assert app.screen.focused is field and field.value == "42"
        assert _uri_box(pane).value == "demo://resource/dynamic/text/42"
        await pilot.press("enter")
        await shows(pilot, "Read demo://resource/dynamic/text/42")
        await shows(pilot, "Resource 42: This is a plaintext resource")


async def test_completions_use_the_other_variables_are_picked_by_mouse_and_build_an_encoded_uri(
    source: McpSource, record: Path
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "atlas", "2 resources, 3 templates")
        form = await _choose_template(pilot, pane, "templates:0")
        assert "Template City map  map" in screen_text(app)
        await pilot.press("tab", *"no", "ctrl+g")
        await shows(pilot, "3 completions of region (+40 more) from the server")
        assert _completions(form) == ["north", "north east", "nordic"]
        await pilot.press("down", "enter")
        assert form.values() == {"region": "north east"}
        await pilot.press("tab", "ctrl+g")
        await shows(pilot, "4 completions of city")
        unpickable = "  (not plain one-line text)"
        assert _completions(form) == [
            "Oslo",
            "Bergen",
            SHOWN_HOSTILE + unpickable,
            "two⏎\nlines" + unpickable,
        ]
        asked = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
        assert asked[-1] == {
            "ref": {"type": "ref/resource", "uri": MAP},
            "argument": {"name": "city", "value": ""},
            "context": {"arguments": {"region": "north east"}},
        }
        assert foreign_sequences(terminal_output(app)) == []
        listing = form.query_one("#mcp-template-completions", OptionList)
        assert [listing.get_option_at_index(index).disabled for index in range(4)] == [
            False,
            False,
            True,
            True,
        ]
        await pilot.click(listing, offset=(3, 2))  # the second value, below the list's top border
        assert form.values() == {"region": "north east", "city": "Bergen"}
        assert _uri_box(pane).value == "atlas://maps/north%20east/Bergen{?zoom,lang}"
        await pilot.press("tab", *"1 0")
        assert _uri_box(pane).value == "atlas://maps/north%20east/Bergen?zoom=1%200"
        await pilot.press("enter")
        await shows(pilot, "read atlas://maps/north%20east/Bergen?zoom=1%200")


async def test_an_empty_variable_is_asked_for_and_a_template_without_variables_opens_no_form(
    source: McpSource,
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "atlas", "2 resources, 3 templates")
        form = await _choose_template(pilot, pane, "templates:0")
        await pilot.press("tab", "tab", *"Oslo", "enter")
        await shows(pilot, "Fill in region first (ctrl+g asks the server).")
        field = app.screen.focused
        assert isinstance(field, TemplateVariable) and field.variable == "region"
        await pilot.press("ctrl+g")
        await shows(pilot, "4 completions of region")
        await pilot.press("escape")
        assert app.screen.focused is field and not form.query_one("#mcp-template-completions").display
        await pilot.click("#mcp-resource-read")  # the box shows what the form built so far
        await shows(pilot, "Fill in region first")
        listing = pane.query_one("#mcp-resource-list", OptionList)
        listing.focus()
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: not pane.query(TemplateForm))
        assert _uri_box(pane).value == "atlas://about" and _uri_box(pane).has_focus
        await shows(pilot, "The template has no variables: Enter reads it.")
        await pilot.press("enter")
        await shows(pilot, "read atlas://about")


async def test_a_server_without_completions_says_so_and_the_form_still_reads(
    source: McpSource, record: Path
) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "mute", "2 resources, 3 templates")
        await _choose_template(pilot, pane, "templates:0")
        await pilot.press("tab", *"south", "ctrl+g")
        await shows(pilot, "The server offers no completions")
        assert not record.exists()
        await pilot.press("tab", *"Rome", "enter")
        await shows(pilot, "read atlas://maps/south/Rome")


async def test_pressing_more_twice_while_a_page_is_on_its_way_lists_it_once(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "atlas", "2 resources, 3 templates; more resources to list (m)")
        pane.query_one("#mcp-resource-list", OptionList).focus()
        await pilot.press("m", "m")
        await shows(pilot, "4 resources, 3 templates; more resources to list (m)")
        await app.workers.wait_for_complete()
        await pilot.press("m")
        await pilot.click("#mcp-resource-more")  # the button, as the key
        await wait_until(pilot, lambda: len(pane.items["resources"]) >= 6)
        await app.workers.wait_for_complete()
        assert [item["uri"] for item in pane.items["resources"]] == [f"atlas://r/{i}" for i in range(6)]


async def test_a_hostile_template_name_and_variable_are_shown_literally(source: McpSource) -> None:
    app = ScreenApp(lambda: McpScreen(source))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _resources(pilot, "atlas", "2 resources, 3 templates")
        form = await _choose_template(pilot, pane, "templates:2")
        assert form.variables == [HOSTILE]
        text = screen_text(app)
        assert f"Template {SHOWN_HOSTILE}" in text
        assert f"{SHOWN_HOSTILE[:20]}" in text  # the variable's label, cut to its column
        assert "The template's URI holds control or hidden characters" in text
        assert _uri_box(pane).value == ""
        assert foreign_sequences(terminal_output(app)) == []
        await pilot.press("tab", *"v 1", "enter")
        await shows(pilot, "read atlas://odd/v%201")
