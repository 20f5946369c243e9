"""Path validation at the command level, against the hostile tree (ADVERSARIAL P group)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import SandboxError
from tests.interaction.commands.command_harness import (
    CONTENT_TOOLS,
    FILE_PROGRAM,
    PATH_CALLS,
    CommandHarness,
    everything,
    rule,
    with_path,
)
from tests.sandbox.hostile_tree import Hostile
from tests.typed import structured


async def _refused_by_every_tool(
    harness: CommandHarness, hostile: Hostile, paths: list[str], code: str
) -> None:
    """Every tool that takes a path refuses each of ``paths`` with ``code``, spawning nothing."""
    for tool in sorted(PATH_CALLS):
        for path in paths:
            error = await harness.refused(tool, with_path(tool, path))
            assert rule(error) == code, (tool, path)
            hostile.assert_clean(str(error))
            assert len(path) < 3 or path not in str(error)


async def test_p01_a_parent_reference_is_refused(harness: CommandHarness, hostile: Hostile) -> None:
    await _refused_by_every_tool(harness, hostile, ["../x", ".."], "path_traversal")


async def test_p02_an_escape_through_a_subdirectory_is_refused(
    harness: CommandHarness, hostile: Hostile
) -> None:
    await _refused_by_every_tool(
        harness, hostile, ["a/../../x", "sub/../../outside/secret.txt"], "path_traversal"
    )


async def test_p03_traversal_that_stays_inside_is_refused_too(
    harness: CommandHarness, hostile: Hostile
) -> None:
    await _refused_by_every_tool(harness, hostile, ["sub/..", "sub/../sub/inner.txt"], "path_traversal")


async def test_p05_absolute_paths_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    await _refused_by_every_tool(harness, hostile, ["/etc/passwd", "//etc/passwd", "/"], "absolute_path")


async def test_p06_backslashes_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    await _refused_by_every_tool(
        harness, hostile, ["a\\b", "..\\..\\etc\\passwd", "C:\\Windows"], "backslash"
    )


async def test_p07_drive_letters_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    await _refused_by_every_tool(harness, hostile, ["C:/x", "C:x"], "drive_letter")


async def test_p08_an_empty_path_is_refused(harness: CommandHarness, hostile: Hostile) -> None:
    await _refused_by_every_tool(harness, hostile, [""], "empty_path")


async def test_p11_a_nul_byte_is_refused_before_any_syscall(
    harness: CommandHarness, hostile: Hostile
) -> None:
    await _refused_by_every_tool(harness, hostile, ["a\x00b", "sub/inner.txt\x00"], "nul_byte")


async def test_p12_control_characters_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    paths = ["a\nb", "a\rb", "a\x1b[2Jb", "a\x85b"]
    await _refused_by_every_tool(harness, hostile, paths, "control_character")


async def test_p13_bidi_and_invisible_characters_are_refused(
    harness: CommandHarness, hostile: Hostile
) -> None:
    paths = ["evil\u202etxt.exe", "a\u200bb", "a\U000e0041b"]
    await _refused_by_every_tool(harness, hostile, paths, "invisible_character")


async def test_p14_long_paths_are_refused_at_the_documented_limits(
    harness: CommandHarness, hostile: Hostile
) -> None:
    await _refused_by_every_tool(harness, hostile, ["a" * 5000, "b" * 300, "a/" * 10_000], "path_too_long")


async def test_p04_dotted_names_are_legitimate(harness: CommandHarness, hostile: Hostile) -> None:
    for name in ("..foo", "foo..", "..."):
        (hostile.root / name).write_text(f"{name}\n")
        result = await harness.call("cat", {"path": name})
        assert result.status == "success" and result.content == f"{name}\n"
        assert harness.last_argv == ["cat", "--", f"./{name}"]


@pytest.mark.parametrize("tool", ["ls", "find", "du", "stat", "file"])
async def test_p09_dot_is_accepted_where_a_directory_makes_sense(harness: CommandHarness, tool: str) -> None:
    if tool == "file" and not FILE_PROGRAM:
        with pytest.raises(SandboxError, match="failed to start"):
            await harness.call(tool, with_path(tool, "."))
        return
    result = await harness.call(tool, with_path(tool, "."))
    assert result.status == "success", everything(result)
    assert "." in harness.last_argv
    assert (await harness.call("pwd", {})).status == "success"


@pytest.mark.parametrize("tool", CONTENT_TOOLS)
async def test_p09_content_tools_refuse_a_directory(harness: CommandHarness, tool: str) -> None:
    for path in (".", "sub", "dirlink_inside"):
        error = await harness.refused(tool, with_path(tool, path))
        assert rule(error) == "is_directory"
        assert str(error) == "path is a directory"


async def test_p09_recursive_grep_walks_the_root(harness: CommandHarness, hostile: Hostile) -> None:
    result = await harness.call("grep", {"pattern": "inner", "paths": ["."], "recursive": True})
    assert result.status == "success" and result.content == "./sub/inner.txt:1:inner\n"
    hostile.assert_clean(everything(result))


async def test_p10_normalised_path_reaches_the_command(harness: CommandHarness) -> None:
    for path in ("sub//inner.txt", "./sub/inner.txt", "sub/./inner.txt"):
        result = await harness.call("cat", {"path": path})
        assert result.content == "inner\n"
        assert harness.last_argv == ["cat", "--", "./sub/inner.txt"]
    await harness.call("ls", {"path": "sub/"})
    assert harness.last_argv == ["ls", "-1", "--", "./sub"]


@pytest.mark.parametrize("path", ["\uff0e\uff0e\uff0fetc", "\u2215etc", "%2e%2e/etc", "..%2f"])
async def test_p15_unicode_and_percent_tricks_stay_literal(harness: CommandHarness, path: str) -> None:
    try:
        result = await harness.call("cat", {"path": path})
    except Exception as error:  # a missing parent directory is refused before anything runs
        assert rule(error) == "not_found"
        return
    assert result.status == "failed" and "No such file" in result.error.message  # type: ignore[union-attr]


async def test_p16_nfc_and_nfd_are_different_names(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "caf\u00e9").write_text("nfc\n")
    assert (await harness.call("cat", {"path": "caf\u00e9"})).content == "nfc\n"
    result = await harness.call("cat", {"path": "cafe\u0301"})
    assert result.status == "failed"
    assert harness.last_argv == ["cat", "--", "./cafe\u0301"]


@pytest.mark.parametrize("link", ["link_abs", "link_rel"])
async def test_p17_symlink_to_an_outside_file_is_refused(
    harness: CommandHarness, hostile: Hostile, link: str
) -> None:
    for tool in sorted(PATH_CALLS):
        error = await harness.refused(tool, with_path(tool, link))
        assert rule(error) == "outside_workspace"
        assert str(error) == "path resolves outside workspace"


async def test_p18_symlinked_directory_arguments_are_refused(
    harness: CommandHarness, hostile: Hostile
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("ls", {"path": "dirlink"}),
        ("cat", {"path": "dirlink/secret.txt"}),
        ("find", {"path": "dirlink"}),
        ("du", {"path": "dirlink"}),
        ("grep", {"pattern": "CANARY", "paths": ["dirlink"], "recursive": True}),
        ("stat", {"path": "rootlink"}),
    ]
    for tool, args in calls:
        error = await harness.refused(tool, args)
        assert rule(error) == "outside_workspace", tool
        hostile.assert_clean(str(error))


async def test_p18_recursion_from_the_root_never_descends_into_links(
    harness: CommandHarness, hostile: Hostile
) -> None:
    grep = await harness.call("grep", {"pattern": "CANARY", "paths": ["."], "recursive": True})
    assert grep.status == "failed" and structured(grep)["exitCode"] == 1
    found = await harness.call("find", {"name": "secret.txt"})
    assert found.status == "success" and found.content == ""
    everywhere = await harness.call("find", {"maxDepth": 32})
    assert "./dirlink\n" in str(everywhere.content) and "./dirlink/" not in str(everywhere.content)
    usage = await harness.call("du", {"path": ".", "maxDepth": 32})
    assert usage.status == "success" and "dirlink" not in str(usage.content)
    for result in (grep, found, everywhere, usage):
        hostile.assert_clean(everything(result))


async def test_p19_magic_and_root_links_are_refused(harness: CommandHarness, hostile: Hostile) -> None:
    for path in ("proclink/etc/passwd", "rootlink/etc/passwd", "proclink", "rootlink"):
        error = await harness.refused("cat", {"path": path})
        assert rule(error) == "outside_workspace"


async def test_p20_chains_leaving_the_workspace_are_refused(harness: CommandHarness) -> None:
    for path in ("chain_1", "out_and_back"):
        error = await harness.refused("cat", {"path": path})
        assert rule(error) == "outside_workspace"


async def test_links_that_stay_inside_are_followed(harness: CommandHarness) -> None:
    for path in ("link_inside", "link_inside_abs", "dirlink_inside/inner.txt"):
        result = await harness.call("cat", {"path": path})
        assert result.content == "inner\n"
        assert harness.last_argv == ["cat", "--", "./sub/inner.txt"]


async def test_p21_symlink_loop_is_a_sanitised_error(harness: CommandHarness, hostile: Hostile) -> None:
    for tool in ("cat", "stat", "ls"):
        error = await harness.refused(tool, {"path": "loop_a"})
        assert rule(error) == "symlink_loop"
        hostile.assert_clean(str(error))


async def test_p22_dangling_link_to_outside_is_refused_without_its_target(
    harness: CommandHarness, hostile: Hostile
) -> None:
    for tool in ("stat", "cat", "file", "ls"):
        error = await harness.refused(tool, {"path": "dangling"})
        assert rule(error) == "outside_workspace"
        assert "nope" not in str(error)
        hostile.assert_clean(str(error))


async def test_p23_sibling_prefix_is_outside(harness: CommandHarness) -> None:
    error = await harness.refused("cat", {"path": "sibling_link"})
    assert rule(error) == "outside_workspace"


async def test_p25_workspace_reached_through_a_symlink(hostile: Hostile, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(hostile.root, alias)
    harness = CommandHarness(alias)
    result = await harness.call("cat", {"path": "sub/inner.txt"})
    assert result.content == "inner\n"
    assert (await harness.call("pwd", {})).content == f"{hostile.root}\n"
