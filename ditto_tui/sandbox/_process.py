"""One child process group: streams captured under caps as they arrive, and a kill for every member."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import cast

from ditto_tui.sandbox.truncate import truncate_utf8

# A code point is at most 4 bytes: keeping 3 bytes past the cap tells whether the last one is complete.
_LOOKAHEAD = 3


class StreamCapture:
    """Keeps at most ``cap`` (+3 lookahead) bytes of one stream and counts the rest without storing it."""

    def __init__(self, cap: int, *, overflow_allowance: int) -> None:
        self._cap = cap
        self._allowance = overflow_allowance
        self._buffer = bytearray()
        self._seen = 0

    def feed(self, data: bytes) -> bool:
        """Take one chunk; return whether the process must now be killed."""
        self._seen += len(data)
        room = self._cap + _LOOKAHEAD - len(self._buffer)
        if room > 0:
            self._buffer += data[:room]
        return self._seen > self._cap + self._allowance

    @property
    def truncated(self) -> bool:
        """Whether the stream produced more bytes than the cap."""
        return self._seen > self._cap

    def value(self) -> bytes:
        """The captured bytes, cut on a UTF-8 code-point boundary when the stream was truncated.

        A stream that stopped inside the lookahead (the process was killed, or wrote no more, one or two
        bytes past the cap) may have left a character whose last bytes never came: it is dropped whole.
        """
        if self.truncated:
            short = len(self._buffer) < self._cap + _LOOKAHEAD
            return truncate_utf8(bytes(self._buffer), self._cap, cut_short=short)
        return bytes(self._buffer)


class GroupProtocol(asyncio.SubprocessProtocol):
    """Receives a child's output and exit; kills its whole process group as soon as a cap demands it."""

    def __init__(self, stdout: StreamCapture, stderr: StreamCapture) -> None:
        loop = asyncio.get_running_loop()
        self.stdout = stdout
        self.stderr = stderr
        self.exited: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self._transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.SubprocessTransport, transport)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        capture = self.stdout if fd == 1 else self.stderr
        if capture.feed(data):
            self.kill_group()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    def kill_group(self) -> None:
        """SIGKILL every process in the child's group."""
        if self._transport is not None:
            kill_group(self._transport.get_pid())


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (each child leads its own session, so its own group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
