"""End to end in a real terminal: ditto-tui in tmux, approve the write with its key, the run finishes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTE = ".ditto/notes/hello.md"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """One tmux server of our own (its own socket) running one 120×36 session."""

    def __init__(self) -> None:
        self.socket = f"ditto-e2e-{uuid.uuid4().hex[:8]}"
        self.session = "ditto"

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    def start(self, command: list[str], cwd: Path) -> None:
        shell = " ".join(_quote(part) for part in command)
        started = self.tmux(
            "new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", "-c", str(cwd), shell
        )
        assert started.returncode == 0, started.stderr
        size = self.tmux("display-message", "-p", "-t", self.session, "#{window_width}x#{window_height}")
        assert size.stdout.strip() == "120x36", size.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session).stdout

    def press(self, key: str) -> None:
        self.tmux("send-keys", "-t", self.session, key)

    def alive(self) -> bool:
        return self.tmux("has-session", "-t", self.session).returncode == 0

    def close(self) -> None:
        self.tmux("kill-server")


def _quote(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"


def _poll(
    condition: Callable[[], bool], what: str, timeout: float = 30.0, every: Callable[[], None] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        if every is not None:
            every()
        time.sleep(0.1)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    try:
        yield term
    finally:
        term.close()


def test_ditto_tui_in_tmux_waits_for_approval_then_writes_and_finishes(
    tmp_path: Path, terminal: Terminal
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutil.copy(ROOT / "tests/data/ditto.tui.yaml", workspace / "ditto.yaml")
    (workspace / "README.md").write_text("# Demo\n", encoding="utf-8")
    env_python = sys.executable
    command = [
        "env",
        f"PYTHONPATH={ROOT}",
        env_python,
        "-m",
        "ditto_tui",
        "run",
        str(ROOT / "graphs/write_note.py"),
    ]
    terminal.start(command, workspace)
    _poll(lambda: "a Approve once" in terminal.screen(), "the approval view and its keys")
    screen = terminal.screen()
    assert "Approve write_text" in screen and '"path": ".ditto/notes/hello.md"' in screen
    assert not (workspace / NOTE).exists()
    # The view ignores keys for a moment after it opens: keep pressing the documented key until it takes.
    _poll(
        lambda: "Approve write_text" not in terminal.screen(),
        "the approval to be taken",
        every=lambda: terminal.press("a"),
    )
    _poll(lambda: " finished " in terminal.screen(), "the run to finish")
    assert (workspace / NOTE).read_text(encoding="utf-8") == "# Hello\n\nWritten by the write-note graph.\n"
    assert "✓ 4 succeeded" in terminal.screen()
    # Keys run no binding for a moment after a modal closes (U-09): press q until it takes.
    _poll(lambda: not terminal.alive(), "ditto-tui to quit", timeout=15, every=lambda: terminal.press("q"))
    assert os.listdir(workspace / ".ditto" / "notes") == ["hello.md"]
