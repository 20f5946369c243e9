"""Byte caps that never cut a UTF-8 code point in half."""

from __future__ import annotations

import codecs

_CONTINUATION_MIN = 0x80
_CONTINUATION_MAX = 0xBF


def _sequence_length(lead: int) -> int:
    """Length of the UTF-8 sequence a lead byte announces (1 for ASCII and bytes that start no sequence)."""
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 1


def _is_valid(sequence: bytes, *, whole: bool = True) -> bool:
    """Whether ``sequence`` is valid UTF-8 (``whole`` False: or the start of a valid character)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sequence, final=whole)
    except UnicodeDecodeError:
        return False
    return True


def truncate_utf8(data: bytes, cap: int, *, cut_short: bool = False) -> bytes:
    """Return at most ``cap`` bytes of ``data``, never ending inside a code point that ``data`` completes.

    Only a *valid* multi-byte sequence that straddles the cap is dropped whole. Invalid bytes before the cap
    are kept: a decoder replaces a cut invalid sequence with one U+FFFD, exactly as it replaces the uncut
    one, so ``result.decode("utf-8", "replace")`` is always a prefix of ``data.decode("utf-8", "replace")``.

    ``cut_short`` says ``data`` stops where a stream was cut off (a process killed at its cap), not where
    it ended: a sequence that straddles the cap and runs past the end of ``data`` is dropped too when the
    bytes there can start a character, since the rest of that character was never read.
    """
    if cap < 0:
        raise ValueError("cap must not be negative")
    if len(data) <= cap:
        return data
    start = cap
    # A sequence is at most 4 bytes long, so its lead byte is among the last 3 bytes before the cap.
    while start > max(0, cap - 3) and _CONTINUATION_MIN <= data[start - 1] <= _CONTINUATION_MAX:
        start -= 1
    if start == 0:
        return data[:cap]
    lead = start - 1
    length = _sequence_length(data[lead])
    sequence = data[lead : lead + length]
    if lead + length > cap and _is_valid(sequence, whole=not cut_short or len(sequence) == length):
        return data[:lead]
    return data[:cap]
