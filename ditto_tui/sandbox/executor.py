"""The local command executor: no shell, a fixed environment, capped streams, one process group to kill."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import subprocess
import tempfile
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ditto_tui.errors import CommandTimeoutError, SandboxError, ValidationError
from ditto_tui.sandbox._process import GroupProtocol, StreamCapture, kill_group
from ditto_tui.signal import CancelSignal

SEARCH_PATH = ("/usr/bin", "/bin")
MAX_OUTPUT_CAP = 64 * 1024 * 1024
MAX_ARGS = 4096
MAX_ARG_BYTES = 256 * 1024
STDERR_OVERFLOW_ALLOWANCE = 4 * 1024 * 1024
"""Bytes of stderr discarded past its cap before the group is killed, so stdout still arrives (O-09)."""
PIPE_GRACE_SECONDS = 1.0
"""How long the pipes may stay open once the child exited and its group was killed."""

_SPAWN_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
"""One spawn at a time per loop. Starting a child blocks the loop until it has exec'd (a few ms, tens on
a loaded machine); twenty calls started together would otherwise all spawn in one turn of the loop and
freeze the screen for the sum. Taking turns lets the loop run between them."""


def _spawn_turn() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    turn = _SPAWN_TURNS.get(loop)
    if turn is None:
        turn = _SPAWN_TURNS[loop] = asyncio.Lock()
    return turn


_BARE_NAME = re.compile(r"[A-Za-z0-9._+-]+")


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What one process produced, each stream cut to its cap on a UTF-8 boundary."""

    exit_code: int
    """The exit status; negative (``-signal``) when the process was killed, e.g. ``-9`` at a cap."""
    stdout: bytes
    """Standard output, at most the stdout cap."""
    stderr: bytes
    """Standard error, at most the stderr cap."""
    stdout_truncated: bool
    """Whether the process wrote more to stdout than the cap (it was then killed)."""
    stderr_truncated: bool
    """Whether the process wrote more to stderr than the cap."""


class SandboxExecutor(Protocol):
    """Runs one command without a shell and returns its bounded output."""

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
        """Run ``command`` with ``args``; raise on refusal, start failure, timeout or cancellation."""
        ...


def _refused(message: str) -> SandboxError:
    return SandboxError(message, code="command_refused")


def _not_started(name: str) -> SandboxError:
    return SandboxError(f"command {name!r} failed to start", code="command_failed_to_start")


def resolve_command(command: object) -> tuple[str, str]:
    """Return ``(argv0, executable)``: a bare name searched in the fixed path, or an absolute path."""
    if not isinstance(command, str):
        raise _refused("command must be a string")
    if _BARE_NAME.fullmatch(command) and command.strip("."):
        for directory in SEARCH_PATH:
            candidate = os.path.join(directory, command)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return command, candidate
        raise _not_started(command)
    if command.startswith("/") and command.isprintable():
        if os.path.isfile(command) and os.access(command, os.X_OK):
            return command, command
        raise _not_started(os.path.basename(command))
    raise _refused("command must be a bare program name or an absolute path")


def _check_args(args: object) -> list[str]:
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise _refused("command arguments must be a list of strings")
    checked = list(args)
    if len(checked) > MAX_ARGS:
        raise _refused(f"command arguments exceed {MAX_ARGS} items")
    if not all(isinstance(arg, str) and "\x00" not in arg for arg in checked):
        raise _refused("command arguments must be strings without NUL bytes")
    try:
        size = sum(len(os.fsencode(arg)) for arg in checked)
    except UnicodeEncodeError:
        raise _refused("command arguments must be encodable text") from None
    if size > MAX_ARG_BYTES:
        raise _refused(f"command arguments exceed {MAX_ARG_BYTES} bytes")
    return checked


