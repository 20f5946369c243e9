"""The stdio transport: the server as a child process, its messages bounded, its stderr in a log file.

Like the SDK's ``stdio_client`` (same environment policy, same shutdown order: close stdin, wait, then
signal the process group), with these differences: the program is resolved only from safe places and a
Python interpreter gets ``-P`` (``command.py``); the child's ``PATH`` keeps only absolute entries outside
the workspace; stderr is read line by line and written to the log sanitised, after a ``[stderr]`` label;
a message larger than ``max_message_bytes``, a line that is not JSON, or invalid UTF-8 closes the
connection as a protocol error instead of being buffered or skipped, and the reason is kept in
:attr:`StdioTransport.failure`. JSON that is not a JSON-RPC message (a response with a null id, say) is
dropped and noted in the log. POSIX only.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from ditto_tui.interaction.mcp.command import (
    McpCommandError,
    python_args,
    resolve_command,
    safe_environment,
)
from ditto_tui.interaction.mcp.logs import MAX_LINE_CHARS, LogSink

__all__ = ["EXIT_GRACE_SECONDS", "MAX_MESSAGE_BYTES", "McpCommandError", "StdioTransport", "resolve_command"]

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest message a server may send in one line."""

EXIT_GRACE_SECONDS = 2.0
"""How long a server may take to exit after its stdin closes, and again after SIGTERM."""

STDERR_DRAIN_SECONDS = 1.0
"""How long the last of a stopped server's stderr is still read (a child of it may hold the pipe open)."""

_POLL_SECONDS = 0.01
_NOTED_IGNORED = 10
_STREAM_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


def _signal_group(process: anyio.abc.Process, number: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    """Whether the process exited within ``seconds`` (polled: ``wait()`` also waits for pipe EOF)."""
    deadline = anyio.current_time() + seconds
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL_SECONDS)
    return True


