"""The ditto-tui application: its modes, global keys, styles, command palette and approval desk."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, ClassVar, Protocol, runtime_checkable

from textual import events, work
from textual._context import active_message_pump  # the pump whose handler failed (for _handle_exception)
from textual.app import App, SystemCommand
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerFailed, WorkerState

from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.supervise.modes import Mode
from ditto_tui.supervise.modes import describe as describe_mode
from ditto_tui.tui.approvals import ApprovalDesk
from ditto_tui.tui.bridge import (
    ApprovalQueued,
    EventsArrived,
    HostSaid,
    RequestsRefused,
    RunBridge,
    RunSpec,
)
from ditto_tui.tui.faults import FaultLog, Guarded
from ditto_tui.tui.heap import IdleCollector
from ditto_tui.tui.keys import KeyGuard
from ditto_tui.tui.notify import Notifier
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.pending import APPROVALS_KEY
from ditto_tui.tui.widgets.status import MODE_KEY


def request_summary(request: object) -> str:
    """What a request asks, in a few words, for a desktop notification (``approve write_text``)."""
    tool = getattr(request, "tool", None)
    kind = getattr(request, "kind", "request")
    if kind == "tool_call" and isinstance(tool, str):
        return f"approve {tool}"
    words = {"breakpoint": "paused at a breakpoint", "result_review": "review a result", "sign_in": "sign in"}
    return words.get(kind, f"answer a server's {kind} request")


MODE_LABELS = {"run": "Run", "mcp": "MCP servers", "tools": "Tools"}
"""Each mode's name in the footer and the command palette, in switching order."""


@runtime_checkable
class HasCommands(Protocol):
    """A screen that offers its actions in the command palette."""

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The screen's actions as palette entries."""
        ...


