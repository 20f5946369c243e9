"""The loopback end of an OAuth sign-in: a one-request listener on 127.0.0.1 for the browser's redirect.

The authorization URL names its ``redirect_uri`` (``http://127.0.0.1:PORT/callback``); the listener
waits there for the browser to come back with ``code`` and ``state`` (or an ``error``), answers it with a
short page, and returns the full URL it was sent to. Only that path on 127.0.0.1 is served; anything
else gets a 404 and the listener keeps waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import urllib.parse
import webbrowser
from collections.abc import Callable

from ditto_tui.errors import McpError

__all__ = ["SIGN_IN_SECONDS", "await_redirect", "browser_authorize", "free_redirect_uri", "redirect_uri_of"]

SIGN_IN_SECONDS = 600.0
"""How long a sign-in waits for the browser to come back."""

_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"<!doctype html><title>ditto-tui</title><p>Signed in. You can close this tab and go back to ditto-tui."
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
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)
    uri = (query.get("redirect_uri") or [""])[0]
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or not parts.port:
        raise McpError("the sign-in's redirect address is not a 127.0.0.1 loopback address")
    return uri


async def await_redirect(
    redirect_uri: str, *, timeout: float = SIGN_IN_SECONDS, listening: Callable[[], object] | None = None
) -> str:
    """Listen on ``redirect_uri`` until the browser comes back; return the URL it was redirected to.

    ``listening`` is called once the listener is up (to open the browser, or show the URL).
    """
    parts = urllib.parse.urlsplit(redirect_uri)
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            method, _, rest = line.decode("latin-1").partition(" ")
            target = rest.rsplit(" ", 1)[0]
            path, _, query = target.partition("?")
            asked = urllib.parse.parse_qs(query)
            if method == "GET" and path == parts.path and ("code" in asked or "error" in asked):
                writer.write(_PAGE)
                if not done.done():
                    done.set_result(f"{parts.scheme}://{parts.netloc}{target}")
            else:
                writer.write(_NOT_FOUND)
            await writer.drain()
        except (OSError, TimeoutError, UnicodeError, ValueError):
            pass
        finally:
            writer.close()

    try:
        server = await asyncio.start_server(serve, "127.0.0.1", parts.port)
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


async def browser_authorize(
    authorization_url: str, *, open_browser: Callable[[str], object] = webbrowser.open
) -> str:
    """Open the system browser on ``authorization_url`` and wait for it on the loopback redirect URI."""
    loop = asyncio.get_running_loop()

    def opened() -> None:
        loop.run_in_executor(None, open_browser, authorization_url)

    return await await_redirect(redirect_uri_of(authorization_url), listening=opened)
