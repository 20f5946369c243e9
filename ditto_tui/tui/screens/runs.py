"""The runs list: the workspace's recorded runs, newest first, the live one marked; Enter opens one.

Choosing the run on screen closes the list; choosing another opens it in the Replay screen, read-only
(nothing runs again), from where Escape comes back to the live run. ``r`` on a run that was interrupted
(its process ended before it did) runs the session's graph again on the input it was started on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.runs import RunSummary as HostRun
from ditto_tui.runtime.client import short_run_id
from ditto_tui.supervise.journal import RunSummary
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import format_seconds
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.inline import one_line

_OUTCOME_STYLES = {"succeeded": "green", "failed": "bold red", "cancelled": "yellow"}


MAX_GRAPH_COLUMN = 28
"""The graph names' column is as wide as the widest of them, up to this many cells (then cut with …)."""
_OUTCOME_COLUMN = len("unfinished")
_LENGTH_COLUMN = len("59m59s")


def graph_column(summaries: Sequence[RunSummary | HostRun]) -> int:
    """How wide the graph names' column is for ``summaries``."""
    widest = max((one_line(summary.graph or "run").cell_len for summary in summaries), default=0)
    return min(widest, MAX_GRAPH_COLUMN)


def _when_and_graph(summary: RunSummary | HostRun, live: bool, graph_width: int) -> Text:
    """A run's line up to its graph: the live mark, when it started, the graph's name in its column."""
    when = time.strftime("%H:%M:%S", time.localtime(summary.started_at)) if summary.started_at else "--:--:--"
    line = Text.assemble(("● " if live else "  ", "bold cyan"), (when, "dim"), "  ")
    name = one_line(summary.graph or "run", style="bold")
    if graph_width:
        name.truncate(graph_width, overflow="ellipsis", pad=True)
    line.append_text(name)
    return line


def _runs_dialog(title: str, options: list[Option], empty: str) -> ComposeResult:
    """A runs list's dialog: its title, the runs (or ``empty`` when there are none), the keys."""
    with Vertical(id="runs-dialog"):
        yield Static(Text(title), id="runs-title")
        yield OptionList(*(options or [Option(Text(empty, style="italic"), disabled=True)]), id="runs-list")
    yield KeysFooter()


def _append_client(line: Text, client: str | None) -> None:
    """A session of the MCP gateway names the client it served (untrusted text, shown inert)."""
    if client is not None:
        line.append("  ")
        line.append_text(one_line(client, style="italic"))


def run_label(summary: RunSummary, *, live: bool, graph_width: int = 0) -> Text:
    """One run on one line: when, graph, outcome, length, decisions (``live`` marks the run on screen);
    with ``graph_width`` (:func:`graph_column`) the columns line up from row to row."""
    line = _when_and_graph(summary, live, graph_width)
    outcome = "live" if live and summary.outcome == "unfinished" else summary.outcome
    line.append(f"  {outcome:<{_OUTCOME_COLUMN}}", style=_OUTCOME_STYLES.get(outcome, "cyan"))
    length = format_seconds(summary.duration_ms / 1000) if summary.duration_ms is not None else ""
    line.append(f"  {length:>{_LENGTH_COLUMN}}", style="dim")
    decided = sum(summary.approvals.values())
    if decided:
        line.append(f"  {decided} decision{'s' if decided != 1 else ''}", style="dim")
    if summary.follows:
        line.append(f"  follows {short_run_id(summary.follows)}", style="dim")
    _append_client(line, summary.client)
    line.append(f"  {short_run_id(summary.run_id)}", style="dim")
    return line


@dataclass(frozen=True)
class Rerun:
    """Run the session's graph again on the input an interrupted run of it was started on."""

    run_id: str
    input: Any


