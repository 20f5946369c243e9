"""The help screen: every key of every screen, pane and dialog, read from their bindings, in words."""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode

import ditto_tui.tui.screens
import ditto_tui.tui.widgets
from ditto_tui.tui.screens.help import NOTES, SECTIONS, HelpScreen, help_text, key_label, label
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.screens.tools import ToolsScreen
from tests.tui.browser_fixtures import screen_text
from tests.tui.run_fixtures import app_for, wait_until, workspace


class HelpApp(App[None]):
    """An app whose only job is to show the help screen."""

    def on_mount(self) -> None:
        self.push_screen(HelpScreen([McpScreen, ToolsScreen]))


def _page(app: App[Any], screens: tuple[type[Any], ...] = ()) -> str:
    """The whole help page as plain text, wide enough that no row wraps."""
    console = Console(width=200, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(help_text(app, screens))
    return console.export_text(styles=False)


def _declared(module_package: Any) -> set[type[DOMNode]]:
    """Every class of the package's modules that declares key bindings of its own."""
    found: set[type[DOMNode]] = set()
    for info in pkgutil.iter_modules(module_package.__path__):
        module = importlib.import_module(f"{module_package.__name__}.{info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, DOMNode)
                and cls.__module__ == module.__name__
                and cls.__dict__.get("BINDINGS")
            ):
                found.add(cls)
    return found


def _bindings(owner: type[DOMNode]) -> list[Binding]:
    return [
        binding
        for binding in Binding.make_bindings(owner.__dict__.get("BINDINGS", []))
        if binding.description
    ]


async def test_help_lists_each_screen_and_its_keys_and_escape_closes_it() -> None:
    app = HelpApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "MCP servers" in text and "Discover" in text and "Call tool" in text
        assert "Command palette" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


def test_every_screen_pane_and_dialog_with_keys_has_a_section() -> None:
    owners = {owner for section in SECTIONS for owner in section.owners} | {HelpScreen}
    missing = (_declared(ditto_tui.tui.screens) | _declared(ditto_tui.tui.widgets)) - owners
    assert not missing, f"classes with keys the help does not list: {sorted(c.__name__ for c in missing)}"


def test_every_binding_of_every_section_is_on_the_page_with_its_key() -> None:
    lines = _page(HelpApp()).splitlines()
    owners: list[type[DOMNode]] = [owner for section in SECTIONS for owner in section.owners]
    owners.append(HelpScreen)
    for owner in owners:
        for binding in _bindings(owner):
            words = label(owner, binding)
            rows = [line for line in lines if line.rstrip().endswith(words)]
            assert any(key_label(binding.key) in row for row in rows), (
                owner.__name__,
                binding.key,
                words,
            )


def test_the_page_says_no_internal_name() -> None:
    page = _page(HelpApp(), (RunScreen, McpScreen, ToolsScreen))
    owners = {owner for section in SECTIONS for owner in section.owners} | {HelpScreen, RunScreen}
    for owner in owners:
        assert owner.__name__ not in page
        first_line = (owner.__doc__ or "").strip().splitlines()[0]
        assert first_line not in page, first_line
    assert "action_" not in page and re.search(r"\b[a-z]+_[a-z_]+\b", page) is None


def test_each_note_belongs_to_a_binding_that_exists() -> None:
    for (owner, action), note in NOTES.items():
        actions = {binding.action for binding in _bindings(owner)}
        bare = {name.partition("(")[0] for name in actions}
        assert action in actions or action in bare, (owner.__name__, action, note)


def test_the_modes_open_first_and_every_other_screen_follows() -> None:
    page = _page(HelpApp(), (RunScreen, McpScreen, ToolsScreen))
    titles = [section.title for section in SECTIONS]
    where = {title: page.index(title) for title in titles}
    assert where["Run screen (F2)"] < where["MCP servers (F3)"] < where["MCP resources tab"]
    assert where["MCP logs tab"] < where["Tools (F4)"] < where["Approval view"]
    assert "Approval view" in page and "Replay screen" in page and "Sign-in" in page


async def test_at_80x24_the_page_scrolls_to_its_last_key() -> None:
    app = HelpApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = app.screen.query_one("#help-body", VerticalScroll)
        assert body.max_scroll_y > 0 and app.screen.focused is body
        await pilot.press("end")
        await wait_until(pilot, lambda: body.scroll_y == body.max_scroll_y)
        assert "Esc / q / F1  Close" in screen_text(app)


async def test_f1_in_the_app_lists_the_run_screen_first(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/read_and_deliver.py")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        text = screen_text(app)
        assert "Run screen (F2)" in text and "Cancel run — asks first" in text
        assert isinstance(app.screen, HelpScreen) and app.screen.screens[0] is RunScreen


def test_help_screen_snapshot(snap_compare: Any) -> None:
    assert snap_compare(HelpApp(), terminal_size=(120, 36))


def test_help_screen_snapshot_at_80x24(snap_compare: Any) -> None:
    assert snap_compare(HelpApp(), terminal_size=(80, 24))
