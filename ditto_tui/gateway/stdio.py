"""The gateway's stdin and stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's own ``stdio_server()`` reads each line and writes and flushes each message on a worker thread:
three thread hops a call, each a wake-up of a thread and then of the loop, which on two cores is a
good part of what a call through the gateway costs. When stdin and stdout are pipes or sockets (as an
MCP client starts the gateway), :func:`loop_stdio` gives the transport the same two streams served by
the loop's own pipe transports instead. Like the SDK, it takes the wire off fds 0 and 1 while serving
(fd 0 reads the null device, fd 1 writes to stderr), so nothing the process or its children print can
tear a frame, and puts it back after.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest message a client may send (one JSON-RPC message a line): past it, the connection ends
(the SDK's own reader would hold a line of any length in memory)."""


class _Lines:
    """stdin as ``async for line in stdin`` reads it: one decoded message per line, until the end."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:  # the client closed stdin: its last line, if any
            if not end.partial:
                raise StopAsyncIteration from None
            line = end.partial
        except asyncio.LimitOverrunError:
            logger.error(
                "the client sent a message longer than %d bytes: the connection ends", MAX_LINE_BYTES
            )
            raise StopAsyncIteration from None
        return line.decode("utf-8", errors="replace")


class _Out:
    """stdout as the transport writes it: ``write`` queues, ``flush`` waits for the pipe to take it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _streamable(fd: int) -> bool:
    """Whether the loop can serve ``fd`` (a pipe, a socket or a terminal; not a regular file)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport over this process's stdin and stdout, served by the loop (see the
    module); the SDK's own, with its reading thread, where they are not pipes, sockets or terminals."""
    from mcp.server.stdio import stdio_server

    if sys.platform == "win32" or not (_streamable(0) and _streamable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # what is printed goes to stderr (the client's log), never onto the wire
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    wire_files = (os.fdopen(wire_in, "rb", buffering=0), os.fdopen(wire_out, "wb", buffering=0))
    transports: list[asyncio.BaseTransport] = []
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), wire_files[0]
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, wire_files[1]
        )
        transports.append(write_transport)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        async with stdio_server(_Lines(reader), _Out(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        for fd, wire in ((0, wire_in), (1, wire_out)):  # the wire back where it was
            with contextlib.suppress(OSError):
                os.dup2(wire, fd)
                os.set_blocking(fd, True)
        for transport in transports:
            transport.close()  # and its file, the duplicate it served
        for file in wire_files[len(transports) :]:
            file.close()
