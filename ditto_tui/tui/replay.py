"""``ditto-tui replay RUN``: the application that reopens one recorded run, read-only."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from ditto_tui.supervise import JournalRead
from ditto_tui.tui.screens.replay import ReplayScreen


class ReplayApp(App[None]):
    """One recorded run in the Replay screen: no runtime, no MCP server, no tool is ever started."""

    TITLE = "ditto-tui"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self, journal: JournalRead) -> None:
        super().__init__()
        self.journal = journal

    async def on_mount(self) -> None:
        """Open the Replay screen and say what could not be read (a truncated last line, bad lines)."""
        await self.push_screen(ReplayScreen(self.journal))
        for problem in self.journal.problems():
            self.notify(problem, title="Run journal", severity="warning", markup=False, timeout=10)

    def action_help(self) -> None:
        """Show the replay keys."""
        from ditto_tui.tui.screens.help import HelpScreen  # it loads every screen: not at start-up

        self.push_screen(HelpScreen([ReplayScreen]))
