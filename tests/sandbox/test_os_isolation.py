"""OS isolation with bubblewrap closes what the cooperative guard cannot (ADVERSARIAL P-24, S-10 and the
README's residual risks): outside files do not exist for the command, a symlink swapped in after the
check leads nowhere, there is no network, the workspace is read-only and no process outlives its
command. Each check also runs on the plain local executor, which shows the risk is real there.
Skipped where bubblewrap is missing or cannot create namespaces.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ditto_tui.errors import DittoError, SandboxError
from ditto_tui.interaction import create_interaction_worker, create_read_only_command_tools
from ditto_tui.runtime import create_ditto
from ditto_tui.sandbox import CommandResult, SandboxExecutor, create_local_sandbox_executor
from ditto_tui.sandbox.isolation import BubblewrapExecutor, create_bubblewrap_executor
from tests.sandbox.hostile_tree import Hostile, Swapper

STDOUT_CAP, STDERR_CAP = 1 << 16, 1 << 13


def _isolated(root: Path, *, writable: bool = False) -> BubblewrapExecutor:
    try:
        return create_bubblewrap_executor(root, writable=writable, timeout=10)
    except SandboxError:
        pytest.skip("bubblewrap is not installed or cannot create namespaces here")


async def _run(executor: SandboxExecutor, command: str, *args: str) -> CommandResult:
    return await executor.run(command, list(args), max_stdout_bytes=STDOUT_CAP, max_stderr_bytes=STDERR_CAP)


async def test_outside_files_do_not_exist_inside_the_sandbox(hostile: Hostile) -> None:
    secret = str(hostile.outside / "secret.txt")
    local = await _run(create_local_sandbox_executor(hostile.root), "cat", secret)
    assert hostile.token.encode() in local.stdout  # what the guard alone cannot stop once a program runs
    isolated = await _run(_isolated(hostile.root), "cat", secret)
    assert isolated.exit_code != 0 and hostile.token.encode() not in isolated.stdout + isolated.stderr


async def test_p24_a_symlink_swapped_in_after_the_check_leads_nowhere(hostile: Hostile) -> None:
    """The moment after a swap, deterministically: the checked name is now a link to the outside."""
    (hostile.outside / "file").write_text(hostile.token)
    os.symlink(hostile.outside, hostile.root / "swapped")
    local = await _run(create_local_sandbox_executor(hostile.root), "cat", "./swapped/file")
    assert hostile.token.encode() in local.stdout
    for target in ("./swapped/file", "./link_abs", "./link_rel", "./proclink/etc/hostname"):
        isolated = await _run(_isolated(hostile.root), "cat", target)
        assert hostile.token.encode() not in isolated.stdout + isolated.stderr, target


async def test_p24_the_race_against_a_command_tool_never_reads_outside(hostile: Hostile) -> None:
    (hostile.outside / "file").write_text(hostile.token)
    (hostile.root / "sub" / "file").write_text("inside")
    os.symlink(hostile.outside, hostile.root / "sub_link")
    runtime = create_ditto(
        sandbox={"tools": ["cat"], "execute": True},
        sandbox_executor=_isolated(hostile.root),
        workers=[create_interaction_worker(tools=create_read_only_command_tools())],
        workspace=hostile.root,
    )
    swapper = Swapper(hostile.root, pause=0.001)
    executed: list[str] = []  # calls that passed the path check and ran, raced or not
    async with runtime:
        swapper.start()
        try:
            for number in range(5_000):
                call = {"id": f"cat-{number}", "name": "cat", "arguments": {"path": "sub/file"}}
                try:
                    result = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
                except DittoError:  # refused by the path check while the link was in place
                    continue
                executed.append(result.model_dump_json())
                if len(executed) == 40:
                    break
        finally:
            swapper.stop.set()
            swapper.join()
    assert swapper.flips > 0 and len(executed) >= 20
    assert not any(hostile.token in text for text in executed)


async def test_there_is_no_network_inside_the_sandbox(hostile: Hostile) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2).close()"
        local = await _run(create_local_sandbox_executor(hostile.root), "python3", "-c", connect)
        listener.accept()[0].close()  # the plain executor reached the host
        isolated = await _run(_isolated(hostile.root), "python3", "-c", connect)
        with pytest.raises(TimeoutError):
            listener.accept()  # the isolated one did not: its 127.0.0.1 is a loopback of its own
    assert local.exit_code == 0 and isolated.exit_code != 0


async def test_the_workspace_is_read_only_unless_asked_otherwise(hostile: Hostile) -> None:
    refused = await _run(_isolated(hostile.root), "touch", "./made")
    assert refused.exit_code != 0 and not (hostile.root / "made").exists()
    allowed = await _run(_isolated(hostile.root, writable=True), "touch", "./made")
    assert allowed.exit_code == 0 and (hostile.root / "made").exists()


def _processes_with(marker: str) -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in command:
                yield int(entry)


async def test_a_process_that_leaves_the_group_dies_with_the_sandbox(hostile: Hostile) -> None:
    marker = f"{time.time_ns() % 1000}.{os.getpid()}"  # a sleep length no other process uses
    escape = f"setsid sleep {marker} >/dev/null 2>&1 & sleep 0.5; echo started"
    local = await _run(create_local_sandbox_executor(hostile.root), "sh", "-c", escape)
    try:
        assert local.stdout == b"started\n" and list(_processes_with(marker))  # the residual risk
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)
    isolated = await _run(_isolated(hostile.root), "sh", "-c", escape)
    assert isolated.stdout == b"started\n"
    await asyncio.sleep(0.2)
    assert list(_processes_with(marker)) == []


async def test_every_command_tool_works_the_same_inside(hostile: Hostile) -> None:
    calls = {
        "grep": {"pattern": "inner", "paths": ["sub"], "recursive": True},
        "ls": {"path": "sub"},
        "cat": {"path": "sub/inner.txt"},
        "find": {"path": "sub", "type": "file"},
        "head": {"path": "sub/inner.txt", "lines": 1},
        "tail": {"path": "sub/inner.txt", "lines": 1},
        "wc": {"path": "sub/inner.txt"},
        "sort": {"path": "sub/inner.txt"},
        "uniq": {"path": "sub/inner.txt"},
        "cut": {"path": "sub/inner.txt", "fields": "1"},
        "du": {"path": "sub", "maxDepth": 0},
        "pwd": {},
    }
    outcomes: list[list[str]] = []
    for executor in (create_local_sandbox_executor(hostile.root), _isolated(hostile.root)):
        async with create_ditto(
            sandbox={"tools": list(calls), "execute": True},
            sandbox_executor=executor,
            workers=[create_interaction_worker(tools=create_read_only_command_tools())],
            workspace=hostile.root,
        ) as runtime:
            results = [
                await runtime.invoke(
                    "INTERACTION.ACT.TOOL", {"call": {"id": name, "name": name, "arguments": args}}
                )
                for name, args in calls.items()
            ]
        outcomes.append([f"{result.status} {result.content}" for result in results])
    assert outcomes[0] == outcomes[1]
    assert all(line.startswith("success") for line in outcomes[1])


def test_missing_bubblewrap_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        create_bubblewrap_executor(tmp_path, bwrap=str(tmp_path / "no-bwrap"))
    assert caught.value.code == "isolation_unavailable"


async def test_p26_a_hard_link_is_the_outside_file_itself_even_inside_the_sandbox(hostile: Hostile) -> None:
    """Isolation hides other files, not the content of a workspace file: a hard link made before the run
    is readable everywhere. Only keeping the workspace on a filesystem of its own rules it out."""
    try:
        os.link(hostile.outside / "secret.txt", hostile.root / "hl")
    except OSError:
        pytest.skip("this filesystem does not allow the hard link")
    isolated = await _run(_isolated(hostile.root), "cat", "./hl")
    assert isolated.stdout == hostile.token.encode()
