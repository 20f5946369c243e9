"""The MCP browser's resource template form: one input per variable, the server's completions to pick from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.tui.text import is_plain_line, render_untrusted
from ditto_tui.tui.widgets.mcp_browse_text import (
    expand_template,
    item_label,
    template_variables,
    unfilled_variables,
)

__all__ = ["TemplateForm", "TemplateVariable"]


class TemplateVariable(Input):
    """The value of one variable of the chosen resource template."""

    def __init__(self, variable: str, *, id: str) -> None:
        super().__init__(
            placeholder="value (ctrl+g: the server's completions)",
            compact=True,
            id=id,
            classes="mcp-template-value",
        )
        self.variable = variable


class TemplateForm(Vertical):
    """One input per variable of a resource template; the server's completions are offered to pick from.

    It asks for completions and hands over the URI it built with messages; the pane talks to the server.
    """

    DEFAULT_CSS = """
    TemplateForm { height: auto; margin-bottom: 1; }
    TemplateForm > .mcp-template-title, TemplateForm > .mcp-template-note { height: auto; }
    TemplateForm > .mcp-template-row { height: 1; }
    TemplateForm .mcp-template-name {
        width: 20; margin-right: 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    TemplateForm .mcp-template-value { width: 1fr; }
    TemplateForm > #mcp-template-completions { display: none; height: auto; max-height: 8; }
    TemplateForm > #mcp-template-completions.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+g", "complete", "Complete"),
        Binding("escape", "close_completions", "Close completions", show=False),
    ]

    class CompletionAsked(Message):
        """The person asked for completions of ``field``'s variable."""

        def __init__(self, form: TemplateForm, field: TemplateVariable) -> None:
            super().__init__()
            self.form = form
            self.field = field

    class Filled(Message):
        """A variable changed: ``preview`` is the URI so far, unfilled parts as written."""

        def __init__(self, preview: str) -> None:
            super().__init__()
            self.preview = preview

    class Submitted(Message):
        """Every needed variable is filled in: ``uri`` is the template expanded with them."""

        def __init__(self, uri: str) -> None:
            super().__init__()
            self.uri = uri

    def __init__(self, template: Mapping[str, Any]) -> None:
        super().__init__(id="mcp-template-form")
        self.template = template
        self.uri_template = str(template.get("uriTemplate", ""))
        self.variables = template_variables(self.uri_template)
        self.completing: TemplateVariable | None = None
        self.completions: list[str] = []

    def compose(self) -> ComposeResult:
        title = Text("Template ", style="bold").append_text(item_label(self.template, key=""))
        yield Static(title, classes="mcp-template-title")
        for index, name in enumerate(self.variables):
            with Horizontal(classes="mcp-template-row"):
                yield Static(
                    render_untrusted(name, newlines="visible", style="bold"), classes="mcp-template-name"
                )
                yield TemplateVariable(name, id=f"mcp-template-var-{index}")
        yield OptionList(id="mcp-template-completions")
        yield Static(
            Text("Tab to a variable; ctrl+g asks the server for completions; Enter reads.", style="dim"),
            classes="mcp-template-note",
        )

    def fields(self) -> list[TemplateVariable]:
        """The inputs, one per variable, in the template's order."""
        return list(self.query(TemplateVariable))

    def values(self) -> dict[str, str]:
        """The variables filled in so far."""
        return {field.variable: field.value for field in self.fields() if field.value}

    def preview(self) -> str:
        """The URI so far: filled variables put in, unfilled expressions as written."""
        return expand_template(self.uri_template, self.values(), keep_unfilled=True)

    def note(self, text: Text | str) -> None:
        """Show ``text`` (fixed wording or rendered untrusted text) under the form."""
        self.query_one(".mcp-template-note", Static).update(text if isinstance(text, Text) else Text(text))

    def _completion_list(self) -> OptionList:
        return self.query_one("#mcp-template-completions", OptionList)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "complete":
            return isinstance(self.screen.focused, TemplateVariable)
        if action == "close_completions":
            return self._completion_list().has_class("-shown")
        return True

    def action_complete(self) -> None:
        """Ask the server to complete the focused variable's value."""
        field = self.screen.focused
        if isinstance(field, TemplateVariable):
            self.note(Text("Asking the server for completions…", style="italic"))
            self.post_message(self.CompletionAsked(self, field))

    def action_close_completions(self) -> None:
        """Hide the completions and go back to the variable they were for."""
        self._close_completions()
        if self.completing is not None:
            self.completing.focus()

    def _close_completions(self) -> None:
        self._completion_list().remove_class("-shown")

    def offer(self, field: TemplateVariable, values: list[str], more: int) -> None:
        """Show the server's completions of ``field`` to pick from; a value that is no plain line is not."""
        name = render_untrusted(field.variable, newlines="visible", style="bold")
        if not values:
            self.note(Text("The server has no completions for ").append_text(name).append("."))
            return
        self.completing, self.completions = field, values
        listing = self._completion_list()
        listing.clear_options()
        for index, value in enumerate(values):
            label = render_untrusted(value, newlines="visible")
            plain = is_plain_line(value)
            if not plain:
                label.append("  (not plain one-line text)", style="dim")
            listing.add_option(Option(label, id=f"value:{index}", disabled=not plain))
        listing.add_class("-shown")
        listing.highlighted = next((i for i, value in enumerate(values) if is_plain_line(value)), None)
        if self.screen.focused is field:
            listing.focus()
        note = Text(f"{len(values):,} completion{'' if len(values) == 1 else 's'} of ").append_text(name)
        note.append(f" (+{more} more)" if more else "")
        self.note(note.append(" from the server: Enter or a click picks one, Escape goes back."))

    @on(OptionList.OptionSelected, "#mcp-template-completions")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        field = self.completing
        if field is None:
            return
        field.value = self.completions[int((event.option.id or "value:0").split(":")[1])]
        field.cursor_position = len(field.value)
        self._close_completions()
        field.focus()
        self.note(Text("Picked; Enter reads the resource.", style="dim"))

    @on(Input.Changed, ".mcp-template-value")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.input is self.completing:
            self._close_completions()  # they completed the value before this change
        self.post_message(self.Filled(self.preview()))

    @on(Input.Submitted, ".mcp-template-value")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def submit(self) -> None:
        """Build the URI and hand it over, or say which needed variable is still empty."""
        values = self.values()
        missing = unfilled_variables(self.uri_template, values)
        if missing:
            name = render_untrusted(missing[0], newlines="visible", style="bold")
            self.note(Text("Fill in ").append_text(name).append(" first (ctrl+g asks the server)."))
            self.fields()[self.variables.index(missing[0])].focus()
            return
        self.post_message(self.Submitted(expand_template(self.uri_template, values)))
