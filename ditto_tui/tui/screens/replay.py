"""The Replay screen: a recorded run rebuilt from its journal and stepped event by event; nothing runs."""

from __future__ import annotations

from typing import ClassVar

from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Header

from ditto_tui.supervise import JournalRead
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.detail import TextView
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.run_view import DETAIL_BINDINGS, RunView
from ditto_tui.tui.widgets.timeline import Timeline


class ReplayScreen(Guarded, Screen[None]):
    """A recorded run, read-only: the Run screen fed with the events of its journal instead of a runtime.

    It opens at the end of the run; n and b step one event forward and back, s and e jump to the start
    and the end, and the detail shows what each step changed. No runtime is built, no MCP server
    started, and nothing executes again.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *DETAIL_BINDINGS,
        Binding("n", "step(1)", "Next event"),
        Binding("b", "step(-1)", "Back"),
        Binding("s", "jump(0)", "Start"),
        Binding("e", "jump(-1)", "End"),
        Binding("escape", "leave", "Back to the live run"),
    ]

    view = getters.query_one("#run-view", RunView)
    dag = getters.query_one("#dag", DagView)
    timeline = getters.query_one("#timeline", Timeline)
    detail = getters.query_one("#detail", TextView)

    def __init__(self, journal: JournalRead, *, closable: bool = False) -> None:
        super().__init__()
        self.journal = journal
        self.closable = closable
        self.events = journal.events
        self.position = len(self.events)

    @property
    def model(self) -> RunModel:
        """The run as it stands at the current event (the view's model)."""
        return self.view.model

    def compose(self) -> ComposeResult:
        yield Header()
        yield RunView(self.now, id="run-view")
        yield KeysFooter()

    def on_mount(self) -> None:
        """Open at the end: every recorded event, folded once the screen is up."""
        self._caption()
        self.call_later(self.view.apply, self.events)

    def now(self) -> float:
        """The time of the last event shown: a replay never reads the wall clock."""
        if self.position:
            return self.events[self.position - 1].at
        return self.events[0].at if self.events else 0.0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape goes back only when the replay was opened over a live run."""
        return self.closable if action == "leave" else True

    def action_leave(self) -> None:
        """Close the replay and show the live run again."""
        self.dismiss()

    def action_toggle_raw(self) -> None:
        """Switch the detail between the normalised view and the raw JSON."""
        self.view.toggle_raw()

    def action_toggle_full(self) -> None:
        """Show long values in full in the detail, or in part again."""
        self.view.toggle_full()

    # -- stepping ---------------------------------------------------------------------------------------

    async def action_step(self, steps: int) -> None:
        """Move ``steps`` events forward (applied to the model) or back (the model rebuilt up to there)."""
        target = max(0, min(len(self.events), self.position + steps))
        if target == self.position:
            self.app.bell()
            return
        if target > self.position:
            batch = self.events[self.position : target]
            self.position = target
            self._caption()
            await self.view.apply(batch)
        else:
            await self._rebuild(target)
        self._show_step()

    async def action_jump(self, where: int) -> None:
        """Go to the start (``0``) or the end (``-1``) of the run."""
        await self._rebuild(0 if where == 0 else len(self.events))
        self._show_step()

    async def _rebuild(self, position: int) -> None:
        await self.view.restart()
        self.position = position
        self._caption()
        await self.view.apply(self.events[:position])

    def _show_step(self) -> None:
        """Select the timeline row the last step touched and show it in the detail."""
        if not self.position:
            self.view.show_placeholder()
            return
        event = self.events[self.position - 1]
        entry = next(
            (row for row in reversed(self.model.entries) if any(seen is event for seen in row.events)), None
        )
        if entry is not None:
            self.view.reveal(entry)

    def _caption(self) -> None:
        program = visible(str(self.journal.header.get("program") or self.model.plan or "run"))
        unfinished = "" if self.journal.finished is not None else " · unfinished"
        self.sub_title = f"{program} · replay · event {self.position}/{len(self.events)}{unfinished}"
