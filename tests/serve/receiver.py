"""A loopback HTTP server that records what is POSTed to it, answering as told (status, delay)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.loopback import serving


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What arrived (``posts``), and how the next POSTs are answered (``statuses`` first, then 200)."""

    url: str
    posts: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    delay: float = 0.0

    def wait(self, count: int, seconds: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + seconds
        while len(self.posts) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.posts)


@contextmanager
def receiver() -> Iterator[Receiver]:
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if state.delay:
                time.sleep(state.delay)
            state.posts.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = state.statuses.pop(0) if state.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    with serving(Handler) as origin:
        state.url = f"{origin}/hook"
        yield state
