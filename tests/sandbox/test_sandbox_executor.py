"""The local executor with real processes (ADVERSARIAL O-01, O-06, O-09, S-05, S-06)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import CommandTimeoutError, PermissionDeniedError, SandboxError, ValidationError
from ditto_tui.sandbox import (
    CommandResult,
    LocalSandboxExecutor,
    Sandbox,
    SandboxPermissions,
    create_local_sandbox_executor,
)
from ditto_tui.signal import CancelSignal

STDOUT_CAP = 65536
STDERR_CAP = 8192


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.fixture
def executor(root: Path) -> LocalSandboxExecutor:
    return create_local_sandbox_executor(root)


async def _run(
    executor: LocalSandboxExecutor,
    command: str,
    *args: str,
    signal: CancelSignal | None = None,
    **caps: float,
) -> CommandResult:
    return await executor.run(
        command,
        args,
        max_stdout_bytes=int(caps.get("stdout", STDOUT_CAP)),
        max_stderr_bytes=int(caps.get("stderr", STDERR_CAP)),
        signal=signal,
        timeout=caps.get("timeout"),
    )


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as status:
            state = status.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 3
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _grandchild_pid(root: Path) -> int:
    pid_file = root / "gc.pid"
    deadline = time.monotonic() + 5
    while not pid_file.exists() or not pid_file.read_text().endswith("\n"):
        assert time.monotonic() < deadline, "the grandchild never started"
        await asyncio.sleep(0.01)
    return int(pid_file.read_text())


SPAWN_GRANDCHILD = ("-c", "sleep 60 & echo $! > gc.pid; wait")


async def test_o01_yes_is_capped_and_killed_quickly(executor: LocalSandboxExecutor) -> None:
    started = time.monotonic()
    result = await _run(executor, "yes")
    assert time.monotonic() - started < 2
    assert result.stdout_truncated and not result.stderr_truncated
    assert len(result.stdout) == STDOUT_CAP and result.stdout.startswith(b"y\ny\n")
    assert result.exit_code == -signal.SIGKILL


async def test_o09_stderr_flood_then_stdout_does_not_deadlock(executor: LocalSandboxExecutor) -> None:
    script = "head -c 1048576 /dev/zero >&2; echo delivered"
    result = await _run(executor, "sh", "-c", script, timeout=10)
    assert result.stderr_truncated and len(result.stderr) == STDERR_CAP
    assert (result.stdout, result.stdout_truncated, result.exit_code) == (b"delivered\n", False, 0)


async def test_s06_endless_stderr_is_killed(executor: LocalSandboxExecutor) -> None:
    result = await _run(executor, "sh", "-c", "yes >&2", timeout=10)
    assert result.stderr_truncated and len(result.stderr) <= STDERR_CAP
    assert result.exit_code == -signal.SIGKILL


async def test_output_of_exactly_the_cap_is_not_truncated(executor: LocalSandboxExecutor) -> None:
    exact = await _run(executor, "head", "-c", "100", "/dev/zero", stdout=100)
    over = await _run(executor, "head", "-c", "101", "/dev/zero", stdout=100)
    assert (len(exact.stdout), exact.stdout_truncated) == (100, False)
    assert (len(over.stdout), over.stdout_truncated) == (100, True)


@pytest.mark.parametrize("offset", [1, 2, 3])
async def test_o06_multibyte_character_across_the_stdout_cap(
    executor: LocalSandboxExecutor, root: Path, offset: int
) -> None:
    (root / "data").write_bytes(b"a" * (STDOUT_CAP - offset) + "\U0001f600".encode() + b"more")
    result = await _run(executor, "cat", "data")
    assert result.stdout_truncated and result.stdout == b"a" * (STDOUT_CAP - offset)


async def test_o06_multibyte_character_across_the_stderr_cap(
    executor: LocalSandboxExecutor, root: Path
) -> None:
    (root / "data").write_bytes(b"a" * (STDERR_CAP - 1) + "\u20ac".encode())
    result = await _run(executor, "sh", "-c", "cat data >&2")
    assert result.stderr_truncated and result.stderr == b"a" * (STDERR_CAP - 1)
    result.stderr.decode("utf-8")


async def test_memory_stays_bounded(executor: LocalSandboxExecutor) -> None:
    tracemalloc.start()
    try:
        stdout = await _run(executor, "head", "-c", "50000000", "/dev/zero")
        stderr = await _run(executor, "sh", "-c", "head -c 3000000 /dev/zero >&2", timeout=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(stdout.stdout) <= STDOUT_CAP and len(stderr.stderr) <= STDERR_CAP
    assert peak < 4 * 1024 * 1024


async def test_calls_started_together_spawn_in_turns_with_the_loop_running_between(
    executor: LocalSandboxExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting a child blocks the loop until it has exec'd; twenty started in one turn of the loop would
    block it for all twenty. Each spawn is counted against a callback that runs once per turn."""
    turns = 0
    counting = True
    spawned_at: list[int] = []
    loop = asyncio.get_running_loop()

    def turn() -> None:
        nonlocal turns
        turns += 1
        if counting:
            loop.call_soon(turn)

    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        spawned_at.append(turns)
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    loop.call_soon(turn)
    try:
        results = await asyncio.gather(*(_run(executor, "echo", str(index)) for index in range(20)))
    finally:
        counting = False
    assert [result.stdout for result in results] == [f"{index}\n".encode() for index in range(20)]
    assert len(spawned_at) == 20
    assert all(later > earlier for earlier, later in itertools.pairwise(spawned_at)), spawned_at


