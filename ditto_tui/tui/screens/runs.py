"""The runs list: the workspace's recorded runs, newest first, the live one marked; Enter opens one.

Choosing the run on screen closes the list; choosing another opens it in the Replay screen, read-only
(nothing runs again), from where Escape comes back to the live run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.runtime.client import short_run_id
from ditto_tui.supervise.journal import RunSummary
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import format_seconds
from ditto_tui.tui.widgets.inline import one_line

_OUTCOME_STYLES = {"succeeded": "green", "failed": "bold red", "cancelled": "yellow"}


def run_label(summary: RunSummary, *, live: bool) -> Text:
    """One run on one line: when, graph, outcome, length, decisions (``live`` marks the run on screen)."""
    when = time.strftime("%H:%M:%S", time.localtime(summary.started_at)) if summary.started_at else "--:--:--"
    line = Text.assemble(("● " if live else "  ", "bold cyan"), (when, "dim"), "  ")
    line.append_text(one_line(summary.graph or "run", style="bold"))
    outcome = "live" if live and summary.outcome == "unfinished" else summary.outcome
    line.append(f"  {outcome}", style=_OUTCOME_STYLES.get(outcome, "cyan"))
    if summary.duration_ms is not None:
        line.append(f"  {format_seconds(summary.duration_ms / 1000)}", style="dim")
    decided = sum(summary.approvals.values())
    if decided:
        line.append(f"  {decided} decision{'s' if decided != 1 else ''}", style="dim")
    if summary.follows:
        line.append(f"  follows {short_run_id(summary.follows)}", style="dim")
    line.append(f"  {short_run_id(summary.run_id)}", style="dim")
    return line


class RunsModal(Guarded, ModalScreen[Path | None]):
    """Pick a run: dismisses with its journal's path, or ``None`` for the live run or on Escape."""

    DEFAULT_CSS = """
    RunsModal {
        align: center middle;
        #runs-dialog {
            width: 90%;
            max-width: 110;
            height: auto;
            max-height: 80%;
            border: round $accent;
            background: $surface;
            padding: 0 1;
        }
        #runs-title { height: 1; text-style: bold; }
        #runs-list { height: auto; max-height: 20; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Close")]

    def __init__(self, summaries: list[RunSummary], live: str | None) -> None:
        super().__init__()
        self.summaries = sorted(summaries, key=lambda s: (s.started_at or 0.0, s.run_id), reverse=True)
        self.live = live

    def compose(self) -> ComposeResult:
        with Vertical(id="runs-dialog"):
            title = "Runs of this workspace (Enter opens one; recorded runs replay read-only)"
            yield Static(Text(title), id="runs-title")
            options = [Option(run_label(s, live=s.run_id == self.live), id=s.run_id) for s in self.summaries]
            if not options:
                options = [Option(Text("No run is recorded yet.", style="italic"), disabled=True)]
            yield OptionList(*options, id="runs-list")
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        chosen = next((s for s in self.summaries if s.run_id == event.option.id), None)
        if chosen is None or chosen.run_id == self.live:
            self.dismiss(None)
            return
        self.dismiss(chosen.path)

    def action_dismiss_none(self) -> None:
        """Close the list and stay on the live run."""
        self.dismiss(None)
