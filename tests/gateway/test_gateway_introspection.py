"""The gateway's check of an OAuth token (``IntrospectedTokens``) against a real loopback introspection
endpoint that answers what each test sets: only an answer that is active, unexpired, of the configured
issuer and for the gateway's URL lets a token in; any other answer, an error, a slow or oversized answer
lets nothing in; a good answer is kept, never past the token's expiry."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ditto_tui.config import GatewayOAuthConfig
from ditto_tui.gateway import oauth
from ditto_tui.gateway.oauth import IntrospectedTokens
from tests.loopback import serving

RESOURCE = "http://127.0.0.1:8766/mcp"


@dataclass
class Endpoint:
    url: str
    answer: Any = None
    status: int = 200
    delay: float = 0.0
    drip: bool = False
    asked: list[dict[str, str]] = field(default_factory=list)


@contextlib.contextmanager
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            form = dict(pair.split("=", 1) for pair in self.rfile.read(length).decode().split("&") if pair)
            state.asked.append({**form, "authorization": self.headers.get("authorization", "")})
            time.sleep(state.delay)
            body = state.answer if isinstance(state.answer, bytes) else json.dumps(state.answer).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                if not state.drip:
                    self.wfile.write(body)
                for index in range(len(body) if state.drip else 0):  # a byte at a time, each in time
                    self.wfile.write(body[index : index + 1])
                    self.wfile.flush()
                    time.sleep(0.05)

        def log_message(self, *_args: Any) -> None:
            pass

    with serving(Handler) as origin:
        state.url = origin
        yield state


def _tokens(at: Endpoint, **extra: Any) -> IntrospectedTokens:
    settings = GatewayOAuthConfig.model_validate(
        {"issuer": at.url, "introspectionEndpoint": f"{at.url}/introspect", **extra}
    )
    return IntrospectedTokens(settings, RESOURCE)


def _good(at: Endpoint, **changes: Any) -> dict[str, Any]:
    answer = {
        "active": True,
        "client_id": "claude",
        "scope": "mcp read",
        "exp": int(time.time()) + 3600,
        "iss": at.url,
        "aud": RESOURCE,
        "sub": "person-1",
    }
    answer.update(changes)
    return {key: value for key, value in answer.items() if value is not None}


async def test_a_vouched_for_token_is_let_in_once_asked_and_kept_no_longer_than_it_lives() -> None:
    with endpoint() as at:
        tokens = _tokens(at, clientId="gateway", clientSecret="s3cret")
        at.answer = _good(at, aud=["https://other.example", RESOURCE])
        access = await tokens.verify_token("tok-1")
        assert access is not None and access.client_id == "claude" and access.scopes == ["mcp", "read"]
        assert access.resource == RESOURCE and access.subject == "person-1"
        assert await tokens.verify_token("tok-1") is not None
        assert len(at.asked) == 1  # kept
        assert at.asked[0]["token"] == "tok-1" and at.asked[0]["authorization"].startswith("Basic ")
        at.answer = _good(at, exp=int(time.time()) + 1)
        assert await tokens.verify_token("tok-2") is not None
        time.sleep(1.1)
        at.answer = {"active": False}
        assert await tokens.verify_token("tok-2") is None  # its expiry passed: asked again, refused
        assert len(at.asked) == 3
        await tokens.close()


@pytest.mark.parametrize(
    "case",
    [
        "inactive",
        "expired",
        "expiry not a number",
        "a refresh token",
        "nobody",
        "other issuer",
        "other resource",
        "no resource",
        "not json",
        "error",
        "list",
    ],
)
async def test_an_answer_that_does_not_vouch_for_the_token_lets_nothing_in(case: str) -> None:
    with endpoint() as at:
        tokens = _tokens(at)
        at.answer = {
            "inactive": {"active": False},
            "expired": _good(at, exp=int(time.time()) - 5),
            "expiry not a number": json.dumps(_good(at, exp=float("nan"))).encode(),
            "a refresh token": _good(at, token_type="refresh_token"),
            "nobody": _good(at, client_id=None, sub=None),
            "other issuer": _good(at, iss="https://evil.example"),
            "other resource": _good(at, aud="http://127.0.0.1:9999/mcp"),
            "no resource": _good(at, aud=None),
            "not json": b"<html>sign in</html>",
            "error": _good(at),
            "list": [_good(at)],
        }[case]
        if case == "error":
            at.status = 500
        assert await tokens.verify_token("tok") is None
        assert await tokens.verify_token("tok") is None
        assert len(at.asked) == 2  # a refusal is never kept: the next request asks again
        await tokens.close()


async def test_a_slow_dripping_or_oversized_answer_lets_nothing_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oauth, "INTROSPECTION_SECONDS", 0.3)
    with endpoint() as at:
        tokens = _tokens(at)
        at.answer, at.delay = _good(at), 2.0
        began = time.monotonic()
        assert await tokens.verify_token("slow") is None
        assert time.monotonic() - began < 1.5
        at.delay, at.drip = 0.0, True  # each byte comes in time, the whole answer does not
        began = time.monotonic()
        assert await tokens.verify_token("dripping") is None
        assert time.monotonic() - began < 1.5
        at.drip = False
        at.answer = _good(at, padding="x" * (oauth.MAX_ANSWER_BYTES + 10))
        assert await tokens.verify_token("big") is None
        await tokens.close()


def test_the_gateways_oauth_addresses_are_https_or_loopback() -> None:
    with pytest.raises(ValueError, match="issuer must be https"):
        GatewayOAuthConfig.model_validate(
            {"issuer": "http://auth.example.com", "introspectionEndpoint": "https://auth.example.com/i"}
        )
    with pytest.raises(ValueError, match="clientSecret needs clientId"):
        GatewayOAuthConfig.model_validate(
            {
                "issuer": "https://a.example",
                "introspectionEndpoint": "https://a.example/i",
                "clientSecret": "x",
            }
        )


def test_the_resource_is_the_url_clients_are_given() -> None:
    """Tokens must be issued for the URL the gateway prints: ``localhost`` as given, IPv6 in brackets."""
    from ditto_tui.gateway.serving import resource_url

    assert resource_url("127.0.0.1", 8766) == "http://127.0.0.1:8766/mcp"
    assert resource_url("localhost", 8766) == "http://localhost:8766/mcp"
    assert resource_url("::1", 8766) == "http://[::1]:8766/mcp"
