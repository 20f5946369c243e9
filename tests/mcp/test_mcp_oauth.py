"""OAuth sign-in of HTTP servers: the token store's file rules, and hostile authorization servers.

The authorization servers here are real loopback HTTP servers that answer by hand, so they can do what a
well-behaved one never would: put their token endpoint on another origin than their issuer, or answer a
token request with a body full of secrets. The conformance suite (tests/conformance) covers the flows a
good server offers.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.auth import OAuthToken

from ditto_tui.home import StateDirError
from ditto_tui.interaction import open_mcp_servers
from ditto_tui.interaction.mcp.loopback import await_redirect, redirect_uri_of, state_of
from ditto_tui.interaction.mcp.oauth import SignInRequired, TokenStore, refuse_sign_in, sign_in_problem
from tests.conformance.client import follow_redirect
from tests.mcp.mcp_helpers import sandbox
from tests.mcp.sign_in_helpers import SHORT_FIRST_TOKEN, oauth_server, play_browser

Reply = tuple[int, dict[str, str], bytes]
Route = Callable[["Site", BaseHTTPRequestHandler], Reply]


class Site:
    """One loopback HTTP server whose answers are functions of the request; it records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.seen: list[tuple[str, str]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                path = self.path.split("?", 1)[0]
                site.seen.append((self.command, path))
                length = int(self.headers.get("content-length") or 0)
                self.body = self.rfile.read(length) if length else b""
                route = site.routes.get((self.command, path))
                status, headers, body = route(site, self) if route else (404, {}, b"")
                self.send_response(status)
                for name, value in {"content-length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        poll = {"poll_interval": 0.02}  # shutdown() waits for the loop to look: half a second by default
        threading.Thread(target=self.server.serve_forever, kwargs=poll, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json(status: int, value: object, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, json.dumps(value).encode()


@pytest.fixture
def sites() -> Iterator[tuple[Site, Site, Site]]:
    """The MCP server, its authorization server, and an elsewhere that nothing should ever reach."""
    made = (Site(), Site(), Site())
    yield made
    for site in made:
        site.close()


def protect(mcp: Site, auth: Site, metadata: dict[str, Any]) -> None:
    """``mcp`` answers 401 pointing at its resource metadata, which names ``auth`` serving ``metadata``."""
    challenge = f'Bearer resource_metadata="{mcp.url}/.well-known/oauth-protected-resource/mcp"'
    mcp.routes[("POST", "/mcp")] = lambda _s, _r: (401, {"www-authenticate": challenge}, b"")
    resource = {"resource": f"{mcp.url}/mcp", "authorization_servers": [auth.url]}
    mcp.routes[("GET", "/.well-known/oauth-protected-resource/mcp")] = lambda _s, _r: _json(200, resource)
    auth.routes[("GET", "/.well-known/oauth-authorization-server")] = lambda _s, _r: _json(200, metadata)


def as_metadata(auth: Site, **endpoints: str) -> dict[str, Any]:
    return {
        "issuer": auth.url,
        "authorization_endpoint": f"{auth.url}/authorize",
        "token_endpoint": f"{auth.url}/token",
        "registration_endpoint": f"{auth.url}/register",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        **endpoints,
    }


def grant_at_once(site: Site, request: BaseHTTPRequestHandler) -> Reply:
    """An authorization endpoint that redirects back at once with a code (and the state it was given)."""
    query = dict(part.split("=", 1) for part in request.path.split("?", 1)[1].split("&"))
    target = (
        f"{query['redirect_uri'].replace('%3A', ':').replace('%2F', '/')}?code=CODE-42&state={query['state']}"
    )
    return 302, {"location": target}, b""


def register(_site: Site, _request: BaseHTTPRequestHandler) -> Reply:
    return _json(201, {"client_id": "client-1", "redirect_uris": ["http://127.0.0.1:1/callback"]})


async def _open(mcp: Site, tmp_path: Path) -> tuple[str, str]:
    """Open ``mcp``'s server; its state's error and its log."""
    servers = {"remote": {"url": f"{mcp.url}/mcp"}}
    async with open_mcp_servers(
        servers, log_dir=tmp_path / "logs", authorize=follow_redirect, token_store=tmp_path / "oauth"
    ) as registry:
        status = registry.status("remote")
    assert status is not None and status.state == "failed"
    return status.error or "", (tmp_path / "logs" / "remote.log").read_text(encoding="utf-8")


async def test_an_authorization_server_with_its_token_endpoint_elsewhere_is_refused(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    mcp, auth, elsewhere = sites
    protect(mcp, auth, as_metadata(auth, registration_endpoint=f"{elsewhere.url}/register"))
    error, _log = await _open(mcp, tmp_path)
    assert "refused: the authorization server's registration or token endpoint is on another origin" in error
    assert elsewhere.seen == []  # nothing was sent there: no registration, no code, no secret


async def test_an_authorization_endpoint_on_another_origin_is_never_opened(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    mcp, auth, elsewhere = sites
    auth.routes[("POST", "/register")] = register
    protect(mcp, auth, as_metadata(auth, authorization_endpoint=f"{elsewhere.url}/authorize"))
    error, _log = await _open(mcp, tmp_path)
    assert "authorization endpoint is on another origin than its issuer" in error
    assert elsewhere.seen == []


async def test_e13_a_refused_token_request_never_shows_the_servers_body(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    mcp, auth, _elsewhere = sites
    auth.routes[("POST", "/register")] = register
    auth.routes[("GET", "/authorize")] = grant_at_once
    body = {"error": "invalid_grant", "error_description": "token sk-ant-api03-LEAKED \x1b]52;c;AAAA\x07"}
    auth.routes[("POST", "/token")] = lambda _s, _r: _json(400, body)
    protect(mcp, auth, as_metadata(auth))
    error, log = await _open(mcp, tmp_path)
    assert "sign-in failed: the authorization server refused the token request" in error
    for text in (error, log):
        assert "LEAKED" not in text and "\x1b" not in text and "CODE-42" not in text


async def test_a_run_with_no_person_to_ask_says_to_log_in(
    sites: tuple[Site, Site, Site], tmp_path: Path
) -> None:
    mcp, auth, _elsewhere = sites
    auth.routes[("POST", "/register")] = register
    protect(mcp, auth, as_metadata(auth))
    servers = {"remote": {"url": f"{mcp.url}/mcp"}}
    async with open_mcp_servers(
        servers, log_dir=tmp_path / "logs", authorize=refuse_sign_in, token_store=tmp_path / "oauth"
    ) as registry:
        status = registry.status("remote")
    assert status is not None and status.state == "failed"
    assert "MCP server 'remote' needs you to sign in: run `ditto-tui mcp login remote`" in (
        status.error or ""
    )
    assert sign_in_problem(SignInRequired("remote")) == SignInRequired("remote").message


# -- the token store ----------------------------------------------------------------------------------


async def _keep(store: TokenStore, server: str = "remote") -> None:
    from ditto_tui.interaction.mcp.oauth import ServerTokens

    tokens = ServerTokens(store, server, lambda: "https://auth.example")
    await tokens.set_tokens(OAuthToken(access_token="access-1", expires_in=60, refresh_token="refresh-1"))


async def test_tokens_are_kept_private_per_server_and_issuer_with_their_expiry(tmp_path: Path) -> None:
    from ditto_tui.interaction.mcp.oauth import ServerTokens

    store = TokenStore(tmp_path / "oauth")
    await _keep(store)
    path = store.path("remote")
    assert os.stat(path).st_mode & 0o777 == 0o600 and store.has_tokens("remote")
    tokens = ServerTokens(store, "remote", lambda: "https://auth.example")
    kept = await tokens.get_tokens()
    assert kept is not None and kept.access_token == "access-1" and kept.refresh_token == "refresh-1"
    expires = tokens.expires_at()
    assert expires is not None and 50 < expires - os.path.getmtime(path) <= 61
    assert json.loads(path.read_text())["last"] == "https://auth.example"
    assert not store.has_tokens("other") and store.path("a/../b").parent == store.directory
    assert store.forget("remote") and not store.forget("remote") and not store.has_tokens("remote")


async def test_a_token_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "oauth")
    planted = tmp_path / "planted.json"
    planted.write_text(
        json.dumps({"version": 1, "last": "x", "issuers": {"x": {"tokens": {"access_token": "t"}}}})
    )
    planted.chmod(0o600)
    store.directory.mkdir(mode=0o700)
    os.symlink(planted, store.path("remote"))
    with pytest.raises(StateDirError, match="is a symbolic link"):
        store.load("remote")
    assert not store.has_tokens("remote")
    with pytest.raises(StateDirError, match="symbolic link"):
        await _keep(store)  # nor written through
    assert "access-1" not in planted.read_text()


async def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "oauth")
    await _keep(store)
    store.path("remote").chmod(0o644)
    with pytest.raises(StateDirError, match="can be read by others"):
        store.load("remote")
    assert not store.has_tokens("remote")


async def test_a_token_refused_as_expired_is_refreshed_before_anyone_is_asked_again(tmp_path: Path) -> None:
    """The server's clock says the token expired while ours says not: the 401 is met with a refresh."""
    asked: list[str] = []

    async def authorize(url: str) -> str:
        asked.append(url)
        waiting = asyncio.ensure_future(await_redirect(redirect_uri_of(url), state=state_of(url)))
        await asyncio.sleep(0.1)
        await play_browser(url)
        return await waiting

    with oauth_server(tmp_path, *SHORT_FIRST_TOKEN) as server:
        servers = {"notes": {"url": server.url}}
        options: dict[str, Any] = {"authorize": authorize, "token_store": tmp_path / "oauth"}
        async with open_mcp_servers(servers, log_dir=tmp_path / "logs", **options) as registry:
            assert registry.status("notes") is not None and len(asked) == 1
        store = TokenStore(tmp_path / "oauth")
        kept = store.load("notes")
        for entry in kept["issuers"].values():
            entry["expiresAt"] = time.time() + 3600  # our clock: valid for an hour
        store.save("notes", kept)
        await asyncio.sleep(1.2)  # the server's: expired
        async with open_mcp_servers(servers, log_dir=tmp_path / "logs", **options) as registry:
            status = registry.status("notes")
            assert status is not None and status.state == "connected", status
            listed = await registry.discover("notes", sandbox(tmp_path, "notes"))
        assert "whoami" in {capability.name for capability in listed}
        assert len(asked) == 1 and server.count("issued grant=refresh_token") >= 1
