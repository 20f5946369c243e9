"""The command tools in a runtime: permissions (S-05), one run per call, errors, settings, the canary."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from ditto_tui.errors import CommandTimeoutError, PermissionDeniedError, SandboxError
from ditto_tui.interaction import ToolRegistry, create_interaction_worker, create_read_only_command_tools
from ditto_tui.runtime import create_ditto, load_runtime_config_file
from ditto_tui.sandbox import CommandResult
from ditto_tui.sandbox import executor as executor_module
from ditto_tui.signal import CancelSignal
from tests.interaction.commands.command_harness import (
    ALL_TOOLS,
    FILE_PROGRAM,
    PATH_CALLS,
    CommandHarness,
    everything,
    rule,
    with_path,
)
from tests.sandbox.hostile_tree import ODD_NAMES, Hostile


def _call(tool: str, path: str = "sub/inner.txt") -> dict[str, object]:
    return (
        {} if tool == "pwd" else {**with_path(tool, path), **({"pattern": "inner"} if tool == "grep" else {})}
    )


async def test_s05_without_execute_all_14_tools_are_refused_and_nothing_spawns(hostile: Hostile) -> None:
    harness = CommandHarness(
        hostile.root, permissions={"tools": list(ALL_TOOLS), "read": True, "write": True}
    )
    for tool in ALL_TOOLS:
        error = await harness.refused(tool, _call(tool))
        assert isinstance(error, PermissionDeniedError) and rule(error) == "execute_not_allowed"
    assert harness.executor.calls == []


async def test_s05_granted_command_tools_are_listed_with_or_without_execute(hostile: Hostile) -> None:
    """The seed: ``list(context)`` shows the tools granted by name; ``execute`` is checked at the spawn."""
    registry = ToolRegistry(create_read_only_command_tools())
    for execute in (False, True):
        async with create_ditto(
            sandbox={"tools": list(ALL_TOOLS), "read": True, "execute": execute}, workspace=hostile.root
        ) as runtime:
            assert [tool.name for tool in registry.list(runtime.create_context())] == list(ALL_TOOLS)


async def test_s05_execute_alone_is_enough_as_the_seed_grants_it(harness: CommandHarness) -> None:
    assert "read" not in harness.permissions
    result = await harness.call("cat", {"path": "sub/inner.txt"})
    assert result.status == "success" and result.content == "inner\n"


async def test_a_tool_must_be_granted_by_name(hostile: Hostile) -> None:
    harness = CommandHarness(hostile.root, permissions={"tools": ["ls"], "execute": True})
    error = await harness.refused("cat", {"path": "sub/inner.txt"})
    assert rule(error) == "tool_not_allowed"


@pytest.mark.parametrize("tool", ALL_TOOLS)
async def test_each_call_is_exactly_one_sandbox_run(harness: CommandHarness, tool: str) -> None:
    if tool == "file" and not FILE_PROGRAM:
        with pytest.raises(SandboxError, match="failed to start"):
            await harness.call(tool, _call(tool))
    else:
        result = await harness.call(tool, _call(tool))
        assert result.status == "success", everything(result)
    assert len(harness.executor.calls) == 1 and harness.executor.calls[0][0] == tool


class FailingExecutor:
    """An executor that always raises ``error``, counting how often it was asked."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.runs = 0

    async def run(
        self,
        command: str,
        args: Sequence[str],
        *,
        max_stdout_bytes: int,
        max_stderr_bytes: int,
        signal: CancelSignal | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        self.runs += 1
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        SandboxError("command 'cat' failed to start", code="command_failed_to_start"),
        CommandTimeoutError("command 'cat' timed out after 1 s"),
        OSError("transport broke"),
    ],
)
async def test_executor_errors_raise_and_are_never_retried(hostile: Hostile, error: Exception) -> None:
    executor = FailingExecutor(error)
    async with create_ditto(
        sandbox={"tools": ["cat"], "execute": True},
        sandbox_executor=executor,
        workers=[create_interaction_worker(tools=create_read_only_command_tools())],
        workspace=hostile.root,
    ) as runtime:
        with pytest.raises(type(error)):
            await runtime.invoke(
                "INTERACTION.ACT.TOOL",
                {"call": {"id": "c", "name": "cat", "arguments": {"path": "sub/inner.txt"}}},
            )
    assert executor.runs == 1


