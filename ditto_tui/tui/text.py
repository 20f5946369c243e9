"""Untrusted text as plain Rich ``Text``: never markup, every hidden or control character made visible.

Scheme: a character that could act on the terminal, reorder the text or hide itself is replaced by a
marker styled with :data:`MARKER_STYLE`. C0 controls and DEL use their ASCII name (``⟨ESC⟩``, ``⟨NUL⟩``,
``⟨BS⟩``, ``⟨CR⟩``, ``⟨DEL⟩``); every other one uses its code point (``⟨U+009B⟩``, ``⟨U+202E⟩``,
``⟨U+E0041⟩``). That covers C1 controls, lone surrogates, line and paragraph separators, format
characters (bidi controls, zero-width characters, tags) and other invisible fillers and selectors. ``\\n``
is kept, or shown as a ``⏎`` marker followed by the newline; ``\\t`` is kept, or shown as ``⟨HT⟩``.
Nothing is dropped: each marker span decodes back to exactly one character (``⏎`` to none, the newline
after it stays), so the input can be recovered from the spans of the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from rich.style import Style
from rich.text import Span, Text

__all__ = [
    "MARKER_STYLE",
    "NEWLINE_MARKER",
    "counted",
    "editable_json",
    "is_plain_line",
    "marked",
    "marker_for",
    "render_untrusted",
    "untrusted_json",
]

MARKER_STYLE = Style(color="magenta", bold=True)
"""The style of every marker, so a marker is told apart from the same characters typed literally."""

NEWLINE_MARKER = "⏎"
"""Shown before each newline when newlines are made visible."""

_C0_NAMES = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
    "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
).split()

# Categories Cc, Cf, Cs, Zl and Zp (Unicode 14, widened to whole reserved blocks so newer format
# characters are caught too), plus invisible characters of other categories: the combining grapheme
# joiner, Hangul fillers, Khmer inherent vowels, Mongolian selectors and variation selectors.
_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)
_HIDDEN_BUT_LINES = re.compile(_HIDDEN.pattern.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f", 1))
""":data:`_HIDDEN` without ``\\n`` and ``\\t``, for text that keeps both."""

_JSON_KEY = Style(color="blue", bold=True)
_JSON_STRING = Style(color="green")
_JSON_NUMBER = Style(color="cyan", bold=True)
_JSON_TRUE = Style(color="bright_green", italic=True)
_JSON_FALSE = Style(color="bright_red", italic=True)
_JSON_NULL = Style(color="magenta", italic=True)
_JSON_OTHER = Style(color="yellow")
_JSON_INDENT = "  "


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless there is one: ``1 page``, ``1,000 tools``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def marker_for(char: str) -> str:
    """The visible marker of one hidden or control character (``⟨ESC⟩``, ``⟨U+202E⟩``)."""
    code = ord(char)
    if code < 0x20:
        return f"⟨{_C0_NAMES[code]}⟩"
    if code == 0x7F:
        return "⟨DEL⟩"
    return f"⟨U+{code:04X}⟩"


def marked(text: str) -> str:
    """``text`` with every hidden or control character but ``\n`` and ``\t`` replaced by its marker, as a
    plain string: for text that another renderer lays out (Markdown), which then holds nothing that acts."""
    return _HIDDEN.sub(_keep_or_mark, text)


def _keep_or_mark(match: re.Match[str]) -> str:
    char = match.group()
    return char if char in "\n\t" else marker_for(char)


def is_plain_line(text: str) -> bool:
    """Whether ``text`` can sit in a one-line input as it is: no newline, tab, control or hidden character."""
    return "\n" not in text and "\t" not in text and _HIDDEN.search(text) is None


def editable_json(value: object) -> str:
    """``value`` as indented JSON for a text editor, with every hidden character written as a ``\\u`` escape.

    JSON already escapes C0 controls; the other hidden characters (C1, bidi, zero-width, tags) can only
    occur inside strings, where a ``\\u`` escape of four hex digits (a surrogate pair above the BMP) means
    the same value.
    """
    return _HIDDEN.sub(_json_escape, json.dumps(value, indent=2, ensure_ascii=False))


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    # Outside strings the only hidden character json.dumps writes is the newline of its indentation.
    return char if char == "\n" else json.dumps(char)[1:-1]


def render_untrusted(
    text: str,
    *,
    newlines: Literal["keep", "visible"] = "keep",
    tabs: Literal["keep", "visible"] = "keep",
    style: Style | str = "",
) -> Text:
    """Untrusted ``text`` as plain ``Text`` in ``style``, with control and hidden characters as markers.

    The result is never parsed as markup, holds no ESC, C1 or other control character except the
    kept ``\\n`` and ``\\t``, and works in time linear in the length of ``text``.
    """
    # Kept newlines and tabs need no work: the scan skips them. The pieces and the markers' spans are
    # collected and joined once, so a long many-line text costs no Text object per line.
    keep_both = newlines == "keep" and tabs == "keep"
    pattern = _HIDDEN_BUT_LINES if keep_both else _HIDDEN
    parts: list[str] = []
    spans: list[Span] = []
    length = start = 0
    for match in pattern.finditer(text):
        index = match.start()
        if index > start:
            parts.append(text[start:index])
            length += index - start
        char = match.group()
        if char == "\n" and newlines == "keep" or char == "\t" and tabs == "keep":
            shown = char
        else:
            marker = NEWLINE_MARKER if char == "\n" else marker_for(char)
            spans.append(Span(length, length + len(marker), MARKER_STYLE))
            shown = marker + "\n" if char == "\n" else marker
        parts.append(shown)
        length += len(shown)
        start = index + 1
    parts.append(text[start:])
    return Text("".join(parts), style=style, end="", no_wrap=False, spans=spans)


def untrusted_json(value: object) -> Text:
    """``value`` as pretty, highlighted JSON built as ``Text``; every string goes through the same rules.

    Quotes and backslashes inside strings are escaped as in JSON, so a string cannot forge a field;
    newlines inside strings are shown with ``⏎``. Values that are not JSON are shown by their ``repr``.
    Works iteratively, so any nesting depth renders.
    """
    out = Text(end="", no_wrap=False)
    # Each work item is either a finished piece of text or a value still to render at a depth.
    stack: list[_Work] = [(value, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, Text):
            out.append_text(item)
        else:
            stack.extend(reversed(_expand(*item)))
    return out


_Work = Text | tuple[object, int]


def _expand(value: object, depth: int) -> list[_Work]:
    """The work items that render ``value`` at ``depth``: pieces of text and nested values."""
    if isinstance(value, Mapping):
        members = [(_json_string(str(key), _JSON_KEY), member) for key, member in value.items()]
        return _container("{", "}", members, depth)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return _container("[", "]", [(None, element) for element in value], depth)
    return [_scalar(value)]


def _container(
    open_: str, close: str, members: Sequence[tuple[Text | None, object]], depth: int
) -> list[_Work]:
    """The work items of a JSON object or array whose members are ``(key or None, value)`` pairs."""
    if not members:
        return [Text(open_ + close)]
    inner = _JSON_INDENT * (depth + 1)
    items: list[_Work] = [Text(open_ + "\n")]
    last = len(members) - 1
    for index, (key, member) in enumerate(members):
        items.append(Text(inner))
        if key is not None:
            items.append(Text.assemble(key, ": "))
        items.append((member, depth + 1))
        items.append(Text(",\n" if index < last else "\n"))
    items.append(Text(_JSON_INDENT * depth + close))
    return items


def _scalar(value: object) -> Text:
    """One JSON scalar (string, number, boolean, null), or the ``repr`` of anything else."""
    if isinstance(value, str):
        return _json_string(value, _JSON_STRING)
    if value is True:
        return Text("true", style=_JSON_TRUE)
    if value is False:
        return Text("false", style=_JSON_FALSE)
    if value is None:
        return Text("null", style=_JSON_NULL)
    if isinstance(value, int | float):
        return Text(json.dumps(value), style=_JSON_NUMBER)
    return render_untrusted(repr(value), newlines="visible", style=_JSON_OTHER)


def _json_string(value: str, style: Style) -> Text:
    """A quoted JSON string: quotes and backslashes escaped, everything else through the same rules."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return Text.assemble('"', render_untrusted(escaped, newlines="visible"), '"', style=style)
