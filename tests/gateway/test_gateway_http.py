"""``ditto-tui mcp serve --http`` (ADVERSARIAL X-13 … X-17): the SDK's streamable HTTP client with the
printed bearer token reaches the demo server's tools through the gate; the door refuses a request
without the token, with a wrong one, from another site's Origin or for a rebinding Host, and a client
that floods calls gets every one answered and gated, the gateway still answering others."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from ditto_tui.runtime.events import ApprovalResolved
from tests.gateway.test_gateway import answer, gateway_runs, text_of

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "door-test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[str]
    url: str
    token: str
    workspace: Path
    printed: str = ""
    """What it printed at start (its address, and the token or where clients sign in)."""

    @property
    def authority(self) -> str:
        return self.url.split("//", 1)[1].split("/", 1)[0]


@contextlib.contextmanager
def http_gateway(base: Path, *options: str, oauth: bool = False) -> Iterator[Served]:
    """``ditto-tui [options] mcp serve --http 127.0.0.1:0`` on ``base/project``, in ``base/home``, until
    the block ends (its stderr in ``base/stderr.log``); ``oauth``: its config signs clients in with OAuth,
    so it prints where instead of a token."""
    workspace = base / "project"
    workspace.mkdir(exist_ok=True)
    env = {**os.environ, "DITTO_TUI_HOME": str(base / "home")}
    command = [*options, "mcp", "serve", "--http", "127.0.0.1:0"]
    with open(base / "stderr.log", "w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "ditto_tui", "--workspace", str(workspace), *command],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    assert process.stdout is not None
    try:
        lines = [process.stdout.readline() for _ in range(3)]  # '' if it ended
        address = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", lines[0])
        token = re.search(r"oauth: clients sign in at (\S+)" if oauth else r"token: (\S+)", lines[1])
        if address is None or token is None:
            pytest.fail(f"mcp serve --http printed no address and token: {lines!r}")
        yield Served(process, address.group(1), "" if oauth else token.group(1), workspace, "".join(lines))
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_gateway(tmp_path_factory.mktemp("gateway-http")) as running:
        yield running


@contextlib.asynccontextmanager
async def client(served: Served, elicit: Any = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {served.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(served.url, http_client=http) as (read, write),
        ClientSession(
            read,
            write,
            elicitation_callback=elicit,
            client_info=types.Implementation(name="http-test", version="2"),
        ) as session,
    ):
        await session.initialize()
        yield session


def post(served: Served, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(served.url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=10)


def bearer(served: Served, token: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token if token is not None else served.token}"}


def started_runs(served: Served, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("DITTO_TUI_HOME", str(served.workspace.parent / "home"))
    return len(gateway_runs(served.workspace))


def test_over_http_a_write_is_asked_on_its_own_stream_and_runs_once_approved(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def session() -> tuple[set[str], types.CallToolResult]:
        async with client(served, answer("approve", "over http", asked)) as http:
            names = {tool.name for tool in (await http.list_tools()).tools}
            wrote = await http.call_tool("write_note", {"name": "http.md", "text": "over http"})
            return names, wrote

    names, wrote = asyncio.run(session())
    assert {"list_notes", "write_note"} <= names
    assert not wrote.is_error and "Wrote" in text_of(wrote) and len(asked) == 1
    monkeypatch.setenv("DITTO_TUI_HOME", str(served.workspace.parent / "home"))
    resolved = [
        e
        for journal in gateway_runs(served.workspace)
        for e in journal.events
        if isinstance(e, ApprovalResolved) and e.tool == "demo:write_note"
    ]
    assert [(e.decision, e.via, e.reason) for e in resolved] == [("approve", "client", "over http")]


def test_x13_without_the_token_or_with_a_wrong_one_nothing_is_served(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = started_runs(served, monkeypatch)
    for headers in (
        {},
        bearer(served, "wrong"),
        bearer(served, served.token[:-1]),
        bearer(served, served.token + "x"),
    ):
        refused = post(served, headers)
        assert refused.status_code == 401, (headers, refused.text)
        assert "initialize" not in refused.text and "serverInfo" not in refused.text
    assert post(served, {"Authorization": served.token}).status_code == 401  # not a bearer credential
    assert started_runs(served, monkeypatch) == before  # no connection, no run


def test_x14_another_sites_origin_is_refused_even_with_the_token(served: Served) -> None:
    for origin in ("http://evil.example.com", "null", f"http://{served.authority}.evil.example.com"):
        refused = post(served, {**bearer(served), "Origin": origin})
        assert refused.status_code == 403, (origin, refused.text)
    assert post(served, {**bearer(served), "Origin": f"http://{served.authority}"}).status_code == 200


def test_x15_a_rebinding_host_is_refused_even_with_the_token(served: Served) -> None:
    port = served.authority.rsplit(":", 1)[1]
    for host in ("evil.example.com", f"evil.example.com:{port}", f"127.0.0.1:{int(port) + 1}"):
        refused = post(served, {**bearer(served), "Host": host})
        assert refused.status_code in (400, 421), (host, refused.status_code)
    assert post(served, {**bearer(served), "Host": f"localhost:{port}"}).status_code == 200


def test_x16_a_non_loopback_address_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ditto_tui",
            "--workspace",
            str(tmp_path),
            "mcp",
            "serve",
            "--http",
            "0.0.0.0:0",
        ],
        env={**os.environ, "DITTO_TUI_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "binds loopback only" in done.stderr and done.stdout == ""


def test_x17_a_client_flooding_calls_gets_each_answered_and_gated_and_others_are_served(
    served: Served,
) -> None:
    asked: list[str] = []

    async def flood() -> tuple[list[types.CallToolResult], types.CallToolResult, float]:
        async with client(served, answer("deny", "not in a flood", asked)) as noisy, client(served) as other:
            calls = [noisy.call_tool("list_notes", {}) for _ in range(200)]
            write = noisy.call_tool("write_note", {"name": "flood.md", "text": "x"})
            started = time.monotonic()
            flooding = asyncio.gather(*calls)
            listed = await other.list_tools()  # another client is answered during the flood
            waited = time.monotonic() - started
            assert any(tool.name == "write_note" for tool in listed.tools)
            return await flooding, await write, waited

    results, write, waited = asyncio.run(flood())
    assert len(results) == 200 and all(not r.is_error and "welcome.md" in text_of(r) for r in results)
    assert write.is_error and "not in a flood" in text_of(write) and len(asked) == 1  # still asked
    assert waited < 30
    unauthenticated = [post(served, {}) for _ in range(100)]  # a flood without the token: all refused
    assert {response.status_code for response in unauthenticated} == {401}


def test_a_read_called_before_any_listing_is_decided_as_one_called_after(tmp_path: Path) -> None:
    """A fresh gateway whose first client calls a read-only tool at once, twenty times together, before
    anything listed the tools: each is allowed by the rule that matches the server's read-only hint, as
    it would be after a listing; the person is never asked."""
    asked: list[str] = []

    async def first_calls(served: Served) -> list[types.CallToolResult]:
        async with client(served, answer("deny", "asked", asked)) as session:
            return list(await asyncio.gather(*(session.call_tool("list_notes", {}) for _ in range(20))))

    with http_gateway(tmp_path) as served:
        results = asyncio.run(first_calls(served))
    assert asked == []
    assert all(not result.is_error and "welcome.md" in text_of(result) for result in results)
