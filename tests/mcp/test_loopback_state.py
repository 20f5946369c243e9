"""The sign-in's loopback listener waits for the redirect that brings back its own state (V-06).

Whatever else reaches it first (another state, no state, another path, a flood of those, a line too long
to read) is answered and closed, and the listener keeps waiting until the matching redirect or its
deadline. The listener is real, on 127.0.0.1, and so are the requests; the full sign-in runs against the
OAuth test server with the default ``browser_authorize``, a "browser" that is sent somewhere else first.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import httpx
import pytest

from ditto_tui.errors import McpError
from ditto_tui.interaction import open_mcp_servers
from ditto_tui.interaction.mcp.loopback import await_redirect, browser_authorize, free_redirect_uri, state_of
from tests.mcp.sign_in_helpers import oauth_server

STATE = "state-Kp31-expected"
WRONG_PAGE = "This sign-in link is not the one ditto-tui is waiting for"


async def listening(redirect: str, *, timeout: float = 10) -> asyncio.Future[str]:
    """``await_redirect`` on ``redirect`` for ``STATE``, once it is listening."""
    up = asyncio.Event()
    waiting = asyncio.ensure_future(await_redirect(redirect, state=STATE, timeout=timeout, listening=up.set))
    await asyncio.wait_for(up.wait(), 5)
    return waiting


async def get(url: str, **query: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(f"{url}?{urllib.parse.urlencode(query)}" if query else url)


async def still_waiting(waiting: asyncio.Future[str]) -> None:
    await asyncio.sleep(0.05)
    assert not waiting.done(), waiting.result()


async def test_v06_a_wrong_state_gets_400_and_the_real_redirect_still_signs_in(tmp_path: Path) -> None:
    """A page sends the browser to the listener with its own code and state before the real redirect
    comes back: the sign-in ignores it and completes with the authorization server's code."""
    forged: list[httpx.Response] = []
    real: list[httpx.Response] = []

    def browser(authorization_url: str) -> None:  # run by browser_authorize in a thread
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)
        redirect = query["redirect_uri"][0]
        with httpx.Client(timeout=10) as client:
            forged.append(client.get(redirect, params={"code": "forged-code", "state": "attacker-state"}))
            real.append(client.get(authorization_url, follow_redirects=True))

    async def authorize(authorization_url: str) -> str:
        return await browser_authorize(authorization_url, open_browser=browser)

    with oauth_server(tmp_path) as server:
        servers = {"notes": {"url": server.url}}
        async with open_mcp_servers(
            servers, log_dir=tmp_path / "logs", authorize=authorize, token_store=tmp_path / "oauth"
        ) as registry:
            status = registry.status("notes")
    assert status is not None and status.state == "connected", status
    assert len(forged) == 1 and forged[0].status_code == 400 and WRONG_PAGE in forged[0].text
    assert forged[0].headers["content-type"].startswith("text/plain")
    assert len(real) == 1 and real[0].status_code == 200 and "Signed in" in real[0].text


async def test_v06_a_redirect_without_state_gets_400_and_the_listener_keeps_listening() -> None:
    redirect = free_redirect_uri()
    waiting = await listening(redirect)
    for query in ({"code": "c-1"}, {"code": "c-2", "state": ""}, {"code": "c-3", "state": STATE + "x"}):
        answer = await get(redirect, **query)
        assert answer.status_code == 400 and WRONG_PAGE in answer.text, query
    twice = await get(f"{redirect}?code=c-4&state={STATE}&state=other")
    assert twice.status_code == 400  # two states are not the one
    no_code = await get(redirect, state=STATE)
    assert no_code.status_code == 400  # the right state with neither code nor error completes nothing
    await still_waiting(waiting)
    assert (await get(redirect, code="c-5", state=STATE)).status_code == 200
    assert await asyncio.wait_for(waiting, 5) == f"{redirect}?code=c-5&state={STATE}"


