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
    """One line summing up the run; the screen calls :meth:`show` after each batch and each tick, and
    :meth:`redraw` when the mode changes between them.

    When the whole line does not fit, the node counts drop their words (``✓6``), then the mode its
    ``mode``, so the pending approvals and the mode stay on screen at 80 columns.
    """

    _last: tuple[RunModel, float] | None = None

    def show(self, model: RunModel, now: float) -> None:
        """Show ``model`` as it stands at wall time ``now``."""
        self._last = (model, now)
        width = self.content_region.width or self.size.width
        for counts, mode in ((False, False), (True, False), (True, True)):
            text = self._line(model, now, short_counts=counts, short_mode=mode)
            if not width or text.cell_len <= width:
                break
        self.set_class(model.finished, "-finished")
        self.update(text, layout=False)  # one line, whatever it says: no layout pass per batch

    def redraw(self) -> None:
        """Show the last model again (the mode changed, or the width did)."""
        if self._last is not None:
            self.show(*self._last)

    def on_mount(self) -> None:
        if hasattr(self.app, "mode_changes"):  # the live app: redraw when the mode changes
            self.watch(self.app, "mode_changes", self.redraw, init=False)

    def on_resize(self) -> None:
        self.redraw()

    def _line(self, model: RunModel, now: float, *, short_counts: bool, short_mode: bool) -> Text:
        counts = model.counts()
        text = Text.assemble((f" {PHASE_LABELS[model.phase]} ", f"bold reverse {_phase_colour(model.phase)}"))
        mode = getattr(self.app, "session_mode", "ask")
        if mode != "ask":  # first, where a narrow terminal still shows it
            named = mode if short_mode else f"{mode} mode"
            text.append(f" ⏵ {named} ({MODE_KEY}) ", style="bold reverse yellow")
        gap = " " if short_counts else "  "
        text.append(f"{gap}{format_seconds(model.elapsed(now))}{gap}")
        for state in NODE_STATES:
            count = counts.get(state, 0)
            if state == "cancelled" and not count:
                continue
            shown = f"{GLYPHS[state]}{count} " if short_counts else f"{GLYPHS[state]} {count} {state} "
            text.append(shown, style="" if count else "dim")
        waiting = len(model.pending_approvals)
        text.append(
            f"│ {waiting} approval{'s' if waiting != 1 else ''} pending" + (" (p)" if waiting else ""),
            style="bold magenta" if waiting else "dim",
        )
        return text


def _phase_colour(phase: str) -> str:
    return {"succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(phase, "blue")