async def test_without_an_executor_the_call_raises(hostile: Hostile) -> None:
    async with create_ditto(
        sandbox={"tools": ["pwd"], "execute": True},
        workers=[create_interaction_worker(tools=create_read_only_command_tools())],
        workspace=hostile.root,
    ) as runtime:
        with pytest.raises(SandboxError, match="no command executor"):
            await runtime.invoke(
                "INTERACTION.ACT.TOOL", {"call": {"id": "p", "name": "pwd", "arguments": {}}}
            )


async def test_cancelling_the_call_kills_the_command(hostile: Hostile) -> None:
    harness = CommandHarness(hostile.root)
    task = asyncio.create_task(harness.call("wc", {"path": "big"}))
    while not harness.executor.calls:
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(harness.executor.calls) == 1


async def test_seed_settings_come_from_ditto_yaml_passed_as_is(hostile: Hostile, tmp_path: Path) -> None:
    """The seed: ``createReadOnlyCommandTools(config.interaction.commands)``, the group as is."""
    (hostile.root / "five").write_text("1\n2\n3\n4\n5\n")
    config_file = tmp_path / "ditto.yaml"
    config_file.write_text(
        "sandbox:\n  tools: [cat]\n  execute: true\n"
        "interaction:\n  commands:\n    maxEntries: 2\n    maxOutputBytes: 1024\n    maxErrorBytes: 512\n"
    )
    config = load_runtime_config_file(config_file, {})
    tools = create_read_only_command_tools(config.interaction.commands)
    async with create_ditto(
        config=config,
        sandbox_executor=CommandHarness(hostile.root).executor,
        workers=[create_interaction_worker(tools=tools)],
        workspace=hostile.root,
    ) as runtime:
        result = await runtime.invoke(
            "INTERACTION.ACT.TOOL", {"call": {"id": "c", "name": "cat", "arguments": {"path": "five"}}}
        )
    assert result.content == "1\n2\n"
    assert result.structured_content["truncated"]["stdout"] == {"bytes": False, "entries": True}


def _hostile_paths(hostile: Hostile) -> list[str]:
    """Every name of the tree plus paths through its links; ``big`` is left to the O tests (it only costs
    time: ``tail`` reads 2 GiB backwards looking for a newline that is not there)."""
    names = sorted(set(os.listdir(hostile.root)) - {"big"})
    extra = ["dirlink/secret.txt", "rootlink/etc/passwd", "proclink/etc/passwd", "dirlink_inside/inner.txt"]
    return [*names, *extra, *ODD_NAMES]


async def test_the_canary_never_appears_anywhere(hostile: Hostile) -> None:
    harness = CommandHarness(hostile.root, max_output_bytes=4096)
    seen: list[str] = []
    async with harness.runtime() as runtime:
        for tool in sorted(PATH_CALLS):
            if tool == "file" and not FILE_PROGRAM:
                continue
            for path in _hostile_paths(hostile):
                try:
                    seen.append(everything(await harness.call(tool, _call(tool, path), runtime)))
                except (PermissionDeniedError, SandboxError, ValueError) as error:
                    seen.append(f"{type(error).__name__}: {error}")
        recursive = await harness.call(
            "grep", {"pattern": "CANARY", "paths": ["."], "recursive": True}, runtime
        )
    seen.append(everything(recursive))
    text = "\n".join(seen)
    hostile.assert_clean(text)
    assert len(seen) > 300
    pwd = await harness.call("pwd", {})
    assert hostile.token not in everything(pwd) and pwd.content == f"{hostile.root}\n"


async def test_without_file_installed_the_file_tool_raises_a_clear_error(
    harness: CommandHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine without ``file(1)``: the executor finds no program, so the call raises and never retries."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(executor_module, "SEARCH_PATH", (str(empty),))
    with pytest.raises(SandboxError) as info:
        await harness.call("file", {"path": "sub/inner.txt"})
    assert (
        info.value.code == "command_failed_to_start" and str(info.value) == "command 'file' failed to start"
    )
    assert len(harness.executor.calls) == 1
