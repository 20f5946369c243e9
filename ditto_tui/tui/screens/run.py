"""The Run screen: the session's program run live in a :class:`RunView`, with its cancel and grant keys."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual import getters, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header
from textual.worker import Worker, WorkerState

from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui import clock
from ditto_tui.tui.bridge import EventsArrived, RunBridge
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.grants import GrantsModal
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.detail import TextView
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.run_view import DETAIL_BINDINGS, RunView
from ditto_tui.tui.widgets.timeline import Timeline


class RunScreen(Guarded, Screen[None]):
    """Runs the session's program in a worker and shows it live (approvals open over it, from the app)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel_run", "Cancel run"),
        Binding("x", "cancel_call", "Cancel call"),
        Binding("g", "grants", "Grants"),
        *DETAIL_BINDINGS,
    ]

    view = getters.query_one("#run-view", RunView)
    dag = getters.query_one("#dag", DagView)
    timeline = getters.query_one("#timeline", Timeline)
    detail = getters.query_one("#detail", TextView)

    def __init__(self, bridge: RunBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self.runner: Worker[Any] | None = None

    @property
    def model(self) -> RunModel:
        """The run as it stands (the view's model)."""
        return self.view.model

    @property
    def raw(self) -> bool:
        """Whether the detail shows the raw JSON."""
        return self.view.raw

    def compose(self) -> ComposeResult:
        yield Header()
        yield RunView(self.now, id="run-view")
        yield Footer()

    def on_mount(self) -> None:
        program = self.bridge.spec.program
        self.sub_title = program.name if program is not None else ""
        self.bridge.connect(events=self)
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
        """Fold a frame's events into the view, which redraws once (the app sees them next)."""
        await self.view.apply(message.events)

    def entry_selected(self, event: Timeline.EntrySelected) -> None:
        """Show ``event``'s entry in the detail and highlight its node, as selecting it does."""
        self.view.entry_selected(event)

    def action_toggle_raw(self) -> None:
        """Switch the detail between the normalised view and the raw JSON."""
        self.view.toggle_raw()

    def action_toggle_full(self) -> None:
        """Show long values in full in the detail, or in part again."""
        self.view.toggle_full()

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
