"""The MCP browser's prompts pane: prompts page by page, an argument form with completion, the messages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.suggester import Suggester
from textual.widgets import Button, Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from ditto_tui.errors import DittoError
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.text import is_plain_line, render_untrusted
from ditto_tui.tui.widgets.mcp_browse_text import bounded, item_label, page_items, prompt_messages_text
from ditto_tui.tui.widgets.mcp_pane import McpPane, problem_line
from ditto_tui.tui.widgets.schema_form import SchemaForm

__all__ = ["McpPromptsPane", "missing_required", "prompt_schema"]

MAX_SUGGESTIONS = 10
"""The most completion values shown under the form."""


def prompt_schema(prompt: Mapping[str, Any]) -> dict[str, Any]:
    """A prompt's arguments as the JSON Schema of an object of strings, for the argument form."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments = prompt.get("arguments")
    for argument in arguments if isinstance(arguments, list) else []:
        name = argument.get("name") if isinstance(argument, Mapping) else None
        if not isinstance(name, str):
            continue
        field: dict[str, Any] = {"type": "string"}
        if isinstance(argument.get("description"), str):
            field["description"] = argument["description"]
        properties[name] = field
        if argument.get("required") is True:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def missing_required(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """The first required argument left out or left blank (only spaces), or ``None`` when all are given."""
    for name in schema.get("required", []):
        value = arguments.get(name)
        if not isinstance(value, str) or not value.strip():
            return str(name)
    return None


Completer = Callable[[str, str], Any]


class ServerCompletions(Suggester):
    """Suggests a completion of one argument from the server's ``completion/complete`` as the user types."""

    def __init__(self, complete: Completer, argument: str) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.complete = complete
        self.argument = argument

    async def get_suggestion(self, value: str) -> str | None:
        """The first completion that extends ``value`` (only plain one-line values are offered)."""
        values: list[str] = await self.complete(self.argument, value)
        return next((found for found in values if found.startswith(value) and found != value), None)


class McpPromptsPane(McpPane):
    """Prompts of the selected server, filled in and fetched."""

    TITLE = "MCP prompts"
    HELP = (
        "The selected server's prompts, a page at a time. Enter on a prompt opens a form for its "
        "arguments, with the server's completions suggested as you type (right arrow accepts one); "
        "Get prompt shows the messages the server returns, as plain text."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "more", "More"),
        Binding("ctrl+g", "get_prompt", "Get prompt"),
    ]

    def __init__(self, source: McpSource, *, id: str | None = None) -> None:
        super().__init__(source, id=id)
        self.prompts: list[Mapping[str, Any]] = []
        self.cursor: str | None = None
        self.chosen: str | None = None
        self.schema: dict[str, Any] = {}
        """The chosen prompt's arguments as a JSON Schema (:func:`prompt_schema`)."""

    DEFAULT_CSS = """
    McpPromptsPane #mcp-prompt-list { max-height: 8; }
    McpPromptsPane #mcp-prompt-form-holder { height: auto; }
    McpPromptsPane #mcp-prompt-get { margin: 1 0; }
    McpPromptsPane .mcp-prompt-missing { color: $error; height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text("Select a server.", style="dim"), classes="mcp-pane-status")
        yield OptionList(id="mcp-prompt-list")
        with VerticalScroll(classes="mcp-pane-scroll"):
            yield Static(id="mcp-prompt-title")
            yield Vertical(id="mcp-prompt-form-holder")
            yield Static(id="mcp-prompt-suggestions")
            yield Button("Get prompt", id="mcp-prompt-get", variant="primary", compact=True, disabled=True)
            yield Static(id="mcp-prompt-result")

    # -- the list -------------------------------------------------------------------------------------

    def reset(self) -> None:
        self.stop_paging()
        self.prompts, self.cursor, self.chosen, self.schema = [], None, None, {}
        self.query_one("#mcp-prompt-list", OptionList).clear_options()
        for part in ("#mcp-prompt-title", "#mcp-prompt-suggestions", "#mcp-prompt-result"):
            self.query_one(part, Static).update("")
        self.query_one("#mcp-prompt-form-holder", Vertical).remove_children()
        self.query_one("#mcp-prompt-get", Button).disabled = True
        self.say(Text("Select a server.", style="dim"))

    def load(self, server: str) -> None:
        self.say(Text("Listing prompts…", style="italic"))
        self.paging = self.list_page(server)

    @work(group="mcp-prompts-list", exit_on_error=False, name="listing")
    async def list_page(self, server: str) -> None:
        """List the next page of prompts."""
        try:
            page = await self.source.registry.list_prompts(server, self.cursor)
        except DittoError as exc:
            if server == self.server:
                self.cursor = None
                self.say(problem_line("Listing prompts", exc))
            return
        if server != self.server:
            return
        items, self.cursor = page_items(page, "prompts")
        self.prompts.extend(items)
        self._show_list()

    @work(exclusive=True, group="mcp-prompts-relist", exit_on_error=False, name="listing")
    async def relist(self, server: str) -> None:
        """List the first page of prompts again (the server said its list changed)."""
        try:
            page = await self.source.registry.list_prompts(server, None)
        except DittoError as exc:
            if server == self.server:
                self.say(problem_line("Listing prompts again", exc))
            return
        if server != self.server:
            return
        self.prompts, self.cursor = page_items(page, "prompts")
        self._show_list()

    def offer_changed(self, kind: str, uri: str | None) -> None:
        """Relist when the server's prompts changed."""
        if kind == "prompts" and self.server is not None and self.loaded_for == self.server:
            self.stop_paging()
            self.relist(self.server)

    def _show_list(self) -> None:
        listing = self.query_one("#mcp-prompt-list", OptionList)
        highlighted = listing.highlighted
        listing.clear_options()
        for index, prompt in enumerate(self.prompts):
            label = item_label(prompt, key="")
            description = prompt.get("description")
            if isinstance(description, str) and description:
                label.append("  ")
                label.append_text(render_untrusted(description, newlines="visible", style="dim"))
            listing.add_option(Option(label, id=f"prompt:{index}"))
        if self.cursor is not None:
            listing.add_option(Option(Text("… more prompts (m)", style="italic"), id="more"))
        if not self.prompts:
            listing.add_option(Option(Text("(none)", style="dim"), id="none", disabled=True))
        if highlighted is not None:
            listing.highlighted = min(highlighted, listing.option_count - 1)
        more = "; more to list (m)" if self.cursor is not None else ""
        count = len(self.prompts)
        self.say(f"{count:,} prompt{'' if count == 1 else 's'}{more}")

    def action_more(self) -> None:
        """List the next page of prompts."""
        if self.paging_busy():
            return
        if self.server is None or self.cursor is None:
            self.say("Every prompt is listed.")
            return
        self.say(Text("Listing the next page…", style="italic"))
        self.paging = self.list_page(self.server)

    # -- the form -------------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#mcp-prompt-list")
    async def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        kind, _, index = (event.option.id or "").partition(":")
        if kind == "more":
            self.action_more()
        elif kind == "prompt":
            await self.open_form(self.prompts[int(index)])

    async def open_form(self, prompt: Mapping[str, Any]) -> None:
        """Show a form for ``prompt``'s arguments, each suggesting the server's completions."""
        name = str(prompt.get("name", ""))
        self.chosen = name
        title = render_untrusted(name, newlines="visible", style="bold")
        self.query_one("#mcp-prompt-title", Static).update(title)
        holder = self.query_one("#mcp-prompt-form-holder", Vertical)
        await holder.remove_children()
        self.schema = prompt_schema(prompt)
        form = SchemaForm(self.schema, id="mcp-prompt-form")
        await holder.mount(form)
        if self._completes():
            for field in form.query(Input):
                argument = getattr(field.parent, "path", None)
                if isinstance(argument, str):
                    field.suggester = ServerCompletions(self.complete, argument)
        self.query_one("#mcp-prompt-get", Button).disabled = False
        self.query_one("#mcp-prompt-result", Static).update("")
        self.query_one("#mcp-prompt-suggestions", Static).update("")
        form.focus_first()

    def _completes(self) -> bool:
        if self.server is None:
            return False
        try:
            return "completions" in self.source.server_info(self.server).capabilities
        except DittoError:
            return False

    def _typed(self) -> dict[str, str]:
        typed = {}
        for field in self.query_one("#mcp-prompt-form-holder").query(Input):
            argument = getattr(field.parent, "path", None)
            if isinstance(argument, str) and field.value:
                typed[argument] = field.value
        return typed

    async def complete(self, argument: str, value: str) -> list[str]:
        """The server's completions of ``argument`` from ``value``, with the other arguments as context."""
        server, prompt = self.server, self.chosen
        if server is None or prompt is None:
            return []
        context = {name: typed for name, typed in self._typed().items() if name != argument}
        shown = self.query_one("#mcp-prompt-suggestions", Static)
        try:
            result = await self.source.registry.complete(
                server, {"type": "ref/prompt", "name": prompt}, {"name": argument, "value": value}, context
            )
        except DittoError as exc:
            shown.update(problem_line("Completion", exc))
            return []
        found = result.get("values")
        values = [item for item in found if isinstance(item, str)] if isinstance(found, list) else []
        self._show_suggestions(argument, values)
        return [item for item in values if is_plain_line(item)]

    def _show_suggestions(self, argument: str, values: list[str]) -> None:
        shown = self.query_one("#mcp-prompt-suggestions", Static)
        if not values:
            shown.update("")
            return
        line = Text("suggestions for ", style="dim")
        line.append_text(render_untrusted(argument, newlines="visible", style="bold"))
        line.append(": ")
        line.append_text(
            Text(", ").join(render_untrusted(item, newlines="visible") for item in values[:MAX_SUGGESTIONS])
        )
        if len(values) > MAX_SUGGESTIONS:
            line.append(f" (+{len(values) - MAX_SUGGESTIONS} more)", style="dim")
        shown.update(line)

    # -- fetching -------------------------------------------------------------------------------------

    def action_get_prompt(self) -> None:
        """Check the form and fetch the prompt with its arguments."""
        form = self.query(SchemaForm)
        if not form:
            self.say("Choose a prompt first (Enter on it).")
            return
        form.first().submit()

    @on(Button.Pressed, "#mcp-prompt-get")
    def _get_pressed(self) -> None:
        self.action_get_prompt()

    @on(SchemaForm.Submitted)
    def _submitted(self, event: SchemaForm.Submitted) -> None:
        event.stop()
        if self.server is None or self.chosen is None:
            return
        arguments = {name: str(value) for name, value in event.arguments.items()}
        missing = missing_required(self.schema, arguments)
        if missing is not None:
            self._refuse(event.form, missing)
            return
        self.query_one("#mcp-prompt-result", Static).update(Text("Getting the prompt…", style="italic"))
        self.get_prompt(self.server, self.chosen, arguments)

    def _refuse(self, form: SchemaForm, name: str) -> None:
        """Send nothing: say at ``name``'s field that it is required, and put the cursor there."""
        shown = render_untrusted(name, newlines="visible", style="bold")
        self.query_one("#mcp-prompt-result", Static).update(
            Text("Not sent: ", style="bold red").append_text(shown).append(" is required.", style="red")
        )
        field = next((found for found in form.query(".field") if getattr(found, "path", None) == name), None)
        editors = list((field or form).query("Input, TextArea"))
        if field is None or not editors:  # the JSON editor: the form's own error line is the place
            form.show_errors([f"{name} is required: give it a value"])
            if editors:
                editors[0].focus()
            return
        note = Text.assemble(shown, (" is required: type a value, then ctrl+g", "red"))
        for old in field.query(".mcp-prompt-missing"):
            old.remove()
        field.mount(Static(note, classes="mcp-prompt-missing"), after=editors[0])
        editors[0].focus()

    @on(Input.Changed)
    @on(TextArea.Changed)
    def _typed_in_field(self, event: Input.Changed | TextArea.Changed) -> None:
        """A value typed into a field refused as missing: its note has done its job."""
        field = event.control.parent
        if field is not None:
            for note in field.query(".mcp-prompt-missing"):
                note.remove()

    @work(exclusive=True, group="mcp-prompts-get", exit_on_error=False, name="prompt")
    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> None:
        """Fetch one prompt and show its messages."""
        result = self.query_one("#mcp-prompt-result", Static)
        try:
            fetched = await self.source.registry.get_prompt(server, name, arguments)
        except DittoError as exc:
            if server == self.server:
                result.update(problem_line("Getting the prompt", exc))
            return
        if server == self.server:
            result.update(bounded(prompt_messages_text(fetched)))
