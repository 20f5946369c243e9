"""The help screen: what each screen does and every key binding, read from the classes themselves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from ditto_tui.tui.widgets.schema_form import SchemaForm

__all__ = ["WIDGETS", "HelpScreen", "help_text"]

_KEY_WIDTH = 14

WIDGETS: tuple[type[DOMNode], ...] = (SchemaForm, McpResourcesPane, McpPromptsPane)
"""The widgets with keys of their own, listed after the screens."""


def _summary(node: type[DOMNode]) -> str:
    """What a screen or widget is for: its ``HELP`` text, else the first paragraph of its docstring."""
    help_text = getattr(node, "HELP", None)
    if isinstance(help_text, str) and help_text:
        return help_text
    doc = (node.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def _title(node: type[DOMNode]) -> str:
    title = getattr(node, "TITLE", None)
    return title if isinstance(title, str) and title else node.__name__


def _own_bindings(node: type[DOMNode]) -> list[Binding]:
    """The bindings a class declares itself (inherited framework defaults left out), with a description."""
    declared: list[BindingType] = list(node.__dict__.get("BINDINGS", []))
    return [
        binding for binding in Binding.make_bindings(declared) if binding.description and not binding.system
    ]


def _section(text: Text, app: App[Any], title: str, summary: str, bindings: Iterable[Binding]) -> None:
    text.append(title, style="bold underline")
    text.append("\n")
    if summary:
        text.append(summary)
        text.append("\n")
    for binding in bindings:
        text.append(f"  {app.get_key_display(binding):>{_KEY_WIDTH}}  ", style="bold")
        text.append(binding.tooltip or binding.description)
        text.append("\n")
    text.append("\n")


def help_text(
    app: App[Any], screens: Sequence[type[Screen[Any]]], widgets: Sequence[type[DOMNode]] = WIDGETS
) -> Text:
    """The help page: the application's own keys, then each screen and widget with its keys."""
    text = Text()
    app_bindings = _own_bindings(type(app))
    if app.ENABLE_COMMAND_PALETTE:
        app_bindings.append(
            Binding(
                app.COMMAND_PALETTE_BINDING, "command_palette", "Command palette: every screen and action"
            )
        )
    app_bindings.append(Binding("ctrl+q", "quit", "Quit"))
    _section(text, app, _title(type(app)), _summary(type(app)), app_bindings)
    for node in (*screens, *widgets):
        _section(text, app, _title(node), _summary(node), _own_bindings(node))
    text.rstrip()
    return text


class HelpScreen(Guarded, ModalScreen[None]):
    """Every key binding and what each screen does."""

    CSS_PATH = "help.tcss"
    TITLE = "Help"
    HELP = "This page. Escape closes it."

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1", "dismiss", "Close"),
    ]

    def __init__(
        self, screens: Sequence[type[Screen[Any]]], *, widgets: Sequence[type[DOMNode]] = WIDGETS
    ) -> None:
        super().__init__()
        self.screens = tuple(screens)
        self.widgets = tuple(widgets)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Help"
            yield Static(help_text(self.app, self.screens, self.widgets), id="help-text")
        yield Footer()
