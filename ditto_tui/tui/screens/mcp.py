"""The MCP browser: servers and their state, tools, resources, prompts, tool changes, invoking a tool."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Header, Select, Static, TabbedContent, TabPane, Tree
from textual.widgets.tree import TreeNode
from textual.worker import Worker, WorkerState

from ditto_tui.contracts import McpCapability, Observation
from ditto_tui.errors import DittoError
from ditto_tui.interaction.mcp import McpOfferChanged
from ditto_tui.interaction.mcp.drift import McpToolChange, McpToolsChanged
from ditto_tui.interaction.mcp.registry import PROGRESS_EVENT
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.runtime import CustomEvent, ExecutionEvent
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.supervise import Verdict
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.mcp_source import McpSource, ServerView
from ditto_tui.tui.screens.accept_change import AcceptChangeModal
from ditto_tui.tui.text import counted, render_untrusted, untrusted_json
from ditto_tui.tui.widgets.diff import unified_diff_text
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.mcp_browse_text import bounded, server_info_text
from ditto_tui.tui.widgets.mcp_call_view import McpCallView
from ditto_tui.tui.widgets.mcp_logs import McpLogsPane
from ditto_tui.tui.widgets.mcp_pane import McpPane, problem_line
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from ditto_tui.tui.widgets.mcp_server_actions import McpServerActions
from ditto_tui.tui.widgets.pending import PendingBadge, waiting_in
from ditto_tui.tui.widgets.schema_form import SchemaForm

__all__ = ["McpCommands", "McpScreen", "NodeRef", "bounded"]

NodeRef = tuple[str, str | None]
"""What a tree node stands for: ``(server, None)`` or ``(server, tool)``."""

_STATE_GLYPHS = {
    "connected": ("●", "green"),
    "connecting": ("◌", "yellow"),
    "failed": ("✗", "red"),
    "disconnected": ("✗", "red"),
    "denied": ("⊘", "red"),
    "closed": ("–", "dim"),
    "disabled": ("○", "dim"),
    "not started": ("?", "yellow"),
}
_DECISION_STYLES = {"allow": "green", "ask": "yellow", "deny": "red"}
_HINTS = (
    ("readOnlyHint", "read-only"),
    ("destructiveHint", "destructive"),
    ("idempotentHint", "idempotent"),
    ("openWorldHint", "open-world"),
)


class ToolsChanged(Message):
    """A server's tool list changed (a notification or a new discovery)."""

    def __init__(self, change: McpToolsChanged) -> None:
        super().__init__()
        self.change = change


class OffersChanged(Message):
    """Servers said their resources or prompts changed (what they said waits in the screen's queue)."""


class CallProgressed(Message):
    """A progress notification of a call (an ``mcp_progress`` event's fields)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__()
        self.data = data


class ServerStatusChanged(Message):
    """A server's connection state changed."""

    def __init__(self, status: McpServerStatus) -> None:
        super().__init__()
        self.status = status


# --- what is shown -------------------------------------------------------------------------------------


def _state_text(server: ServerView) -> Text:
    state = server.state if server.permitted or server.state != "connected" else "denied"
    glyph, style = _STATE_GLYPHS[state]
    return Text(f"{glyph} {state}", style=style)


def _unusable(server: ServerView) -> str:
    """Why ``server`` cannot be pinged or called now, and what to do, in one line."""
    name = repr(server.name)
    if not server.permitted:
        return f"{name} is not granted: add it to sandbox.mcp in ditto.yaml."
    if server.state == "disabled":
        return f"{name} is disabled in ditto.yaml."
    if server.reconnectable:
        return f"{name} is {server.state}: R starts it again."
    return f"{name} is {server.state}."


def _server_label(server: ServerView, changed: int) -> Text:
    label = render_untrusted(server.name, newlines="visible", style="bold")
    label.append("  ")
    label.append_text(_state_text(server))
    if changed:
        label.append(f"  ⚠ {changed} changed", style="bold yellow")
    return label


def _hints(capability: McpCapability) -> list[str]:
    annotations = capability.annotations or {}
    return [label for key, label in _HINTS if annotations.get(key) is True]