class StdioTransport:
    """One stdio server connection; :meth:`connect` yields the SDK's ``(read_stream, write_stream)``."""

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        workspace: str | None = None,
        sink: LogSink,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        shown: Callable[[str], str] = str,
    ) -> None:
        self._requested = get_default_environment() | (env or {})
        self.environment = safe_environment(self._requested, workspace)
        self.command = command
        self.args = list(args)
        # How an argument is written in the log: a value from ${VAR} as its template, never as itself.
        self._shown = shown
        self.cwd = cwd
        self.workspace = workspace
        self.sink = sink
        self.max_message_bytes = max_message_bytes
        self.failure: str | None = None
        self.ignored = 0
        self.hurry = False
        self.exit_status: int | None = None
        """The process's exit status once it was reaped (negative: ended by that signal)."""
        self.gone = asyncio.Event()
        """Set when the server's stdout ends: it exited, closed it, or was failed for what it sent."""

    def _note(self, text: str) -> None:
        self.sink.note(text)

    def argv(self) -> list[str]:
        """The program and arguments that run: raises :class:`McpCommandError` when the command is unsafe."""
        # The requested PATH, not the child's: so the error can say a command was found only where unsafe.
        program = resolve_command(self.command, self._requested, workspace=self.workspace)
        return [program, *python_args(program, self.args)]

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[tuple[Any, Any]]:
        """Start the server; on exit stop it (stdin closed, then SIGTERM and SIGKILL to its group)."""
        argv = self.argv()
        written = [argv[0], *(self._shown(arg) for arg in argv[1:])]
        self.sink.detail(f"running {written!r} in {self.cwd or os.getcwd()!r}")
        process = await anyio.open_process(
            argv,
            env=self.environment,
            cwd=self.cwd,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done, stderr_done = anyio.Event(), anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, process, incoming)
                group.start_soon(self._write, process, outgoing, incoming, writer_done)
                group.start_soon(self._errors, process, stderr_done)
                try:
                    yield read_stream, write_stream
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._shutdown(process, read_stream, write_stream, writer_done)
                        with anyio.move_on_after(STDERR_DRAIN_SECONDS):
                            await stderr_done.wait()
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._reap(process)
                for stream in (read_stream, write_stream, incoming, outgoing):
                    await stream.aclose()

    async def _read(
        self, process: anyio.abc.Process, incoming: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        assert process.stdout is not None
        buffer = b""
        try:
            async with incoming:
                async for chunk in process.stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if not await self._deliver(line, incoming, process):
                            return
                    if len(buffer) > self.max_message_bytes:
                        self._fail(process, f"the server sent a message over {self.max_message_bytes} bytes")
                        return
        except _STREAM_CLOSED:
            await self._drain(process)
        finally:
            self.gone.set()

    async def _errors(self, process: anyio.abc.Process, done: anyio.Event) -> None:
        """Copy stderr to the log line by line; a line longer than ``MAX_LINE_CHARS`` bytes is cut up."""
        assert process.stderr is not None
        buffer = b""
        try:
            async for chunk in process.stderr:
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    self.sink.stderr(line.decode("utf-8", "backslashreplace"))
                while len(buffer) > MAX_LINE_CHARS:
                    piece, buffer = buffer[:MAX_LINE_CHARS], buffer[MAX_LINE_CHARS:]
                    self.sink.stderr(piece.decode("utf-8", "backslashreplace"))
        except (*_STREAM_CLOSED, OSError):
            pass
        finally:
            if buffer:
                self.sink.stderr(buffer.decode("utf-8", "backslashreplace"))
            done.set()

    async def _deliver(
        self,
        line: bytes,
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        process: anyio.abc.Process,
    ) -> bool:
        line = line.rstrip(b"\r")
        if not line.strip():
            return True
        if len(line) > self.max_message_bytes:
            self._fail(process, f"the server sent a message over {self.max_message_bytes} bytes")
            return False
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            return self._unexpected(line, process)
        await incoming.send(SessionMessage(message))
        return True

    def _unexpected(self, line: bytes, process: anyio.abc.Process) -> bool:
        """Drop JSON that is not a JSON-RPC message (e.g. a response with a null id); anything that is not
        JSON at all closes the connection. Returns whether the connection stays open."""
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            self._fail(process, "the server wrote something that is not JSON (or nested too deep) to stdout")
            return False
        self.ignored += 1
        if self.ignored <= _NOTED_IGNORED:
            self._note("ignored a message from the server that is not valid JSON-RPC")
        return True

    def _fail(self, process: anyio.abc.Process, reason: str) -> None:
        """Close the connection as a protocol error: the session sees EOF and the server is stopped."""
        self.failure = reason
        self._note(f"closing the connection: {reason}")
        _signal_group(process, signal.SIGTERM)

    async def _drain(self, process: anyio.abc.Process) -> None:
        """Keep reading (and dropping) stdout, so a server blocked on a full pipe can still exit."""
        assert process.stdout is not None
        with suppress(*_STREAM_CLOSED, OSError):
            async for _chunk in process.stdout:
                pass

    async def _write(
        self,
        process: anyio.abc.Process,
        outgoing: MemoryObjectReceiveStream[SessionMessage],
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        done: anyio.Event,
    ) -> None:
        assert process.stdin is not None
        try:
            async with outgoing:
                async for message in outgoing:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (*_STREAM_CLOSED, OSError):
            # The server stopped reading: end the session's read side so calls fail instead of hanging.
            await incoming.aclose()
        finally:
            done.set()

    async def _shutdown(
        self,
        process: anyio.abc.Process,
        read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
        write_stream: MemoryObjectSendStream[SessionMessage],
        writer_done: anyio.Event,
    ) -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(0.5):
            await writer_done.wait()
        assert process.stdin is not None
        with suppress(*_STREAM_CLOSED, OSError):
            await process.stdin.aclose()
        # A server stopped before it finished starting is not reading stdin yet: no grace for it.
        if not self.hurry and await _exited(process, EXIT_GRACE_SECONDS):
            return
        _signal_group(process, signal.SIGTERM)
        if not await _exited(process, EXIT_GRACE_SECONDS):
            _signal_group(process, signal.SIGKILL)
            await _exited(process, EXIT_GRACE_SECONDS)

    async def _reap(self, process: anyio.abc.Process) -> None:
        if process.returncode is None:
            _signal_group(process, signal.SIGKILL)
        with anyio.move_on_after(EXIT_GRACE_SECONDS):
            await process.aclose()
        self.exit_status = process.returncode