class RunsModal(Guarded, ModalScreen[Path | Rerun | None]):
    """Pick a run: dismisses with its journal's path, or ``None`` for the live run or on Escape; ``r`` on
    an interrupted run of the session's graph dismisses with a :class:`Rerun` of it."""

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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("r", "rerun", "Rerun interrupted"),
    ]

    def __init__(self, summaries: list[RunSummary], live: str | None, graph: str | None = None) -> None:
        super().__init__()
        self.summaries = sorted(summaries, key=lambda s: (s.started_at or 0.0, s.run_id), reverse=True)
        self.live = live
        self.graph = graph

    def compose(self) -> ComposeResult:
        width = graph_column(self.summaries)
        options = [
            Option(run_label(s, live=s.run_id == self.live, graph_width=width), id=s.run_id)
            for s in self.summaries
        ]
        title = "Runs of this workspace (Enter opens one; recorded runs replay read-only)"
        yield from _runs_dialog(title, options, "No run is recorded yet.")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        chosen = next((s for s in self.summaries if s.run_id == event.option.id), None)
        if chosen is None or chosen.run_id == self.live:
            self.dismiss(None)
            return
        self.dismiss(chosen.path)

    def action_rerun(self) -> None:
        """Run the session's graph again on the input of the highlighted run, if it was interrupted."""
        index = self.query_one("#runs-list", OptionList).highlighted
        chosen = self.summaries[index] if index is not None and index < len(self.summaries) else None
        if chosen is None or chosen.outcome != "interrupted":
            self.notify("Only an interrupted run is run again here.", title="Runs", markup=False)
        elif chosen.graph != self.graph or not chosen.has_input:
            why = "another graph's" if chosen.graph != self.graph else "one whose input is not recorded"
            self.notify(f"This run is {why}: run it again from the command line.", title="Runs", markup=False)
        else:
            self.dismiss(Rerun(chosen.run_id, chosen.input))

    def action_dismiss_none(self) -> None:
        """Close the list and stay on the live run."""
        self.dismiss(None)


_HOST_STATUS_STYLES = {**_OUTCOME_STYLES, "running": "cyan", "interrupted": "magenta"}


def host_run_label(summary: HostRun, *, live: bool, graph_width: int = 0) -> Text:
    """One run of the durable host on one line: when, graph, status, how many requests wait, the client
    of a gateway session, its id."""
    line = _when_and_graph(summary, live, graph_width)
    line.append(
        f"  {summary.status:<{_OUTCOME_COLUMN}}", style=_HOST_STATUS_STYLES.get(summary.status, "cyan")
    )
    if summary.pending:
        line.append(f"  {summary.pending} waiting", style="bold yellow")
    _append_client(line, summary.client)
    line.append("  ")
    line.append_text(one_line(summary.run_id, style="dim"))
    return line


@dataclass(frozen=True)
class EndRun:
    """End a running run of the durable host (a gateway client's session, a detached run...)."""

    run_id: str


class HostRunsModal(Guarded, ModalScreen[str | EndRun | None]):
    """The runs of the durable host, newest first, wherever they were started: dismisses with the id of
    the one to show (live ones are followed, ended ones shown from their history), an :class:`EndRun`
    for ``x`` on a running one, or ``None``."""

    DEFAULT_CSS = RunsModal.DEFAULT_CSS.replace("RunsModal", "HostRunsModal")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("x", "end_run", "End run"),
    ]

    def __init__(self, summaries: list[HostRun], live: str | None) -> None:
        super().__init__()
        self.summaries = sorted(summaries, key=lambda s: (s.started_at, s.run_id), reverse=True)
        self.live = live

    def compose(self) -> ComposeResult:
        width = graph_column(self.summaries)
        options = [
            Option(host_run_label(s, live=s.run_id == self.live, graph_width=width), id=s.run_id)
            for s in self.summaries
        ]
        title = "Runs of the run host (Enter shows one: a live run is followed, wherever it started)"
        yield from _runs_dialog(title, options, "No run on the run host yet.")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        chosen = event.option.id
        self.dismiss(None if chosen is None or chosen == self.live else chosen)

    def action_end_run(self) -> None:
        """End the highlighted run, if it is running (the app asks before it ends it)."""
        options = self.query_one(OptionList)
        index = options.highlighted
        if index is None or not self.summaries:
            return
        summary = self.summaries[index]
        if summary.status != "running":
            self.notify("That run has ended already.", markup=False)
            return
        self.dismiss(EndRun(summary.run_id))

    def action_dismiss_none(self) -> None:
        """Close the list and stay on the run shown."""
        self.dismiss(None)
