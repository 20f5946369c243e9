"""The MCP browser's resources pane: resources and templates page by page, reading, subscribing, saving."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.errors import DittoError
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.text import counted, is_plain_line, render_untrusted
from ditto_tui.tui.widgets.mcp_browse_text import (
    ReadContent,
    bounded,
    completion_page,
    item_label,
    page_items,
    read_contents,
    resource_text,
)
from ditto_tui.tui.widgets.mcp_pane import McpPane, problem_line
from ditto_tui.tui.widgets.mcp_save import save_under_workspace
from ditto_tui.tui.widgets.mcp_template_form import TemplateForm, TemplateVariable

__all__ = ["McpResourcesPane"]

Kind = Literal["resources", "templates"]
_KEYS: dict[Kind, str] = {"resources": "resources", "templates": "resourceTemplates"}


class McpResourcesPane(McpPane):
    """Resources and resource templates of the selected server."""

    TITLE = "MCP resources"
    HELP = (
        "The selected server's resources and templates, a page at a time. Enter on a resource reads it "
        "(its text shown as plain text); on a template puts its URI in the box and opens a form for its "
        "variables, where ctrl+g offers the server's completions and Enter reads the URI it builds. "
        "A read from the box moves the focus to the result, where w, u and m work. "
        "Binary contents show their type and size and can be saved as a new file under the workspace (w)."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "more", "More"),
        Binding("u", "subscribe", "Subscribe"),
        Binding("w", "save", "Save bytes"),
    ]

    DEFAULT_CSS = """
    McpResourcesPane > #mcp-template-holder { height: auto; }
    McpResourcesPane > #mcp-save-said { height: auto; display: none; }
    """

    def __init__(self, source: McpSource, *, id: str | None = None) -> None:
        super().__init__(source, id=id)
        self.items: dict[Kind, list[Mapping[str, Any]]] = {"resources": [], "templates": []}
        self.cursors: dict[Kind, str | None] = {"resources": None, "templates": None}
        self.contents: list[ReadContent] = []
        self.read_uri: str | None = None
        self.subscribed: set[str] = set()
        self.updated: dict[str, str] = {}
        """When each subscribed resource was last said to be updated (HH:MM:SS), by URI."""

    def compose(self) -> ComposeResult:
        yield Static(Text("Select a server.", style="dim"), classes="mcp-pane-status")
        yield OptionList(id="mcp-resource-list")
        yield Input(
            placeholder="URI to read (fill in a template's {variables}); Enter reads", id="mcp-resource-uri"
        )
        yield Vertical(id="mcp-template-holder")
        with Horizontal(classes="mcp-pane-buttons"):
            yield Button("Read", id="mcp-resource-read", compact=True)
            yield Button("Subscribe", id="mcp-resource-subscribe", compact=True)
            yield Button("Save bytes", id="mcp-resource-save", compact=True)
            yield Button("More", id="mcp-resource-more", compact=True)
        yield Input(placeholder="file name under the workspace; Enter saves", id="mcp-save-name")
        yield Static(id="mcp-save-said")
        with VerticalScroll(classes="mcp-pane-scroll"):
            yield Static(id="mcp-resource-content")

    # -- the list -------------------------------------------------------------------------------------

    def reset(self) -> None:
        self.stop_paging()
        self.query_one("#mcp-template-holder", Vertical).remove_children()
        self.items = {"resources": [], "templates": []}
        self.cursors = {"resources": None, "templates": None}
        self.contents, self.read_uri = [], None
        self.subscribed = set()
        self.updated = {}
        self.query_one("#mcp-resource-list", OptionList).clear_options()
        self.query_one("#mcp-resource-content", Static).update("")
        self.query_one("#mcp-save-name", Input).display = False
        self._say_saved(Text())
        self.say(Text("Select a server.", style="dim"))

    def load(self, server: str) -> None:
        self.say(Text("Listing resources and templates…", style="italic"))
        self.paging = self.list_pages(server, ["resources", "templates"])

    def _options(self) -> list[Option | None]:
        options: list[Option | None] = []
        headings: tuple[tuple[Kind, str], ...] = (("resources", "Resources"), ("templates", "Templates"))
        for kind, heading in headings:
            options.append(Option(Text(heading, style="bold underline"), id=f"head:{kind}", disabled=True))
            key = "uri" if kind == "resources" else "uriTemplate"
            for index, item in enumerate(self.items[kind]):
                marked = kind == "resources" and item.get("uri") in self.subscribed
                label = item_label(item, key=key, marked=marked)
                when = self.updated.get(str(item.get("uri"))) if marked else None
                if when:
                    label.append(f"  updated {when}", style="green")
                options.append(Option(label, id=f"{kind}:{index}"))
            if self.cursors[kind] is not None:
                options.append(Option(Text(f"… more {kind} (m)", style="italic"), id=f"more:{kind}"))
            if not self.items[kind]:
                options.append(Option(Text("(none)", style="dim"), id=f"none:{kind}", disabled=True))
        return options

    def _show_list(self) -> None:
        listing = self.query_one("#mcp-resource-list", OptionList)
        highlighted = listing.highlighted
        listing.clear_options()
        listing.add_options(self._options())
        if highlighted is not None:
            listing.highlighted = min(highlighted, listing.option_count - 1)
        counts = f"{counted(len(self.items['resources']), 'resource')}, "
        counts += counted(len(self.items["templates"]), "template")
        more = [kind for kind, cursor in self.cursors.items() if cursor is not None]
        self.say(f"{counts}" + (f"; more {' and '.join(more)} to list (m)" if more else ""))

    @work(group="mcp-resources-list", exit_on_error=False, name="listing")
    async def list_pages(self, server: str, kinds: list[Kind]) -> None:
        """List the next page of each kind; a failure of one kind leaves the other listed."""
        problems: list[Text] = []
        for kind in kinds:
            try:
                if kind == "resources":
                    page = await self.source.registry.list_resources(server, self.cursors[kind])
                else:
                    page = await self.source.registry.list_resource_templates(server, self.cursors[kind])
            except DittoError as exc:
                if server != self.server:  # an answer about the server shown before: nothing to change
                    return
                self.cursors[kind] = None
                problems.append(problem_line(f"Listing {kind}", exc))
                continue
            if server != self.server:
                return
            items, self.cursors[kind] = page_items(page, _KEYS[kind])
            self.items[kind].extend(items)
        self._show_list()
        if problems:
            self.say(Text("\n").join(problems))

    @work(exclusive=True, group="mcp-resources-relist", exit_on_error=False, name="listing")
    async def relist(self, server: str) -> None:
        """List the first page of resources and templates again (the server said its list changed)."""
        pages: dict[Kind, Mapping[str, Any]] = {}
        try:
            pages["resources"] = await self.source.registry.list_resources(server, None)
            pages["templates"] = await self.source.registry.list_resource_templates(server, None)
        except DittoError as exc:
            if server == self.server:
                self.say(problem_line("Listing resources again", exc))
            return
        if server != self.server:
            return
        for kind, page in pages.items():
            self.items[kind], self.cursors[kind] = page_items(page, _KEYS[kind])
        self._show_list()

    def offer_changed(self, kind: str, uri: str | None) -> None:
        """Relist when the server's resources changed; re-read a shown subscribed resource it updated."""
        server = self.server
        if server is None or self.loaded_for != server:
            return
        if kind == "resources":
            self.stop_paging()
            self.relist(server)
        elif kind == "resource" and uri is not None and uri in self.subscribed:
            self.updated[uri] = time.strftime("%H:%M:%S")
            self._show_list()
            if self.read_uri == uri:
                self.read_resource(server, uri)

    def action_more(self) -> None:
        """List the next page of resources (or templates, once every resource is listed)."""
        if self.paging_busy():
            return
        kinds: list[Kind] = [kind for kind in ("resources", "templates") if self.cursors[kind] is not None]
        if self.server is None or not kinds:
            self.say("Everything is listed.")
            return
        self.say(Text("Listing the next page…", style="italic"))
        self.paging = self.list_pages(self.server, kinds[:1])

    @on(OptionList.OptionSelected, "#mcp-resource-list")
    async def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        kind, _, index = (event.option.id or "").partition(":")
        if kind == "more":
            self.action_more()
        elif kind == "resources":
            uri = str(self.items["resources"][int(index)].get("uri", ""))
            self.read(uri)
        elif kind == "templates":
            await self.open_template(self.items["templates"][int(index)])

    # -- templates ------------------------------------------------------------------------------------

    async def open_template(self, template: Mapping[str, Any]) -> None:
        """Put ``template``'s URI in the box and open a form for its variables below it."""
        plain = self._put_in_box(str(template.get("uriTemplate", "")))
        holder = self.query_one("#mcp-template-holder", Vertical)
        await holder.remove_children()
        form = TemplateForm(template)
        if form.variables:
            await holder.mount(form)
        if not plain:
            self.say("The template's URI holds control or hidden characters: it is not put in the box.")
        elif form.variables:
            self.say("Fill in the template's variables below (Tab), or edit the URI; Enter reads it.")
        else:
            self.say("The template has no variables: Enter reads it.")
        self.query_one("#mcp-resource-uri", Input).focus()

    def _put_in_box(self, uri: str) -> bool:
        """Show ``uri`` in the URI box; one with control or hidden characters is kept out of the input."""
        plain = is_plain_line(uri)
        self.query_one("#mcp-resource-uri", Input).value = uri if plain else ""
        return plain

    @on(TemplateForm.Filled)
    def _template_filled(self, event: TemplateForm.Filled) -> None:
        event.stop()
        self._put_in_box(event.preview)

    @on(TemplateForm.Submitted)
    def _template_submitted(self, event: TemplateForm.Submitted) -> None:
        event.stop()
        self._put_in_box(event.uri)
        self.read(event.uri)

    @on(TemplateForm.CompletionAsked)
    def _completion_asked(self, event: TemplateForm.CompletionAsked) -> None:
        event.stop()
        if self.server is None:
            return
        if not self._completes(self.server):
            event.form.note("The server offers no completions (it does not declare the capability).")
            return
        self.complete_variable(self.server, event.form, event.field)

    def _completes(self, server: str) -> bool:
        try:
            return "completions" in self.source.server_info(server).capabilities
        except DittoError:
            return False

    @work(exclusive=True, group="mcp-resources-complete", exit_on_error=False, name="completion")
    async def complete_variable(self, server: str, form: TemplateForm, field: TemplateVariable) -> None:
        """Ask the server to complete ``field``'s variable, the other filled variables as context."""
        context = {name: value for name, value in form.values().items() if name != field.variable}
        ref = {"type": "ref/resource", "uri": form.uri_template}
        argument = {"name": field.variable, "value": field.value}
        try:
            result = await self.source.registry.complete(server, ref, argument, context)
        except DittoError as exc:
            if server == self.server and form.is_attached:
                form.note(problem_line("Completion", exc))
            return
        if server == self.server and form.is_attached:
            form.offer(field, *completion_page(result))

    # -- reading --------------------------------------------------------------------------------------

    def read(self, uri: str) -> None:
        """Read ``uri`` from the selected server (in a worker)."""
        if self.server is None or not uri:
            return
        self.say(Text("Reading ", style="italic").append_text(render_untrusted(uri, newlines="visible")))
        self.read_resource(self.server, uri, to_result=self._typing())

    def _typing(self) -> bool:
        """Whether the focus is in one of the pane's inputs, where a letter is typed, not a key pressed."""
        focused = self.screen.focused
        return isinstance(focused, Input) and self in focused.ancestors

    @on(Input.Submitted, "#mcp-resource-uri")
    def _uri_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.read(event.value.strip())

    @on(Button.Pressed, "#mcp-resource-read")
    def _read_pressed(self) -> None:
        listing = self.query_one("#mcp-resource-list", OptionList)
        typed = self.query_one("#mcp-resource-uri", Input).value.strip()
        option = listing.highlighted_option
        forms = self.query(TemplateForm)
        if forms and typed == forms.first().preview():
            forms.first().submit()
        elif typed:
            self.read(typed)
        elif option is not None and (option.id or "").startswith("resources:"):
            self.read(str(self.items["resources"][int((option.id or "").split(":")[1])].get("uri", "")))

    @work(exclusive=True, group="mcp-resources-read", exit_on_error=False, name="read")
    async def read_resource(self, server: str, uri: str, *, to_result: bool = False) -> None:
        """Read one resource and show its contents; ``to_result``: then focus them, so that w (save),
        u (subscribe) and m work at once instead of being typed into the box the read came from."""
        try:
            result = await self.source.registry.read_resource(server, uri)
        except DittoError as exc:
            if server == self.server:
                self.say(problem_line("Reading the resource", exc))
            return
        if server != self.server:
            return
        self.contents, self.read_uri = read_contents(result), uri
        self._show_contents()
        self._say_saved(Text())
        said = Text("Read ").append_text(render_untrusted(uri, newlines="visible"))
        if to_result and self._typing():
            self.query_one(".mcp-pane-scroll", VerticalScroll).focus()
            said.append("; the focus is on the result (w saves it, u subscribes)", style="dim")
        self.say(said)

    def _show_contents(self) -> None:
        subscribed = self.read_uri in self.subscribed
        shown = resource_text(self.contents, subscribed)
        when = self.updated.get(self.read_uri or "") if subscribed else None
        if when:
            shown = Text(f"updated {when}\n", style="bold green").append_text(shown)
        self.query_one("#mcp-resource-content", Static).update(bounded(shown))

    # -- subscribing ----------------------------------------------------------------------------------

    def _target_uri(self) -> str | None:
        option = self.query_one("#mcp-resource-list", OptionList).highlighted_option
        if option is not None and (option.id or "").startswith("resources:"):
            return str(self.items["resources"][int((option.id or "").split(":")[1])].get("uri", ""))
        return self.read_uri

    def action_subscribe(self) -> None:
        """Subscribe to the highlighted (or last read) resource, or unsubscribe when subscribed."""
        uri = self._target_uri()
        if self.server is None or not uri:
            self.say("Highlight or read a resource first.")
            return
        self.say(Text("Asking the server…", style="italic"))
        self.toggle_subscription(self.server, uri, uri not in self.subscribed)

    @on(Button.Pressed, "#mcp-resource-subscribe")
    def _subscribe_pressed(self) -> None:
        self.action_subscribe()

    @work(group="mcp-resources-subscribe", exit_on_error=False, name="subscription")
    async def toggle_subscription(self, server: str, uri: str, subscribe: bool) -> None:
        """Subscribe or unsubscribe; the list marks subscribed resources with ◉."""
        try:
            if subscribe:
                await self.source.registry.subscribe_resource(server, uri)
            else:
                await self.source.registry.unsubscribe_resource(server, uri)
        except DittoError as exc:
            if server == self.server:
                self.say(problem_line("Subscribing" if subscribe else "Unsubscribing", exc))
            return
        if server != self.server:
            return
        (self.subscribed.add if subscribe else self.subscribed.discard)(uri)
        self._show_list()
        if self.contents and self.read_uri == uri:
            self._show_contents()
        self.say(
            Text("Subscribed to " if subscribe else "Unsubscribed from ").append_text(render_untrusted(uri))
        )

    # -- saving ---------------------------------------------------------------------------------------

    def _bytes(self) -> bytes | None:
        for content in self.contents:
            if content.data is not None:
                return content.data
        texts = [content.text for content in self.contents if content.text is not None]
        return "".join(texts).encode("utf-8") if texts else None

    def action_save(self) -> None:
        """Ask for a file name to save the read resource's bytes under the workspace."""
        if self._bytes() is None:
            self.say("Read a resource first.")
            return
        name = self.query_one("#mcp-save-name", Input)
        name.display = True
        name.focus()
        self.say("Type a new file name, relative to the workspace, and press Enter.")

    @on(Button.Pressed, "#mcp-resource-save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#mcp-resource-more")
    def _more_pressed(self) -> None:
        self.action_more()

    @on(Input.Submitted, "#mcp-save-name")
    def _save_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        data = self._bytes()
        if data is None:
            return
        try:
            saved = save_under_workspace(self.source.workspace, event.value, data)
        except (DittoError, OSError) as exc:
            self.say(problem_line("Saving", exc))
            self._say_saved(problem_line("Saving", exc))
            return
        event.input.display = False
        event.input.value = ""
        self.query_one(".mcp-pane-scroll", VerticalScroll).focus()
        said = Text(f"Saved {len(data):,} bytes to ").append_text(render_untrusted(saved, newlines="visible"))
        self.say(said)
        self._say_saved(said)

    def _say_saved(self, text: Text) -> None:
        """Show what became of a save beside the result (an empty line takes no room)."""
        line = self.query_one("#mcp-save-said", Static)
        line.update(text)
        line.display = bool(text.plain)
