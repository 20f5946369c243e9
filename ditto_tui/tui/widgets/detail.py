"""The detail pane: everything known about one timeline entry, as highlighted JSON, scrollable; what a
person edited (arguments, a paused node's input, a redacted result) also as a diff."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.highlighter import JSONHighlighter
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ditto_tui.contracts import ExternalResult
from ditto_tui.interaction import observe_external_result
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    BreakpointRequested,
    BreakpointResolved,
    ExecutionEvent,
)
from ditto_tui.runtime.events import ReviewResolved
from ditto_tui.supervise.audit import arguments_diff
from ditto_tui.supervise.journal import field_of
from ditto_tui.tui.run_state import Entry, format_seconds, plain
from ditto_tui.tui.text import untrusted_json
from ditto_tui.tui.widgets.diff import unified_diff_text
from ditto_tui.tui.widgets.inline import one_line

_PAYLOADS = ("input", "output", "arguments", "result", "original", "redacted", "data", "nodes")
_IDENTITY = ("kind", "run_id", "seq", "at")
_HEADINGS = {
    "run_started": "Run started",
    "node_started": "Input",
    "node_finished": "Output",
    "node_failed": "Failure",
    "node_skipped": "Skipped",
    "loop_iteration": "Loop iteration",
    "approval_requested": "Approval requested",
    "approval_resolved": "Decision",
    "breakpoint_requested": "Paused before the node",
    "breakpoint_resolved": "Answer at the breakpoint",
    "review_requested": "Result held for review",
    "review_resolved": "Review decision",
    "mode_changed": "Mode changed",
    "run_finished": "Run finished",
    "custom": "Event",
}
_KIND_LABELS = {
    "call": "Tool call",
    "mcp": "MCP",
    "observation": "Observation",
    "output": "Output",
    "node": "Node",
    "approval": "Approval",
    "breakpoint": "Breakpoint",
    "review": "Result review",
    "mode": "Mode",
    "event": "Event",
}
"""What each kind of row is, in the detail's heading; a run's and an iteration's title says it already."""
_RAW_ONLY = ("error_type",)
"""Fields the normalised view leaves to the raw one: ``error`` says the same in words."""
_JSON = JSONHighlighter()


def raw_json(value: Any) -> Text:
    """``value`` exactly as JSON text, every non-ASCII and control character escaped, highlighted."""
    text = json.dumps(plain(value), indent=2, ensure_ascii=True, default=repr)
    return _JSON(Text(text, end=""))


def normalised(value: Any) -> Any:
    """A tool result as the graph observes it (``observe_external_result``); anything else as is."""
    result = field_of(value, "result") if field_of(value, "operation") == "invoke" else value
    if isinstance(result, ExternalResult):
        return observe_external_result(result)
    return value


CLIP_CHARS = 20_000
"""Longest string shown before ``f`` asks for everything (a 100,000-line result would freeze the pane)."""
CLIP_LINES = 400
"""Most lines of one string shown before ``f`` asks for everything."""


def entry_detail(entry: Entry, *, raw: bool, full: bool = False) -> Text:
    """Every event of ``entry`` in order: a heading, its fields, and its payload.

    Very long strings are shown in part unless ``full``; what is left out is counted in a note, never
    dropped silently.
    """
    out = Text(end="")
    duration = f" · {format_seconds(entry.duration_ms / 1000)}" if entry.duration_ms is not None else ""
    out.append_text(one_line(entry_heading(entry), style="bold"))
    out.append(f" · {entry.status}{duration} · {'raw' if raw else 'normalised'} view\n")
    hidden = _Hidden()
    for event in entry.events:
        out.append_text(event_detail(event, raw=raw, hidden=None if full else hidden))
    edit = edit_diff(entry.events)
    if edit:
        out.append("\nThe arguments were edited: what executed, against what was requested\n", style="bold")
        out.append_text(unified_diff_text(edit))
        out.append("\n")
    for heading, diff in changes(entry.events):
        out.append(f"\n{heading}\n", style="bold")
        out.append_text(unified_diff_text(diff))
        out.append("\n")
    if hidden.characters:
        out.append(
            f"\n… {hidden.characters:,} characters of long values not shown: press f to show everything\n",
            style="bold yellow",
        )
    return out


def entry_heading(entry: Entry) -> str:
    """What the row is and its title, without saying either twice: ``Tool call · write_text``,
    ``run write-note``, ``Output``."""
    label = _KIND_LABELS.get(entry.kind, "")
    title = entry.title
    if not title:
        return label
    if not label or title.casefold().startswith(label.casefold()):
        return title
    return label if label.casefold().startswith(title.casefold()) else f"{label} · {title}"


