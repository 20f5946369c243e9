"""The untrusted-text renderer: plain Text, every hidden character visible, nothing silently dropped."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from ditto_tui.tui.text import MARKER_STYLE, NEWLINE_MARKER, marker_for, render_untrusted, untrusted_json

_C0 = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
    "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
).split()


def _decode_marker(marker: str) -> str:
    """The character a marker stands for ('' for the newline marker, whose newline follows it)."""
    if marker == NEWLINE_MARKER:
        return ""
    name = marker.removeprefix("⟨").removesuffix("⟩")
    if name == "DEL":
        return "\x7f"
    if name.startswith("U+"):
        return chr(int(name[2:], 16))
    return chr(_C0.index(name))


def decode(text: Text) -> str:
    """The original input of ``render_untrusted``, recovered from the marker spans of its result."""
    plain = text.plain
    markers = sorted((span.start, span.end) for span in text.spans if span.style == MARKER_STYLE)
    pieces: list[str] = []
    position = 0
    for start, end in markers:
        pieces.append(plain[position:start])
        pieces.append(_decode_marker(plain[start:end]))
        position = end
    pieces.append(plain[position:])
    return "".join(pieces)


def _is_hidden(char: str) -> bool:
    return unicodedata.category(char) in {"Cc", "Cf", "Cs", "Zl", "Zp"} and char not in "\n\t"


@given(st.text(alphabet=st.characters(codec=None)), st.sampled_from(["keep", "visible"]))
def test_render_untrusted_property_no_controls_and_maps_back(text: str, newlines: str) -> None:
    """ADVERSARIAL §2.3 property 5: no ESC or C1 controls, never raises, maps back to the input."""
    rendered = render_untrusted(text, newlines=newlines)  # type: ignore[arg-type]
    assert not any(_is_hidden(char) for char in rendered.plain)
    assert "\x1b" not in rendered.plain
    assert not any(0x80 <= ord(char) <= 0x9F for char in rendered.plain)
    assert decode(rendered) == text


@given(st.text(alphabet=st.sampled_from("ab[]/\x1b\x9b\u202e\u200b\n\r\t\b\x00\udc80⟨⟩⏎")))
def test_render_untrusted_property_on_a_hostile_alphabet(text: str) -> None:
    rendered = render_untrusted(text, newlines="visible", tabs="visible")
    assert decode(rendered) == text
    assert not any(_is_hidden(char) or char == "\t" for char in rendered.plain)


def test_every_control_and_format_character_of_this_python_is_made_visible() -> None:
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if _is_hidden(char):
            assert render_untrusted(char).plain == marker_for(char), hex(code)


def test_markup_is_never_parsed() -> None:
    for text in ["[bold red]APPROVED[/]", "[/b]", "[@click=app.quit]x[/]", "[/", "\\[bold]"]:
        rendered = render_untrusted(text)
        assert rendered.plain == text
        assert rendered.spans == []


def test_markers_use_names_for_c0_and_code_points_for_the_rest() -> None:
    assert render_untrusted("a\x1b[2Jb").plain == "a⟨ESC⟩[2Jb"
    assert render_untrusted("\x00\x7f\x9b").plain == "⟨NUL⟩⟨DEL⟩⟨U+009B⟩"
    assert render_untrusted("evil\u202etxt").plain == "evil⟨U+202E⟩txt"
    assert render_untrusted("\U000e0041").plain == "⟨U+E0041⟩"
    assert render_untrusted("safe\b\bx\r").plain == "safe⟨BS⟩⟨BS⟩x⟨CR⟩"


def test_newlines_and_tabs_are_kept_or_shown() -> None:
    assert render_untrusted("a\nb\tc").plain == "a\nb\tc"
    assert render_untrusted("a\nb", newlines="visible").plain == "a⏎\nb"
    assert render_untrusted("a\tb", tabs="visible").plain == "a⟨HT⟩b"
    assert render_untrusted("a\u2028b\r\n", newlines="visible").plain == "a⟨U+2028⟩b⟨CR⟩⏎\n"


def test_markers_are_styled_and_the_base_style_applies() -> None:
    rendered = render_untrusted("x\x1by", style="green")
    assert rendered.style == "green"
    assert [(span.start, span.end, span.style) for span in rendered.spans] == [(1, 6, MARKER_STYLE)]


def test_render_untrusted_is_linear_on_a_long_line() -> None:
    line = ("a\x1b[31m" * 150_000)[: 1 << 20]
    rendered = render_untrusted(line)
    assert decode(rendered) == line


def test_rendered_output_carries_no_escape_from_the_input() -> None:
    console = Console(force_terminal=True, color_system="truecolor", width=80)
    with console.capture() as capture:
        console.print(render_untrusted("\x1b]52;c;Y3VybA==\x07 \x9b2J \x1bP1;2\x1b\\"))
    output = capture.get()
    assert "\x1b]" not in output and "\x9b" not in output and "\x1bP" not in output
    assert re.sub(r"\x1b\[[0-9;]*m", "", output) == "⟨ESC⟩]52;c;Y3VybA==⟨BEL⟩ ⟨U+009B⟩2J ⟨ESC⟩P1;2⟨ESC⟩\\\n"


def test_untrusted_json_is_pretty_and_valid_for_plain_strings() -> None:
    value: dict[str, Any] = {"a": [1, 2.5, True, False, None, {}], "b": "text", "c": [], "n": {"x": "y"}}
    assert untrusted_json(value).plain == json.dumps(value, indent=2)


def test_untrusted_json_strings_cannot_forge_fields() -> None:
    value = {"path": 'x", "approve": "yes', "back\\slash": "a\nb\x1b"}
    plain = untrusted_json(value).plain
    assert '"path": "x\\", \\"approve\\": \\"yes"' in plain
    assert '"back\\\\slash": "a⏎\nb⟨ESC⟩"' in plain


def test_untrusted_json_marks_hidden_characters_in_keys_and_values() -> None:
    plain = untrusted_json({"k\u202e": ["\u200b"]}).plain
    assert "k⟨U+202E⟩" in plain and "⟨U+200B⟩" in plain


def test_untrusted_json_shows_non_json_values_by_repr() -> None:
    assert untrusted_json(b"\x1b").plain == "b'\\x1b'"
    assert untrusted_json({1: (2,)}).plain == '{\n  "1": [\n    2\n  ]\n}'


@pytest.mark.parametrize("depth", [3000])
def test_untrusted_json_renders_any_depth(depth: int) -> None:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    plain = untrusted_json(value).plain
    assert plain.count("[") == depth and '"leaf"' in plain


def _reference(text: str, newlines: str, tabs: str) -> tuple[str, list[tuple[int, int]]]:
    """render_untrusted one character at a time: the plain text and where the markers are."""
    plain, marks = "", []
    for char in text:
        if char == "\n" and newlines == "keep" or char == "\t" and tabs == "keep":
            plain += char
        elif char == "\n":
            marks.append((len(plain), len(plain) + len(NEWLINE_MARKER)))
            plain += NEWLINE_MARKER + "\n"
        elif char == "\t" or re.fullmatch(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e]", char):
            marks.append((len(plain), len(plain) + len(marker_for(char))))
            plain += marker_for(char)
        else:
            plain += char
    return plain, marks


@given(
    st.text(alphabet=st.sampled_from("ab \n\t\x1b\x00\x9b\u202e\u200b"), max_size=60),
    st.sampled_from(["keep", "visible"]),
    st.sampled_from(["keep", "visible"]),
)
def test_render_untrusted_matches_a_character_by_character_rendering(
    text: str, newlines: Any, tabs: Any
) -> None:
    shown = render_untrusted(text, newlines=newlines, tabs=tabs, style="dim")
    plain, marks = _reference(text, newlines, tabs)
    assert shown.plain == plain and shown.style == "dim"
    assert [(span.start, span.end) for span in shown.spans] == marks
    assert all(span.style == MARKER_STYLE for span in shown.spans)
