"""OS isolation for commands: the local executor's rules, with every program run inside bubblewrap.

The cooperative guard checks paths before a program runs; it cannot stop the program from opening
something else afterwards (a symlink swapped in, a path it computes itself). Inside bubblewrap the
program sees only ``/usr`` and the workspace, both read-only by default, and has no network, no view of
other processes and a session of its own; the whole sandbox dies with the command's process group.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ditto_tui.errors import SandboxError, ValidationError
from ditto_tui.sandbox.executor import CommandResult, LocalSandboxExecutor, resolve_command
from ditto_tui.signal import CancelSignal

BWRAP = "/usr/bin/bwrap"
"""Where bubblewrap is looked for (an absolute path: the search path is never consulted)."""

_MERGED_USR = (("usr/bin", "/bin"), ("usr/sbin", "/sbin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64"))
_PROBE_SECONDS = 10.0


def bubblewrap_arguments(root: Path, *, writable: bool = False) -> list[str]:
    """The bubblewrap options that show only ``/usr`` and ``root`` (read-only unless ``writable``)."""
    arguments = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for target, link in _MERGED_USR:
        arguments += ["--symlink", target, link]
    arguments += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    arguments += ["--bind" if writable else "--ro-bind", str(root), str(root), "--chdir", str(root)]
    return arguments


class BubblewrapExecutor:
    """A :class:`~ditto_tui.sandbox.SandboxExecutor` that runs each command in a fresh bubblewrap sandbox.

    Program lookup, environment, caps, timeout, cancellation and the process-group kill are those of
    :class:`~ditto_tui.sandbox.LocalSandboxExecutor`, which starts ``bwrap`` in place of the program.
    """

    def __init__(
        self, root: Path, *, timeout: float | None = None, writable: bool = False, bwrap: str = BWRAP
    ) -> None:
        self.root = root
        self.bwrap = bwrap
        self.local = LocalSandboxExecutor(root, timeout=timeout)
        self._options = bubblewrap_arguments(root, writable=writable)

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
        """Run ``command`` with ``args`` inside the sandbox; raises like the local executor."""
        _argv0, executable = resolve_command(command)
        return await self.local.run(
            self.bwrap,
            [*self._options, "--", executable, *args],
            max_stdout_bytes=max_stdout_bytes,
            max_stderr_bytes=max_stderr_bytes,
            signal=signal,
            timeout=timeout,
        )


def create_bubblewrap_executor(
    root: str | os.PathLike[str], *, timeout: float | None = None, writable: bool = False, bwrap: str = BWRAP
) -> BubblewrapExecutor:
    """The isolating executor for the workspace ``root``, for ``create_ditto(sandbox_executor=...)``.

    Fails closed: raises :class:`SandboxError` (``isolation_unavailable``) unless ``bwrap`` can start a
    sandbox here (it needs user namespaces), so a run never silently falls back to no isolation.
    """
    real = Path(os.path.realpath(root))
    if not real.is_dir():
        raise ValidationError("workspace is not an existing directory", code="invalid_workspace")
    executor = BubblewrapExecutor(real, timeout=timeout, writable=writable, bwrap=bwrap)
    _probe(executor)
    return executor


def _probe(executor: BubblewrapExecutor) -> None:
    """Start one empty sandbox; refuse the executor when that fails."""
    unavailable = SandboxError("bubblewrap cannot start a sandbox here", code="isolation_unavailable")
    if not os.path.isfile(executor.bwrap) or not os.access(executor.bwrap, os.X_OK):
        raise unavailable
    _argv0, true = resolve_command("true")
    command = [executor.bwrap, *bubblewrap_arguments(executor.root), "--", true]
    try:
        probe = subprocess.run(command, capture_output=True, timeout=_PROBE_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise unavailable from error
    if probe.returncode != 0:
        raise unavailable
