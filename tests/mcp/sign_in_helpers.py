"""Helpers for the sign-in tests: the OAuth test server, a browser played by an HTTP client, its secrets."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.mcp.mcp_helpers import SERVERS, free_port, http_server, lines

# The first access token lives a second, so a test can wait it out; the refreshed ones an hour, so a
# loaded machine cannot let them die too between the refresh and the call that follows it.
SHORT_FIRST_TOKEN = ("--expires", "1", "--refreshed-expires", "3600")

_SECRET = re.compile(r"\b(?:client_secret|code|access_token|refresh_token)=([A-Za-z0-9_\-]{16,})")


@dataclass(frozen=True)
class OAuthServer:
    """A running ``servers/oauth_server.py``: its MCP URL and the log of what it did (its stderr)."""

    port: int
    log: Path

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def count(self, text: str) -> int:
        """How many lines of its log contain ``text`` (``issued grant=refresh_token``, ``authorized``)."""
        return lines(self.log, text)

    def secrets(self) -> list[str]:
        """Every client secret, authorization code, access and refresh token it has minted so far."""
        return _SECRET.findall(self.log.read_text(encoding="utf-8", errors="replace"))


@contextlib.contextmanager
def oauth_server(tmp_path: Path, *args: str) -> Iterator[OAuthServer]:
    """Run the OAuth-protected test server (options as its command line takes them) until the block ends."""
    port = free_port()
    log = tmp_path / f"oauth-{port}.log"
    with http_server([str(SERVERS / "oauth_server.py"), "--port", str(port), *args], port, log):
        yield OAuthServer(port, log)


async def play_browser(authorization_url: str) -> httpx.Response:
    """What a browser does with the authorization URL: follow the authorization server's redirect back
    to the loopback listener (the test server signs everyone in without a page)."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as client:
        return await client.get(authorization_url)


def config_text(server: OAuthServer, name: str = "notes") -> str:
    """A ``ditto.yaml`` with ``server`` as the HTTP server ``name``, granted by the sandbox."""
    return f"sandbox:\n  mcp: [{name}]\nmcp:\n  servers:\n    {name}:\n      url: {server.url}\n"


def files_under(root: Path, *, skip: Path | None = None) -> dict[Path, str]:
    """Every file under ``root`` (not under ``skip``) and its text."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and (skip is None or not path.is_relative_to(skip)):
            found[path] = path.read_text(encoding="utf-8", errors="replace")
    return found
