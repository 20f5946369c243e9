"""V-11 (output): output cut inside a multi-byte character ends at the last whole character, in the real
executor's capture and in the results the command tools build from it."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.sandbox import create_local_sandbox_executor, truncate_utf8
from ditto_tui.sandbox._process import StreamCapture
from tests.interaction.commands.command_harness import CommandHarness
from tests.properties import examples
from tests.typed import structured

WHOLE = 50
"""How many whole characters fit before the cap in each case."""

CUTS = [(char, inside) for char in ("é", "€", "\U0001f600") for inside in range(1, len(char.encode()))]
"""Every way a cap can fall inside a 2-, 3- or 4-byte character: (character, bytes of it before the cap)."""


def _cap(char: str, inside: int) -> int:
    return WHOLE * len(char.encode()) + inside


def _ends_at_the_last_whole_character(data: bytes, char: str) -> None:
    text = data.decode("utf-8")  # strict: no byte of a cut character is left
    assert "\ufffd" not in text and text == char * WHOLE


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.mark.parametrize(("char", "inside"), CUTS)
async def test_v11_the_executor_cuts_stdout_at_the_last_whole_character(
    root: Path, char: str, inside: int
) -> None:
    (root / "data").write_text(char * (WHOLE * 4), encoding="utf-8")
    executor = create_local_sandbox_executor(root)
    result = await executor.run("cat", ["data"], max_stdout_bytes=_cap(char, inside), max_stderr_bytes=1024)
    assert result.stdout_truncated
    _ends_at_the_last_whole_character(result.stdout, char)


@pytest.mark.parametrize(("char", "inside"), CUTS)
async def test_v11_the_executor_cuts_stderr_at_the_last_whole_character(
    root: Path, char: str, inside: int
) -> None:
    (root / "data").write_text(char * (WHOLE * 4), encoding="utf-8")
    executor = create_local_sandbox_executor(root)
    result = await executor.run(
        "sh", ["-c", "cat data >&2"], max_stdout_bytes=1024, max_stderr_bytes=_cap(char, inside)
    )
    assert result.stderr_truncated
    _ends_at_the_last_whole_character(result.stderr, char)


@pytest.mark.parametrize(("char", "inside"), CUTS)
def test_v11_a_character_split_across_chunks_at_the_cap_is_dropped_whole(char: str, inside: int) -> None:
    capture = StreamCapture(_cap(char, inside), overflow_allowance=0)
    for byte in (char * (WHOLE + 2)).encode():  # one byte per read, as a slow pipe delivers it
        if capture.feed(bytes([byte])):
            break
    assert capture.truncated
    _ends_at_the_last_whole_character(capture.value(), char)


@pytest.mark.parametrize(("char", "inside"), [(char, inside) for char, inside in CUTS if inside >= 2])
async def test_v11_a_command_killed_before_it_finishes_a_character_ends_at_the_last_whole_one(
    root: Path, char: str, inside: int
) -> None:
    """The cap is passed, and the command killed, with only part of a character written: the rest never
    arrives, and what was kept still ends at the last whole character."""
    encoded = char.encode()
    octal = "".join(f"\\{byte:03o}" for byte in encoded)
    head, rest = octal[: 4 * inside], octal[4 * inside :]
    script = f"printf '{octal * WHOLE}{head}'; sleep 5; printf '{rest}tail'"
    executor = create_local_sandbox_executor(root)
    cap = _cap(char, inside) - 1  # the cap falls inside the character, one byte before what was written
    result = await executor.run("sh", ["-c", script], max_stdout_bytes=cap, max_stderr_bytes=1024)
    assert result.stdout_truncated and result.exit_code < 0  # killed at the cap, not after the sleep
    _ends_at_the_last_whole_character(result.stdout, char)


@pytest.mark.parametrize(
    ("data", "cap", "kept"),
    [
        (b"aaa\xe2\x82", 4, b"aaa"),  # the start of a character whose end was never read
        (b"aaa\xf0\x9f\x98", 4, b"aaa"),
        (b"aaa\xf0\x9f", 4, b"aaa"),
        (b"aaa\xe2A", 4, b"aaa\xe2"),  # invalid already: kept as it is, as without cut_short
        (b"aaa\xc3", 3, b"aaa"),
    ],
)
def test_v11_a_stream_cut_short_drops_a_character_it_never_finished(
    data: bytes, cap: int, kept: bytes
) -> None:
    assert truncate_utf8(data, cap, cut_short=True) == kept
    assert data.decode("utf-8", "replace").startswith(kept.decode("utf-8", "replace"))


@pytest.mark.parametrize(("char", "inside"), CUTS)
async def test_v11_a_tool_result_cut_inside_a_character_ends_at_the_last_whole_one(
    root: Path, char: str, inside: int
) -> None:
    (root / "data").write_text(char * (WHOLE * 4), encoding="utf-8")
    harness = CommandHarness(root, max_output_bytes=_cap(char, inside))
    result = await harness.call("cat", {"path": "data"})
    assert result.status == "success"
    assert result.content == char * WHOLE
    assert structured(result)["stdout"] == char * WHOLE
    assert structured(result)["truncated"]["stdout"]["bytes"] is True


@pytest.mark.parametrize("cap", range(101, 105))
async def test_v11_the_tools_own_byte_cap_also_ends_at_a_whole_character(root: Path, cap: int) -> None:
    """An invalid byte becomes U+FFFD (3 bytes), so the text outgrows what the executor kept: the tool's
    own cap then cuts it again, and that cut too ends at the last whole character."""
    emoji = "\U0001f600"
    (root / "data").write_bytes(b"\xff" + (emoji * 100).encode())
    result = await CommandHarness(root, max_output_bytes=cap).call("cat", {"path": "data"})
    text = str(result.content)
    assert len(text.encode("utf-8")) <= cap
    assert text == "\ufffd" + emoji * ((cap - 3) // 4)  # the invalid byte's mark, then whole emoji only


_CHUNKS = st.one_of(
    st.binary(max_size=4),
    st.text(max_size=3).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xe2\x82", b"\xf0\x9f\x98", b"\xf0\x9f", b"\xc3", b"\x80", b"\xed\xa0", b"\xf4\x90"]),
)


@settings(max_examples=examples(400), deadline=None)
@given(data=st.lists(_CHUNKS, max_size=6).map(b"".join), cap=st.integers(min_value=0, max_value=24))
def test_v11_a_stream_cut_short_is_still_a_decodable_prefix(data: bytes, cap: int) -> None:
    cut = truncate_utf8(data, cap, cut_short=True)
    assert len(cut) <= cap and data.startswith(cut)
    assert data.decode("utf-8", "replace").startswith(cut.decode("utf-8", "replace"))
    if len(data) <= cap:
        assert cut == data
        return
    assert len(cut) >= cap - 3  # at most one character is dropped
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return
    cut.decode("utf-8")  # cut from the start of valid text: whole characters only
