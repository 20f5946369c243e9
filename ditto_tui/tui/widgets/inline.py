"""Untrusted text on one line of a cell: newlines and tabs as markers, cut or padded to a width."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from ditto_tui.tui.text import render_untrusted


def one_line(text: str, style: Style | str = "") -> Text:
    """``text`` as plain ``Text`` on a single line: ``⏎`` stands for each newline, ``⟨HT⟩`` for each tab."""
    rendered = render_untrusted(text, newlines="visible", tabs="visible", style=style)
    if "\n" not in rendered.plain:
        return rendered
    return Text("", style=style, end="").join(rendered.split("\n", allow_blank=True))


def fit(text: Text, width: int) -> Text:
    """A copy of ``text`` cut with ``…`` or padded with spaces to exactly ``width`` cells."""
    fitted = text.copy()
    fitted.truncate(max(0, width), overflow="ellipsis", pad=True)
    return fitted


def visible(text: str) -> str:
    """``text`` on one line with every hidden character as its marker, as a plain string (for toasts)."""
    return one_line(text).plain
