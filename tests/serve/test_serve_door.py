"""``ditto-tui serve``: the app in a browser, behind its door (ADVERSARIAL X-01 … X-07).

Each test talks to a real ``ditto-tui serve`` process on 127.0.0.1 (a free port) with httpx and, for the
websocket, aiohttp's client: what a browser or a hostile page would send, header by header.
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest

from ditto_tui.serve import COOKIE

START_SECONDS = 30.0


@dataclass(frozen=True)
class Served:
    """A running ``ditto-tui serve``: the printed URL, its origin and token."""

    process: subprocess.Popen[str]
    url: str
    origin: str
    token: str
    home: Path

    @property
    def host(self) -> str:
        return self.origin.split("://", 1)[1]


def start_serve(workspace: Path, home: Path, *args: str) -> Served:
    env = {**os.environ, "DITTO_TUI_HOME": str(home)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ditto_tui", "serve", "--port", "0", *args],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"open (https?://127\.0\.0\.1:\d+)/\?token=([A-Za-z0-9_-]+)", line)
    if found is None:
        process.kill()
        pytest.fail(f"ditto-tui serve printed no address: {line!r}{process.stdout.read()}")
    return Served(process, found.group(0)[5:], found.group(1), found.group(2), home)


def stop_serve(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()
    if served.process.stdout is not None:
        served.process.stdout.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workspace = tmp_path_factory.mktemp("serve-workspace")
    running = start_serve(workspace, tmp_path_factory.mktemp("serve-home"))
    yield running
    stop_serve(running)


def get(
    served: Served,
    path: str,
    *,
    cookie: str | None = None,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """GET ``path`` as a browser would, with ``cookie`` as the session cookie's value if given."""
    sent = dict(headers or {})
    if cookie is not None:
        sent["Cookie"] = f"{COOKIE}={cookie}"
    with httpx.Client(base_url=served.origin, follow_redirects=False) as client:
        return client.get(path, params=params, headers=sent)


def assert_refused_page(response: httpx.Response, status: int) -> None:
    """Refused with ``status``: a short page saying what to do, no stack trace, no cookie."""
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text and "aiohttp" not in response.text
    assert "<h1>" in response.text and len(response.text) < 1000
    assert "set-cookie" not in response.headers
    assert response.headers["cache-control"] == "no-store"


async def socket_status(served: Served, headers: dict[str, str], cookie: str | None) -> int | str:
    """The websocket handshake's answer: the refusal's status, or ``"open"``."""
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        if cookie is not None:
            session.cookie_jar.update_cookies({COOKIE: cookie})
        try:
            async with session.ws_connect(
                f"{served.origin}/ws?width=80&height=24", headers=headers
            ) as socket:
                await socket.close()
                return "open"
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status


def test_x01_no_token_no_page_no_file_no_websocket(served: Served) -> None:
    assert_refused_page(get(served, "/"), 401)
    assert "Open the address ditto-tui serve printed" in get(served, "/").text
    assert_refused_page(get(served, "/static/js/textual.js"), 401)
    assert_refused_page(get(served, "/download/anything"), 401)
    status = asyncio.run(socket_status(served, {"Origin": served.origin}, None))
    assert status == 401


def test_x02_a_wrong_or_cut_token_is_refused(served: Served) -> None:
    for wrong in ("x", served.token[:-1], served.token + "A", served.token.upper(), ""):
        assert_refused_page(get(served, "/", params={"token": wrong}), 403)
        assert_refused_page(get(served, "/", cookie=wrong or "-"), 401)
    status = asyncio.run(socket_status(served, {"Origin": served.origin}, served.token[:-1]))
    assert status == 401


