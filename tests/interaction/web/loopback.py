"""A real HTTP/1.1 server on 127.0.0.1 whose every answer is scripted by the test."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

Streamer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@dataclass(frozen=True)
class Request:
    """What the server received: request line and headers (names lowercased)."""

    method: str
    target: str
    headers: dict[str, str]

    @property
    def path(self) -> str:
        """The path of the target."""
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        """The decoded query parameters."""
        return parse_qs(urlsplit(self.target).query, keep_blank_values=True)


@dataclass
class Reply:
    """One answer: status, headers and a body given whole or written by a coroutine."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | Streamer = b""


Handler = Callable[[Request], Reply]


def brave_json(results: list[Any], **extra: Any) -> Reply:
    """A Brave-shaped success: ``{"type": "search", "web": {"results": [...]}}``."""
    document = {"type": "search", "web": {"type": "search", "results": results}, **extra}
    return Reply(headers=[("Content-Type", "application/json")], body=json.dumps(document).encode())


def hit(title: str, url: str, description: str = "") -> dict[str, Any]:
    """One Brave web result."""
    return {"title": title, "url": url, "description": description}


def trickle(prefix: bytes, interval: float) -> Reply:
    """Headers at once, then a chunked body of ``prefix`` one byte per ``interval`` seconds, forever."""

    async def write(writer: asyncio.StreamWriter) -> None:
        for index in range(1 << 30):
            writer.write(b"1\r\n%s\r\n" % prefix[index % len(prefix) : index % len(prefix) + 1])
            await writer.drain()
            await asyncio.sleep(interval)

    return Reply(headers=[("Transfer-Encoding", "chunked")], body=write)


def endless_chunked(chunk: bytes = b"[" * 65536) -> Reply:
    """A chunked body that never ends."""

    async def write(writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()

    return Reply(headers=[("Transfer-Encoding", "chunked")], body=write)


def sized(total: int, declared: int | None = None, chunk: int = 65536) -> Reply:
    """``total`` bytes of an unfinished JSON array, written in chunks, with an optional lying length."""

    async def write(writer: asyncio.StreamWriter) -> None:
        sent = 0
        while sent < total:
            piece = min(chunk, total - sent)
            writer.write(b"[" * piece)
            await writer.drain()
            sent += piece

    return Reply(headers=[("Content-Length", str(total if declared is None else declared))], body=write)


def gzip_bomb(decoded_mib: int) -> Reply:
    """A small gzip body that inflates to ``decoded_mib`` MiB of ``[``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"[" * (1 << 20)
    body = b"".join(packer.compress(block) for _ in range(decoded_mib)) + packer.flush()
    return Reply(headers=[("Content-Encoding", "gzip"), ("Content-Type", "application/json")], body=body)


def gzipped(reply: Reply) -> Reply:
    """``reply`` with its whole body gzip-encoded."""
    assert isinstance(reply.body, bytes)
    return Reply(reply.status, [*reply.headers, ("Content-Encoding", "gzip")], gzip.compress(reply.body))


_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests"}


class LoopbackServer:
    """``async with LoopbackServer(handler) as server``: serves on ``server.base_url`` until closed."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aenter__(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            request = await _read_request(reader)
            self.requests.append(request)
            await _write_reply(writer, self.handler(request))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Closing the server cancels replies still streaming; asyncio would log a cancelled handler.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> Request:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *header_lines = head.split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return Request(method=method, target=target, headers=headers)


async def _write_reply(writer: asyncio.StreamWriter, reply: Reply) -> None:
    lines = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}", "Connection: close"]
    names = {name.lower() for name, _ in reply.headers}
    if isinstance(reply.body, bytes) and "content-length" not in names and "transfer-encoding" not in names:
        lines.append(f"Content-Length: {len(reply.body)}")
    lines += [f"{name}: {value}" for name, value in reply.headers]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    if isinstance(reply.body, bytes):
        writer.write(reply.body)
    else:
        await reply.body(writer)
    await writer.drain()
