"""UTF-8-safe truncation (ADVERSARIAL O-06…O-08) and property 3 of §2.3."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.sandbox import truncate_utf8
from tests.properties import examples

CAP = 65536


def test_o06_three_byte_character_across_the_cap() -> None:
    data = b"a" * (CAP - 1) + "\u20ac".encode()
    assert truncate_utf8(data, CAP) == b"a" * (CAP - 1)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_o06_four_byte_character_at_cap_minus_offset(offset: int) -> None:
    data = b"a" * (CAP - offset) + "\U0001f600".encode() + b"tail"
    assert truncate_utf8(data, CAP) == b"a" * (CAP - offset)


def test_o06_character_ending_exactly_at_the_cap_is_kept() -> None:
    data = b"a" * (CAP - 4) + "\U0001f600".encode() + b"tail"
    assert truncate_utf8(data, CAP) == data[:CAP]


@pytest.mark.parametrize(
    "tail", [b"\xe2\x82", b"\xe2\x82A", b"\xe2A", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff\xfe"]
)
def test_o07_invalid_sequence_at_the_cap_is_kept_as_is(tail: bytes) -> None:
    data = b"a" * 4 + tail + b"zz"
    cut = truncate_utf8(data, 6)
    assert cut == data[:6]
    assert data.decode("utf-8", "replace").startswith(cut.decode("utf-8", "replace"))


def test_o08_graphemes_may_split_code_points_never() -> None:
    data = "e\u0301".encode()
    assert truncate_utf8(data, 1) == b"e"
    assert truncate_utf8(data, 2) == b"e"


def test_short_input_is_returned_whole() -> None:
    assert truncate_utf8(b"abc", 3) == b"abc"
    assert truncate_utf8(b"abc", 0) == b""
    with pytest.raises(ValueError):
        truncate_utf8(b"abc", -1)


_CHUNKS = st.one_of(
    st.binary(max_size=6),
    st.text(max_size=4).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xe2\x82", b"\xf0\x9f\x98", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]),
)
_DATA = st.lists(_CHUNKS, max_size=8).map(b"".join)


@settings(max_examples=examples(400), deadline=None)
@given(data=_DATA, cap=st.integers(min_value=0, max_value=40))
def test_property_3_truncation_is_a_decodable_prefix(data: bytes, cap: int) -> None:
    cut = truncate_utf8(data, cap)
    assert len(cut) <= cap and data.startswith(cut)
    assert data.decode("utf-8", "replace").startswith(cut.decode("utf-8", "replace"))
    if len(cut) < min(cap, len(data)):
        assert any(_is_utf8(data[len(cut) : len(cut) + size]) for size in range(cap - len(cut) + 1, 5))
    if _is_utf8(data):
        cut.decode("utf-8")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
