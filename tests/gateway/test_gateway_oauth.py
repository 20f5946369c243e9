"""``mcp serve --http`` with ``mcp.gateway.oauth`` (ADVERSARIAL X-18 … X-20): the gateway is a resource
server of a real authorization server (the OAuth test server, with its RFC 7662 introspection). The SDK's
own OAuth client finds where to sign in from the gateway's 401, signs in and calls the demo server's
tools through the gate; a token the authorization server issued for another resource, one it does not
vouch for, and any token while it cannot be asked are refused, and nothing is served for them."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ditto_tui.workspace import BUILTIN_CONFIG
from tests.gateway.test_gateway import text_of
from tests.gateway.test_gateway_http import INITIALIZE, Served, http_gateway, post, started_runs
from tests.mcp.mcp_helpers import free_port
from tests.mcp.sign_in_helpers import OAuthServer, oauth_server

INTROSPECTION_CLIENT = "gateway-rs"
INTROSPECTION_SECRET = "introspection-secret-7c1f0a9d"


def _config(path: Path, authorization: OAuthServer | None, *, port: int | None = None) -> Path:
    """The built-in config with the gateway's OAuth pointed at ``authorization`` (or at ``port``, where
    nothing listens), its introspection credentials given as ``${VAR}``."""
    origin = f"http://127.0.0.1:{authorization.port if authorization is not None else port}"
    text = BUILTIN_CONFIG.read_text(encoding="utf-8").replace(
        "mcp:\n  servers:\n",
        "mcp:\n"
        "  gateway:\n"
        "    oauth:\n"
        f"      issuer: {origin}\n"
        f"      introspectionEndpoint: {origin}/introspect\n"
        "      scopes: [mcp]\n"
        f"      clientId: {INTROSPECTION_CLIENT}\n"
        "      clientSecret: ${GATEWAY_INTROSPECTION_SECRET}\n"
        "  servers:\n",
        1,
    )
    assert "gateway:" in text
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Memory(TokenStorage):
    """The client's tokens and registration, in memory."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def signed_in_client(server_url: str, storage: Memory) -> OAuthClientProvider:
    """The SDK's OAuth client for ``server_url``; its "browser" follows the authorization server's
    redirect (the test server signs everyone in at once) and hands the code back."""
    came_back: list[AuthorizationCodeResult] = []

    async def redirect(authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code in (302, 303, 307), answer.text
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(answer.headers["location"]).query)
        issuer = query.get("iss", [None])[0]
        came_back.append(AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=issuer))

    async def callback() -> AuthorizationCodeResult:
        return came_back.pop()

    return OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name="gateway-oauth-test",
            redirect_uris=["http://127.0.0.1:1/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )


async def _session(url: str, auth: Any) -> tuple[set[str], str]:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            read, write, client_info=types.Implementation(name="oauth-client", version="1")
        ) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        return names, text_of(await session.call_tool("list_notes", {}))


@pytest.fixture(scope="module")
def authorization(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    base = tmp_path_factory.mktemp("authorization")
    client = f"{INTROSPECTION_CLIENT}:{INTROSPECTION_SECRET}"
    with oauth_server(base, "--scopes", "mcp", "--introspection-client", client) as running:
        yield running


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, authorization: OAuthServer
) -> Iterator[tuple[Served, Path]]:
    base = tmp_path_factory.mktemp("gateway-oauth")
    config = _config(base / "ditto.yaml", authorization)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_INTROSPECTION_SECRET", INTROSPECTION_SECRET)
        with http_gateway(base, "--config", str(config), oauth=True) as running:
            yield running, base


def test_an_sdk_client_signs_in_where_the_gateway_says_and_its_calls_go_through_the_gate(
    gateway: tuple[Served, Path], authorization: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, base = gateway
    metadata = httpx.get(
        served.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), timeout=10
    ).json()
    assert metadata["resource"] == served.url
    assert metadata["authorization_servers"] == [f"http://127.0.0.1:{authorization.port}"]
    storage = Memory()
    before = started_runs(served, monkeypatch)
    names, listed = asyncio.run(_session(served.url, signed_in_client(served.url, storage)))
    assert {"list_notes", "write_note"} <= names
    assert "welcome.md" in listed  # the demo server's notes, read through the gate (a read: allowed)
    assert storage.tokens is not None and authorization.count("issued grant=authorization_code") == 1
    assert authorization.count(f"resource={served.url}") == 1  # asked for the gateway, as RFC 8707 says
    asked = authorization.count("introspected active=true")
    assert asked == 1  # the answer is kept: a session's requests do not each cost a round trip
    assert started_runs(served, monkeypatch) == before + 1  # the session is a run, as with a token
    printed = (base / "stderr.log").read_text(encoding="utf-8") + served.printed
    assert INTROSPECTION_SECRET not in printed and storage.tokens.access_token not in printed


def test_x18_a_token_issued_for_another_resource_is_refused(
    gateway: tuple[Served, Path], authorization: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token the same authorization server issued to the same kind of client, but for its own MCP
    server (``aud`` another resource), is not a token for the gateway: 401 and nothing served."""
    served, _base = gateway
    storage = Memory()

    async def elsewhere() -> None:
        auth = signed_in_client(authorization.url, storage)
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            streamable_http_client(authorization.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

    asyncio.run(elsewhere())
    assert storage.tokens is not None
    other = storage.tokens.access_token
    before = started_runs(served, monkeypatch)
    refused = post(served, {"Authorization": f"Bearer {other}"})
    assert refused.status_code == 401, refused.text
    assert "serverInfo" not in refused.text
    assert "resource_metadata=" in refused.headers.get("www-authenticate", "")
    assert started_runs(served, monkeypatch) == before


def test_x19_a_token_the_authorization_server_does_not_vouch_for_is_refused(
    gateway: tuple[Served, Path], authorization: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No token, a made-up one, a credential that is no bearer token: 401; only the made-up token is
    asked about, once."""
    served, _base = gateway
    before = started_runs(served, monkeypatch)
    refused_before = authorization.count("introspected active=false")
    made_up, not_bearer = "Bearer made-up-token-0123456789", "Basic Zm9vOmJhcg=="
    for headers in ({}, {"Authorization": made_up}, {"Authorization": not_bearer}):
        refused = post(served, headers)
        assert refused.status_code == 401, (headers, refused.text)
        assert "serverInfo" not in refused.text
    assert authorization.count("introspected active=false") - refused_before == 1
    assert authorization.count("introspection refused") == 0  # the gateway authenticated itself
    assert started_runs(served, monkeypatch) == before


def test_x20_while_the_authorization_server_cannot_be_asked_no_token_is_let_in(tmp_path: Path) -> None:
    """An introspection endpoint where nothing listens: every request is refused (401), promptly, and
    the gateway keeps serving (and refusing) rather than failing."""
    dead = free_port()
    config = _config(tmp_path / "ditto.yaml", None, port=dead)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_INTROSPECTION_SECRET", INTROSPECTION_SECRET)
        with http_gateway(tmp_path, "--config", str(config), oauth=True) as served:
            for _ in range(3):
                refused = httpx.post(
                    served.url,
                    json=INITIALIZE,
                    headers={
                        "Authorization": "Bearer some-token-from-somewhere",
                        "Accept": "application/json, text/event-stream",
                    },
                    timeout=15,
                )
                assert refused.status_code == 401, refused.text
            assert served.process.poll() is None
