"""The live timeline: one row per call, observation, output, approval, breakpoint, result review, mode
change or run event, drawn lazily."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from ditto_tui.tui.run_state import Entry, format_seconds
from ditto_tui.tui.widgets.inline import fit, one_line

KIND_GLYPHS = {
    "run": "▶",
    "iteration": "↻",
    "call": "⚙",
    "mcp": "⇄",
    "observation": "◉",
    "output": "⇥",
    "node": "·",
    "approval": "⏸",
    "breakpoint": "●",
    "review": "⚑",
    "mode": "⏵",
    "event": "•",
}
_GOOD = frozenset({"success", "accepted", "succeeded", "approved", "always", "done", "continued", "passed"})
_EDITED = "✎"
"""Ends the status of a person's edit that went on: an edited input, a given output, a redaction."""
_WAITING = frozenset({"running", "pending", "paused", "held"})
RESIZE_SECONDS = 0.25
"""How often, at most, a growing timeline takes its new length (a layout pass of the whole screen)."""
_TIME, _GLYPH, _NODE, _TITLE, _STATUS, _DURATION = 8, 2, 10, 16, 10, 6


def status_class(status: str) -> str:
    """The component class that colours a status: good, bad or waiting."""
    if status in _GOOD or status.startswith(("approved", "always")) or status.endswith(_EDITED):
        return "timeline--good"
    if status in _WAITING or status.startswith(("▰", "▱", "step ")):
        return "timeline--waiting"
    return "timeline--bad"


class Timeline(ScrollView, can_focus=True):
    """Every entry of the run, newest last; only the rows on screen are ever drawn.

    It follows the newest entry until the user moves the cursor elsewhere; ``end`` follows again.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--cursor",
        "timeline--time",
        "timeline--node",
        "timeline--title",
        "timeline--good",
        "timeline--bad",
        "timeline--waiting",
        "timeline--dim",
    }
    DEFAULT_CSS = """
    Timeline > .timeline--cursor { background: $accent 30%; text-style: bold; }
    Timeline > .timeline--time { color: $text-muted; }
    Timeline > .timeline--node { color: $secondary; }
    Timeline > .timeline--title { text-style: bold; }
    Timeline > .timeline--good { color: $success; }
    Timeline > .timeline--bad { color: $error; }
    Timeline > .timeline--waiting { color: $warning; }
    Timeline > .timeline--dim { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Follow", show=False),
    ]

    class EntrySelected(Message):
        """The user selected a timeline entry."""

        def __init__(self, entry: Entry) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.cursor = -1
        self.follow = True
        self.rendered_rows = 0
        self._entries: Sequence[Entry] = ()
        self._origin = 0.0
        self._cache: LRUCache[tuple[int, int, int, bool], Strip] = LRUCache(1024)
        self._resized_at = 0.0
        self._resize_timer: Timer | None = None

    # -- attributes down --------------------------------------------------------------------------------

    def show(self, entries: Sequence[Entry], origin: float | None) -> None:
        """Show ``entries`` (the model's growing list); times are relative to ``origin``.

        A new row count means a layout pass for the whole screen, so while rows pour in the count is
        taken at most every :data:`RESIZE_SECONDS` (and always once they stop); rows already counted
        redraw at once.
        """
        self._entries = entries
        self._origin = origin if origin is not None else (entries[0].at if entries else 0.0)
        if len(entries) != self.virtual_size.height and self._resize_timer is None:
            wait = RESIZE_SECONDS - (time.monotonic() - self._resized_at)
            if wait <= 0:
                self._resize()
            else:
                self._resize_timer = self.set_timer(wait, self._resize)
        self.refresh()

    def _resize(self) -> None:
        self._resize_timer = None
        self._resized_at = time.monotonic()
        self.virtual_size = Size(0, len(self._entries))
        if self.follow:
            bottom = max(0, len(self._entries) - self.scrollable_content_region.height)
            self.scroll_to(y=bottom, animate=False, force=True)

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """Put a bar that appears where the rows are: Textual moves the bar only while it is shown, so a
        scroll made before the new length had its layout left it at the top."""
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def select(self, index: int) -> None:
        """Put the cursor on row ``index`` without announcing it."""
        if 0 <= index < len(self._entries):
            self._move_to(index)

    @property
    def selected(self) -> Entry | None:
        """The entry under the cursor, if any."""
        return self._entries[self.cursor] if 0 <= self.cursor < len(self._entries) else None

    # -- drawing ----------------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"timeline--{name}")

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = self.scroll_offset.y + y
        if index >= len(self._entries):
            return Strip.blank(width, self.rich_style)
        entry = self._entries[index]
        key = (index, entry.version, width, index == self.cursor)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._cache[key] = self._row(entry, width, index == self.cursor)
        self.rendered_rows = max(self.rendered_rows, index + 1)
        return strip

    def _row(self, entry: Entry, width: int, selected: bool) -> Strip:
        fixed = _TIME + _GLYPH + _NODE + _TITLE + _STATUS + _DURATION + 4
        summary_width = max(0, width - fixed)
        duration = format_seconds(entry.duration_ms / 1000) if entry.duration_ms is not None else ""
        row = Text.assemble(
            fit(Text(f"+{max(0.0, entry.at - self._origin):.2f}s", style=self._style("time")), _TIME),
            fit(Text(KIND_GLYPHS.get(entry.kind, "·")), _GLYPH),
            fit(one_line(entry.node_id or "", style=self._style("node")), _NODE),
            " ",
            fit(one_line(entry.title, style=self._style("title")), _TITLE),
            " ",
            fit(one_line(entry.summary, style=self._style("dim")), summary_width),
            " ",
            fit(Text(entry.status, style=self.get_component_rich_style(status_class(entry.status))), _STATUS),
            " ",
            fit(Text(duration.rjust(_DURATION), style=self._style("dim")), _DURATION),
        )
        base = self.rich_style + self._style("cursor") if selected else self.rich_style
        strip = Strip(list(row.render(self.app.console)))
        return strip.apply_style(base).crop_extend(0, width, base)

    # -- the cursor -------------------------------------------------------------------------------------

    def _move_to(self, index: int) -> None:
        self.cursor = index
        self.follow = index == len(self._entries) - 1
        self._reveal(index)
        self.refresh()

    def _reveal(self, index: int) -> None:
        """Scroll the least needed to show row ``index``."""
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        if index < top:
            self.scroll_to(y=index, animate=False, force=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, force=True)

    def _choose(self, index: int) -> None:
        if not self._entries:
            return
        index = max(0, min(len(self._entries) - 1, index))
        self._move_to(index)
        self.post_message(self.EntrySelected(self._entries[index]))

    def action_cursor(self, step: int) -> None:
        """Move the cursor ``step`` rows (from the newest row when nothing is selected)."""
        start = self.cursor if self.cursor >= 0 else len(self._entries)
        self._choose(start + step)

    def action_page(self, pages: int) -> None:
        """Move the cursor a screenful."""
        self.action_cursor(pages * max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        """Select the first row."""
        self._choose(0)

    def action_last(self) -> None:
        """Select the newest row and follow new ones."""
        self._choose(len(self._entries) - 1)

    def on_click(self, event: events.Click) -> None:
        """Select the row under the pointer."""
        offset = event.get_content_offset(self)
        if offset is not None and self.scroll_offset.y + offset.y < len(self._entries):
            self._choose(self.scroll_offset.y + offset.y)