def _tool_label(capability: McpCapability, verdict: Verdict, changed: bool) -> Text:
    label = Text("⚠ ", style="bold yellow") if changed else Text()
    label.append_text(render_untrusted(capability.name, newlines="visible"))
    label.append("  ")
    # The rule and the hints before the title: a narrow list cuts the end of the line, not those.
    if capability.unsupported:
        label.append("unsupported", style="dim red")
    else:
        label.append(verdict.decision, style=_DECISION_STYLES[verdict.decision])
        for hint in _hints(capability):
            if hint in ("read-only", "destructive"):
                label.append(f"  {hint}", style="red" if hint == "destructive" else "dim")
    if capability.title:
        label.append("  ")
        label.append_text(render_untrusted(capability.title, newlines="visible", style="italic"))
    return label


def _line(text: Text, label: str, value: Text | str) -> None:
    text.append(f"{label}: ", style="bold")
    text.append_text(value if isinstance(value, Text) else render_untrusted(value))
    text.append("\n")


def server_detail(
    server: ServerView, limits: tuple[int, int], error: str | None, log_tail: str | None
) -> Text:
    """Everything about one server: state, transport, permission, figures, and why it failed."""
    text = render_untrusted(server.name, newlines="visible", style="bold")
    text.append("\n\n")
    _line(text, "state", _state_text(server))
    _line(text, "transport", server.transport)
    if server.permitted:
        _line(text, "sandbox", Text("✓ permitted", style="green"))
    else:
        _line(text, "sandbox", Text("⊘ denied: add the server to sandbox.mcp to use it", style="red"))
    if server.server_info or server.protocol_version:
        _line(text, "server", f"{server.server_info or '?'} (protocol {server.protocol_version or '?'})")
    found = (
        "not listed yet"
        if server.pages is None or server.tools is None
        else (f"{counted(server.pages, 'page')}, {counted(server.tools, 'tool')}")
    )
    _line(text, "discovery", f"{found} (limits per discovery: {limits[0]} pages, {limits[1]} tools)")
    for problem in (server.error, error):
        if problem:
            _line(text, "error", Text.assemble(render_untrusted(problem, newlines="visible"), style="red"))
    if log_tail:
        text.append("\nlog (last lines)\n", style="bold")
        text.append_text(render_untrusted(log_tail, style="dim"))
        text.append("\n")
    return text


def tool_detail(capability: McpCapability, verdict: Verdict, change: McpToolChange | None) -> Text:
    """Everything about one tool: description, annotations, approval rule, change, schemas."""
    text = render_untrusted(f"{capability.server}:{capability.name}", newlines="visible", style="bold")
    if capability.title:
        text.append("  ")
        text.append_text(render_untrusted(capability.title, newlines="visible", style="italic"))
    text.append("\n\n")
    if capability.unsupported:
        text.append("⊘ unsupported: ", style="bold red")
        text.append_text(render_untrusted(capability.unsupported, newlines="visible", style="red"))
        text.append("\n(listed only: it cannot be invoked from here)\n\n", style="dim")
    if capability.description:
        text.append_text(render_untrusted(capability.description))
    else:
        text.append("(no description)", style="dim")
    text.append("\n\n")
    rule = verdict.rule or "the default for MCP tools"
    _line(
        text, "approval", Text.assemble((verdict.decision, _DECISION_STYLES[verdict.decision]), f" ({rule})")
    )
    _line(text, "hints", ", ".join(_hints(capability)) or "none")
    if capability.annotations:
        text.append("annotations ", style="bold")
        text.append_text(untrusted_json(capability.annotations))
        text.append("\n")
    if change is not None:
        text.append("\n⚠ the definition changed since it was first seen ", style="bold yellow")
        text.append(f"({', '.join(change.fields)}); a reviews it for acceptance\n", style="yellow")
        text.append_text(unified_diff_text(change.diff))
        text.append("\n")
    text.append("\ninput schema\n", style="bold")
    text.append_text(untrusted_json(capability.input_schema or {}))
    text.append("\n\noutput schema\n", style="bold")
    if capability.output_schema is None:
        text.append("(none)", style="dim")
    else:
        text.append_text(untrusted_json(capability.output_schema))
    return bounded(text)


