"""The status bar: run state, elapsed time, nodes by state, pending approvals and the mode (when it is
not ``ask``)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ditto_tui.tui.run_state import GLYPHS, NODE_STATES, RunModel, format_seconds

MODE_KEY = "M"
"""The app's key that cycles the session's mode (the status bar names it when the mode is not ``ask``)."""

PHASE_LABELS = {
    "starting": "starting",
    "running": "running",
    "succeeded": "finished",
    "failed": "failed",
    "cancelled": "cancelled",
}


class RunStatus(Static):
    """One line summing up the run; the screen calls :meth:`show` after each batch and each tick."""

    def show(self, model: RunModel, now: float) -> None:
        """Show ``model`` as it stands at wall time ``now``."""
        counts = model.counts()
        text = Text.assemble((f" {PHASE_LABELS[model.phase]} ", f"bold reverse {_phase_colour(model.phase)}"))
        mode = getattr(self.app, "session_mode", "ask")
        if mode != "ask":  # first, where a narrow terminal still shows it
            text.append(f" ⏵ {mode} mode ({MODE_KEY}) ", style="bold reverse yellow")
        text.append(f"  {format_seconds(model.elapsed(now))}  ")
        for state in NODE_STATES:
            count = counts.get(state, 0)
            text.append(f"{GLYPHS[state]} {count} {state} ", style="" if count else "dim")
        waiting = len(model.pending_approvals)
        text.append(
            f"│ {waiting} approval{'s' if waiting != 1 else ''} pending" + (" (p)" if waiting else ""),
            style="bold magenta" if waiting else "dim",
        )
        self.set_class(model.finished, "-finished")
        self.update(text, layout=False)  # one line, whatever it says: no layout pass per batch


def _phase_colour(phase: str) -> str:
    return {"succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(phase, "blue")
