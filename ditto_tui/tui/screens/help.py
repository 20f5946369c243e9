"""The help screen: every key of every screen, pane and dialog, read from their bindings, in words."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.keys import format_key
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.screens.accept_change import AcceptChangeModal
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.breakpoint import BreakpointModal
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.decision_modal import DecisionModal
from ditto_tui.tui.screens.elicitation import ElicitationModal
from ditto_tui.tui.screens.grants import GrantsModal
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.screens.replay import ReplayScreen
from ditto_tui.tui.screens.review import ReviewModal
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.screens.runs import HostRunsModal, RunsModal
from ditto_tui.tui.screens.sampling import SamplingModal
from ditto_tui.tui.screens.sign_in import SignInModal
from ditto_tui.tui.screens.tools import ToolsScreen
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.mcp_call_view import McpCallView
from ditto_tui.tui.widgets.mcp_logs import McpLogsPane
from ditto_tui.tui.widgets.mcp_prompts import McpPromptsPane
from ditto_tui.tui.widgets.mcp_resources import McpResourcesPane
from ditto_tui.tui.widgets.mcp_template_form import TemplateForm
from ditto_tui.tui.widgets.prompt_box import PromptBox
from ditto_tui.tui.widgets.run_view import RunView
from ditto_tui.tui.widgets.schema_form import SchemaForm
from ditto_tui.tui.widgets.timeline import Timeline
from ditto_tui.tui.widgets.transcript import CallLine

__all__ = ["NOTES", "SECTIONS", "HelpScreen", "HelpSection", "help_rows", "help_text", "key_label", "label"]


@dataclass(frozen=True, kw_only=True)
class HelpSection:
    """One group of the help page: a screen, a pane or a dialog, and the classes whose keys it lists."""

    title: str
    summary: str
    owners: tuple[type[DOMNode], ...]
    within: type[DOMNode] | None = None
    """The screen this is a part of (a tab, a pane), listed right after it."""


SECTIONS: tuple[HelpSection, ...] = (
    HelpSection(
        title="Run screen (F2)",
        summary="The graph, an agent run's transcript, the live timeline and the detail of what you "
        "select; Tab moves between them.",
        owners=(RunScreen, RunView, DagView, Timeline, CallLine),
    ),
    HelpSection(
        title="Task box",
        summary="The agent's task, or a follow-up once a run has ended. Enter starts the run; Ctrl+J or a "
        "backslash before Enter starts a new line.",
        owners=(PromptBox,),
        within=RunScreen,
    ),
    HelpSection(
        title="Runs (l on the Run screen)",
        summary="This folder's recorded runs; Enter opens one read-only, as a replay. On a durable run host: "
        "the host's runs, wherever they were started; Enter shows one and follows it live.",
        owners=(RunsModal, HostRunsModal),
        within=RunScreen,
    ),
    HelpSection(
        title="MCP servers (F3)",
        summary="The servers of ditto.yaml, their tools, and a form to call one through the approval gate.",
        owners=(McpScreen, McpCallView),
    ),
    HelpSection(
        title="MCP resources tab",
        summary="The selected server's resources and resource templates.",
        owners=(McpResourcesPane, TemplateForm),
        within=McpScreen,
    ),
    HelpSection(
        title="MCP prompts tab",
        summary="The selected server's prompts.",
        owners=(McpPromptsPane,),
        within=McpScreen,
    ),
    HelpSection(
        title="MCP logs tab",
        summary="The selected server's log, live.",
        owners=(McpLogsPane,),
        within=McpScreen,
    ),
    HelpSection(
        title="Tools (F4)",
        summary="Every tool: its effects, approval rule, sandbox permission and input schema.",
        owners=(ToolsScreen,),
    ),
    HelpSection(
        title="Argument forms",
        summary="The forms that edit a call's arguments (approval view, MCP call, prompts).",
        owners=(SchemaForm,),
    ),
    HelpSection(
        title="Every decision view",
        summary="Approval, breakpoint, review, sampling, elicitation and sign-in views; the keys of the "
        "screen below wait until the view closes.",
        owners=(DecisionModal,),
    ),
    HelpSection(
        title="Approval view",
        summary="A call that needs your decision before it runs. Its keys work half a second after it opens.",
        owners=(ApprovalModal,),
    ),
    HelpSection(
        title="Breakpoint view",
        summary="A node paused before it starts (b on a node, S for step mode); other branches keep running. "
        "Its keys work half a second after it opens.",
        owners=(BreakpointModal,),
    ),
    HelpSection(
        title="Result review",
        summary="A call's result held before any node or model sees it (a rule with review: results, or v "
        "on the Tools screen); what looks like instructions to a model is marked.",
        owners=(ReviewModal,),
    ),
    HelpSection(
        title="Replay screen (ditto-tui replay RUN)",
        summary="A recorded run, read-only, stepped event by event; nothing runs again.",
        owners=(ReplayScreen, RunView, DagView, Timeline, CallLine),
    ),
    HelpSection(
        title="Model request from an MCP server",
        summary="A server asks for a model reply (sampling): approve it, edit it, or write it yourself.",
        owners=(SamplingModal,),
    ),
    HelpSection(
        title="Form from an MCP server",
        summary="A server asks you for some information (elicitation).",
        owners=(ElicitationModal,),
    ),
    HelpSection(title="Sign-in", summary="An MCP server needs you to sign in.", owners=(SignInModal,)),
    HelpSection(
        title="Grants (g on the Run screen)",
        summary="What “approve always” wrote: scope, lifetime, uses and time left, where it came from.",
        owners=(GrantsModal,),
    ),
    HelpSection(
        title="Changed tool definition",
        summary="An MCP tool's definition changed since it was approved.",
        owners=(AcceptChangeModal,),
    ),
    HelpSection(
        title="Questions", summary="A yes-or-no question, such as cancelling the run.", owners=(ConfirmModal,)
    ),
)
"""Every screen, pane and dialog with keys of its own, in the order the page lists them."""

NOTES: Mapping[tuple[type[DOMNode], str], str] = {
    (RunScreen, "cancel_run"): "asks first",
    (RunScreen, "cancel_call"): "the selected one; the rest of the run goes on",
    (RunScreen, "grants"): "the tools approved always this session",
    (RunScreen, "new_run"): "start again with a new task",
    (RunScreen, "rerun"): "run again with the same input",
    (RunScreen, "runs"): "the live run and the finished ones",
    (RunScreen, "prompt"): "type a task, or a follow-up once the run ends",
    (PromptBox, "history"): "a task given before",
    (PromptBox, "leave"): "hide the task box, so keys reach the screen again (i brings it back)",
    (RunScreen, "toggle_raw"): "the detail as raw JSON or as the graph sees it",
    (RunScreen, "toggle_full"): "long values in the detail in full",
    (ReplayScreen, "toggle_raw"): "the detail as raw JSON or as the graph sees it",
    (ReplayScreen, "toggle_full"): "long values in the detail in full",
    (ReplayScreen, "step(-1)"): "one event back",
    (ReplayScreen, "jump(0)"): "the first event",
    (ReplayScreen, "jump(-1)"): "the last event",
    (RunView, "transcript_only"): "the transcript alone, or everything again",
    (RunView, "graph_only"): "the graph across the whole screen, or everything again",
    (DagView, "move"): "in the graph",
    (CallLine, "expand"): "what the selected tool call in the transcript gave back",
    (Timeline, "cursor"): "in the timeline",
    (Timeline, "page"): "in the timeline",
    (Timeline, "first"): "the first timeline row",
    (Timeline, "last"): "the newest row, and keep following new ones",
    (McpScreen, "discover"): "list the servers' tools again",
    (McpScreen, "open_invoke"): "fill in the selected tool's arguments",
    (McpScreen, "accept_change"): "trust a tool whose definition changed",
    (McpScreen, "call_tool"): "check the form and call the tool",
    (McpScreen, "show_detail"): "the Detail tab of the selected tool or server",
    (McpScreen, "show_resources"): "the Resources tab",
    (McpScreen, "show_prompts"): "the Prompts tab",
    (McpScreen, "show_logs"): "the Logs tab",
    (McpScreen, "ping"): "check that the server answers",
    (McpScreen, "reconnect"): "restart the selected server",
    (McpScreen, "log_level"): "choose how much the server logs",
    (McpScreen, "cancel_call"): "the call in progress (Ctrl+X from its invoke form)",
    (McpScreen, "focus_tree"): "back to the list of servers",
    (McpCallView, "save"): "the call's result to a file",
    (McpResourcesPane, "more"): "the next page",
    (McpResourcesPane, "subscribe"): "be told when the resource changes",
    (McpResourcesPane, "save"): "the resource's bytes to a file",
    (TemplateForm, "complete"): "suggest values from the server",
    (McpPromptsPane, "more"): "the next page",
    (ToolsScreen, "focus_detail"): "the selected tool's description and schema",
    (ToolsScreen, "focus_table"): "back to the list of tools",
    (SchemaForm, "toggle_json"): "edit the arguments as a form or as JSON",
    (ApprovalModal, "approve"): "this call, this time",
    (ApprovalModal, "approve_edited"): "while editing: run it with the edited arguments",
    (ApprovalModal, "approve_always"): "a grant: which calls (this one, a rule, the tool) and for how long",
    (ApprovalModal, "deny"): "with a reason the model sees",
    (ApprovalModal, "withdraw"): "the call fails, the run goes on",
    (ApprovalModal, "check_edit"): "while editing: check the edited arguments",
    (ApprovalModal, "later"): "set the request aside; p shows it again",
    (ApprovalModal, "back"): "while editing: back to the request",
    (SamplingModal, "approve"): "send the request to the model",
    (SamplingModal, "save_edit"): "while editing",
    (SamplingModal, "send_written"): "while writing",
    (SamplingModal, "back"): "while editing or writing",
    (SamplingModal, "later"): "set the request aside; p shows it again",
    (ElicitationModal, "accept"): "send the form",
    (ElicitationModal, "decline"): "tell the server no",
    (ElicitationModal, "cancel"): "answer nothing",
    (GrantsModal, "revoke"): "the selected grant: the calls it covered ask again",
    (BreakpointModal, "continue_edited"): "after ctrl+s: run it on the edited input",
    (BreakpointModal, "skip_with_output"): "after ctrl+s: the node does not run",
    (BreakpointModal, "not_again"): "inside a loop: not again in this run",
    (BreakpointModal, "later"): "the node stays paused; p shows it again",
    (RunScreen, "toggle_breakpoint"): "before the node selected in the graph, for the session",
    (RunScreen, "step_on"): "pause before every node; n continues",
    (ReviewModal, "send_redaction"): "after ctrl+s: the redacted result goes on instead",
    (ReviewModal, "fail"): "the call fails with RESULT_REJECTED; the model is told why",
    (ReviewModal, "later"): "the result stays held; p shows it again",
}
"""A few words after a key's own description where it alone would leave you guessing, by the class and
the action (with its arguments, or without them for every call of the action)."""

_APP_SUMMARY = "These keys work on every screen."
_APP_NOTES = {
    "switch_mode('run')": "the Run screen",
    "switch_mode('mcp')": "the MCP servers screen",
    "switch_mode('tools')": "the Tools screen",
    "approvals": "show the pending approvals again",
    "cycle_mode": "ask → read-only → auto-edit → plan; the status bar shows it",
    "help": "this page",
}
"""Notes on the application's own keys, by action (the application class is the caller's)."""
_KEY_NAMES = {
    "escape": "Esc",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "delete": "Del",
    "home": "Home",
    "end": "End",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "enter": "Enter",
    "tab": "Tab",
}


def key_label(key: str) -> str:
    """A key as a person writes it: ``Ctrl+S``, ``Esc``, ``F1``, ``Shift+R``, ``a``."""
    *modifiers, name = key.split("+")
    if len(name) == 1 and name.isupper():
        modifiers.append("shift")
    elif len(name) == 1 and modifiers:
        name = name.upper()
    elif name in _KEY_NAMES:
        name = _KEY_NAMES[name]
    elif name[0] == "f" and name[1:].isdigit():
        name = name.upper()
    elif len(name) > 1:
        name = format_key(name)
    return "+".join([*(modifier.capitalize() for modifier in modifiers), name])


def _bindings(owner: type[DOMNode]) -> list[Binding]:
    """The keys ``owner`` and its ditto-tui base classes declare (Textual's own defaults left out)."""
    found: list[Binding] = []
    for cls in reversed(owner.__mro__):
        declared: list[BindingType] = list(cls.__dict__.get("BINDINGS", []))
        if declared and cls.__module__.startswith("ditto_tui."):
            found.extend(Binding.make_bindings(declared))
    return [binding for binding in found if binding.description and not binding.system]


def label(owner: type[DOMNode], binding: Binding) -> str:
    """What ``binding`` of ``owner`` does: its description, and its note when it has one."""
    action = binding.action
    note = NOTES.get((owner, action)) or NOTES.get((owner, action.partition("(")[0]))
    if note is None and issubclass(owner, App):
        note = _APP_NOTES.get(action)
    return f"{binding.description} — {note}" if note else binding.description


def _rows(bindings: Iterable[tuple[type[DOMNode], Binding]]) -> list[tuple[str, str]]:
    """``(keys, what they do)`` for each binding: the keys of one action share a row."""
    rows: dict[tuple[str, str], list[str]] = {}
    for owner, binding in bindings:
        keys = rows.setdefault((binding.action, label(owner, binding)), [])
        if key_label(binding.key) not in keys:
            keys.append(key_label(binding.key))
    return [(" / ".join(keys), text) for (_action, text), keys in rows.items()]


def help_rows(owners: Iterable[type[DOMNode]]) -> list[tuple[str, str]]:
    """``(keys, what they do)`` for every binding the classes ``owners`` declare."""
    return _rows((owner, binding) for owner in owners for binding in _bindings(owner))


def _app_rows(app: App[Any]) -> list[tuple[str, str]]:
    """The application's keys, with the command palette and Textual's own quit key."""
    owner = type(app)
    bindings = [(owner, binding) for binding in _bindings(owner)]
    if app.ENABLE_COMMAND_PALETTE:
        palette = "Command palette — find any screen or action"
        bindings.append((owner, Binding(app.COMMAND_PALETTE_BINDING, "command_palette", palette)))
    bindings.append((owner, Binding("ctrl+q", "quit", "Quit")))
    return _rows(bindings)


def _section(title: str, summary: str, rows: Sequence[tuple[str, str]]) -> Iterator[RenderableType]:
    yield Text(title, style="bold underline")
    yield Text(summary, style="italic")
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for keys, label in rows:
        table.add_row(keys, label)
    yield table
    yield Text()


def ordered(screens: Sequence[type[Screen[Any]]]) -> list[HelpSection]:
    """The sections of ``screens`` first, in their order, each followed by its parts; then the rest."""
    first = [
        section
        for screen in screens
        for section in SECTIONS
        if section.owners[0] is screen or section.within is screen
    ]
    return first + [section for section in SECTIONS if section not in first]


def help_text(app: App[Any], screens: Sequence[type[Screen[Any]]] = ()) -> Group:
    """The help page: the keys of every screen, with ``screens`` (the ones open) first."""
    parts = list(_section("Everywhere", _APP_SUMMARY, _app_rows(app)))
    for section in ordered(screens):
        parts.extend(_section(section.title, section.summary, help_rows(section.owners)))
    parts.extend(_section("Help", "This page: the arrows and PgUp/PgDn scroll it.", help_rows([HelpScreen])))
    return Group(*parts[:-1])


class HelpScreen(Guarded, ModalScreen[None]):
    """Every key binding of every screen, pane and dialog."""

    CSS_PATH = "help.tcss"
    TITLE = "Help"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1", "dismiss", "Close"),
    ]

    def __init__(self, screens: Sequence[type[Screen[Any]]] = ()) -> None:
        super().__init__()
        self.screens = tuple(screens)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Keys"
            yield Static(help_text(self.app, self.screens), id="help-text")
        yield KeysFooter()
