"""The Run screen: the graph as a DAG, the live timeline, the detail of a selection, the status bar."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header
from textual.worker import Worker, WorkerState

from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui import clock
from ditto_tui.tui.bridge import EventsArrived, RunBridge
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import Entry, RunModel
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.grants import GrantsModal
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.detail import TextView, entry_detail
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.status import RunStatus
from ditto_tui.tui.widgets.timeline import Timeline

TICK_SECONDS = 0.5
FOLD_SLICE = 2_000
PLACEHOLDER = (
    "Select an event in the timeline (↑ ↓, click) or a node in the graph (← → ↑ ↓, click) to see all of it "
    "here: arguments, content, structured content, references, error, metadata."
)


class RunScreen(Guarded, Screen[None]):
    """Runs the session's program in a worker and shows it live (approvals open over it, from the app)."""

    CSS_PATH = "run.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel_run", "Cancel run"),
        Binding("x", "cancel_call", "Cancel call"),
        Binding("g", "grants", "Grants"),
        Binding("v", "toggle_raw", "Raw/normalised"),
        Binding("f", "toggle_full", "Full detail", show=False),
    ]

    status = getters.query_one("#status", RunStatus)
    dag = getters.query_one("#dag", DagView)
    timeline = getters.query_one("#timeline", Timeline)
    detail = getters.query_one("#detail", TextView)

    def __init__(self, bridge: RunBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self.model = RunModel()
        self.raw = False
        self.full = False
        self.runner: Worker[Any] | None = None
        self._shown: tuple[Entry, int] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield RunStatus(id="status")
        with Horizontal(id="main"):
            yield DagView(id="dag")
            with Vertical(id="side"):
                yield Timeline(id="timeline")
                yield TextView(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        program = self.bridge.spec.program
        self.sub_title = program.name if program is not None else ""
        self.dag.border_title = "Graph"
        self.timeline.border_title = "Timeline"
        self._title_detail()
        self.detail.show(Text(PLACEHOLDER, style="italic"))
        self.bridge.connect(events=self)
        self._refresh()
        self.set_interval(TICK_SECONDS, self._tick)
        self.start()

    def start(self) -> None:
        """Start the program's run (a replay feeds recorded events instead)."""
        self.runner = self.run_program()

    def now(self) -> float:
        """The wall time that running nodes and the elapsed time are shown at."""
        return clock.now()

    def on_unmount(self) -> None:
        self.bridge.connect(events=self.app)

    # -- the run ----------------------------------------------------------------------------------------

    @work(exclusive=True, group="run", exit_on_error=False)
    async def run_program(self) -> Any:
        """Run the program to its end; its events arrive as :class:`EventsArrived`."""
        return await self.bridge.run()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report a failed run in one line (the timeline has the details)."""
        worker = event.worker
        if event.state is WorkerState.ERROR and worker.error is not None:
            message = public_message_from_exception(worker.error, workspace=self.bridge.spec.workspace)
            self.notify(visible(message), title="Run failed", severity="error", markup=False, timeout=10)

    async def on_events_arrived(self, message: EventsArrived) -> None:
        """Fold a frame's events into the model and redraw once (the app sees them next).

        A large batch is folded in slices with a yield between them, so keys stay answered.
        """
        events = message.events
        for start in range(0, len(events), FOLD_SLICE):
            if start:
                await asyncio.sleep(0)
            self.model.apply(events[start : start + FOLD_SLICE])
        self._refresh()

    def _refresh(self) -> None:
        now = self.now()
        self.status.show(self.model, now)
        self.dag.show(self.model, now)
        self.timeline.show(self.model.entries, self.model.started_at)
        if self._shown is not None and self._shown[0].version != self._shown[1]:
            self._show_detail(self._shown[0])

    def _tick(self) -> None:
        if not self.model.finished:
            now = self.now()
            self.status.show(self.model, now)
            self.dag.show(self.model, now)

    # -- selection --------------------------------------------------------------------------------------

    @on(Timeline.EntrySelected)
    def entry_selected(self, event: Timeline.EntrySelected) -> None:
        """Show the selected entry and highlight its node."""
        self.dag.select(event.entry.node_id)
        self._show_detail(event.entry)

    @on(DagView.NodeSelected)
    def node_selected(self, event: DagView.NodeSelected) -> None:
        """Show the latest entry of the selected node."""
        node = self.model.nodes.get(event.node_id)
        if node is not None and node.entry is not None:
            self.timeline.select(node.entry.index)
            self._show_detail(node.entry)

    def _show_detail(self, entry: Entry) -> None:
        self._shown = (entry, entry.version)
        self.detail.show(entry_detail(entry, raw=self.raw, full=self.full))

    def _title_detail(self) -> None:
        view = "raw JSON" if self.raw else "normalised"
        self.detail.border_title = f"Detail · {view} (v switches, f shows long values in full)"

    def action_toggle_full(self) -> None:
        """Show long values in full in the detail, or in part again (huge values take a while to lay out)."""
        self.full = not self.full
        if self._shown is not None:
            self._show_detail(self._shown[0])

    def action_toggle_raw(self) -> None:
        """Switch the detail between the normalised view and the raw JSON."""
        self.raw = not self.raw
        self._title_detail()
        if self._shown is not None:
            self._show_detail(self._shown[0])

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The screen's actions in the command palette."""
        yield SystemCommand("Cancel the run", "Stop the whole run (asks first)", self.action_cancel_run)
        yield SystemCommand("Cancel the selected call", "Stop one running call", self.action_cancel_call)
        yield SystemCommand("Grants", "Tools approved always this session; revoke them", self.action_grants)
        yield SystemCommand("Raw or normalised detail", "Switch the detail view", self.action_toggle_raw)

    # -- cancelling and grants --------------------------------------------------------------------------

    def action_cancel_run(self) -> None:
        """Ask, then cancel the whole run; pending approvals end cancelled."""
        if self.model.finished:
            self.notify("The run has already ended.", markup=False)
            return
        question = "Cancel the whole run? Running calls stop and pending approvals end as cancelled."
        self.app.push_screen(ConfirmModal("Cancel the run", question), self._cancel_confirmed)

    def _cancel_confirmed(self, confirmed: bool | None) -> None:
        if confirmed:
            self.workers.cancel_group(self, "run")

    def action_cancel_call(self) -> None:
        """Cancel the selected call if it is running or waiting for approval; the rest goes on."""
        entry = self.timeline.selected
        if entry is not None and entry.kind == "approval" and entry.node_id in self.model.nodes:
            entry = self.model.nodes[entry.node_id].entry
        if entry is None or entry.execution_id is None or entry.status != "running":
            self.notify(self._nothing_to_cancel(), markup=False)
            return
        if self.bridge.cancel_call(entry.execution_id):
            self.notify(f"Cancelling {visible(entry.title)}", markup=False)

    def _nothing_to_cancel(self) -> str:
        """Why ``x`` cancelled nothing: no call is running at all, or the selection is not one."""
        running = any(
            node.entry is not None and node.entry.status == "running" for node in self.model.nodes.values()
        )
        if not running:
            ended = "the run has ended" if self.model.finished else "no call is running"
            return f"Nothing to cancel: {ended}."
        return "Select a running call first (timeline or graph)."

    def action_grants(self) -> None:
        """Show the session's "always" grants."""
        self.app.push_screen(GrantsModal(self.bridge))
