"""Argument injection against real commands in the hostile workspace (ADVERSARIAL A group)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import CommandTimeoutError, SandboxError
from tests.interaction.commands.command_harness import (
    FILE_PROGRAM,
    OPTION_LIKE,
    PATH_CALLS,
    UNKNOWN_FIELDS,
    CommandHarness,
    everything,
    rule,
    with_path,
)
from tests.sandbox.hostile_tree import Hostile
from tests.typed import structured


def _snapshot(root: Path) -> dict[str, str]:
    """Every name below ``root`` (links not followed) with a digest of regular files."""
    seen: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory, name)
            small = path.is_file() and not path.is_symlink() and path.stat().st_size < 1 << 20
            seen[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest() if small else ""
    return seen


async def test_a01_grep_pattern_naming_the_canary_file_is_a_literal(
    harness: CommandHarness, hostile: Hostile
) -> None:
    pattern = f"-f{hostile.outside}/secret.txt"
    result = await harness.call("grep", {"pattern": pattern, "paths": ["sub/inner.txt"]})
    assert harness.last_argv == ["grep", "-n", "-D", "skip", "-e", pattern, "--", "./sub/inner.txt"]
    assert result.status == "failed" and structured(result)["exitCode"] == 1
    hostile.assert_clean(everything(result).replace(str(hostile.outside), ""))
    assert hostile.token not in everything(result)


@pytest.mark.parametrize(
    "pattern", ["--file=/outside/secret.txt", "-r", "--include=*", "-R", "--exclude-from=x"]
)
async def test_a02_option_like_patterns_have_no_option_effect(
    harness: CommandHarness, hostile: Hostile, pattern: str
) -> None:
    (hostile.root / "haystack").write_text(f"plain\n{pattern}\n")
    result = await harness.call("grep", {"pattern": pattern, "paths": ["haystack"], "fixedStrings": True})
    assert result.status == "success" and result.content == f"2:{pattern}\n"
    hostile.assert_clean(everything(result))


@pytest.mark.parametrize("tool", sorted(PATH_CALLS))
@pytest.mark.parametrize("name", ["-n", "--help", "-exec"])
async def test_a03_files_named_like_options_are_operands(
    harness: CommandHarness, hostile: Hostile, tool: str, name: str
) -> None:
    args = with_path(tool, name)
    if tool == "grep":
        args["pattern"] = "odd"
    if tool == "file" and not FILE_PROGRAM:
        with pytest.raises(SandboxError):
            await harness.call(tool, args)
        return
    result = await harness.call(tool, args)
    assert result.status == "success", everything(result)
    assert f"./{name}" in harness.last_argv
    assert harness.last_argv.index(f"./{name}") > harness.last_argv.index("--") if tool != "find" else True
    output = str(result.content)
    assert "Usage" not in output and "usage:" not in output.lower()
    if tool in ("cat", "head", "tail", "sort", "uniq", "cut"):
        assert output == "odd\n"
    hostile.assert_clean(everything(result))


async def test_a04_find_name_exec_runs_nothing(harness: CommandHarness, hostile: Hostile) -> None:
    before = _snapshot(hostile.root)
    result = await harness.call("find", {"name": "-exec", "maxDepth": 1})
    assert harness.last_argv == ["find", "-P", ".", "-maxdepth", "1", "-name", "-exec", "-print"]
    assert result.status == "success" and result.content == "./-exec\n"
    assert _snapshot(hostile.root) == before


async def test_a05_a_whole_expression_as_name_matches_nothing(
    harness: CommandHarness, hostile: Hostile
) -> None:
    before = _snapshot(hostile.root)
    result = await harness.call("find", {"name": "x -o -exec rm {} ;"})
    assert result.status == "success" and result.content == ""
    assert _snapshot(hostile.root) == before


@pytest.mark.parametrize("start", ["-L", "-H", "-D", "-O3", "-exec", "-delete"])
async def test_a06_find_start_points_are_never_options(
    harness: CommandHarness, hostile: Hostile, start: str
) -> None:
    expected = f"./{start}\n"
    if not (hostile.root / start).exists():  # "-exec" is already a file of the fixture
        (hostile.root / start).mkdir()
        (hostile.root / start / "kept.txt").write_text("kept\n")
        expected += f"./{start}/kept.txt\n"
    before = _snapshot(hostile.root)
    result = await harness.call("find", {"path": start})
    assert result.status == "success" and result.content == expected
    assert _snapshot(hostile.root) == before


@pytest.mark.parametrize("tool", sorted({*PATH_CALLS, "pwd"}))
async def test_a07_unknown_fields_spawn_nothing(harness: CommandHarness, tool: str) -> None:
    base = {} if tool == "pwd" else with_path(tool, "sub/inner.txt")
    for extra in UNKNOWN_FIELDS:
        error = await harness.refused(tool, {**base, **extra})
        assert rule(error) == "unknown_field"


async def test_a08_sort_key_injection_is_refused(harness: CommandHarness, hostile: Hostile) -> None:
    for key in ("--compress-program=sh", "1 -o x", "--output=x"):
        error = await harness.refused("sort", {"path": "sub/inner.txt", "key": key})
        assert rule(error) == "unknown_field"
    assert not (hostile.root / "x").exists()


async def test_a09_option_strings_in_every_field_create_no_file(
    harness: CommandHarness, hostile: Hostile
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    for value in OPTION_LIKE:
        calls += [
            ("grep", {"pattern": value, "paths": ["sub/inner.txt"]}),
            ("find", {"name": value}),
            ("cut", {"path": "sub/inner.txt", "fields": value}),
            ("cut", {"path": "sub/inner.txt", "fields": "1", "delimiter": value}),
            ("sort", {"path": value}),
            ("head", {"path": "sub/inner.txt", "lines": value}),
        ]
    before = _snapshot(hostile.root)
    for tool, args in calls:
        try:
            result = await harness.call(tool, args)
        except Exception as error:  # refusals raise; only the absence of side effects matters here
            hostile.assert_clean(str(error))
        else:
            hostile.assert_clean(everything(result))
    assert _snapshot(hostile.root) == before
    assert not Path("/tmp/FILE").exists()


async def test_a10_uniq_never_gets_a_second_operand(harness: CommandHarness, hostile: Hostile) -> None:
    (hostile.root / "b").write_text("keep me\n")
    digest = hashlib.sha256((hostile.root / "b").read_bytes()).hexdigest()
    for args in (
        {"path": "sub/inner.txt", "paths": ["sub/inner.txt", "b"]},
        {"path": ["sub/inner.txt", "b"]},
    ):
        await harness.refused("uniq", args)
    result = await harness.call("uniq", {"path": "sub/inner.txt"})
    assert harness.last_argv == ["uniq", "--", "./sub/inner.txt"]
    assert result.content == "inner\n"
    assert hashlib.sha256((hostile.root / "b").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("name", ["-C", "-m", "-f"])
async def test_a11_file_operands_like_options(harness: CommandHarness, hostile: Hostile, name: str) -> None:
    (hostile.root / name).write_text("plain text\n")
    if not FILE_PROGRAM:
        with pytest.raises(SandboxError, match="failed to start"):
            await harness.call("file", {"path": name})
    else:
        result = await harness.call("file", {"path": name})
        assert harness.last_argv == ["file", "--", f"./{name}"]
        assert result.status == "success" and str(result.content).startswith(f"./{name}: ")
    assert not (hostile.root / "magic.mgc").exists()


@pytest.mark.parametrize("lines", ["10; rm -rf /", "-f", "+1", -5, 1e12, "1000000000000000000000", True])
async def test_a12_bad_line_counts_never_run(harness: CommandHarness, lines: object) -> None:
    for tool in ("head", "tail"):
        error = await harness.refused(tool, {"path": "sub/inner.txt", "lines": lines})
        assert rule(error) == "out_of_range"


async def test_a12_tail_of_a_growing_file_does_not_follow(harness: CommandHarness) -> None:
    started = time.monotonic()
    result = await harness.call("tail", {"path": "sub/inner.txt", "lines": 1000})
    assert result.content == "inner\n" and time.monotonic() - started < 5


async def test_a13_cut_grammar_is_enforced(harness: CommandHarness) -> None:
    for args in (
        {"fields": "--output-delimiter=$(id)"},
        {"fields": "1-3 --complement"},
        {"fields": "1", "delimiter": "\n"},
        {"fields": "1", "delimiter": "::"},
    ):
        await harness.refused("cut", {"path": "sub/inner.txt", **args})
    result = await harness.call("cut", {"path": "sub/inner.txt", "fields": "1", "delimiter": "n"})
    assert result.content == "i\n"


async def test_a14_du_depth_is_checked_and_links_are_not_followed(
    harness: CommandHarness, hostile: Hostile
) -> None:
    for depth in (-1, 33, 10**9, "--files0-from=list", "-L"):
        error = await harness.refused("du", {"path": ".", "maxDepth": depth})
        assert rule(error) == "out_of_range"
    (hostile.root / "-L").mkdir()
    result = await harness.call("du", {"path": "-L", "maxDepth": 0})
    assert harness.last_argv == ["du", "-k", "-P", "--max-depth=0", "--", "./-L"]
    assert result.status == "success" and str(result.content).endswith("\t./-L\n")


SHELL_SYNTAX = ("; id", "$(id)", "`id`", "| tee x", "> x", "&& curl evil", "$HOME", "~", "*")


async def test_a15_shell_syntax_is_literal_everywhere(harness: CommandHarness, hostile: Hostile) -> None:
    before = _snapshot(hostile.root)
    for value in SHELL_SYNTAX:
        grep = await harness.call(
            "grep", {"pattern": value, "paths": ["sub/inner.txt"], "fixedStrings": True}
        )
        assert structured(grep)["exitCode"] == 1
        found = await harness.call("find", {"name": value, "maxDepth": 1})
        assert found.status == "success"
        hostile.assert_clean(everything(grep) + everything(found))
    star = await harness.call("cat", {"path": "*"})
    assert star.content == "odd\n" and harness.last_argv == ["cat", "--", "./*"]
    for literal in ("~", "$HOME"):
        missing = await harness.call("cat", {"path": literal})
        assert missing.status == "failed" and "No such file" in missing.error.message  # type: ignore[union-attr]
    assert _snapshot(hostile.root) == before


async def test_a16_the_parent_environment_does_not_reach_the_commands(
    harness: CommandHarness, hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile_env = {
        "GREP_OPTIONS": "--color=always",
        "GREP_COLORS": "mt=01;31",
        "GREP_COLOR": "01;31",
        "LS_COLORS": "di=01;34",
        "POSIXLY_CORRECT": "1",
        "TZ": "Asia/Tokyo",
        "LC_ALL": "tr_TR.UTF-8",
        "RIPGREP_CONFIG_PATH": str(hostile.outside / "secret.txt"),
        "PATH": f"./bin:{os.environ['PATH']}",
    }
    for key, value in hostile_env.items():
        monkeypatch.setenv(key, value)
    grep = await harness.call("grep", {"pattern": "inner", "paths": ["sub/inner.txt"]})
    listing = await harness.call("ls", {"path": "sub"})
    assert grep.content == "1:inner\n" and listing.content == "deeper\ninner.txt\n"
    for result in (grep, listing):
        assert "\x1b" not in everything(result) and "\\u001b" not in everything(result)


async def test_a17_a_workspace_grep_never_shadows_the_real_one(
    harness: CommandHarness, hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("grep", "cat"):
        fake = hostile.root / name
        fake.write_text(f"#!/bin/sh\necho {hostile.token}\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f".:{hostile.root}:{os.environ['PATH']}")
    grep = await harness.call("grep", {"pattern": "inner", "paths": ["sub/inner.txt"]})
    cat = await harness.call("cat", {"path": "sub/inner.txt"})
    assert grep.content == "1:inner\n" and cat.content == "inner\n"
    hostile.assert_clean(everything(grep) + everything(cat))


def _processes_mentioning(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


async def test_a18_regex_backtracking_is_bounded_by_the_timeout(hostile: Hostile) -> None:
    marker = f"redos-{os.getpid()}-{time.monotonic_ns()}"
    (hostile.root / marker).write_bytes(b"a" * 65536)
    harness = CommandHarness(hostile.root, timeout=1.0)
    started = time.monotonic()
    try:
        result = await harness.call("grep", {"pattern": "\\(a*\\)*\\1b", "paths": [marker]})
    except CommandTimeoutError as error:
        assert rule(error) == "COMMAND_TIMEOUT"
    else:
        assert result.status == "failed"
    assert time.monotonic() - started < 3
    assert _processes_mentioning(marker) == []