async def test_v06_an_error_with_the_wrong_state_does_not_end_the_sign_in() -> None:
    redirect = free_redirect_uri()
    waiting = await listening(redirect)
    refused = await get(redirect, error="access_denied", state="attacker-state")
    assert refused.status_code == 400 and WRONG_PAGE in refused.text
    assert (await get(redirect, error="access_denied")).status_code == 400
    await still_waiting(waiting)
    assert (await get(redirect, error="access_denied", state=STATE)).status_code == 200
    assert await asyncio.wait_for(waiting, 5) == f"{redirect}?error=access_denied&state={STATE}"


async def test_v06_other_paths_and_methods_get_404_and_the_listener_keeps_listening() -> None:
    redirect = free_redirect_uri()
    waiting = await listening(redirect)
    origin = redirect.removesuffix("/callback")
    assert (await get(f"{origin}/", code="c", state=STATE)).status_code == 404
    assert (await get(f"{origin}/callback/x", code="c", state=STATE)).status_code == 404
    async with httpx.AsyncClient(timeout=10) as client:
        posted = await client.post(redirect, params={"code": "c", "state": STATE})
    assert posted.status_code == 404
    await still_waiting(waiting)
    assert (await get(redirect, code="c", state=STATE)).status_code == 200
    assert await asyncio.wait_for(waiting, 5) == f"{redirect}?code=c&state={STATE}"


async def test_v06_the_deadline_still_ends_a_listener_sent_only_wrong_redirects() -> None:
    redirect = free_redirect_uri()
    waiting = await listening(redirect, timeout=0.6)
    for number in range(5):
        assert (await get(redirect, code=f"c-{number}", state="other")).status_code == 400
    with pytest.raises(McpError, match=r"did not come back within 0\.6 s"):
        await asyncio.wait_for(waiting, 5)
    with pytest.raises(httpx.ConnectError):
        await get(redirect, code="c", state=STATE)


async def raw(port: int, data: bytes) -> bytes:
    """Send ``data`` on a connection of its own and read until the listener closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""  # closed with part of what was sent unread
    finally:
        writer.close()


async def test_v06_a_flood_of_wrong_and_oversized_requests_does_not_exhaust_the_listener() -> None:
    redirect = free_redirect_uri()
    port = urllib.parse.urlsplit(redirect).port
    assert port is not None
    waiting = await listening(redirect)
    wrong = f"GET /callback?code=c&state=other HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    for _ in range(4):  # fewer at once than the listener serves: each is answered 400, then closed
        answers = await asyncio.gather(*(raw(port, wrong) for _ in range(50)))
        assert all(answer.startswith(b"HTTP/1.1 400 ") for answer in answers)
    burst = await asyncio.gather(*(raw(port, wrong) for _ in range(300)))  # more: the rest are closed
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 400 ") for answer in burst)
    long_line = b"GET /callback?code=c&state=" + b"x" * 200_000 + b" HTTP/1.1\r\n\r\n"
    assert b"200 OK" not in await raw(port, long_line)  # closed without reading it all, nor completing
    endless = b"GET /callback?code=c&state=other HTTP/1.1\r\n" + b"X-Pad: y\r\n" * 5_000 + b"\r\n"
    assert not (await raw(port, endless)).startswith(b"HTTP/1.1 200")
    silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(10)]  # never send a thing
    await still_waiting(waiting)
    assert (await get(redirect, code="real", state=STATE)).status_code == 200
    assert await asyncio.wait_for(waiting, 5) == f"{redirect}?code=real&state={STATE}"
    for _reader, writer in silent:
        writer.close()


def test_v06_an_authorization_url_without_a_single_state_is_refused() -> None:
    base = "https://auth.example.com/authorize?redirect_uri=http://127.0.0.1:9/callback"
    assert state_of(f"{base}&state=s-1") == "s-1"
    for url in (base, f"{base}&state=", f"{base}&state=a&state=b"):
        with pytest.raises(McpError, match="no single state"):
            state_of(url)
