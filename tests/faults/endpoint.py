"""A loopback chat-completions endpoint that answers some requests and drops the connection mid-response."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Drop:
    """Send the status line, the headers (announcing ``announced`` bytes) and ``sent`` bytes, then close."""

    sent: bytes = b'{"id": "chatcmpl-1", "object": "chat.completion", "choi'
    announced: int = 4096


@dataclass
class DroppingEndpoint:
    """Answers requests in order from ``replies`` (a response body, or a :class:`Drop`)."""

    replies: list[dict[str, Any] | Drop] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            length = next(
                int(line.split(":", 1)[1])
                for line in head.split("\r\n")
                if line.lower().startswith("content-length:")
            )
            self.requests.append(json.loads(await reader.readexactly(length)))
            reply = self.replies.pop(0)
            if isinstance(reply, Drop):
                writer.write(self._head(reply.announced) + reply.sent)
            else:
                body = json.dumps(reply).encode()
                writer.write(self._head(len(body)) + body)
            await writer.drain()
        finally:
            writer.close()

    @staticmethod
    def _head(length: int) -> bytes:
        lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", f"Content-Length: {length}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


@asynccontextmanager
async def dropping_endpoint(*replies: dict[str, Any] | Drop) -> AsyncIterator[DroppingEndpoint]:
    """Start a :class:`DroppingEndpoint` on 127.0.0.1 and stop it on exit."""
    endpoint = DroppingEndpoint(replies=list(replies))
    server = await asyncio.start_server(endpoint.serve, "127.0.0.1", 0)
    endpoint.port = server.sockets[0].getsockname()[1]
    try:
        yield endpoint
    finally:
        server.close()
        await server.wait_closed()
