"""The loopback end of an OAuth sign-in: a listener on 127.0.0.1 for the browser's redirect.

The authorization URL names its ``redirect_uri`` (``http://127.0.0.1:PORT/callback``) and its ``state``;
the listener waits there for the browser to come back with ``code`` (or an ``error``) and that same
``state``, answers it with a short page, and returns the full URL it was sent to. A redirect whose
``state`` is missing or another gets a 400 and the listener keeps waiting, so a page that sends the
browser to the listener first can neither end the sign-in nor slip its own code into it. Anything else
gets a 404. Every connection is answered once and closed; its request line and headers are bounded in
size and time, and so is the number of connections served at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
import urllib.parse
import webbrowser
from collections.abc import Callable

from ditto_tui.errors import McpError

__all__ = [
    "SIGN_IN_SECONDS",
    "await_redirect",
    "browser_authorize",
    "free_redirect_uri",
    "redirect_uri_of",
    "state_of",
]

SIGN_IN_SECONDS = 600.0
"""How long a sign-in waits for the browser to come back."""

_LINE_BYTES = 8 * 1024
"""The longest request line or header line read; a longer one ends the connection unanswered."""
_HEAD_LINES = 64
"""The most header lines read before the request is answered (the rest are not read)."""
_HEAD_SECONDS = 10.0
"""How long a connection may take to send its request line and headers."""
_CONNECTIONS = 64
"""Connections served at once; one more is closed at once."""

_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"<!doctype html><title>ditto-tui</title><p>Signed in. You can close this tab and go back to ditto-tui."
)
_WRONG_TEXT = b"This sign-in link is not the one ditto-tui is waiting for.\n"
_WRONG = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_WRONG_TEXT), _WRONG_TEXT)
)
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def free_redirect_uri() -> str:
    """A loopback redirect URI on a port that was free a moment ago (RFC 8252 §7.3)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/callback"


def redirect_uri_of(authorization_url: str) -> str:
    """The ``redirect_uri`` an authorization URL names; it must be a 127.0.0.1 loopback URI."""
    uri = _query_of(authorization_url).get("redirect_uri", [""])[0]
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or not parts.port:
        raise McpError("the sign-in's redirect address is not a 127.0.0.1 loopback address")
    return uri


def state_of(authorization_url: str) -> str:
    """The ``state`` an authorization URL carries, which the redirect must bring back; it must have one."""
    states = _query_of(authorization_url).get("state", [])
    if len(states) != 1 or not states[0]:
        raise McpError("the sign-in's address carries no single state to check the redirect against")
    return states[0]


def _query_of(url: str) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)


async def await_redirect(
    redirect_uri: str,
    *,
    state: str,
    timeout: float = SIGN_IN_SECONDS,
    listening: Callable[[], object] | None = None,
) -> str:
    """Listen on ``redirect_uri`` until the browser comes back with ``state``; return the URL it was
    redirected to.

    ``listening`` is called once the listener is up (to open the browser, or show the URL).
    """
    parts = urllib.parse.urlsplit(redirect_uri)
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    serving = asyncio.Semaphore(_CONNECTIONS)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if serving.locked():
            writer.close()
            return
        async with serving:
            try:
                target = await asyncio.wait_for(_read_head(reader), _HEAD_SECONDS)
                writer.write(_answer(target, parts.path, state, done, f"{parts.scheme}://{parts.netloc}"))
                await writer.drain()
            except (OSError, TimeoutError, UnicodeError, ValueError):
                pass
            finally:
                writer.close()

    try:
        server = await asyncio.start_server(serve, "127.0.0.1", parts.port, limit=_LINE_BYTES)
    except OSError as exc:
        raise McpError(f"cannot listen for the sign-in on 127.0.0.1:{parts.port}: {exc.strerror}") from None
    if listening is not None:
        listening()
    try:
        async with asyncio.timeout(timeout):
            return await done
    except TimeoutError:
        raise McpError(f"the browser did not come back within {timeout:g} s") from None
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await server.wait_closed()


async def _read_head(reader: asyncio.StreamReader) -> str | None:
    """The request target of a ``GET`` (``None`` for another method), once its headers are read.

    A line longer than the reader's limit raises ``ValueError``; headers past ``_HEAD_LINES`` are left
    unread.
    """
    method, _, rest = (await reader.readline()).decode("latin-1").partition(" ")
    for _ in range(_HEAD_LINES):
        if (await reader.readline()).strip() == b"":
            break
    return rest.rsplit(" ", 1)[0] if method == "GET" else None


def _answer(target: str | None, path: str, state: str, done: asyncio.Future[str], origin: str) -> bytes:
    """What to answer the request for ``target``; the matching redirect completes ``done``."""
    if target is None or target.partition("?")[0] != path:
        return _NOT_FOUND
    asked = urllib.parse.parse_qs(target.partition("?")[2])
    if not _same_state(asked.get("state", []), state) or not ("code" in asked or "error" in asked):
        return _WRONG
    if not done.done():
        done.set_result(f"{origin}{target}")
    return _PAGE


def _same_state(given: list[str], expected: str) -> bool:
    """Whether the redirect brought back exactly the one expected state (compared in constant time)."""
    return len(given) == 1 and hmac.compare_digest(given[0].encode(), expected.encode())


async def browser_authorize(
    authorization_url: str, *, open_browser: Callable[[str], object] = webbrowser.open
) -> str:
    """Open the system browser on ``authorization_url`` and wait for it on the loopback redirect URI."""
    loop = asyncio.get_running_loop()

    def opened() -> None:
        loop.run_in_executor(None, open_browser, authorization_url)

    redirect_uri, state = redirect_uri_of(authorization_url), state_of(authorization_url)
    return await await_redirect(redirect_uri, state=state, listening=opened)