class DittoApp(Guarded, App[None]):
    """One session over ``spec``: a mode per screen, approvals shown over whichever screen is open.

    An error in a screen, a widget or a worker is shown and logged and the app goes on, so the run and
    its pending approvals outlive it (see :mod:`ditto_tui.tui.faults`).
    """

    TITLE = "ditto-tui"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "switch_mode('run')", "Run"),
        Binding("f3", "switch_mode('mcp')", "MCP"),
        Binding("f4", "switch_mode('tools')", "Tools"),
        Binding("q", "quit", "Quit"),
        Binding(APPROVALS_KEY, "approvals", "Approvals"),
        Binding("f1", "help", "Help"),
        Binding(MODE_KEY, "cycle_mode", "Mode", show=False),
    ]

    decisions_waiting: var[int] = var(0, init=False)
    """Requests in the inbox with no decision view showing them (the pending badge of each screen)."""

    mode_changes: var[int] = var(0, init=False)
    """How often the session's mode changed in the app: status bars watch it to redraw at once."""

    def __init__(self, spec: RunSpec, *, start: str | None = None) -> None:
        super().__init__()
        self.bridge = RunBridge(spec)
        self.desk = ApprovalDesk(self, self.bridge, on_waiting=self._decisions_changed)
        self.heap = IdleCollector()
        self.keys = KeyGuard()
        self.faults = FaultLog(spec.workspace)
        self.notifier = Notifier(self._write_terminal, lambda: self.app_focus)
        self.start_mode = start or ("run" if spec.program is not None else "mcp")
        self.mode_names = list(self.mode_screens())
        for mode, screen in self.mode_screens().items():
            self.add_mode(mode, screen)

    def mode_screens(self) -> dict[str, Callable[[], Screen[Any]]]:
        """The base screen of each mode; the Run screen exists only when there is a program to run."""
        screens: dict[str, Callable[[], Screen[Any]]] = {}
        if self.bridge.spec.program is not None:
            screens["run"] = partial(RunScreen, self.bridge)
        spec = self.bridge.spec
        tools = tuple(spec.program.tools) if spec.program is not None else ()
        screens["mcp"] = self._mcp_screen
        screens["tools"] = partial(self._tools_screen, tools)
        return screens

    def _mcp_screen(self) -> Screen[Any]:
        from ditto_tui.tui.screens.mcp_session import McpSessionScreen  # loaded when first shown

        return McpSessionScreen(self.bridge)

    def _tools_screen(self, tools: tuple[Any, ...]) -> Screen[Any]:
        from ditto_tui.tui.screens.tools import ToolsScreen  # loaded when first shown

        spec = self.bridge.spec
        return ToolsScreen.for_session(spec.config, spec.workspace, tools, self.bridge.grants())

    def on_mount(self) -> None:
        self.bridge.connect(events=self, approvals=self)
        self.switch_mode(self.start_mode)

    def on_ready(self) -> None:
        """After the first frame: open the session (MCP servers start, the run begins), and run full
        collections only when idle (see :mod:`ditto_tui.tui.heap`)."""
        self.open_session()
        for notice in self.bridge.spec.notices:  # not on stderr, behind the screen
            self.notify(visible(notice), title="Not used", severity="warning", markup=False, timeout=20)
        self.heap.start()
        self.set_interval(1.0, self.heap.tick)

    async def on_unmount(self) -> None:
        self.heap.stop()
        await self.bridge.close()

    @work(group="session", exit_on_error=False)
    async def open_session(self) -> None:
        """Open the session's runtime (sandbox, gate, MCP servers) and keep it open while the app runs."""
        await self.bridge.serve()

    async def on_event(self, event: events.Event) -> None:
        """A key on its way back up to the bindings runs none if it was meant for a modal just closed."""
        if isinstance(event, events.Key) and event.is_forwarded and not self.keys.admits(event):
            event.stop()
            return
        await super().on_event(event)

    def pop_screen(self) -> AwaitComplete:
        """Close the top screen; when it is a modal, hold back the keys pressed for it (U-09)."""
        if isinstance(self.screen, ModalScreen):
            self.keys.modal_closed()
        return super().pop_screen()

    def report_fault(self, error: BaseException, where: object) -> None:
        """Show ``error`` in one line and log its traceback; the session goes on."""
        logged = self.faults.write(error, where)
        self.log.error(f"{type(where).__name__} failed", error)
        self.notify(
            visible(f"{self.faults.message(error)} ({logged})"),
            title="Something failed; the session goes on",
            severity="error",
            markup=False,
            timeout=10,
        )

    def _handle_exception(self, error: Exception) -> None:
        """Textual's last resort ends the app; once the app is up, report instead and carry on.

        What arrives here failed outside a :class:`Guarded` loop: a ``compose``, a timer, a worker that
        exits on error, or a handler of a widget whose loop has now stopped. A pushed screen that failed
        so is closed, since it may no longer answer keys; a mode's own screen stays.
        """
        if not self.screen_stack or self._exit:
            super()._handle_exception(error)
            return
        pump = active_message_pump.get(None)
        self.report_fault(error.error if isinstance(error, WorkerFailed) else error, pump or self)
        if isinstance(pump, Screen) and pump in self.screen_stack[1:]:
            self.call_later(self._close_failed, pump)

    def _close_failed(self, screen: Screen[Any]) -> None:
        if screen is self.screen and len(self.screen_stack) > 1:
            self.pop_screen()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report a session or approval worker that failed, in one line, and log its traceback (one that
        exits on error reaches :meth:`_handle_exception`, which reports it)."""
        worker = event.worker
        if event.state is not WorkerState.ERROR or worker.error is None or worker.group == "run":
            return
        if worker.exit_on_error:
            return
        logged = self.faults.write(worker.error, worker)
        message = public_message_from_exception(worker.error, workspace=self.bridge.spec.workspace)
        line = visible(f"{message} ({logged})")
        self.notify(line, title="Session error", severity="error", markup=False, timeout=10)

    def on_approval_queued(self, message: ApprovalQueued) -> None:
        """Show the new request (or queue it behind the open one); ring when the terminal is unfocused."""
        self.desk.request_queued()
        self.notifier.request_arrived(request_summary(message.request))
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Refresh the keys shown (a footer is rebuilt only when its keys changed, so once per request is
        cheap); not once the last screen has gone: the app is closing."""
        if self.screen_stack:
            self.refresh_bindings()

    def on_requests_refused(self, message: RequestsRefused) -> None:
        """Say that a server's requests are being refused by its bounds, with the count so far."""
        noun = "request" if message.count == 1 else "requests"
        line = visible(
            f"MCP server {message.server}: {message.count:,} {noun} refused by its bounds (pending, rate or "
            "size); the journal keeps each one's size and digest"
        )
        self.notify(line, title="Requests refused", severity="warning", markup=False, timeout=8)

    def on_host_said(self, message: HostSaid) -> None:
        """What the durable run host said: it cannot be reached, or it refused a decision."""
        severity: Any = message.severity
        self.notify(visible(message.text), title=message.title, severity=severity, markup=False, timeout=10)

    def on_events_arrived(self, message: EventsArrived) -> None:
        """Close an approval view whose request ended elsewhere; hold off full collections."""
        self.heap.busy()
        self.desk.events_arrived(message.events)
        self._refresh_keys()

    def _decisions_changed(self, waiting: int) -> None:
        self.decisions_waiting = waiting
        self.notifier.waiting(len(self.bridge.approver.all_pending()))
        self._refresh_keys()

    def _write_terminal(self, text: str) -> None:
        """Send a terminal sequence (bell, notification, title) past the screen; not in tests."""
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(text)
            driver.flush()

    @property
    def session_mode(self) -> Mode:
        """The session's mode now (``ask`` until the session is open)."""
        switch = self.bridge.mode
        return switch.mode if switch is not None else self.bridge.spec.mode

    def action_cycle_mode(self) -> None:
        """Switch to the next mode: ask → read-only → auto-edit → plan → ask (journaled in live runs)."""
        switch = self.bridge.mode
        if switch is None:
            self.notify("The session is still opening; change the mode once it is open.", markup=False)
            return
        mode = switch.cycle()
        self.mode_changes += 1
        self.notify(f"{mode}: {describe_mode(mode)}", title="Mode", markup=False)
        self.refresh_bindings()

    async def action_quit(self) -> None:
        """Quit; while a run is live or a decision is pending, ask first."""
        pending = len(self.bridge.approver.all_pending())
        live = any(worker.group == "run" and worker.is_running for worker in self.workers)
        if not pending and not live:
            self.exit()
            return
        what = []
        if live:
            what.append("a run is still going")
        if pending:
            what.append(f"{pending} decision{'s are' if pending != 1 else ' is'} pending")
        question = f"Quit? {' and '.join(what).capitalize()}; quitting cancels it and nothing more executes."
        if self.bridge.spec.durable:
            question = (
                f"Quit? {' and '.join(what).capitalize()}. Runs go on on the run host and their requests "
                "wait there: `ditto-tui inbox` and `decide` answer them, `ditto-tui attach RUN_ID` shows a "
                "run again. A graph's nodes run while a worker is up (`ditto-tui worker GRAPH`)."
            )
        self.push_screen(ConfirmModal("Quit ditto-tui", question), self._quit_confirmed)

    def _quit_confirmed(self, confirmed: bool | None) -> None:
        if confirmed:
            self.exit()

    def action_approvals(self) -> None:
        """Show the pending approvals again (those set aside with "later" too)."""
        self.desk.reopen()

    def action_help(self) -> None:
        """Show every key binding and what each screen does."""
        from ditto_tui.tui.screens.help import HelpScreen  # it loads every screen: not at start-up
        from ditto_tui.tui.screens.mcp import McpScreen
        from ditto_tui.tui.screens.tools import ToolsScreen

        self.push_screen(HelpScreen([RunScreen, McpScreen, ToolsScreen]))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Mode keys only for the modes this session has."""
        if action == "switch_mode":
            return parameters[0] in self.mode_names
        if action == "approvals":
            desk = self.desk
            return bool(self.bridge.approver.all_pending()) and desk.open is None and desk.asking is None
        return True

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's entries, one per screen, then the open screen's own actions."""
        yield from super().get_system_commands(screen)
        for mode in self.mode_names:
            label = MODE_LABELS.get(mode, mode)
            yield SystemCommand(
                f"{label} screen", f"Show the {label} screen", partial(self.switch_mode, mode)
            )
        yield SystemCommand(
            "Mode",
            f"Cycle the mode (now {self.session_mode}): ask, read-only, auto-edit, plan",
            self.action_cycle_mode,
        )
        if isinstance(screen, HasCommands):
            yield from screen.palette_commands()
