"""The Replay screen: a recorded run rebuilt from its journal and stepped event by event; nothing runs."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from ditto_tui.config import RuntimeConfig
from ditto_tui.supervise import JournalRead
from ditto_tui.tui.bridge import EventsArrived, RunBridge, RunSpec
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.screens.run import PLACEHOLDER, RunScreen
from ditto_tui.tui.widgets.inline import visible
from ditto_tui.tui.widgets.timeline import Timeline

_LIVE_ONLY = frozenset({"cancel_run", "cancel_call", "grants"})


class ReplayScreen(RunScreen):
    """A recorded run, read-only: the Run screen fed with the events of its journal instead of a runtime.

    It opens at the end of the run; n and b step one event forward and back, s and e jump to the start
    and the end, and the detail shows what each step changed. The screen's bridge is never served: no
    runtime is built, no MCP server started, and nothing executes again.
    """

    CSS_PATH = "run.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step(1)", "Next event"),
        Binding("b", "step(-1)", "Back"),
        Binding("s", "jump(0)", "Start"),
        Binding("e", "jump(-1)", "End"),
    ]

    def __init__(self, journal: JournalRead) -> None:
        super().__init__(RunBridge(RunSpec(config=RuntimeConfig(), workspace=journal.path.parent)))
        self.journal = journal
        self.events = journal.events
        self.position = 0

    def start(self) -> None:
        """Show the whole recorded run instead of starting one: its events, posted as the bridge does."""
        self.position = len(self.events)
        self._caption()
        self.post_message(EventsArrived(self.events))

    def now(self) -> float:
        """The time of the last event shown: a replay never reads the wall clock."""
        if self.position:
            return self.events[self.position - 1].at
        return self.events[0].at if self.events else 0.0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Cancelling and grants belong to live runs: hidden here."""
        return action not in _LIVE_ONLY

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
            await self.on_events_arrived(EventsArrived(batch))
        else:
            await self._rebuild(target)
        self._show_step()

    async def action_jump(self, where: int) -> None:
        """Go to the start (``0``) or the end (``-1``) of the run."""
        await self._rebuild(0 if where == 0 else len(self.events))
        self._show_step()

    async def _rebuild(self, position: int) -> None:
        previous = self.model
        self.model = RunModel()
        self.model.layout_version = previous.layout_version + 1  # the graph is laid out again
        self.position = position
        self._caption()
        await self.on_events_arrived(EventsArrived(self.events[:position]))

    def _show_step(self) -> None:
        """Select the timeline row the last step touched and show it in the detail."""
        if not self.position:
            self.detail.show(Text(PLACEHOLDER, style="italic"))
            return
        event = self.events[self.position - 1]
        entry = next(
            (row for row in reversed(self.model.entries) if any(seen is event for seen in row.events)), None
        )
        if entry is None:
            return
        # After a step back the list is shorter than the one the timeline last scrolled: settle the
        # scroll at the newest rows now, so that selecting reveals the row from where it really is.
        rows = len(self.model.entries) - self.timeline.scrollable_content_region.height
        self.timeline.scroll_to(y=max(0, rows), animate=False, immediate=True)
        self.timeline.select(entry.index)
        self.entry_selected(Timeline.EntrySelected(entry))

    def _caption(self) -> None:
        program = visible(str(self.journal.header.get("program") or self.model.plan or "run"))
        unfinished = "" if self.journal.finished is not None else " · unfinished"
        self.sub_title = f"{program} · replay · event {self.position}/{len(self.events)}{unfinished}"