def _check_cap(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OUTPUT_CAP:
        raise ValidationError(f"{name} must be an integer from 0 to {MAX_OUTPUT_CAP}", code="invalid_limit")
    return value


def _check_timeout(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ValidationError("timeout must be a positive number of seconds", code="invalid_timeout")
    return float(value)


def _tighter(first: float | None, second: float | None) -> float | None:
    """The stricter of two optional deadlines: a call can shorten the executor's timeout, never extend it."""
    present = [value for value in (first, second) if value is not None]
    return min(present) if present else None


async def _until_exit(protocol: GroupProtocol, signal: CancelSignal | None) -> None:
    """Wait for the child to exit; raise :class:`asyncio.CancelledError` if ``signal`` fires first."""
    if signal is None:
        await asyncio.shield(protocol.exited)
        return
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({protocol.exited, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not protocol.exited.done():
        raise asyncio.CancelledError(signal.reason or "cancelled")


class LocalSandboxExecutor:
    """Runs programs from ``/usr/bin:/bin`` (or by absolute path) in the workspace root, without a shell.

    The environment is fixed, and ``HOME`` is a new empty private folder for each command, removed when
    it ends: no file of the workspace (``.magic``, ``.gitconfig``, rc files) or of the user's real home
    changes what a command reports, and no command leaves anything there for the next one.
    """

    def __init__(self, root: Path, *, timeout: float | None = None) -> None:
        self.root = root
        self.timeout = _check_timeout(timeout)
        self._environment = {
            "PATH": ":".join(SEARCH_PATH),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
        }

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
        """Run one command; stdout past its cap kills the process group at once and marks it truncated.

        Raises :class:`SandboxError` (``command_refused``, ``command_failed_to_start``),
        :class:`CommandTimeoutError`, or :class:`asyncio.CancelledError` after killing and reaping the group.
        """
        argv0, executable = resolve_command(command)
        argv = _check_args(args)
        stdout = StreamCapture(_check_cap("max_stdout_bytes", max_stdout_bytes), overflow_allowance=0)
        stderr = StreamCapture(
            _check_cap("max_stderr_bytes", max_stderr_bytes), overflow_allowance=STDERR_OVERFLOW_ALLOWANCE
        )
        deadline = _tighter(self.timeout, _check_timeout(timeout))
        if signal is not None:
            signal.raise_if_cancelled()
        with tempfile.TemporaryDirectory(prefix="ditto-tui-home-", ignore_cleanup_errors=True) as home:
            environment = {**self._environment, "HOME": home}
            spawn = self._spawn(argv0, executable, argv, stdout, stderr, environment)
            transport, protocol = await _started(spawn)
            try:
                async with asyncio.timeout(deadline):
                    await _until_exit(protocol, signal)
                    kill_group(transport.get_pid())
                    await asyncio.wait([protocol.finished], timeout=PIPE_GRACE_SECONDS)
            except TimeoutError:
                raise CommandTimeoutError(
                    f"command {os.path.basename(argv0)!r} timed out after {deadline:g} s"
                ) from None
            finally:
                await _reap(transport, protocol)
        exit_code = transport.get_returncode()
        return CommandResult(
            exit_code=-1 if exit_code is None else exit_code,
            stdout=stdout.value(),
            stderr=stderr.value(),
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
        )

    async def _spawn(
        self,
        argv0: str,
        executable: str,
        argv: list[str],
        stdout: StreamCapture,
        stderr: StreamCapture,
        environment: dict[str, str],
    ) -> tuple[asyncio.SubprocessTransport, GroupProtocol]:
        loop = asyncio.get_running_loop()
        try:
            async with _spawn_turn():
                return await loop.subprocess_exec(
                    lambda: GroupProtocol(stdout, stderr),
                    argv0,
                    *argv,
                    executable=executable,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=self.root,
                    env=environment,
                    start_new_session=True,
                    close_fds=True,
                )
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            raise _not_started(os.path.basename(argv0)) from error


async def _started(
    spawn: Coroutine[None, None, tuple[asyncio.SubprocessTransport, GroupProtocol]],
) -> tuple[asyncio.SubprocessTransport, GroupProtocol]:
    """Finish starting the child even when the call is cancelled meanwhile, then kill its group.

    A start cancelled half-way would leave the group running (asyncio kills only the leader) and, on
    Python 3.11, wait for its pipes to close: a ``sleep 60 &`` in the group held the call for 60 s.
    """
    starting = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _reap(*await starting)
        raise


async def _reap(transport: asyncio.SubprocessTransport, protocol: GroupProtocol) -> None:
    """Kill whatever is left of the group, wait for the child's exit status, then release the pipes."""
    kill_group(transport.get_pid())
    try:
        await asyncio.shield(protocol.exited)
    finally:
        transport.close()


def create_local_sandbox_executor(
    root: str | os.PathLike[str], *, timeout: float | None = None
) -> LocalSandboxExecutor:
    """Build the local executor for the workspace ``root`` (an existing directory, canonicalised once)."""
    real = Path(os.path.realpath(root))
    if not real.is_dir():
        raise ValidationError("workspace is not an existing directory", code="invalid_workspace")
    return LocalSandboxExecutor(real, timeout=timeout)