def edit_diff(events: Sequence[ExecutionEvent]) -> str:
    """The unified diff from the requested arguments to the edited ones that ran ("" when not edited)."""
    asked = next((event for event in events if isinstance(event, ApprovalRequested)), None)
    ran = next((event for event in events if isinstance(event, ApprovalResolved) and event.edited), None)
    if asked is None or ran is None or ran.arguments is None:
        return ""
    return "\n".join(arguments_diff(asked.arguments, ran.arguments))


def changes(events: Sequence[ExecutionEvent]) -> Iterator[tuple[str, str]]:
    """What a person changed at a breakpoint or in a result review, as headed unified diffs of the
    pretty JSON: the edited input against the input the node was paused with, the redacted result
    against the original."""
    asked = next((event for event in events if isinstance(event, BreakpointRequested)), None)
    for event in events:
        if isinstance(event, BreakpointResolved) and event.action == "edit" and asked is not None:
            diff = json_diff(asked.input, event.input, "paused with", "ran with")
            if diff:
                yield "The input was edited: what the node ran with, against what it was paused with", diff
        elif isinstance(event, ReviewResolved) and event.action == "redact":
            diff = json_diff(event.original, event.redacted, "original", "redacted")
            if diff:
                yield "The result was redacted: what went on, against what the call returned", diff


def json_diff(before: Any, after: Any, from_label: str, to_label: str) -> str:
    """The unified diff of two values' pretty JSON (keys sorted), ``from_label`` → ``to_label``."""
    old, new = (
        json.dumps(plain(value), ensure_ascii=False, sort_keys=True, indent=2, default=repr).splitlines()
        for value in (before, after)
    )
    return "\n".join(difflib.unified_diff(old, new, from_label, to_label, lineterm=""))


class _Hidden:
    """How much :func:`_clip` left out."""

    def __init__(self) -> None:
        self.characters = 0


def _clip(value: Any, hidden: _Hidden) -> Any:
    """``value`` with every overlong string cut (JSON-shaped values only), counting what was cut."""
    if isinstance(value, str):
        cut = len(value) if value.count("\n") < CLIP_LINES else _nth_newline(value, CLIP_LINES)
        cut = min(cut, CLIP_CHARS)
        if cut < len(value):
            hidden.characters += len(value) - cut
            return value[:cut] + f" … [{len(value) - cut:,} more characters]"
        return value
    if isinstance(value, dict):
        return {key: _clip(item, hidden) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clip(item, hidden) for item in value]
    return value


def _nth_newline(text: str, count: int) -> int:
    index = -1
    for _ in range(count):
        index = text.find("\n", index + 1)
    return index


def event_detail(event: ExecutionEvent, *, raw: bool, hidden: _Hidden | None = None) -> Text:
    """One event: heading with its sequence number and time, fields, then the payload."""
    fields = dict(event)
    when = datetime.fromtimestamp(event.at, UTC).isoformat(timespec="milliseconds")
    out = Text(end="")
    out.append(f"\n{_HEADINGS.get(event.kind, event.kind)}", style="bold underline")
    out.append(f"  #{event.seq} {when}\n", style="dim")
    left_out = _IDENTITY + _PAYLOADS + (() if raw else _RAW_ONLY)
    metadata = {key: value for key, value in fields.items() if key not in left_out}
    if metadata:
        out.append_text(_render(metadata, raw=raw))
        out.append("\n")
    for key in _PAYLOADS:
        if key in fields and fields[key] is not None:
            value = normalised(fields[key]) if key == "output" and not raw else fields[key]
            out.append(f"{key}:\n", style="bold")
            out.append_text(_render(value if hidden is None else _clip(plain(value), hidden), raw=raw))
            out.append("\n")
    return out


def _render(value: Any, *, raw: bool) -> Text:
    return raw_json(value) if raw else untrusted_json(plain(value))


class TextView(ScrollView, can_focus=True):
    """A long ``Text`` wrapped to the pane's width; only the lines on screen are drawn."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text()
        self._lines: list[Strip] = []
        self._wrapped_at = -1

    def show(self, text: Text) -> None:
        """Replace the content with ``text``, scrolled to the top."""
        self._text = text
        self._wrapped_at = -1
        self.scroll_to(0, 0, animate=False)
        self._wrap()

    @property
    def text(self) -> Text:
        """What the view shows."""
        return self._text

    def _wrap(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._wrapped_at:
            return
        self._wrapped_at = width
        console = self.app.console
        lines = console.render_lines(self._text, console.options.update_width(width), pad=False)
        self._lines = [Strip(line) for line in lines]
        self.virtual_size = Size(0, len(self._lines))
        self.refresh()

    def on_resize(self) -> None:
        """Wrap again for the new width."""
        self._wrap()

    def watch_show_vertical_scrollbar(self) -> None:
        """Wrap again when the scroll bar comes or goes: the text's width changes, the pane's does not
        (Textual's own TextArea does the same)."""
        self._wrap()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = self.scroll_offset.y + y
        if row >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[row].crop_extend(0, width, self.rich_style)
