"""The Tools screen: registered tools and the MCP tools a graph can reach, with effects or hints, the
approval rule that applies, whether their results wait for review, the input schema, and what the
sandbox permits. ``v`` turns result review of the selected tool on or off for the rest of the session."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from ditto_tui.config import RuntimeConfig
from ditto_tui.contracts import McpCapability
from ditto_tui.errors import DittoError, PermissionDeniedError
from ditto_tui.interaction import McpRegistry, RegisteredTool, ToolDefinition, ToolRegistry
from ditto_tui.runtime import Runtime
from ditto_tui.sandbox import Sandbox
from ditto_tui.supervise import ApprovalPolicy, Verdict
from ditto_tui.supervise.policy import DEPENDS
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.text import render_untrusted, untrusted_json
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.pending import PendingBadge

__all__ = [
    "McpToolRow",
    "ToolRow",
    "ToolsScreen",
    "mcp_tool_rows",
    "reachable_mcp_tools",
    "review_label",
    "tool_definitions",
    "tool_rows",
]

_REVIEW_COLUMN = 3
"""The table column that says whether a tool's results wait for review."""
_PERMITTED = "✓ permitted"
_DENIED = "✗ denied"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolRow:
    """One registered tool as the screen shows it: what it is, what the policy and the sandbox say."""

    definition: ToolDefinition
    verdict: Verdict
    permitted: bool
    denial: str | None
    always: bool
    reviewed: bool = False
    """Whether the session's review toggle holds this tool's results for review (``v``)."""


def tool_definitions(registry: ToolRegistry) -> list[ToolDefinition]:
    """Every registered tool's definition, permitted or not, in registration order."""
    definitions = (registry.definition(name) for name in registry.names())
    return [definition for definition in definitions if definition is not None]


def _denial(sandbox: Sandbox, definition: ToolDefinition) -> str | None:
    """Why the sandbox refuses the tool, or ``None`` when it permits it."""
    try:
        sandbox.check_tool(definition.name)
        sandbox.check_effects(definition.effects)
    except PermissionDeniedError as exc:
        return exc.message
    return None


def tool_rows(
    definitions: Iterable[ToolDefinition],
    sandbox: Sandbox,
    policy: ApprovalPolicy,
    always: Collection[str] = (),
    reviews: Collection[str] = (),
) -> list[ToolRow]:
    """The rows of the Tools screen, sorted by name; ``reviews`` are the tools the session reviews."""
    rows = []
    for definition in sorted(definitions, key=lambda item: item.name):
        permitted = sandbox.allows_tool(definition.name) and sandbox.allows_effects(definition.effects)
        rows.append(
            ToolRow(
                definition=definition,
                verdict=policy.for_tool(
                    definition.name,
                    definition.requires_approval,
                    definition.effects if definition.effects_declared else None,
                ),
                permitted=permitted,
                denial=None if permitted else _denial(sandbox, definition),
                always=definition.name in always,
                reviewed=definition.name in reviews,
            )
        )
    return rows


@dataclass(frozen=True, kw_only=True, slots=True)
class McpToolRow:
    """One tool of an MCP server the sandbox grants, as last listed, and the rule that applies to it."""

    server: str
    capability: McpCapability
    verdict: Verdict
    permitted: bool
    reviewed: bool = False
    """Whether the session's review toggle holds this tool's results for review (``v``)."""


def review_label(row: ToolRow | McpToolRow) -> str:
    """The name the session's review toggles know the tool by: its name, or ``SERVER:TOOL``."""
    if isinstance(row, ToolRow):
        return row.definition.name
    return f"{row.server}:{row.capability.name}"


