"""The Tools screen: registered tools with effects, approval, schema, and what the sandbox permits."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import getters, on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import PermissionDeniedError
from ditto_tui.interaction import RegisteredTool, ToolDefinition, ToolRegistry
from ditto_tui.sandbox import Sandbox
from ditto_tui.supervise import ApprovalPolicy, Verdict
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.text import render_untrusted, untrusted_json

__all__ = ["ToolRow", "ToolsScreen", "tool_definitions", "tool_rows"]

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
) -> list[ToolRow]:
    """The rows of the Tools screen, sorted by name."""
    rows = []
    for definition in sorted(definitions, key=lambda item: item.name):
        permitted = sandbox.allows_tool(definition.name) and sandbox.allows_effects(definition.effects)
        rows.append(
            ToolRow(
                definition=definition,
                verdict=policy.for_tool(definition.name, definition.requires_approval),
                permitted=permitted,
                denial=None if permitted else _denial(sandbox, definition),
                always=definition.name in always,
            )
        )
    return rows


def _approval_cell(row: ToolRow) -> Text:
    decision = row.verdict.decision
    text = Text(decision, style={"allow": "green", "ask": "yellow", "deny": "red"}[decision])
    if row.always and decision == "ask":
        text.append(" (always approved)", style="dim")
    return text


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
    _field(text, "approval", f"{row.verdict.decision} ({rule})")
    if row.always:
        _field(text, "granted", "always approved for this session")
    _field(text, "sandbox", _PERMITTED if row.permitted else f"{_DENIED}: {row.denial or 'not granted'}")
    _field(text, "digest", definition.digest)
    text.append("\ninput schema\n", style="bold")
    text.append_text(untrusted_json(dict(definition.input_schema)))
    return text


def _field(text: Text, label: str, value: str) -> None:
    text.append(f"{label}: ", style="bold")
    text.append_text(render_untrusted(value))
    text.append("\n")


class ToolsScreen(Guarded, Screen[None]):
    """Registered tools: effects, whether they ask for approval and which rule decides, whether the
    sandbox permits them, and the full input schema of the selected tool."""

    CSS_PATH = "tools.tcss"
    TITLE = "Tools"
    HELP = "Every registered tool: effects, approval rule, sandbox permission and input schema."

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "focus_detail", "Detail"),
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
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self.rows = tool_rows(tools, sandbox, policy, always)

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
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("Tool", "Effects", "Approval", "Sandbox")
        for index, row in enumerate(self.rows):
            self.table.add_row(
                render_untrusted(row.definition.name, newlines="visible"),
                Text(", ".join(row.definition.effects) or "none"),
                _approval_cell(row),
                Text(_PERMITTED, style="green") if row.permitted else Text(_DENIED, style="red"),
                key=str(index),
            )
        if self.rows:
            self._show(0)
        else:
            self.detail.update(Text("No tools are registered.", style="dim"))
        self.table.focus()

    @on(DataTable.RowHighlighted, "#tools-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._show(int(event.row_key.value))

    def _show(self, index: int) -> None:
        self.detail.update(_detail(self.rows[index]))
        self.detail_scroll.scroll_home(animate=False)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The screen's actions for the command palette."""
        yield SystemCommand(
            "Tools: show the detail", "Focus the selected tool's detail", self.action_focus_detail
        )
        yield SystemCommand("Tools: back to the table", "Focus the tools table", self.action_focus_table)

    def action_focus_detail(self) -> None:
        """Move the focus to the detail pane (to scroll a long schema)."""
        self.detail_scroll.focus()

    def action_focus_table(self) -> None:
        """Move the focus back to the table."""
        self.table.focus()