def change_summary(changes: Iterable[McpToolsChanged]) -> Text:
    """One line per server whose tools changed: what changed, was added and was removed."""
    lines = []
    for change in changes:
        line = Text("⚠ ", style="bold yellow")
        line.append_text(render_untrusted(change.server, newlines="visible", style="bold"))
        line.append(f" changed its tools ({change.trigger}): ")
        parts = [
            ("changed", [item.name for item in change.changed]),
            ("added", list(change.added)),
            ("removed", list(change.removed)),
        ]
        line.append_text(
            Text("; ").join(
                Text.assemble(f"{word} ", render_untrusted(", ".join(names), newlines="visible"))
                for word, names in parts
                if names
            )
        )
        lines.append(line)
    return Text("\n").join(lines)


# --- the screen ----------------------------------------------------------------------------------------


_PANES: dict[str, type[McpPane]] = {
    "mcp-tab-resources": McpResourcesPane,
    "mcp-tab-prompts": McpPromptsPane,
    "mcp-tab-logs": McpLogsPane,
}
"""The browse panes, by the tab that holds them (each made when its tab is first shown)."""


class McpScreen(Guarded, Screen[None]):
    """Servers from ditto.yaml with their state and errors; each server's tools with description,
    schemas, annotations and approval rule; discovery figures; changed definitions with their diff;
    and a form to invoke a tool through the sandbox and the approval gate."""

    CSS_PATH = "mcp.tcss"
    TITLE = "MCP servers"
    HELP = (
        "MCP servers from ditto.yaml: connection state, errors and logs, discovery figures, what each "
        "server said about itself (version, instructions, capabilities), each tool's description, schemas, "
        "annotations and approval rule. Invoke a tool from a form built from its input schema; the call "
        "goes through the sandbox and the approval gate like a graph's calls. The Resources and Prompts "
        "tabs browse the selected server, the Logs tab shows its log live (ditto's notes, stderr, log "
        "messages); the Detail tab pings it, reconnects it (R) and sets its log level."
    )
    COMMANDS: ClassVar[set[Any]] = {lambda: McpCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "discover", "Discover"),
        Binding("i", "open_invoke", "Invoke form"),
        Binding("ctrl+r", "call_tool", "Call tool"),
        Binding("a", "accept_change", "Accept change"),
        Binding("d", "show_detail", "Detail", show=False),
        Binding("p", "ping", "Ping"),
        Binding("R", "reconnect", "Reconnect", show=False),
        Binding("l", "log_level", "Log level"),
        Binding("e", "show_resources", "Resources"),
        Binding("o", "show_prompts", "Prompts"),
        Binding("g", "show_logs", "Logs"),
        Binding("x", "cancel_call", "Cancel call", show=False),
        # The invoke form's fields take x as text: ctrl+x cancels from there too (it cuts text otherwise).
        Binding("ctrl+x", "cancel_call", "Cancel call", show=False, priority=True),
        Binding("escape", "focus_tree", "Server list", show=False),
    ]

    server_tree = getters.query_one("#mcp-tree", Tree)
    tabs = getters.query_one("#mcp-tabs", TabbedContent)
    detail = getters.query_one("#mcp-detail", Static)
    banner = getters.query_one("#mcp-changes", Static)
    invoke_title = getters.query_one("#mcp-invoke-title", Static)
    form_holder = getters.query_one("#mcp-form-holder", Vertical)
    call_view = getters.query_one("#mcp-call-view", McpCallView)
    call_button = getters.query_one("#mcp-call", Button)
    server_actions = getters.query_one("#mcp-server-actions", McpServerActions)
    log_level = getters.query_one("#mcp-log-level", Select)

    def __init__(
        self,
        source: McpSource,
        *,
        discover_on_mount: bool = True,
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self.source = source
        self.discover_on_mount = discover_on_mount
        self.selected: NodeRef | None = None
        self.form_for: NodeRef | None = None
        self.errors: dict[str, str] = {}
        self.changes: dict[str, McpToolsChanged] = {}
        self.pings: dict[str, str] = {}
        self.log_levels: dict[str, str] = {}
        self._stop_watching: Any = None
        self._discovering: set[str] = set()
        self._offers: set[tuple[str, str, str | None]] = set()
        self._stop_offers: Any = None
        self._stop_progress: Any = None
        self._discover_again: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="mcp-changes")
        with Horizontal(id="mcp-body"):
            tree: Tree[NodeRef] = Tree(Text("MCP servers"), id="mcp-tree")
            tree.show_root = False
            tree.guide_depth = 2
            yield tree
            with TabbedContent(id="mcp-tabs"):
                with TabPane("Detail", id="mcp-tab-detail"), VerticalScroll(id="mcp-detail-scroll"):
                    yield McpServerActions(id="mcp-server-actions")
                    yield Static(id="mcp-detail")
                with TabPane("Invoke", id="mcp-tab-invoke"), VerticalScroll(id="mcp-invoke-scroll"):
                    yield Static(id="mcp-invoke-title")
                    yield Vertical(id="mcp-form-holder")
                    yield Button("Call tool", id="mcp-call", variant="primary", disabled=True)
                    yield McpCallView(self.source, id="mcp-call-view")
                yield TabPane("Resources", id="mcp-tab-resources")
                yield TabPane("Prompts", id="mcp-tab-prompts")
                yield TabPane("Logs", id="mcp-tab-logs")
        yield PendingBadge(id="pending-badge")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._stop_watching = self.source.watch(
            lambda change: self.post_message(ToolsChanged(change)),
            lambda status: self.post_message(ServerStatusChanged(status)),
        )
        self._stop_offers = self.source.registry.on_offer_change(self._offer_heard)
        self._stop_progress = self.source.runtime.subscribe(self._progress_heard)
        self.invoke_title.update(Text("Select a tool to invoke it.", style="dim"))
        self.rebuild_tree()
        self.server_tree.focus()
        if self.discover_on_mount:
            self.action_discover(every=True)

    def on_unmount(self) -> None:
        if self._stop_watching is not None:
            self._stop_watching()
        if self._stop_offers is not None:
            self._stop_offers()
        if self._stop_progress is not None:
            self._stop_progress()

    def _offer_heard(self, change: McpOfferChanged) -> None:
        """Queue what a server said; a burst of notifications is handled once, in the message pump."""
        first = not self._offers
        self._offers.add((change.server, change.kind, change.uri))
        if first:
            self.post_message(OffersChanged())

    @on(OffersChanged)
    def _offers_changed(self) -> None:
        offers, self._offers = self._offers, set()
        for pane in self.query(McpPane):
            for server, kind, uri in sorted(offers, key=lambda offer: (offer[0], offer[1], offer[2] or "")):
                if pane.server == server:
                    pane.offer_changed(kind, uri)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The browser's actions for the palette (fixed titles; server names come from McpCommands)."""
        yield SystemCommand(
            "MCP: discover every server", "List every server's tools again", self._discover_all
        )
        yield SystemCommand("MCP: invoke the selected tool", "Open the invoke form", self.action_open_invoke)
        yield SystemCommand(
            "MCP: accept the change", "Accept a changed tool definition", self.action_accept_change
        )

    def _discover_all(self) -> None:
        self.action_discover(every=True)

    # -- the tree -------------------------------------------------------------------------------------

    def rebuild_tree(self) -> None:
        """Show every server and its tools again, keeping the selection."""
        tree: Tree[NodeRef] = self.server_tree
        tree.clear()
        wanted = self.selected
        cursor: TreeNode[NodeRef] | None = None
        for server in self.source.servers():
            changed = {change.name for _server, change in self.source.registry.pending_changes(server.name)}
            node = tree.root.add(_server_label(server, len(changed)), data=(server.name, None), expand=True)
            if wanted == (server.name, None):
                cursor = node
            for capability in self.source.tools(server.name):
                verdict = self.source.verdict(server.name, capability.name)
                leaf = node.add_leaf(
                    _tool_label(capability, verdict, capability.name in changed),
                    data=(server.name, capability.name),
                )
                if wanted == (server.name, capability.name):
                    cursor = leaf
        if cursor is not None:
            # A new node has no line until the tree lays its lines out; reading one lays them out now.
            tree.get_node_at_line(0)
            tree.move_cursor(cursor)
        elif tree.root.children:
            tree.move_cursor(tree.root.children[0])
        self.show_selected()

    @on(Tree.NodeHighlighted, "#mcp-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        self.selected = event.node.data
        self.show_selected()

    @on(Tree.NodeSelected, "#mcp-tree")
    async def _selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        if event.node.data is not None and event.node.data[1] is not None:
            await self.action_open_invoke()

    def show_selected(self) -> None:
        """Show the selected server or tool in the detail pane; the browse panes follow its server."""
        self.browse_panes()
        self.server_actions.display = self.selected is not None and self.selected[1] is None
        if self.selected is None:
            self.detail.update(Text("No MCP servers are configured in ditto.yaml.", style="dim"))
            return
        server, tool = self.selected
        if tool is None:
            view = self.source.server(server)
            tail = self.source.log_tail(server) if view.state in ("failed", "disconnected") else None
            text = server_detail(view, self.source.limits, self.errors.get(server), tail)
            if view.callable:
                text.append_text(self._info_text(server))
            self.detail.update(bounded(text))
            return
        capability = self.source.tool(server, tool)
        if capability is not None:
            self.detail.update(
                tool_detail(capability, self.source.verdict(server, tool), self.source.change(server, tool))
            )

    def _info_text(self, server: str) -> Text:
        try:
            info = self.source.server_info(server)
        except DittoError as exc:
            return Text("\n").append_text(problem_line("Reading the server info", exc))
        return server_info_text(info, self.pings.get(server), self.log_levels.get(server))

    def browse_panes(self) -> None:
        """Point the Resources and Prompts panes at the selected server; the shown one lists it."""
        server = self.selected[0] if self.selected is not None else None
        for pane in self.query(McpPane):
            shown = pane.parent is not None and self.tabs.active == pane.parent.id
            pane.show_server(server, load=shown)

    async def mount_pane(self) -> McpPane | None:
        """The browse pane of the active tab, made the first time the tab is shown."""
        pane_class = _PANES.get(self.tabs.active)
        if pane_class is None:
            return None
        tab = self.query_one(f"#{self.tabs.active}", TabPane)
        found = tab.query(McpPane)
        if found:
            return found.first()
        pane = pane_class(self.source, id=self.tabs.active.replace("-tab", ""))
        await tab.mount(pane)
        self.browse_panes()
        return pane

    @on(TabbedContent.TabActivated, "#mcp-tabs")
    async def _tab_shown(self) -> None:
        await self.mount_pane()
        self.browse_panes()

    # -- actions --------------------------------------------------------------------------------------

    async def action_show_resources(self) -> None:
        """Show the selected server's resources and templates."""
        self.tabs.active = "mcp-tab-resources"
        pane = await self.mount_pane()
        if pane is not None:
            pane.query_one("#mcp-resource-list").focus()

    async def action_show_prompts(self) -> None:
        """Show the selected server's prompts."""
        self.tabs.active = "mcp-tab-prompts"
        pane = await self.mount_pane()
        if pane is not None:
            pane.query_one("#mcp-prompt-list").focus()

    async def action_show_logs(self) -> None:
        """Show the selected server's log, live."""
        self.tabs.active = "mcp-tab-logs"
        pane = await self.mount_pane()
        if pane is not None:
            pane.query_one("#mcp-log").focus()

    def _selected_server(self, *, to_reconnect: bool = False) -> str | None:
        """The selected server (a tool's, when a tool is selected) if it can be used, else why not, said."""
        if self.selected is None:
            self.notify("Select a server first.", severity="warning", markup=False)
            return None
        view = self.source.server(self.selected[0])
        if view.callable or (to_reconnect and view.reconnectable):
            return view.name
        self.notify(_unusable(view), severity="warning", markup=False)
        return None

    def _select_server_node(self, server: str) -> None:
        """Put the cursor on ``server`` itself (from one of its tools), so its detail shows."""
        if self.selected == (server, None):
            return
        for node in self.server_tree.root.children:
            if node.data == (server, None):
                self.server_tree.move_cursor(node)
                self.selected = (server, None)
                self.show_selected()
                return

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While decisions wait unseen, p answers them here too (the Detail tab's Ping button pings); x and
        ctrl+x cancel only while a call runs (ctrl+x is a field's cut key otherwise)."""
        if action == "cancel_call":
            return self.call_view.running
        return not (action == "ping" and waiting_in(self.app))

    def action_ping(self) -> None:
        """Ping the selected server and show the round trip in its detail."""
        server = self._selected_server()
        if server is not None:
            self.pings[server] = "…"
            self._select_server_node(server)
            self.tabs.active = "mcp-tab-detail"
            self.show_selected()
            self.ping(server)

    @on(Button.Pressed, "#mcp-ping")
    def _ping_pressed(self) -> None:
        self.action_ping()

    def action_reconnect(self) -> None:
        """Stop the selected server's session (and process) and start it again; calls running on it end
        failed and are never sent again."""
        server = self._selected_server(to_reconnect=True)
        if server is not None:
            self._select_server_node(server)
            self.notify(f"Reconnecting {server!r}…", markup=False)
            self.reconnect(server)

    @on(Button.Pressed, "#mcp-reconnect")
    def _reconnect_pressed(self) -> None:
        self.action_reconnect()

    def action_log_level(self) -> None:
        """Show the server's detail with the log level selector focused."""
        if self.selected is not None:
            self._select_server_node(self.selected[0])
        self.tabs.active = "mcp-tab-detail"
        if self.server_actions.display:
            self.log_level.focus()

    @on(Select.Changed, "#mcp-log-level")
    def _level_chosen(self, event: Select.Changed) -> None:
        if not isinstance(event.value, str):
            return
        server = self._selected_server()
        if server is not None:
            self.set_log_level(server, event.value)

    def action_discover(self, every: bool = False) -> None:
        """Discover the selected server's tools, or every callable server's."""
        if every or self.selected is None:
            names = [server.name for server in self.source.servers() if server.callable]
        else:
            names = [self.selected[0]]
        self.discover(names)

    def action_show_detail(self) -> None:
        """Show the detail tab."""
        self.tabs.active = "mcp-tab-detail"

    async def action_open_invoke(self) -> None:
        """Open the invoke form of the selected tool."""
        if self.selected is None or self.selected[1] is None:
            self.notify("Select a tool first.", severity="warning")
            return
        if self._refuse_unsupported(self.selected):
            return
        self.tabs.active = "mcp-tab-invoke"
        await self._build_form(self.selected)
        form = self.form_holder.query(SchemaForm).first()
        form.focus_first()

    def _refuse_unsupported(self, ref: NodeRef) -> bool:
        """Say in one line why a tool the client cannot call is not invoked; whether it is one."""
        server, tool = ref
        capability = self.source.tool(server, tool) if tool is not None else None
        if capability is None or not capability.unsupported:
            return False
        message = render_untrusted(f"{tool} cannot be invoked: ", newlines="visible")
        message.append_text(render_untrusted(capability.unsupported, newlines="visible"))
        self.notify(message.plain, severity="warning", markup=False)
        return True

    async def _build_form(self, ref: NodeRef) -> None:
        if self.form_for == ref and self.form_holder.query(SchemaForm):
            return
        server, tool = ref
        assert tool is not None
        capability = self.source.tool(server, tool)
        await self.form_holder.remove_children()
        if capability is None:
            return
        self.form_for = ref
        verdict = self.source.verdict(server, tool)
        title = render_untrusted(f"{server}:{tool}", newlines="visible", style="bold")
        title.append("  approval: ")
        title.append(verdict.decision, style=_DECISION_STYLES[verdict.decision])
        self.invoke_title.update(title)
        await self.form_holder.mount(SchemaForm(capability.input_schema or {}, id="mcp-form"))
        self.call_button.disabled = False
        if not self.call_view.running:
            self.call_view.ended(Text())

    async def action_call_tool(self) -> None:
        """Validate the form and call the tool."""
        if self.form_for is None or self.tabs.active != "mcp-tab-invoke":
            await self.action_open_invoke()
            return
        self.form_holder.query_one(SchemaForm).submit()

    @on(Button.Pressed, "#mcp-call")
    async def _call_pressed(self) -> None:
        await self.action_call_tool()

    @on(SchemaForm.Submitted)
    def _submitted(self, event: SchemaForm.Submitted) -> None:
        event.stop()
        if self.form_for is None:
            return
        server, tool = self.form_for
        if tool is None or self._refuse_unsupported(self.form_for):
            return
        verdict = self.source.verdict(server, tool)
        waiting = Text("Calling… ", style="bold")
        if verdict.decision == "ask":
            waiting.append("the approval policy asks: decide in the approval view.", style="yellow")
        self.invoke(server, tool, event.arguments, waiting)

    def action_focus_tree(self) -> None:
        """Go back to the list of servers and tools (from a tab's list, log or form)."""
        self.server_tree.focus()

    def action_cancel_call(self) -> None:
        """Cancel the running call: the server is told (``notifications/cancelled``), the run is cancelled."""
        if self.call_view.running:
            self.workers.cancel_group(self, "mcp-invoke")

    @on(McpCallView.CancelRequested)
    def _cancel_requested(self) -> None:
        self.action_cancel_call()

    @on(McpCallView.OpenResource)
    async def _open_resource(self, event: McpCallView.OpenResource) -> None:
        """A resource link in a result: read it in the Resources tab (of the server that sent it)."""
        await self.action_show_resources()
        pane = self.tabs.query_one(McpResourcesPane)
        if pane.server == event.server:
            pane.read(event.uri)
        else:
            self.notify("The link is from another server than the one selected.", markup=False)

    def _progress_heard(self, event: ExecutionEvent) -> None:
        if isinstance(event, CustomEvent) and event.name == PROGRESS_EVENT and isinstance(event.data, dict):
            self.post_message(CallProgressed(event.data))

    @on(CallProgressed)
    def _call_progressed(self, message: CallProgressed) -> None:
        data = message.data
        progress, total, note = data.get("progress"), data.get("total"), data.get("message")
        if isinstance(progress, int | float):
            self.call_view.progressed(
                str(data.get("call_id")),
                float(progress),
                float(total) if isinstance(total, int | float) else None,
                note if isinstance(note, str) else None,
            )

    def action_accept_change(self) -> None:
        """Show how the selected tool changed and accept the new definition only once confirmed."""
        server, tool = self.selected or ("", None)
        if tool is None:
            return
        change = self.source.change(server, tool)
        if change is None:
            self.notify("This tool's definition has not changed.", markup=False)
            return
        self.app.push_screen(
            AcceptChangeModal(server, change), partial(self._accept_confirmed, server, change)
        )

    def _accept_confirmed(self, server: str, shown: McpToolChange, accepted: bool | None) -> None:
        """Pin the definition the person saw; one that changed again meanwhile stays refused."""
        if not accepted:
            return
        current = self.source.change(server, shown.name)
        if current is None or current.after_digest != shown.after_digest:
            self.notify(
                "The definition changed again while you were deciding: review the new one.",
                severity="warning",
                markup=False,
            )
        elif self.source.accept(server, shown.name):
            self.notify("Accepted the new definition.", markup=False)
        self.rebuild_tree()

    # -- workers --------------------------------------------------------------------------------------

    def discover(self, names: list[str]) -> None:
        """Discover each server through the runtime, each in a worker of its own.

        One server's discovery never cancels another's (servers that finish starting one after the other
        each ask for theirs); asking again for a server being discovered runs once more after it.
        """
        for name in names:
            if name in self._discovering:
                self._discover_again.add(name)
            else:
                self._discovering.add(name)
                self._discover_server(name)

    @work(group="mcp-discover", exit_on_error=False, name="discover")
    async def _discover_server(self, name: str) -> None:
        """Discover one server; its failure is kept to show beside it."""
        try:
            while True:
                self._discover_again.discard(name)
                try:
                    await self.source.discover(name)
                except DittoError as exc:
                    self.errors[name] = public_message_from_exception(exc)
                else:
                    self.errors.pop(name, None)
                if name not in self._discover_again:
                    break
        finally:
            self._discovering.discard(name)

    @work(group="mcp-ping", exit_on_error=False, name="ping")
    async def ping(self, server: str) -> None:
        """Ping one server; the round trip (or why it failed) shows in its detail."""
        try:
            seconds = await self.source.registry.ping(server)
        except DittoError as exc:
            self.pings[server] = problem_line("the ping", exc).plain
        else:
            self.pings[server] = f"{seconds * 1000:.1f} ms round trip"
        self.show_selected()

    @work(group="mcp-reconnect", exit_on_error=False, name="reconnect")
    async def reconnect(self, server: str) -> None:
        """Reconnect one server, then list its tools again (a failure shows beside it)."""
        try:
            await self.source.registry.reconnect(server)
        except DittoError as exc:
            self.errors[server] = public_message_from_exception(exc)
        self.rebuild_tree()
        if self.source.server(server).callable:
            self.discover([server])

    @work(exclusive=True, group="mcp-log-level", exit_on_error=False, name="log level")
    async def set_log_level(self, server: str, level: str) -> None:
        """Ask one server for log messages of ``level`` and above."""
        try:
            await self.source.registry.set_logging_level(server, level)
        except DittoError as exc:
            self.log_levels[server] = problem_line("setting it", exc).plain
        else:
            self.log_levels[server] = f"{level} (set from here)"
        self.show_selected()

    @work(exclusive=True, group="mcp-invoke", exit_on_error=False, name="invoke")
    async def invoke(
        self, server: str, tool: str, arguments: dict[str, Any], waiting: Text | None = None
    ) -> Observation:
        """Call one tool through the runtime and observe its result; its progress shows meanwhile."""
        call_id = self.source.next_call_id()
        self.call_view.started(server, call_id, waiting or Text("Calling…", style="bold"))
        return await self.source.invoke(server, tool, arguments, call_id)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Show what a discovery or an invocation ended with."""
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            if worker.name == "invoke" and isinstance(worker.result, Observation):
                view = self.call_view
                blocks = self.source.registry.call_blocks(view.server or "", view.call_id or "")
                view.ended(worker.result, blocks)
            elif worker.name == "discover":
                self.rebuild_tree()
        elif event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            message = public_message_from_exception(worker.error) if worker.error is not None else "cancelled"
            problem = Text(f"The {worker.name} failed: ", style="bold red")
            problem.append_text(render_untrusted(message, newlines="visible"))
            if worker.name == "invoke" and event.state == WorkerState.CANCELLED:
                self.call_view.ended(
                    Text("Cancelled: the server was told to stop the call.", style="bold yellow")
                )
            elif worker.name == "invoke":
                self.call_view.ended(problem)
            else:
                self.notify(message, title=f"The {worker.name} failed", severity="error", markup=False)
                self.rebuild_tree()

    # -- what the registry tells ----------------------------------------------------------------------

    @on(ToolsChanged)
    def _tools_changed(self, event: ToolsChanged) -> None:
        self.changes[event.change.server] = event.change
        self.banner.update(change_summary(self.changes.values()))
        self.banner.display = True
        self.rebuild_tree()

    @on(ServerStatusChanged)
    def _status_changed(self, event: ServerStatusChanged) -> None:
        self.rebuild_tree()
        status = event.status
        if self.discover_on_mount and status.state == "connected" and status.tools is None:
            view = self.source.server(status.server)
            if view.callable:
                self.discover([status.server])  # a server that finished starting after the screen opened


class McpCommands(Provider):
    """Command palette entries of the MCP browser (names shown as plain text, never markup)."""

    def _commands(self) -> list[tuple[Text, Any, str]]:
        screen = self.screen
        if not isinstance(screen, McpScreen):
            return []
        commands: list[tuple[Text, Any, str]] = [
            (
                Text("MCP: discover every server"),
                lambda: screen.action_discover(every=True),
                "List tools again",
            ),
            (Text("MCP: invoke the selected tool"), screen.action_open_invoke, "Open the invoke form"),
            (
                Text("MCP: accept the selected tool's change"),
                screen.action_accept_change,
                "Pin the new definition",
            ),
        ]
        for server in screen.source.servers():
            label = Text("MCP: discover ")
            label.append_text(render_untrusted(server.name, newlines="visible"))
            commands.append((label, _discover_one(screen, server.name), "List this server's tools"))
        return commands

    async def discover(self) -> Hits:
        """Every command, for the empty palette."""
        for label, command, help_text in self._commands():
            yield DiscoveryHit(label, command, text=label.plain, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands matching ``query`` (fuzzy), shown as plain text."""
        matcher = self.matcher(query)
        for label, command, help_text in self._commands():
            score = matcher.match(label.plain)
            if score > 0:
                yield Hit(score, label, command, text=label.plain, help=help_text)


def _discover_one(screen: McpScreen, server: str) -> Any:
    def discover() -> None:
        screen.discover([server])

    return discover