_HINTS = (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"), ("openWorldHint", "open-world"))


def mcp_tool_rows(
    tools: Mapping[str, Sequence[McpCapability]],
    sandbox: Sandbox,
    policy: ApprovalPolicy,
    reviews: Collection[str] = (),
) -> list[McpToolRow]:
    """The MCP rows of the Tools screen: per server (in the order given), its tools sorted by name."""
    return [
        McpToolRow(
            server=server,
            capability=capability,
            verdict=policy.for_mcp(server, capability.name, capability.annotations),
            permitted=sandbox.allows_mcp(server),
            reviewed=f"{server}:{capability.name}" in reviews,
        )
        for server, capabilities in tools.items()
        for capability in sorted(capabilities, key=lambda item: item.name)
    ]


class _McpToolsMoved(Message):
    """A server's connection state or tool list changed: list the MCP tools again."""


async def reachable_mcp_tools(runtime: Runtime, registry: McpRegistry) -> dict[str, list[McpCapability]]:
    """The tools of every MCP server the sandbox grants: as last listed, else discovered now through the
    runtime (the same sandbox check as a graph's discovery); a server that cannot list has none."""
    tools: dict[str, list[McpCapability]] = {}
    for server in registry.servers():
        if not runtime.services.sandbox.allows_mcp(server):
            continue
        listed = registry.capabilities(server)
        if not listed:
            try:
                output = await runtime.invoke(
                    "INTERACTION.ACT.MCP", {"operation": "discover", "server": server}
                )
            except (DittoError, OSError):
                output = None
            listed = list(getattr(output, "capabilities", ()))
        tools[server] = listed
    return tools


def _hints_text(capability: McpCapability) -> str:
    annotations = capability.annotations or {}
    hints = [label for key, label in _HINTS if annotations.get(key) is True]
    return ", ".join(hints) or "no hints"


def _approval_cell(row: ToolRow | McpToolRow) -> Text:
    decision = row.verdict.decision
    text = Text(decision, style={"allow": "green", "ask": "yellow", "deny": "red"}[decision])
    if isinstance(row, ToolRow) and row.always and decision == "ask":
        text.append(" (always approved)", style="dim")
    return text


def _review_cell(row: ToolRow | McpToolRow) -> Text:
    """``on`` (the session's toggle), ``rule`` (a rule says ``review: results``) or ``off``."""
    if row.reviewed:
        return Text("on", style="bold yellow")
    if row.verdict.review:
        return Text("rule", style="yellow")
    return Text("off", style="dim")


def _review_text(row: ToolRow | McpToolRow) -> str:
    """What the detail says about result review, and what ``v`` would do."""
    rule = f"rule {row.verdict.review_rule}" if row.verdict.review else ""
    if row.reviewed:
        also = f", and by {rule}" if rule else ""
        return f"on for this session{also}: every result waits for you (v turns the toggle off)"
    if rule:
        return f"by {rule}: every result waits for you (v also turns it on for the session)"
    return "off: results go straight on (v holds every result for your review this session)"


def _detail(row: ToolRow) -> Text:
    """The full description of one tool: every field, untrusted text shown literally."""
    definition = row.definition
    text = Text()
    text.append_text(render_untrusted(definition.name, newlines="visible", style="bold"))
    text.append("\n\n")
    description = definition.description
    text.append_text(render_untrusted(description) if description else Text("(no description)", style="dim"))
    text.append("\n\n")
    _field(text, "effects", ", ".join(definition.effects) or "none")
    _field(text, "requires approval", "yes" if definition.requires_approval else "no")
    rule = row.verdict.rule or (
        "default: the tool requires approval" if definition.requires_approval else "default"
    )
    _field(text, "approval", _approval_text(row.verdict, rule))
    if row.always:
        _field(text, "granted", "always approved for this session")
    _field(text, "review", _review_text(row))
    _field(text, "sandbox", _PERMITTED if row.permitted else f"{_DENIED}: {row.denial or 'not granted'}")
    _field(text, "digest", definition.digest)
    text.append("\ninput schema\n", style="bold")
    text.append_text(untrusted_json(dict(definition.input_schema)))
    return text


def _mcp_detail(row: McpToolRow) -> Text:
    """The full description of one MCP tool: server, hints, rule, sandbox and input schema."""
    capability = row.capability
    text = Text()
    text.append_text(render_untrusted(f"{row.server}:{capability.name}", newlines="visible", style="bold"))
    if capability.title:
        text.append("  ")
        text.append_text(render_untrusted(capability.title, newlines="visible", style="italic"))
    text.append("\n\n")
    if capability.unsupported:
        text.append("unsupported: ", style="bold red")
        text.append_text(render_untrusted(capability.unsupported, newlines="visible", style="red"))
        text.append("\n\n")
    description = capability.description
    text.append_text(render_untrusted(description) if description else Text("(no description)", style="dim"))
    text.append("\n\n")
    _field(text, "server", row.server)
    _field(text, "hints", _hints_text(capability))
    _field(text, "approval", _approval_text(row.verdict, row.verdict.rule or "default: MCP tools ask"))
    _field(text, "review", _review_text(row))
    _field(text, "sandbox", _PERMITTED if row.permitted else f"{_DENIED}: server not in sandbox.mcp")
    text.append("\ninput schema\n", style="bold")
    text.append_text(untrusted_json(dict(capability.input_schema or {})))
    return text


def _approval_text(verdict: Verdict, rule: str) -> str:
    """``ask (rule)``, and which rules on arguments could change that, since a listing has no call."""
    depends = f"; {DEPENDS}: {', '.join(verdict.depends)}" if verdict.depends else ""
    return f"{verdict.decision} ({rule}){depends}"


def _field(text: Text, label: str, value: str) -> None:
    text.append(f"{label}: ", style="bold")
    text.append_text(render_untrusted(value))
    text.append("\n")


def _cells(row: ToolRow | McpToolRow) -> tuple[Text, Text, Text, Text, Text]:
    # The table keeps the sandbox column short (the detail pane says it in full and why).
    permitted = Text("✓ yes", style="green") if row.permitted else Text("✗ no", style="red")
    review = _review_cell(row)
    if isinstance(row, ToolRow):
        name = render_untrusted(row.definition.name, newlines="visible")
        effects = Text(", ".join(row.definition.effects) or "none")
        return name, effects, _approval_cell(row), review, permitted
    name = render_untrusted(f"{row.server}:{row.capability.name}", newlines="visible")
    if row.capability.title:
        name.append("  ")
        name.append_text(render_untrusted(row.capability.title, newlines="visible", style="italic"))
    if row.capability.unsupported:
        name.append("  unsupported", style="dim red")
    return name, Text(_hints_text(row.capability), style="dim"), _approval_cell(row), review, permitted


class ToolsScreen(Guarded, Screen[None]):
    """Registered tools: effects, whether they ask for approval and which rule decides, whether their
    results wait for review, whether the sandbox permits them, and the full input schema of the selected
    tool. ``v`` toggles result review of the selected tool for the session (the bridge's live
    ``reviews``)."""

    CSS_PATH = "tools.tcss"
    TITLE = "Tools"
    HELP = "Every registered tool: effects, approval rule, review, sandbox permission and input schema."

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "focus_detail", "Detail"),
        Binding("v", "toggle_review", "Review results"),
        Binding("t", "focus_table", "Table", show=False),
    ]

    table = getters.query_one("#tools-table", DataTable)
    detail = getters.query_one("#tools-detail", Static)
    detail_scroll = getters.query_one("#tools-detail-scroll", VerticalScroll)

    def __init__(
        self,
        tools: Sequence[ToolDefinition],
        sandbox: Sandbox,
        policy: ApprovalPolicy,
        *,
        always: Collection[str] = (),
        mcp: Mapping[str, Sequence[McpCapability]] | None = None,
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self.sandbox = sandbox
        self.policy = policy
        self.rows: list[ToolRow | McpToolRow] = [*tool_rows(tools, sandbox, policy, always)]
        self._registered = len(self.rows)
        self._stop_watching: list[Callable[[], object]] = []
        self.mcp_listed = mcp is not None
        if mcp is not None:
            self.rows += mcp_tool_rows(mcp, sandbox, policy)

    @classmethod
    def for_session(
        cls,
        config: RuntimeConfig,
        workspace: Path,
        tools: Iterable[RegisteredTool],
        always: Collection[str] = (),
    ) -> ToolsScreen:
        """The screen for a session: its program's tools under the config's sandbox and approval policy."""
        registry = ToolRegistry(tools)
        policy = ApprovalPolicy.from_config(config.approval)
        sandbox = Sandbox(config.sandbox.to_permissions_kwargs(), workspace=workspace)
        return cls(tool_definitions(registry), sandbox, policy, always=always)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="tools-body"):
            yield DataTable(id="tools-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="tools-detail-scroll"):
                yield Static(id="tools-detail")
        yield PendingBadge(id="pending-badge")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.table.add_columns("Tool", "Effects", "Approval", "Review", "Sandbox")
        self._fill()
        self.table.focus()
        if not self.mcp_listed:
            self.list_mcp_tools()

    def _fill(self) -> None:
        at = self.table.cursor_row if self.table.row_count else 0
        self.table.clear()
        for index, row in enumerate(self.rows):
            self.table.add_row(*_cells(row), key=str(index))
        if self.rows:
            at = min(at, len(self.rows) - 1)
            self.table.move_cursor(row=at)
            self._show(at)
        elif self.mcp_listed:
            self.detail.update(
                Text("No tools are registered, and no MCP server the sandbox grants lists one.", style="dim")
            )
        else:
            self.detail.update(
                Text("No tools are registered; listing the tools of the MCP servers…", style="dim")
            )

    def on_screen_resume(self) -> None:
        """Read the live session's "always" grants and review toggles each time the screen is shown:
        changed since the screen was built, they show as they stand now."""
        bridge = getattr(self.app, "bridge", None)
        if bridge is None:
            return
        always = set(bridge.grants())
        reviews = _reviews(bridge)
        rows = [
            dataclasses.replace(row, always=row.definition.name in always)
            if isinstance(row, ToolRow)
            else row
            for row in self.rows
        ]
        rows = [dataclasses.replace(row, reviewed=review_label(row) in reviews) for row in rows]
        if rows != self.rows:
            self.rows = rows
            self._fill()

    @work(group="mcp-tools", exclusive=True, exit_on_error=False)
    async def list_mcp_tools(self) -> None:
        """Once the session is open, add the tools of every MCP server the sandbox grants."""
        bridge = getattr(self.app, "bridge", None)
        if bridge is None:
            return
        try:
            runtime = await bridge.opened()
        except (DittoError, OSError):  # the MCP screen says why the session did not open
            self.detail.update(Text("The session did not open: no MCP tools to list.", style="dim"))
            return
        registry = bridge.mcp if bridge.mcp is not None else McpRegistry()
        policy = bridge.gate.policy if bridge.gate is not None else self.policy
        if not self._stop_watching:  # a server that connects or relists later shows its tools then
            self._stop_watching = [registry.on_status(self._moved), registry.on_change(self._moved)]
        tools = await reachable_mcp_tools(runtime, registry)
        self.mcp_listed = True
        listed = mcp_tool_rows(tools, self.sandbox, policy, _reviews(bridge))
        self.rows = [*self.rows[: self._registered], *listed]
        self._fill()
        self.on_screen_resume()

    def _moved(self, _event: object) -> None:
        self.post_message(_McpToolsMoved())

    @on(_McpToolsMoved)
    def _relist(self) -> None:
        """List again, also when the first listing is still under way: it may have read the servers
        before this one connected (the worker is exclusive, so the newer listing replaces it)."""
        self.list_mcp_tools()

    def on_unmount(self) -> None:
        for stop in self._stop_watching:
            stop()
        self._stop_watching = []

    @on(DataTable.RowHighlighted, "#tools-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._show(int(event.row_key.value))

    def action_toggle_review(self) -> None:
        """Hold every result of the selected tool for review for the rest of the session, or stop."""
        if not self.rows:
            return
        bridge = getattr(self.app, "bridge", None)
        toggles = bridge.reviews if bridge is not None else None
        if toggles is None:
            self.notify(
                "The session is not open yet: review can be turned on once it is.",
                severity="warning",
                markup=False,
            )
            return
        index = self.table.cursor_row
        row = self.rows[index]
        label = review_label(row)
        on = toggles.toggle(label)
        self.rows[index] = dataclasses.replace(row, reviewed=on)
        self.table.update_cell_at(Coordinate(index, _REVIEW_COLUMN), _review_cell(self.rows[index]))
        self._show(index)
        state = "wait for your review" if on else "no longer wait for your review (rules may still ask)"
        self.notify(f"Results of {visible(label)} {state} for this session.", markup=False)

    def _show(self, index: int) -> None:
        row = self.rows[index]
        self.detail.update(_detail(row) if isinstance(row, ToolRow) else _mcp_detail(row))
        self.detail_scroll.scroll_home(animate=False)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The screen's actions for the command palette."""
        yield SystemCommand(
            "Tools: show the detail", "Focus the selected tool's detail", self.action_focus_detail
        )
        yield SystemCommand("Tools: back to the table", "Focus the tools table", self.action_focus_table)
        yield SystemCommand(
            "Tools: review results",
            "Hold the selected tool's results for your review this session (or stop)",
            self.action_toggle_review,
        )

    def action_focus_detail(self) -> None:
        """Move the focus to the detail pane (to scroll a long schema)."""
        self.detail_scroll.focus()

    def action_focus_table(self) -> None:
        """Move the focus back to the table."""
        self.table.focus()


def _reviews(bridge: object) -> Collection[str]:
    """The session's review toggles (none before the session is open)."""
    toggles = getattr(bridge, "reviews", None)
    return toggles if toggles is not None else ()