async def test_group_is_killed_on_task_cancel(executor: LocalSandboxExecutor, root: Path) -> None:
    task = asyncio.create_task(_run(executor, "sh", *SPAWN_GRANDCHILD))
    pid = await _grandchild_pid(root)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(pid)


async def test_a_call_cancelled_while_its_command_starts_kills_the_group_at_once(
    executor: LocalSandboxExecutor, root: Path
) -> None:
    """Cancelled at each step of starting the child: the call ends at once and leaves nothing running."""
    for steps in range(8):
        (root / "gc.pid").unlink(missing_ok=True)
        started = time.monotonic()
        task = asyncio.create_task(_run(executor, "sh", *SPAWN_GRANDCHILD))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 5, steps
        deadline = time.monotonic() + 3
        while _running_in(root):  # the shell and its sleep, whether or not it wrote the sleep's pid yet
            assert time.monotonic() < deadline, f"left running after a cancel at step {steps}"
            await asyncio.sleep(0.02)


def _running_in(root: Path) -> list[int]:
    """The live processes whose working directory is ``root``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _alive(int(entry)):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/cwd") == str(root):
                    found.append(int(entry))
    return found


async def test_group_is_killed_on_signal_cancel(executor: LocalSandboxExecutor, root: Path) -> None:
    cancel = CancelSignal()
    task = asyncio.create_task(_run(executor, "sh", *SPAWN_GRANDCHILD, signal=cancel))
    pid = await _grandchild_pid(root)
    cancel.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(pid)


async def test_group_is_killed_on_timeout(executor: LocalSandboxExecutor, root: Path) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeoutError) as caught:
        await _run(executor, "sh", *SPAWN_GRANDCHILD, timeout=0.5)
    assert time.monotonic() - started < 2
    assert str(root) not in caught.value.message
    assert await _gone(await _grandchild_pid(root))


async def test_background_children_die_with_the_command(executor: LocalSandboxExecutor, root: Path) -> None:
    started = time.monotonic()
    result = await _run(executor, "sh", "-c", "sleep 60 & echo $! > gc.pid; echo $!", timeout=10)
    assert time.monotonic() - started < 3
    assert result.exit_code == 0
    assert await _gone(int(result.stdout))


async def test_a_child_that_leaves_the_group_cannot_hang_the_call(
    executor: LocalSandboxExecutor, root: Path
) -> None:
    """Residual risk: ``setsid`` escapes the group kill; the call still returns once the pipe grace ends."""
    script = "setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & until [ -s esc.pid ]; do sleep 0.01; done"
    started = time.monotonic()
    result = await _run(executor, "sh", "-c", script, timeout=10)
    escaped = int((root / "esc.pid").read_text())
    try:
        assert time.monotonic() - started < 3
        assert result.exit_code == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


async def test_environment_is_fixed(
    executor: LocalSandboxExecutor, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DITTO_TEST_SECRET", "hunter2")
    result = await _run(executor, "env")
    lines = sorted(result.stdout.decode().splitlines())
    home = next(line for line in lines if line.startswith("HOME="))
    assert [line for line in lines if line != home] == sorted(
        ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC"]
    )
    assert not Path(home.removeprefix("HOME=")).is_relative_to(root)


async def test_u06_workspace_magic_file_is_not_loaded(executor: LocalSandboxExecutor, root: Path) -> None:
    """A ``.magic`` planted in the workspace cannot change what ``file`` reports (HOME is elsewhere)."""
    (root / ".magic").write_text("0\tstring\tDITTOMAGIC\tplanted verdict: harmless text\n")
    (root / "sample.bin").write_bytes(b"DITTOMAGIC\x00\x01\x02 payload")
    result = await _run(executor, "file", "-b", "sample.bin")
    assert result.exit_code == 0
    assert b"planted verdict" not in result.stdout
    assert result.stdout.strip()


async def test_u06_home_is_private_empty_and_fresh_per_command(executor: LocalSandboxExecutor) -> None:
    first = (await _run(executor, "sh", "-c", 'ls -A "$HOME"; touch "$HOME/left"; echo "$HOME"')).stdout
    home = first.decode().splitlines()[-1]
    assert first.decode().splitlines() == [home]
    assert not Path(home).exists()
    second = (await _run(executor, "sh", "-c", 'ls -A "$HOME"')).stdout
    assert second == b""


async def test_cwd_is_the_root_and_stdin_is_empty(executor: LocalSandboxExecutor, root: Path) -> None:
    assert (await _run(executor, "pwd")).stdout == f"{root}\n".encode()
    assert (await _run(executor, "cat", timeout=5)).stdout == b""


async def test_shell_syntax_in_args_is_literal(executor: LocalSandboxExecutor, root: Path) -> None:
    args = ("$(touch pwned)", "a;touch pwned", "`touch pwned`", "*", "$HOME", "|", "&&", "-n")
    result = await _run(executor, "printf", "%s\\n", *args)
    assert result.stdout.decode().splitlines() == list(args)
    assert not (root / "pwned").exists()


async def test_exit_code_is_reported(executor: LocalSandboxExecutor) -> None:
    result = await _run(executor, "sh", "-c", "echo oops >&2; exit 3")
    assert (result.exit_code, result.stderr) == (3, b"oops\n")


async def test_absolute_command_path(executor: LocalSandboxExecutor) -> None:
    assert (await _run(executor, "/bin/echo", "hi")).stdout == b"hi\n"


@pytest.mark.parametrize(
    "command",
    ["sh -c", "./sh", "bin/sh", "", ".", "..", "../bin/sh", "$(id)", "ls;id", "a b", "\u00e9cho", 42],
)
async def test_command_refused(executor: LocalSandboxExecutor, command: object) -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(executor, command)  # type: ignore[arg-type]
    assert caught.value.code == "command_refused"


@pytest.mark.parametrize(
    "command", ["no-such-command-ditto", "/nonexistent/dir/tool", "/usr/bin", "/etc/hostname"]
)
async def test_command_failed_to_start(executor: LocalSandboxExecutor, command: str) -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(executor, command)
    assert caught.value.code == "command_failed_to_start"
    assert "/" not in caught.value.message


@pytest.mark.parametrize(
    "args", [["a\x00b"], "abc", [1], ["a\udc80\ud800"], ["x"] * 4097, ["x" * 300_000], None]
)
async def test_bad_args_refused(executor: LocalSandboxExecutor, args: object) -> None:
    with pytest.raises(SandboxError) as caught:
        await executor.run("echo", args, max_stdout_bytes=10, max_stderr_bytes=10)  # type: ignore[arg-type]
    assert caught.value.code == "command_refused"


@pytest.mark.parametrize(("stdout", "stderr"), [(-1, 10), (10, -1), (True, 10), (10, 2**40), ("10", 10)])
async def test_s06_invalid_caps_fail_closed(
    executor: LocalSandboxExecutor, stdout: object, stderr: object
) -> None:
    with pytest.raises(ValidationError) as caught:
        await executor.run("touch", ["pwned"], max_stdout_bytes=stdout, max_stderr_bytes=stderr)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_limit"
    assert not (executor.root / "pwned").exists()


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), True, "1"])
async def test_s06_invalid_timeouts_fail_closed(root: Path, timeout: object) -> None:
    with pytest.raises(ValidationError):
        create_local_sandbox_executor(root, timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await create_local_sandbox_executor(root).run(
            "touch",
            ["pwned"],
            max_stdout_bytes=1,
            max_stderr_bytes=1,
            timeout=timeout,  # type: ignore[arg-type]
        )
    assert not (root / "pwned").exists()


async def test_s06_a_call_cannot_extend_the_executor_timeout(root: Path) -> None:
    executor = create_local_sandbox_executor(root, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(CommandTimeoutError):
        await _run(executor, "sleep", "5", timeout=30)
    with pytest.raises(CommandTimeoutError):
        await _run(create_local_sandbox_executor(root, timeout=30), "sleep", "5", timeout=0.3)
    assert time.monotonic() - started < 2


async def test_cancelled_signal_spawns_nothing(executor: LocalSandboxExecutor, root: Path) -> None:
    cancel = CancelSignal()
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await _run(executor, "touch", "pwned", signal=cancel)
    assert not (root / "pwned").exists()


def test_executor_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        create_local_sandbox_executor(tmp_path / "missing")
    assert caught.value.code == "invalid_workspace"


class RecordingExecutor:
    """A fake executor that only remembers what it was asked to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Sequence[str]]] = []

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
        self.calls.append((command, args))
        return CommandResult(
            exit_code=0, stdout=b"", stderr=b"", stdout_truncated=False, stderr_truncated=False
        )


async def test_s05_execute_off_spawns_nothing(root: Path) -> None:
    recording = RecordingExecutor()
    for executor in (recording, create_local_sandbox_executor(root)):
        sandbox = Sandbox(SandboxPermissions(read=True, write=True), workspace=root, executor=executor)
        with pytest.raises(PermissionDeniedError) as caught:
            await sandbox.run("touch", ["pwned"])
        assert caught.value.code == "execute_not_allowed"
    assert recording.calls == []
    assert not (root / "pwned").exists()


async def test_sandbox_run_without_executor(root: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        await Sandbox(SandboxPermissions(execute=True), workspace=root).run("true", [])
    assert caught.value.code == "no_executor"


async def test_sandbox_run_forwards_to_the_executor(root: Path) -> None:
    recording = RecordingExecutor()
    sandbox = Sandbox(SandboxPermissions(execute=True), workspace=root, executor=recording)
    await sandbox.run("ls", ["--", "./a"])
    real = Sandbox(
        SandboxPermissions(execute=True), workspace=root, executor=create_local_sandbox_executor(root)
    )
    result = await real.run("touch", ["made"])
    assert recording.calls == [("ls", ["--", "./a"])]
    assert result.exit_code == 0 and (root / "made").exists()
