"""Helpers for the MCP tests: real server entries, sandboxes, loopback ports and HTTP server processes."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ditto_tui.sandbox import Sandbox, SandboxPermissions

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(__file__).resolve().parent / "servers"
NODE_BIN = ROOT / "node_modules" / ".bin"


def python_server(script: str, *args: str) -> dict[str, Any]:
    """An ``mcpServers`` stdio entry for one of the test servers under ``servers/``."""
    return {"command": sys.executable, "args": [str(SERVERS / script), *args]}


def node_server(name: str, *args: str) -> dict[str, Any]:
    """An ``mcpServers`` stdio entry for an npm reference server installed by ``make test``."""
    program = NODE_BIN / name
    assert program.exists(), f"{program} is missing: run `npm ci` (make test does)"
    return {"command": str(program), "args": list(args)}


def sandbox(workspace: Path, *servers: str) -> Sandbox:
    """A sandbox that grants exactly ``servers``."""
    return Sandbox(SandboxPermissions(mcp=list(servers)), workspace=workspace)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


@contextlib.contextmanager
def http_server(args: Sequence[str], port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``python ARGS`` (an MCP server listening on 127.0.0.1:``port``) until the block ends."""
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            [sys.executable, *args], stdout=subprocess.DEVNULL, stderr=errors, cwd=ROOT
        )
        try:
            deadline = time.monotonic() + 20
            while not _accepts(port):
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def lines(log: Path, text: str) -> int:
    """How many lines of ``log`` contain ``text``."""
    return sum(text in line for line in log.read_text(encoding="utf-8", errors="replace").splitlines())
