"""The official MCP conformance suite's server scenarios against ``ditto-tui mcp serve --http``.

The gateway fronts one upstream (``conformance_upstream.py``, stdio) offering each scenario's tools,
resources and prompts, with a policy that allows its calls. The suite's client cannot send a header, so
it reaches the gateway through a reverse proxy of the test that adds the printed bearer token (as a
configured client sends it) and names the gateway's own address in Host and Origin when the suite names
the proxy's; any other Host or Origin is passed on as sent, so the gateway's own DNS-rebinding check is
what ``dns-rebinding-protection`` tests. The whole active suite runs once; each scenario is a test.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.test_conformance_client import _ANSI, node_binary, suite_script
from tests.gateway.test_gateway_http import http_gateway

UPSTREAM = Path(__file__).with_name("conformance_upstream.py")
SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]
"""The suite's 30 active server scenarios (``index.js list``)."""
SUITE_SECONDS = 300
_SUMMARY = re.compile(r"^([✓✗]) ([\w-]+): (\d+) passed, (\d+) failed", re.MULTILINE)
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}


def header_adding_proxy(target: str, token: str) -> tuple[str, Any]:
    """A loopback reverse proxy to ``target`` (``http://127.0.0.1:PORT``) that adds the bearer token;
    returns its origin and its uvicorn server (run on a thread)."""
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import StreamingResponse

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    mine = f"127.0.0.1:{sock.getsockname()[1]}"
    theirs = target.split("//", 1)[1]
    client = httpx.AsyncClient(timeout=None)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        if headers.get("host") == mine:
            headers["host"] = theirs
        if headers.get("origin") == f"http://{mine}":
            headers["origin"] = f"http://{theirs}"
        headers["authorization"] = f"Bearer {token}"
        upstream = client.build_request(
            request.method, target + request.url.path, headers=headers, content=await request.body()
        )
        answer = await client.send(upstream, stream=True)
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
        response = StreamingResponse(answer.aiter_raw(), status_code=answer.status_code, headers=kept)
        await response(scope, receive, send)
        await answer.aclose()

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            await client.aclose()
            sock.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    return f"http://{mine}", (server, thread)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str]]:
    base = tmp_path_factory.mktemp("conformance-server")
    config = base / "gateway.yaml"
    config.write_text(
        json.dumps(
            {
                "sandbox": {"mcp": ["conf"]},
                "mcp": {"servers": {"conf": {"command": sys.executable, "args": [str(UPSTREAM)]}}},
                "approval": {"rules": [{"mcp": "conf:*", "decision": "allow"}]},
            }
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "DITTO_TUI_HOME": str(base / "home")}
    with http_gateway(base, "--config", str(config)) as gateway:
        origin, (proxy, thread) = header_adding_proxy(gateway.url.removesuffix("/mcp"), gateway.token)
        try:
            run = subprocess.run(
                [
                    str(node_binary()),
                    "--no-deprecation",
                    str(suite_script()),
                    "server",
                    "--url",
                    f"{origin}/mcp",
                ],
                cwd=base,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=SUITE_SECONDS,
                check=False,
            )
        finally:
            proxy.should_exit = True
            thread.join(timeout=15)
    output = _ANSI.sub("", run.stdout)
    (base / "suite.log").write_text(output, encoding="utf-8")
    found = {
        name: (mark == "✓" and failed == "0", output)
        for mark, name, _passed, failed in _SUMMARY.findall(output)
    }
    return found


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_server_scenario_passes_through_the_gateway(
    scenario: str, suite: dict[str, tuple[bool, str]]
) -> None:
    assert scenario in suite, (
        f"the suite did not report {scenario!r}:\n{next(iter(suite.values()), ('', ''))[1][-3000:]}"
    )
    passed, output = suite[scenario]
    if not passed:
        block = output[output.find(scenario) :][:4000]
        pytest.fail(f"conformance scenario {scenario!r} failed through the gateway:\n{block}")
