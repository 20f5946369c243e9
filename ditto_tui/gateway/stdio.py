"""The gateway's stdin and stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's own ``stdio_server()`` reads each line and writes and flushes each message on a worker thread:
three thread hops a call, each a wake-up of a thread and then of the loop, which on two cores is a
good part of what a call through the gateway costs. When stdin and stdout are pipes (as an
MCP client starts the gateway), :func:`loop_stdio` gives the transport the same two streams served by
the loop's own pipe transports instead. Like the SDK, it takes the wire off fds 0 and 1 while serving
(fd 0 reads the null device, fd 1 writes to stderr), so nothing the process or its children print can
tear a frame, and puts it back after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest message a client may send (one JSON-RPC message a line): a longer one is skipped to its
end and answered as a message that does not parse. (The SDK's own reader holds a line of any length.)"""
TOO_LONG = "a message longer than the gateway takes\n"
"""What the transport is given in place of a message too long: not JSON, so it answers a parse error."""


class _Lines:
    """stdin as ``async for line in stdin`` reads it: one decoded message per line, until the end."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        skipping = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # the client closed stdin: its last line, if any
                if not end.partial or skipping:
                    raise StopAsyncIteration from None
                line = end.partial
            except asyncio.LimitOverrunError as over:  # too long: skip to its end
                logger.error("the client sent a message longer than %d bytes: skipped", MAX_LINE_BYTES)
                await self._reader.readexactly(over.consumed)
                skipping = True
                continue
            return TOO_LONG if skipping else line.decode("utf-8", errors="replace")


class _Out:
    """stdout as the transport writes it: ``write`` queues, ``flush`` returns once the pipe has it all
    (the transport's buffer limit is 0), as the SDK's flush does."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe, as an MCP client starts the gateway with. Sockets and terminals keep the
    SDK's transport: the loop's write transport takes a readable socket for a closed one, and making a
    terminal non-blocking would make it so for the shell too."""
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


@contextlib.asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport over this process's stdin and stdout, served by the loop (see the
    module) when both are pipes; the SDK's own, with its threads, otherwise."""
    from mcp.server.stdio import stdio_server

    if sys.platform == "win32" or not (_pipe(0) and _pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    import fcntl

    sys.stdout.flush()
    blocking = os.get_blocking(0), os.get_blocking(1)
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_files = (os.fdopen(wire_in, "rb", buffering=0), os.fdopen(wire_out, "wb", buffering=0))
    transports: list[asyncio.BaseTransport] = []
    try:
        _divert(0, os.O_RDONLY)
        _divert(1, os.O_WRONLY)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), wire_files[0]
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, wire_files[1]
        )
        transports.append(write_transport)
        write_transport.set_write_buffer_limits(0)  # a flush waits until the pipe took every byte
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        async with stdio_server(_Lines(reader), _Out(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        sys.stdout.flush()  # what was printed meanwhile went to stderr, not later onto the wire
        for fd, wire, mode in ((0, wire_in, blocking[0]), (1, wire_out, blocking[1])):
            with contextlib.suppress(OSError):  # the wire back where it was, as it was
                os.dup2(wire, fd)
                os.set_blocking(fd, mode)
        for transport in transports:
            transport.close()  # and its file, the duplicate it served
        for file in wire_files[len(transports) :]:
            file.close()


def _divert(fd: int, flags: int) -> None:
    """Point ``fd`` away from the wire: stdin at the null device, stdout at stderr (the null device when
    stderr is closed)."""
    if fd == 1:
        with contextlib.suppress(OSError):
            os.dup2(2, 1)
            return
    null = os.open(os.devnull, flags)
    try:
        if null != fd:
            os.dup2(null, fd)
    finally:
        if null != fd:
            os.close(null)
