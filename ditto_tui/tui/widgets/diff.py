"""A file write shown as a unified diff against the file as it is now, read through the sandbox.

Which file a call writes (:class:`FileWrite`) is worked out in :mod:`ditto_tui.supervise.writes`, for
every front end; here it is drawn."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from ditto_tui.errors import DittoError
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.supervise.writes import FileWrite
from ditto_tui.tui.text import render_untrusted
from ditto_tui.tui.widgets.inline import one_line

_LINE_STYLES = {"+": "green", "-": "red", "@": "cyan"}
_SIGNS = ("+", "-", " ", "@")
CONTINUED = "↪"
"""Marks, after the line's own sign, a screen line that continues a diff line too long for the width."""


class DiffText:
    """A heading and diff lines; a line wider than the screen continues on lines that repeat its sign
    and then :data:`CONTINUED`, so a wrapped part is never taken for a line of its own (or unchanged).

    ``plain`` is the text as one string, one diff line per line, as a :class:`~rich.text.Text` has it.
    """

    def __init__(self, heading: Text, lines: list[Text] | None = None) -> None:
        self.heading = heading
        self.lines = lines or []

    @property
    def plain(self) -> str:
        return "\n".join([self.heading.plain, *(line.plain for line in self.lines)])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 4)
        rows = list(self.heading.wrap(console, width))
        for line in self.lines:
            if line.cell_len <= width:
                rows.append(line)
                continue
            sign = line[:1] if line.plain[:1] in _SIGNS else Text()
            parts = _chop(line[len(sign) :], width - len(sign) - 1)
            rows += [
                Text.assemble(sign, (CONTINUED, "dim") if index else "", part)
                for index, part in enumerate(parts)
            ]
        yield Text("\n").join(rows)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((line.cell_len for line in [self.heading, *self.lines]), default=1)
        return Measurement(min(4, widest), widest)


def _chop(text: Text, width: int) -> list[Text]:
    """``text`` cut into pieces at most ``width`` cells wide, every character kept (a wrap by words
    would drop the spaces where it breaks, and a diff must show them)."""
    offsets, used = [], 0
    for index, character in enumerate(text.plain):
        cells = cell_len(character)
        if used + cells > width and used:
            offsets.append(index)
            used = 0
        used += cells
    return list(text.divide(offsets))


def write_diff(write: FileWrite, read_text: Callable[[str], str]) -> Text | DiffText:
    """The unified diff from the current file to the new text; the current file is the first of
    ``write.targets`` that exists (read with ``read_text``, the sandbox's own path rules), else empty.

    Every line is untrusted text: hidden characters show as markers, one diff line per screen line.
    """
    if not write.targets:
        return Text.assemble(
            ("No diff: ", "bold"), one_line(write.path), " does not map to a file of the workspace."
        )
    found = _current(write.targets, read_text)
    if isinstance(found, Text):
        return found
    target, current = found
    if current is None:
        names = ", ".join(write.targets)
        heading = f"{names} does not exist yet: the whole file is new"
        current, target = "", write.targets[0]
    else:
        heading = f"Diff against the current {target}"
    if write.guessed:
        heading += " (the file this call most likely writes; the server decides)"
    return _diff_lines(one_line(heading, style="bold"), target, current, write.text)


def _current(targets: tuple[str, ...], read_text: Callable[[str], str]) -> tuple[str, str | None] | Text:
    """The first target that exists and its text; ``(first, None)`` when none does; why one cannot
    be read (a link out of the workspace, no permission) as the text to show instead of a diff."""
    for target in targets:
        try:
            return target, read_text(target)
        except DittoError as exc:
            if exc.code != "not_found":
                reason = sanitize_public_message(exc.message) or exc.title
                return Text.assemble(("The current file cannot be read: ", "bold"), one_line(reason))
    return targets[0], None


def _diff_lines(heading: Text, target: str, current: str, new: str) -> DiffText:
    out = DiffText(heading)
    lines = list(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{target}",
            tofile=f"b/{target}",
        )
    )
    if not lines:
        out.lines.append(Text("No change: the file already has exactly this text."))
    for line in lines:
        body = line[:-1] if line.endswith("\n") else line
        shown = one_line(body, style=_LINE_STYLES.get(body[:1], ""))
        if not line.endswith("\n") and not line.startswith(("---", "+++", "@@")):
            shown.append(" (no newline at end)", style="dim italic")
        out.lines.append(shown)
    return out


def unified_diff_text(diff: str) -> Text:
    """A unified diff with added and removed lines coloured; the lines themselves stay untrusted text."""
    lines = []
    for line in diff.split("\n"):
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        lines.append(render_untrusted(line, style=style))
    return Text("\n").join(lines)