def test_the_printed_token_is_exchanged_for_a_strict_http_only_cookie(served: Served) -> None:
    answer = get(served, "/", params={"token": served.token})
    assert answer.status_code == 303 and answer.headers["location"] == "/"  # the token leaves the address
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={served.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert answer.headers["referrer-policy"] == "no-referrer"
    page = get(served, "/", cookie=served.token)
    assert page.status_code == 200 and "textual.js" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_the_served_page_fetches_nothing_from_elsewhere(served: Served) -> None:
    page = get(served, "/", cookie=served.token).text
    hosts = set(re.findall(r"//([A-Za-z0-9.:\[\]-]+)", page))  # every host the page names, in any scheme
    assert hosts <= {served.host, "www.w3.org"}, hosts  # w3.org: the SVG namespace, never fetched
    assert "http://www.w3.org/2000/svg" in page and page.count("www.w3.org") == 1
    assert "fonts.googleapis.com" not in page
    for path in re.findall(r"/static/[^\"']+", page):
        assert get(served, path, cookie=served.token).status_code == 200, path
    font = get(served, "/static/fonts/RobotoMono-VariableFont_wght.ttf", cookie=served.token)
    assert font.status_code == 200 and len(font.content) > 10_000


def test_x03_a_cross_site_request_is_refused_even_with_the_token(served: Served) -> None:
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://attacker.example"}):
        assert_refused_page(get(served, "/", params={"token": served.token}, headers=headers), 403)
        assert_refused_page(get(served, "/", cookie=served.token, headers=headers), 403)
    same = get(served, "/", cookie=served.token, headers={"Sec-Fetch-Site": "same-origin"})
    assert same.status_code == 200


def test_x04_a_websocket_from_another_origin_or_none_is_refused(served: Served) -> None:
    for origin in ("http://attacker.example", served.origin.replace("127.0.0.1", "localhost"), "null"):
        status = asyncio.run(socket_status(served, {"Origin": origin}, served.token))
        assert status == 403, origin
    assert asyncio.run(socket_status(served, {}, served.token)) == 403  # no Origin at all


def test_x05_a_rebound_host_is_refused_with_the_right_cookie(served: Served) -> None:
    port = served.origin.rsplit(":", 1)[1]
    for host in (f"attacker.example:{port}", "attacker.example", f"localhost:{port}", f"127.0.0.1:{port}0"):
        headers = {"Host": host}
        assert_refused_page(get(served, "/", cookie=served.token, headers=headers), 421)
        assert_refused_page(get(served, "/", params={"token": served.token}, headers=headers), 421)
        status = asyncio.run(socket_status(served, {"Origin": served.origin, "Host": host}, served.token))
        assert status == 421, host


async def first_screen(served: Served) -> str:
    """Open the app's websocket as its page does and read until the Run screen's header is drawn."""
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        session.cookie_jar.update_cookies({COOKIE: served.token})
        url = f"{served.origin}/ws?width=100&height=30"
        async with session.ws_connect(url, headers={"Origin": served.origin}) as socket:
            seen = b""
            async with asyncio.timeout(START_SECONDS):
                while "ditto-tui \u2014 ".encode() not in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen):
                    message = await socket.receive()
                    if message.type == aiohttp.WSMsgType.BINARY:
                        seen += message.data
                    elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        break
            await socket.send_str('["stdin", "\\u0011"]')  # ctrl+q: the tab's app quits
            return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace"))


def test_with_the_cookie_its_origin_and_host_a_tab_is_the_app(served: Served) -> None:
    screen = asyncio.run(first_screen(served))
    assert "ditto-tui \u2014 react-agent" in screen


def serve_cli(folder: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ditto-tui serve ARGS`` run to its end in ``folder``, with ``home`` as its home."""
    return subprocess.run(
        [sys.executable, "-m", "ditto_tui", "serve", *args],
        cwd=folder,
        env={**os.environ, "DITTO_TUI_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_x06_a_non_loopback_address_without_tls_is_refused(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.0.2.1", "example.com"):
        done = serve_cli(tmp_path, tmp_path / "home", "--host", host, "--port", "0")
        assert done.returncode == 2, done.stderr
        assert f"--host {host} is reachable from other machines" in done.stderr
        assert "--tls-cert" in done.stderr and "Traceback" not in done.stderr
    half = serve_cli(tmp_path, tmp_path / "home", "--tls-cert", str(tmp_path / "cert.pem"), "--port", "0")
    assert half.returncode == 2 and "--tls-cert and --tls-key go together" in half.stderr


def test_x07_stop_ends_it_from_another_process_and_a_second_serve_is_refused(tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    running = start_serve(workspace, home)
    try:
        second = serve_cli(workspace, home, "--port", "0")
        assert second.returncode == 2
        assert f"already runs at {running.origin} (pid {running.process.pid})" in second.stderr
        assert running.token not in second.stderr + second.stdout  # the token is never printed again
        stopped = serve_cli(workspace, home, "--stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout
        assert running.process.wait(timeout=15) == 0
        assert "not running" in serve_cli(workspace, home, "--stop").stdout
        with pytest.raises(httpx.ConnectError):
            get(running, "/")
    finally:
        stop_serve(running)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with ``cryptography`` (PEM files in ``folder``)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert, private = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert, private


def test_with_tls_the_address_is_https_and_the_cookie_is_secure(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    cert, key = self_signed(tmp_path)
    served = start_serve(workspace, tmp_path / "home", "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert served.origin.startswith("https://")
        trusted = ssl.create_default_context(cafile=str(cert))
        with httpx.Client(base_url=served.origin, verify=trusted, follow_redirects=False) as client:
            answer = client.get("/", params={"token": served.token})
            assert answer.status_code == 303 and "Secure" in answer.headers["set-cookie"]
            page = client.get("/", headers={"Cookie": f"{COOKIE}={served.token}"})
            assert page.status_code == 200 and f"wss://{served.host}/ws" in page.text
        with pytest.raises(httpx.RemoteProtocolError):  # plain HTTP to the TLS port is not served
            httpx.get(served.origin.replace("https:", "http:") + "/", params={"token": served.token})
    finally:
        stop_serve(served)
