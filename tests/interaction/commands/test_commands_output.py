"""Output bounding with real commands over the hostile tree (ADVERSARIAL O group) and property 3's twin."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import CommandTimeoutError
from ditto_tui.interaction.commands._output import bound_stream
from tests.interaction.commands.command_harness import CommandHarness, everything, rule
from tests.properties import examples
from tests.sandbox.hostile_tree import BOUNDARY, Hostile
from tests.typed import structured

CAP = 65536


def _truncated(result: ExternalResult, stream: str = "stdout") -> dict[str, bool]:
    flags: dict[str, bool] = structured(result)["truncated"][stream]
    return flags


def _utf8_size(text: object) -> int:
    return len(str(text).encode("utf-8"))


async def test_o01_sparse_2gib_file_is_cut_at_the_cap_and_the_child_killed(
    harness: CommandHarness, hostile: Hostile
) -> None:
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = await harness.call("cat", {"path": "big"})
        elapsed = time.monotonic() - started
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status == "success"
    assert structured(result)["exitCode"] == -9
    assert _truncated(result) == {"bytes": True, "entries": False}
    assert 0 < _utf8_size(result.content) <= CAP
    assert "\x00" not in str(result.content)
    assert elapsed < 2 and peak < 10 * 1024 * 1024


async def test_o02_a_million_short_lines_yield_exactly_max_entries(
    harness: CommandHarness, hostile: Hostile
) -> None:
    (hostile.root / "lines").write_bytes(b"x\n" * 1_000_000)
    result = await harness.call("cat", {"path": "lines"})
    assert result.content == "x\n" * 1000
    assert _truncated(result) == {"bytes": True, "entries": True}


async def test_o03_a_10mib_line_is_cut_by_bytes_only(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "line10").write_bytes(b"y" * (10 * 1024 * 1024))
    tracemalloc.start()
    try:
        result = await harness.call("cat", {"path": "line10"})
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.content == "y" * CAP
    assert _truncated(result) == {"bytes": True, "entries": False}
    assert peak < 4 * 1024 * 1024


async def test_o04_the_byte_cap_can_hit_before_the_line_cap(
    harness: CommandHarness, hostile: Hostile
) -> None:
    (hostile.root / "wide").write_bytes((b"z" * 99 + b"\n") * 1000)
    result = await harness.call("cat", {"path": "wide"})
    assert _truncated(result) == {"bytes": True, "entries": False}
    assert _utf8_size(result.content) == CAP
    assert str(result.content).count("\n") == CAP // 100


async def test_o05_invalid_utf8_becomes_replacement_characters(harness: CommandHarness) -> None:
    result = await harness.call("cat", {"path": "invalid_utf8"})
    text = str(result.content)
    assert text.startswith("ok \ufffd") and "\ufffd" in text[-3:]
    text.encode("utf-8")


@pytest.mark.parametrize(("name", "kept"), [("boundary3", BOUNDARY - 1), ("boundary4", BOUNDARY - 2)])
async def test_o06_fixture_characters_across_the_cap_are_dropped_whole(
    harness: CommandHarness, name: str, kept: int
) -> None:
    result = await harness.call("cat", {"path": name})
    assert result.content == "a" * kept
    assert _truncated(result)["bytes"] is True


@pytest.mark.parametrize("offset", [1, 2, 3])
async def test_o06_four_byte_character_at_cap_minus_offset(
    harness: CommandHarness, hostile: Hostile, offset: int
) -> None:
    (hostile.root / "emoji").write_bytes(b"a" * (CAP - offset) + "\U0001f600".encode() + b"tail")
    result = await harness.call("cat", {"path": "emoji"})
    assert result.content == "a" * (CAP - offset)


def _missing_names(cap: int, lead: int, char: str) -> list[str]:
    """Missing file names whose grep errors put ``char`` at byte ``cap - lead`` of stderr."""
    names = [f"missing-{index}-" + "m" * 180 for index in range(4)]
    written = sum(len(f"grep: ./{name}: No such file or directory\n") for name in names)
    pad = cap - lead - written - len("grep: ./")
    return [*names, "p" * pad + char * 20]


@pytest.mark.parametrize(
    ("lead", "char"), [(1, "\u20ac"), (2, "\u20ac"), (1, "\U0001f600"), (3, "\U0001f600")]
)
async def test_o06_multibyte_character_across_the_stderr_cap(hostile: Hostile, lead: int, char: str) -> None:
    cap = 1024
    harness = CommandHarness(hostile.root, max_error_bytes=cap)
    result = await harness.call("grep", {"pattern": "x", "paths": _missing_names(cap, lead, char)})
    stderr = structured(result)["stderr"]
    assert _truncated(result, "stderr")["bytes"] is True
    assert len(stderr.encode("utf-8")) == cap - lead
    assert stderr.endswith("p")


async def test_o07_cap_inside_an_invalid_sequence(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "split").write_bytes(b"a" * (CAP - 2) + b"\xe2\x82" + b"b" * 10)
    result = await harness.call("cat", {"path": "split"})
    text = str(result.content)
    assert _utf8_size(text) <= CAP and text.count("\ufffd") <= 1
    assert text.startswith("a" * (CAP - 2))


async def test_o08_graphemes_may_split_but_code_points_never(
    harness: CommandHarness, hostile: Hostile
) -> None:
    (hostile.root / "accent").write_bytes(b"a" * (CAP - 1) + "e\u0301".encode() + b"more")
    result = await harness.call("cat", {"path": "accent"})
    assert result.content == "a" * (CAP - 1) + "e"


async def test_o09_stderr_is_capped_while_stdout_is_delivered(hostile: Hostile) -> None:
    harness = CommandHarness(hostile.root, max_error_bytes=512)
    names = [f"gone-{index}-" + "g" * 200 for index in range(15)]
    result = await harness.call("grep", {"pattern": "inner", "paths": [*names, "sub/inner.txt"]})
    content = structured(result)
    assert result.status == "failed" and content["exitCode"] == 2
    assert content["stdout"] == "./sub/inner.txt:1:inner\n"
    assert len(content["stderr"].encode()) <= 512 and _truncated(result, "stderr")["bytes"] is True


async def test_o10_fifos_are_refused_and_recursion_skips_them(
    harness: CommandHarness, hostile: Hostile
) -> None:
    for tool, args in (
        ("cat", {"path": "fifo"}),
        ("head", {"path": "fifo"}),
        ("tail", {"path": "fifo"}),
        ("grep", {"pattern": "x", "paths": ["fifo"]}),
        ("grep", {"pattern": "x", "paths": ["fifo"], "recursive": True}),
        ("wc", {"path": "fifo"}),
    ):
        error = await harness.refused(tool, args)
        assert rule(error) == "not_regular_file"
    recursive = await asyncio.wait_for(
        harness.call("grep", {"pattern": "inner", "paths": ["."], "recursive": True}), timeout=10
    )
    assert recursive.content == "./sub/inner.txt:1:inner\n"
    listed = await harness.call("stat", {"path": "fifo"})
    assert "fifo" in str(listed.content)


async def test_o11_sockets_and_device_links_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    os.symlink("/dev/zero", hostile.root / "zero")
    assert rule(await harness.refused("cat", {"path": "zero"})) == "outside_workspace"
    path = hostile.root / "sock"
    if len(str(path)) >= 100:
        pytest.skip("the temporary path is too long for a unix socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        assert rule(await harness.refused("cat", {"path": "sock"})) == "not_regular_file"


async def test_o12_huge_and_deep_trees_are_bounded(harness: CommandHarness, hostile: Hostile) -> None:
    """Scaled down to keep the suite fast: 1,200 files pass the entry cap, and a tree deeper than the
    largest ``maxDepth`` shows the walk is the program's, bounded by that depth; the worker itself never
    walks a tree (it only resolves the components of the path it is given), so depth cannot crash it."""
    many = hostile.root / "many"
    many.mkdir()
    for index in range(1_200):
        os.close(os.open(many / f"f{index:05}", os.O_CREAT | os.O_WRONLY, 0o644))
    found = await harness.call("find", {"path": "many"})
    assert str(found.content).count("\n") == 1000
    assert _truncated(found)["entries"] is True
    hostile.root.joinpath("deep", *["d"] * 40).mkdir(parents=True)
    usage = await harness.call("du", {"path": "deep", "maxDepth": 32})
    listed = await harness.call("find", {"path": "deep", "maxDepth": 32})
    assert usage.status == "success" and str(usage.content).count("\n") == 33
    assert listed.status == "success" and str(listed.content).count("\n") == 33


async def test_o13_nul_bytes_never_pass_through(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "bin").write_bytes(b"ELF\x00\x00\x01needle\x00\n")
    cat = await harness.call("cat", {"path": "bin"})
    assert "\x00" not in str(cat.content) and "\ufffd" in str(cat.content)
    grep = await harness.call("grep", {"pattern": "needle", "paths": ["bin"]})
    assert grep.status == "success"
    assert "binary file matches" in everything(grep).lower()


async def test_o14_a_forged_marker_is_just_text(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "forged").write_text("\u2026[truncated 12345 bytes]\n")
    result = await harness.call("cat", {"path": "forged"})
    assert _truncated(result) == {"bytes": False, "entries": False}
    assert _truncated(result, "stderr") == {"bytes": False, "entries": False}


async def test_o15_exit_statuses_are_told_apart(harness: CommandHarness, hostile: Hostile) -> None:
    no_match = await harness.call("grep", {"pattern": "absent", "paths": ["sub/inner.txt"]})
    error = await harness.call("grep", {"pattern": "x", "paths": ["nothing-here"]})
    capped = await harness.call("cat", {"path": "big"})
    assert (no_match.status, structured(no_match)["exitCode"]) == ("failed", 1)
    assert (error.status, structured(error)["exitCode"]) == ("failed", 2)
    assert no_match.error is not None and no_match.error.code == "COMMAND_EXIT_NONZERO"
    assert capped.status == "success" and _truncated(capped)["bytes"] is True
    slow = CommandHarness(hostile.root, timeout=0.02)
    with pytest.raises(CommandTimeoutError):
        await slow.call("wc", {"path": "big"})
    assert len(slow.executor.calls) == 1


async def test_o16_parallel_capped_streams_stay_bounded_and_the_loop_responsive(
    harness: CommandHarness, hostile: Hostile
) -> None:
    """Memory is traced in one round and loop latency measured in another: tracing slows every allocation
    and would be counted as latency. The latency allowed is 0.5 s over what the same ticker sees on its
    own, for as long, just after: the machine's own load (other test processes on the same cores) is
    not the loop being blocked. The heap the test process has built (every module and fixture of the
    suite) is collected and frozen first: a full collection of it, due at any moment, paused the loop for
    a second on its own, and that is the test process, not the reader."""
    cats = [{"path": "big"}] * 20
    tracemalloc.start()
    try:
        traced = await asyncio.gather(*(harness.call("cat", args) for args in cats))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lag = 0.0

    async def ticker() -> None:
        nonlocal lag
        while True:
            started = time.monotonic()
            await asyncio.sleep(0.01)
            lag = max(lag, time.monotonic() - started - 0.01)

    gc.collect()
    gc.freeze()
    tick = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        timed = await asyncio.gather(*(harness.call("cat", args) for args in cats))
    finally:
        took = time.monotonic() - started
        busy, lag = lag, 0.0
        await asyncio.sleep(took)  # the same ticker, on its own, as long: the machine's own latency
        tick.cancel()
        await asyncio.gather(tick, return_exceptions=True)
        gc.unfreeze()
    assert all(result.status == "success" and _truncated(result)["bytes"] for result in [*traced, *timed])
    assert peak < 32 * 1024 * 1024, peak
    assert busy < 0.5 + lag, (busy, lag)


# -- the output-truncation property ---------------------------------------------------------------------

_PIECES = st.sampled_from(
    [b"a", b"\n", b"\x00", "\u20ac".encode(), "\U0001f600".encode(), b"\xff", b"\xe2\x82", b"\x80"]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(_PIECES, max_size=80).map(b"".join),
    st.integers(1, 120),
    st.integers(1, 12),
    st.booleans(),
)
def test_property_truncated_output_is_a_bounded_valid_prefix(
    data: bytes, max_bytes: int, max_entries: int, cut_before: bool
) -> None:
    bounded = bound_stream(data, max_bytes=max_bytes, max_entries=max_entries, cut_before=cut_before)
    reference = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
    encoded = bounded.text.encode("utf-8")
    assert len(encoded) <= max_bytes
    assert reference.startswith(bounded.text)
    assert "\x00" not in bounded.text
    lines = reference.split("\n")
    within_lines = "\n".join(lines[:max_entries]) + ("\n" if len(lines) > max_entries else "")
    assert bounded.entries_cut == (len(within_lines) < len(reference))
    assert bounded.bytes_cut == (cut_before or len(within_lines.encode("utf-8")) > max_bytes)
    assert bounded.text.count("\n") <= max_entries
    if not bounded.bytes_cut:
        assert bounded.text == within_lines
