"""Whether a recorded process is still the one recorded: a process id and, where the system says (Linux
``/proc``), when that process started, so that another process given the same id later is not taken for
it; and ending such a process.

A journal's header names its writer this way, so that a reader can tell a run still going from one cut
short: a run with no ``run_finished`` whose writer is gone was interrupted (the process was killed or
crashed) and is never shown as running. The local run server and ``serve`` record themselves the same way.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import Mapping
from typing import Any


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the process's name (state first), or none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read(4096).decode("ascii", "replace")
    except OSError:
        return []
    return stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22), or None when
    the system does not say: with the pid, it names one process, never another given the same id later."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


@functools.cache
def _own_start(pid: int) -> str | None:
    """:func:`process_started` of this process (by its id, so a forked child reads its own), read once."""
    return process_started(pid)


def writer_identity() -> dict[str, Any]:
    """This process, as a journal header records it (a new dict each time: the header is the caller's)."""
    pid = os.getpid()
    started = _own_start(pid)
    return {"pid": pid} if started is None else {"pid": pid, "started": started}


def writer_alive(header: Mapping[str, Any]) -> bool | None:
    """Whether the process that wrote the journal of ``header`` is still running; ``None`` when the
    header does not say who wrote it (an older journal) or the system cannot tell."""
    writer = header.get("writer")
    if not isinstance(writer, Mapping) or not isinstance(pid := writer.get("pid"), int) or pid <= 0:
        return None
    started = writer.get("started")
    return process_alive(pid, started if isinstance(started, str) else None)


def process_alive(pid: int, started: str | None) -> bool | None:
    """Whether process ``pid`` that started at ``started`` (:func:`process_started`) is still running;
    ``None`` when the system cannot tell (no start time to tell a reused id from it)."""
    if pid == os.getpid():
        return started is None or started == process_started(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        pass  # a process of another user has that id now: not ours, unless its start time says so
    fields = _stat(pid)
    if fields[:1] in (["Z"], ["X"]):  # it has ended; only its parent has yet to collect its exit status
        return False
    if started is None:
        return None
    now = fields[19] if len(fields) > 19 else None
    return None if now is None else now == started


def end_process(pid: int, started: str | None, seconds: float) -> None:
    """Ask process ``pid`` (started at ``started``) to end with SIGTERM, and wait up to ``seconds`` until
    it has (a process given the same id meanwhile is not waited for)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + seconds
    while process_alive(pid, started) is not False and time.monotonic() < deadline:
        time.sleep(0.05)
