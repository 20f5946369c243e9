"""The Run screen: the session's program run live in a :class:`RunView`, with its cancel and grant keys.

For an agent graph the prompt box asks for the task first (unless ``--task`` or ``--input`` gave it)
and, once a run has ended, offers a follow-up: the same conversation continued as a new run, whose
journal names the run it follows. ``n`` starts a new run with a new task, ``r`` reruns the last input,
``l`` lists the workspace's runs (a finished one opens read-only, as a replay). ``b`` toggles a breakpoint
before the node selected in the graph and ``S`` step mode (a pause before every node), both for the rest
of the session.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from typing import Any, ClassVar

from textual import getters, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Header
from textual.worker import Worker, WorkerState

from ditto_tui.infer import InferMessage, ReactState
from ditto_tui.program import agent_task, with_task
from ditto_tui.runtime.breakpoints import Breakpoints
from ditto_tui.runtime.client import short_run_id
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.supervise.journal import JournalError, list_runs, read_journal
from ditto_tui.tui import clock
from ditto_tui.tui.bridge import EventsArrived, RunBridge
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.grants import GrantsModal
from ditto_tui.tui.screens.replay import ReplayScreen
from ditto_tui.tui.screens.runs import EndRun, HostRunsModal, Rerun, RunsModal
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.detail import TextView
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.pending import PendingBadge
from ditto_tui.tui.widgets.prompt_box import PromptBox, PromptHistory
from ditto_tui.tui.widgets.run_view import DETAIL_BINDINGS, RunView
from ditto_tui.tui.widgets.timeline import Timeline


class SessionReplayScreen(ReplayScreen):
    """A finished run opened read-only over the live session, whose pending decisions it still shows."""

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield PendingBadge(id="pending-badge")


class RunScreen(Guarded, Screen[None]):
    """Runs the session's program in a worker and shows it live (approvals open over it, from the app)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel_run", "Cancel run"),
        Binding("x", "cancel_call", "Cancel call"),
        Binding("g", "grants", "Grants"),
        Binding("n", "new_run", "New run"),
        Binding("r", "rerun", "Rerun"),
        Binding("l", "runs", "Runs"),
        Binding("i", "prompt", "Task box"),
        Binding("b", "toggle_breakpoint", "Break"),
        Binding("S", "step_on", "Step mode", show=False),
        Binding("S", "step_off", "Step off"),
        *DETAIL_BINDINGS,
    ]

    view = getters.query_one("#run-view", RunView)
    dag = getters.query_one("#dag", DagView)
    timeline = getters.query_one("#timeline", Timeline)
    detail = getters.query_one("#detail", TextView)
    prompt = getters.query_one("#prompt", PromptBox)

    def __init__(self, bridge: RunBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self.runner: Worker[Any] | None = None
        self.following: str | None = None
        """The durable run shown, when it was attached to rather than started here."""
        self.last_input: Any = None
        self.final: ReactState | None = None
        """The final state of the last agent run that answered: what a follow-up continues."""
        self.started = False

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
        yield PromptBox(PromptHistory(self.bridge.spec.workspace), id="prompt")
        yield PendingBadge(id="pending-badge")
        yield KeysFooter()

    def on_mount(self) -> None:
        program = self.bridge.spec.program
        self.sub_title = program.name if program is not None else ""
        self.bridge.connect(events=self)
        self.prompt.display = False
        if self.bridge.spec.attach is not None:
            self.call_later(self.attach, self.bridge.spec.attach)
        elif self.bridge.spec.ask_task and program is not None:
            self.ask_task()
        elif program is not None:
            self.call_later(self.start, program.initial)

    @property
    def agent(self) -> bool:
        """Whether the program is an agent graph (it takes a task)."""
        program = self.bridge.spec.program
        return program is not None and agent_task(program) is not None

    @property
    def running(self) -> bool:
        """Whether a run of the program is under way."""
        return self.runner is not None and self.runner.is_running

    def ask_task(self) -> None:
        """Open the prompt box for a new task."""
        program = self.bridge.spec.program
        default = agent_task(program) if program is not None else None
        hint = "Enter starts the run · Ctrl+J or \\ Enter: new line · Ctrl+↑ ↓: earlier tasks · Esc: keys"
        self.final = None
        self.prompt.ask("Task for the agent", hint, default=default)

    async def start(self, initial: Any, *, follows: str | None = None) -> None:
        """Run the program on ``initial`` (the view starts afresh; a follow-up keeps the transcript)."""
        self.last_input = initial
        self.prompt.display = False
        if self.started:
            await self.view.restart(keep_transcript=follows is not None)
        self.started = True
        self.following = None
        self.runner = self.run_program(initial, follows)

    async def attach(self, run_id: str) -> None:
        """Show run ``run_id`` of the durable host, from its start, and follow it live to its end."""
        self.sub_title = f"run {short_run_id(run_id)}"
        self.prompt.display = False
        if self.started:
            await self.view.restart()
        self.started = True
        self.following = run_id
        self.runner = self.follow_run(run_id)

    def now(self) -> float:
        """The wall time that running nodes and the elapsed time are shown at."""
        return clock.now()

    def on_unmount(self) -> None:
        self.bridge.connect(events=self.app)

    # -- the run ----------------------------------------------------------------------------------------

    @work(exclusive=True, group="run", exit_on_error=False)
    async def run_program(self, initial: Any = None, follows: str | None = None) -> Any:
        """Run the program to its end; its events arrive as :class:`EventsArrived`."""
        return await self.bridge.run(initial, follows=follows)

    @work(exclusive=True, group="run", exit_on_error=False)
    async def follow_run(self, run_id: str) -> Any:
        """Follow a durable run to its end; leaving it (quit, another run) leaves it running."""
        return await self.bridge.follow(run_id)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report a failed run in one line (the timeline has the details); offer a follow-up."""
        worker = event.worker
        if worker is not self.runner:
            return
        if event.state is WorkerState.ERROR and worker.error is not None:
            message = public_message_from_exception(worker.error, workspace=self.bridge.spec.workspace)
            self.notify(visible(message), title="Run failed", severity="error", markup=False, timeout=10)
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED) and self.agent:
            result = worker.result if event.state is WorkerState.SUCCESS else None
            self.final = result if isinstance(result, ReactState) and result.answer is not None else None
            self.offer_follow_up()

    def offer_follow_up(self) -> None:
        """After an agent run: the prompt box continues the conversation (or takes a new task)."""
        if self.final is None:
            hint = "No answer to follow up on: Enter starts a new run with this task · Esc: keys (r rerun)"
            self.prompt.ask("New task", hint)
            return
        hint = "Enter continues this conversation as a new run · Esc: keys (n new task, r rerun, l runs)"
        self.prompt.ask(
            "Follow up", hint, placeholder="Type a follow-up: the agent continues from its answer"
        )

    async def on_prompt_box_submitted(self, event: PromptBox.Submitted) -> None:
        """Start the run the person asked for: a follow-up of the last one, or a new task."""
        event.stop()
        program = self.bridge.spec.program
        if program is None:
            return
        final = self.final
        if final is not None and final.answer is not None and self.bridge.runs:
            messages = [*final.messages, final.answer, InferMessage(role="user", content=event.text)]
            await self.start(
                {"messages": messages, "deliveryId": final.delivery_id}, follows=self.bridge.runs[-1]
            )
            return
        await self.start(with_task(program, event.text).initial)

    async def action_new_run(self) -> None:
        """Start a new run: ask for its task (an agent graph) or run the program again on its input."""
        if self._still_running():
            return
        program = self.bridge.spec.program
        if program is None:
            return
        if self.agent:
            await self.view.restart()
            self.ask_task()
        else:
            await self.start(program.initial)

    async def action_rerun(self) -> None:
        """Run again with the same input as the last run."""
        if self._still_running() or not self.started:
            if not self.started:
                self.notify("Nothing has run yet: give the task first.", markup=False)
            return
        await self.start(self.last_input)

    def action_prompt(self) -> None:
        """Bring the prompt box back (after Esc) to type the task or a follow-up."""
        if self._still_running():
            return
        if not self.prompt.reopen():
            self.notify("This graph takes no task: n runs it again.", markup=False)

    def _still_running(self) -> bool:
        if self.running:
            self.notify("The run is still going: cancel it first (c), or wait for it to end.", markup=False)
            return True
        return False

    def action_runs(self) -> None:
        """List the workspace's runs; a finished one opens read-only. On a durable host: the host's runs,
        wherever they were started; the one chosen is shown and followed."""
        if self.bridge.spec.durable:
            self.list_host_runs()
            return
        try:
            summaries = list_runs(self.bridge.spec.workspace)
        except (OSError, JournalError) as exc:
            self.notify(visible(str(exc)), title="Runs", severity="error", markup=False)
            return
        live = self.bridge.runs[-1] if self.bridge.runs else None
        program = self.bridge.spec.program
        graph = program.plan.name if program is not None else None
        self.app.push_screen(RunsModal(summaries, live, graph), self._open_run)

    @work(group="host-runs", exclusive=True, exit_on_error=False)
    async def list_host_runs(self) -> None:
        """Read the durable host's runs and list them; follow the one chosen."""
        try:
            summaries = await (await self.bridge.durable()).runs()
        except Exception as exc:
            message = public_message_from_exception(exc, workspace=self.bridge.spec.workspace)
            self.notify(visible(message), title="Runs", severity="error", markup=False)
            return
        live = self.bridge.runs[-1] if self.running and self.bridge.runs else self.following
        chosen = await self.app.push_screen_wait(HostRunsModal(summaries, live))
        if isinstance(chosen, EndRun):
            await self.end_host_run(chosen.run_id, summaries)
        elif chosen is not None:
            await self.attach(chosen)

    async def end_host_run(self, run_id: str, summaries: list[Any]) -> None:
        """Ask, then end run ``run_id`` on the durable host: its calls stop, its pending requests end
        cancelled (a gateway session's client is told so on its next call)."""
        graph = next((s.graph for s in summaries if s.run_id == run_id), "run")
        question = (
            f"End run {short_run_id(run_id)} ({graph}) on the run host? Its running calls stop and its "
            "pending requests end cancelled."
        )
        confirmed = await self.app.push_screen_wait(ConfirmModal("End the run", question))
        if not confirmed:
            return
        try:
            await (await self.bridge.durable()).cancel(run_id, "ended in the app")
        except Exception as exc:
            message = public_message_from_exception(exc, workspace=self.bridge.spec.workspace)
            self.notify(visible(message), title="End run", severity="error", markup=False)
            return
        self.notify(f"Run {short_run_id(run_id)} ended.", markup=False)

    async def _open_run(self, path: Any) -> None:
        if path is None:
            return
        if isinstance(path, Rerun):
            self.notify(f"Running again what {short_run_id(path.run_id)} was started on.", markup=False)
            await self.start(path.input)
            return
        try:
            journal = read_journal(path)
        except JournalError as exc:
            self.notify(visible(exc.message), title="Runs", severity="error", markup=False)
            return
        self.app.push_screen(SessionReplayScreen(journal, closable=True))

    async def on_events_arrived(self, message: EventsArrived) -> None:
        """Fold a frame's events into the view, which redraws once (the app sees them next)."""
        if self.dag.breakpoints is None and self.bridge.breakpoints is not None:
            self.dag.breakpoints = self.bridge.breakpoints
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
        yield SystemCommand("New run", "Start a new run (asks for the task)", self.action_new_run)
        yield SystemCommand("Rerun", "Run again with the same input", self.action_rerun)
        yield SystemCommand("Runs", "List this workspace's runs; open one read-only", self.action_runs)
        yield SystemCommand(
            "Breakpoint",
            "Pause before the selected node, or stop pausing there",
            self.action_toggle_breakpoint,
        )
        yield SystemCommand("Step mode", "Pause before every node, or stop pausing", self.action_toggle_step)
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
            if not self.bridge.cancel_durable():  # a durable run ends on its host; its view follows
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

    # -- breakpoints ------------------------------------------------------------------------------------

    def _breakpoints(self) -> Breakpoints | None:
        """The session's live breakpoints, shown on the graph; None (and it says so) before it opens."""
        breakpoints = self.bridge.breakpoints
        if breakpoints is None:
            self.notify("The session is still opening: set breakpoints once it is open.", markup=False)
        return breakpoints

    def action_toggle_breakpoint(self) -> None:
        """Pause before the node selected in the graph, in this run and the next ones, or stop pausing."""
        node_id = self.dag.selected
        if node_id is None or node_id not in self.model.nodes:
            self.notify("Select a node in the graph first (← → ↑ ↓ or a click).", markup=False)
            return
        breakpoints = self._breakpoints()
        if breakpoints is None:
            return
        on = breakpoints.toggle(glob.escape(node_id))  # the node itself, not a pattern its id spells
        self.dag.show_breakpoints(breakpoints)
        if on:
            message = f"Breakpoint set: the run pauses before {visible(node_id)} for the rest of the session."
        else:
            message = f"Breakpoint removed: {visible(node_id)} runs without pausing."
        self.notify(message, title="Breakpoint", markup=False)

    def action_toggle_step(self) -> None:
        """Step mode: pause before every node (n continues to the next one), until turned off."""
        breakpoints = self._breakpoints()
        if breakpoints is None:
            return
        breakpoints.step = not breakpoints.step
        self.dag.show_breakpoints(breakpoints)
        self.refresh_bindings()
        if breakpoints.step:
            message = "Step mode on: the run pauses before every node; n continues to the next one (S: off)."
        else:
            message = "Step mode off: nodes run without pausing (breakpoints still apply)."
        self.notify(message, title="Step mode", markup=False)

    def action_step_on(self) -> None:
        """Turn step mode on (the footer then offers to turn it off)."""
        self.action_toggle_step()

    def action_step_off(self) -> None:
        """Turn step mode off."""
        self.action_toggle_step()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``S`` turns step mode on, or off while it is on (then the footer shows it)."""
        if action in ("step_on", "step_off"):
            breakpoints = self.bridge.breakpoints
            step = breakpoints is not None and breakpoints.step
            return step if action == "step_off" else not step
        return True
