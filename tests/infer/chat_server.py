"""A real loopback HTTP server speaking chat completions: it records requests and plays scripted replies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What the server answers to one request."""

    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the status line
    trickle: float | None = None  # send the body one byte at a time, this many seconds apart
    events: list[Any] | None = None  # stream these as server-sent events (dicts as JSON), then close
    gap: float = 0.0  # seconds between two events
    done: bool = True  # end the stream with `data: [DONE]` (False: it just stops, as a cut stream does)

    def encoded(self) -> bytes:
        return json.dumps(self.body).encode() if isinstance(self.body, dict) else self.body


@dataclass
class Received:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A chat-completions response body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def chunk(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of a stream: a delta of text and tool-call pieces, or only usage."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}] if usage is None else [],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def text_stream(text: str, size: int = 3) -> list[dict[str, Any]]:
    """``text`` streamed ``size`` characters per chunk, then a stop."""
    pieces = [chunk(text[start : start + size]) for start in range(0, len(text), size)]
    return [*pieces, chunk(finish_reason="stop")]


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One ``tool_calls`` entry; ``arguments`` is the raw JSON text the model produced."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class ChatServer:
    """Answers requests in arrival order from ``replies``; every request is kept in ``received``."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.strip().split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append(Received(method, path, headers, body))
        reply = self.replies.pop(0) if self.replies else Reply(status=500, body={"error": "no reply"})
        await asyncio.sleep(reply.delay)
        if reply.events is not None:
            await self._stream(reply, writer)
            return
        payload = reply.encoded()
        lines = [f"HTTP/1.1 {reply.status} X", f"Content-Length: {len(payload)}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in reply.headers.items()]
        if not any(name.lower() == "content-type" for name in reply.headers):
            lines.append("Content-Type: application/json")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        if reply.trickle is None:
            writer.write(payload)
        else:
            for index in range(len(payload)):
                writer.write(payload[index : index + 1])
                await writer.drain()
                await asyncio.sleep(reply.trickle)
        await writer.drain()

    async def _stream(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        """Server-sent events with no length: the stream ends when the connection closes."""
        head = [f"HTTP/1.1 {reply.status} X", "Content-Type: text/event-stream", "Connection: close"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        for event in reply.events or ():
            data = event if isinstance(event, bytes) else json.dumps(event).encode()
            writer.write(b"data: " + data + b"\n\n")
            await writer.drain()
            if reply.gap:
                await asyncio.sleep(reply.gap)
        if reply.done:
            writer.write(b"data: [DONE]\n\n")
        await writer.drain()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@asynccontextmanager
async def chat_server() -> AsyncIterator[ChatServer]:
    """Start a :class:`ChatServer` on 127.0.0.1 and stop it, with every connection, on exit."""
    server = ChatServer()
    listener = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        await server.stop()
        await listener.wait_closed()
