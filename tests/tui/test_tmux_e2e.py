"""End to end in a real terminal: ditto-tui in tmux, approve the write with its key, the run finishes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ditto_tui.tui.keys import ARM_SECONDS
from tests.infer.chat_server import ChatServer, Reply, chat_server, chunk, text_stream

ROOT = Path(__file__).resolve().parents[2]
NOTE = ".ditto/notes/hello.md"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _terminal_env() -> dict[str, str]:
    """The environment the tmux server (and so the app) starts with: this test's, as it is now (with the
    test's DITTO_TUI_HOME), given explicitly. Left to inherit, a child gets the C-level environment, where
    an imported readline has put COLUMNS=80 and LINES=24, and the app then draws 80×24 in the 120×36
    window."""
    return {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}


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
            env=_terminal_env(),
        )

    def start(self, command: list[str], cwd: Path) -> None:
        shell = " ".join(_quote(part) for part in command)
        started = self.tmux(
            "new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", "-c", str(cwd), shell
        )
        assert started.returncode == 0, started.stderr
        size = self.tmux("display-message", "-p", "-t", self.session, "#{window_width}x#{window_height}")
        assert size.stdout.strip() == "120x36", size.stdout

    def open_window(self, command: list[str], cwd: Path) -> str:
        """Run ``command`` in a second window of the session (another terminal); its target."""
        shell = " ".join(_quote(part) for part in command)
        opened = self.tmux("new-window", "-t", self.session, "-c", str(cwd), shell)
        assert opened.returncode == 0, opened.stderr
        return f"{self.session}:1"

    def screen(self, target: str | None = None) -> str:
        return self.tmux("capture-pane", "-p", "-t", target or f"{self.session}:0").stdout

    def press(self, key: str, target: str | None = None) -> None:
        self.tmux("send-keys", "-t", target or f"{self.session}:0", key)

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


class ModelThread:
    """The loopback chat-completions server of the tests, on an event loop of its own in a thread."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.server: ChatServer | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with chat_server() as server:
            server.replies.extend(self.replies)
            self.server = server
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> ChatServer:
        self._thread.start()
        assert self._ready.wait(10), "the model server did not start"
        assert self.server is not None
        return self.server

    def __exit__(self, *_exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def test_a_new_project_in_tmux_runs_the_typed_task_on_a_streaming_model(
    tmp_path: Path, terminal: Terminal
) -> None:
    """``ditto-tui init`` in a fresh folder, a streaming OpenAI-compatible model on loopback: the task is
    typed into the prompt box, the write is approved with the model's message on screen, the transcript,
    the outcome panel and the file say the same."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# A project\n", encoding="utf-8")
    home = tmp_path / "home"
    env = ["env", f"PYTHONPATH={ROOT}", f"DITTO_TUI_HOME={home}"]

    def cli(command: str) -> subprocess.CompletedProcess[str]:
        argv = [*env, sys.executable, "-m", "ditto_tui", command]
        return subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=60)

    initialised = cli("init")
    assert initialised.returncode == 0, initialised.stderr
    proposal = "I will write NOTES.md with what the README says; it needs your approval."
    arguments = json.dumps({"path": "NOTES.md", "text": "# Notes\n\nThe README names the project.\n"})
    first = [
        *text_stream(proposal, size=6)[:-1],
        chunk(tool_calls=[{"index": 0, "id": "w-1", "type": "function", "function": {"name": "write_text"}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": arguments[:20]}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": arguments[20:]}}]),
        chunk(finish_reason="tool_calls"),
    ]
    answer = "I wrote NOTES.md: a short note on what the README says."
    with ModelThread(
        [Reply(events=first, gap=0.05), Reply(events=text_stream(answer, size=5), gap=0.03)]
    ) as model:
        config = (project / "ditto.yaml").read_text(encoding="utf-8")
        config = config.replace(
            "infer:\n  provider: scripted\n",
            f"infer:\n  provider: openai\n  baseUrl: {model.base_url}\n  model: loopback-model\n",
        )
        assert "provider: openai" in config
        (project / "ditto.yaml").write_text(config, encoding="utf-8")
        # trust is pinned to the file init wrote: the person trusts the edited one again
        trusted = cli("trust")
        assert "Trusted again" in trusted.stdout and "ditto.yaml (edited)" in trusted.stdout, trusted.stdout
        terminal.start([*env, sys.executable, "-m", "ditto_tui"], project)
        _poll(lambda: "Task for the agent" in terminal.screen(), "the prompt box")
        _poll(lambda: max(map(len, terminal.screen().splitlines())) == 120, "the app to fill the window")
        terminal.tmux("send-keys", "-t", terminal.session, "-l", "Write a note about the README")
        terminal.press("Enter")
        _poll(lambda: "a Approve once" in terminal.screen(), "the approval view")
        screen = terminal.screen()
        assert "Approve write_text" in screen and "NOTES.md" in screen
        assert "I will write NOTES.md with what the README says" in screen, "the model's message is on screen"
        assert not (project / "NOTES.md").exists()
        _poll(
            lambda: "Approve write_text" not in terminal.screen(),
            "the approval to be taken",
            every=lambda: terminal.press("a"),
        )
        _poll(lambda: "1 approved" in terminal.screen(), "the outcome panel's counts", timeout=30)
        assert " finished " in terminal.screen()
        # The transcript shares its rows with the graph: a phrase that fits on one row of it.
        _poll(lambda: "I wrote NOTES.md" in terminal.screen(), "the answer streamed into the transcript")
        request = model.received[0].json
        assert (
            request["stream"] is True
            and request["messages"][-1]["content"] == "Write a note about the README"
        )
    assert (project / "NOTES.md").read_text(encoding="utf-8") == "# Notes\n\nThe README names the project.\n"

    # The follow-up box has the keys: Esc leaves it, then q quits (both held back a moment after a modal).
    def leave_and_quit() -> None:
        terminal.press("Escape")
        time.sleep(0.3)  # sent together, ESC and q would read as Alt+Q
        terminal.press("q")

    _poll(lambda: not terminal.alive(), "ditto-tui to quit", timeout=15, every=leave_and_quit)


def test_on_a_durable_host_the_app_follows_a_decision_made_in_another_terminal_and_an_attached_app(
    tmp_path: Path, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runs: {host: local}``: the app runs the graph on the local run server and is its worker. The
    write is approved with ``decide`` from another process: the app's approval view closes and the run
    finishes there. A second run, shown by ``ditto-tui attach RUN_ID`` in a second terminal, is approved
    there: the first app, whose worker runs the node, follows it to its end."""
    from tests.runs.workspace import Workspace

    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))
    workspace = Workspace(root, tmp_path / "home")
    app = ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "ditto_tui"]
    try:
        terminal.start([*app, "run", "graphs/write_note.py"], root)
        _poll(lambda: "a Approve once" in terminal.screen(), "the approval view", timeout=60)
        (waiting,) = workspace.waiting()
        assert waiting["tool"] == "write_text" and not (root / NOTE).exists()
        decided = workspace.cli("decide", str(waiting["request_id"]), "approve")
        assert "approved" in decided.stdout
        _poll(lambda: " finished " in terminal.screen(), "the app to follow the run to its end")
        screen = terminal.screen()
        assert "Approve write_text" not in screen and "✓ 4 succeeded" in screen
        assert (root / NOTE).read_text(encoding="utf-8").startswith("# Hello")
        (root / NOTE).unlink()

        time.sleep(ARM_SECONDS + 0.2)  # keys come back ARM_SECONDS after the approval view closed (U-09)
        terminal.press("n")  # a new run of the graph, asking for the write again
        _poll(lambda: "a Approve once" in terminal.screen(), "the second run's approval", timeout=60)
        (second,) = workspace.waiting()
        assert second["run_id"] != waiting["run_id"]
        other = terminal.open_window([*app, "attach", str(second["run_id"])], root)
        _poll(
            lambda: "a Approve once" in terminal.screen(other), "the attached app's approval view", timeout=60
        )
        assert "write_text (write-1)" in terminal.screen(other)
        _poll(
            lambda: "Approve write_text" not in terminal.screen(other),
            "the attached app's approval to be taken",
            every=lambda: terminal.press("a", other),
        )
        _poll(lambda: " finished " in terminal.screen(other), "the attached app to see the run end")
        _poll(lambda: " finished " in terminal.screen(), "the first app to see the run end")
        assert "Approve write_text" not in terminal.screen()
        assert (root / NOTE).read_text(encoding="utf-8").startswith("# Hello")
        assert workspace.run_status(str(second["run_id"])) == "succeeded" and workspace.inbox() == []
    finally:
        workspace.close()


def test_a_durable_gateway_session_is_ended_from_the_apps_runs_list_and_its_client_told(
    tmp_path: Path, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP client's session through ``ditto-tui mcp serve`` on the local run server asks to write a
    note. In another terminal ``ditto-tui attach RUN_ID`` shows the waiting call; the person leaves it
    for later, opens the runs list (``l``), sees the session with its client, ends it (``x``, then ``y``):
    the client's waiting call ends without writing, its next call is refused, and the run is cancelled."""
    from mcp import types

    from tests.gateway.test_gateway import text_of
    from tests.gateway.test_gateway_durable import gateway_client
    from tests.runs.workspace import Workspace

    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))
    workspace = Workspace(root, tmp_path / "home")
    app = ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "ditto_tui"]

    def end_in_the_app(run_id: str) -> None:
        terminal.start([*app, "attach", run_id], root)
        _poll(lambda: "a Approve once" in terminal.screen(), "the attached app's approval view", timeout=60)
        assert "write_note" in terminal.screen()
        terminal.press("Escape")  # later: it stays pending
        _poll(lambda: "a Approve once" not in terminal.screen(), "the approval view to close")
        time.sleep(ARM_SECONDS + 0.2)  # keys come back ARM_SECONDS after the approval view closed
        _poll(
            lambda: "Runs of the run host" in terminal.screen(),
            "the run host's runs list",
            timeout=30,
            every=lambda: terminal.press("l"),
        )
        _poll(lambda: "durable-client 3" in terminal.screen(), "the session's client in the list")
        assert "mcp-gateway" in terminal.screen()
        terminal.press("x")
        _poll(lambda: "End the run" in terminal.screen(), "the question before the run is ended")
        time.sleep(ARM_SECONDS + 0.2)
        _poll(  # a modal takes keys ARM_SECONDS after it opens
            lambda: "End the run" not in terminal.screen(),
            "the answer to the question",
            every=lambda: terminal.press("y"),
        )
        _poll(
            lambda: f"Run {run_id[-8:]} ended." in terminal.screen(),
            "the app to say the run ended",
            timeout=30,
        )

    async def session() -> tuple[types.CallToolResult, types.CallToolResult, dict[str, object]]:
        async with gateway_client(workspace) as client:
            call = asyncio.ensure_future(
                client.call_tool("write_note", {"name": "ended.md", "text": "never"})
            )
            (waiting,) = await asyncio.to_thread(workspace.waiting)
            await asyncio.to_thread(end_in_the_app, str(waiting["run_id"]))
            ended = await asyncio.wait_for(call, 60)
            after = await asyncio.wait_for(
                client.call_tool("write_note", {"name": "after.md", "text": "never"}), 60
            )
            return ended, after, waiting

    try:
        ended, after, waiting = asyncio.run(session())
        assert ended.is_error and text_of(ended).startswith("APPROVAL_CANCELLED")
        assert after.is_error and "the gateway session's run has ended" in text_of(after)
        _poll(  # the attached app follows the run to its end: ended, not broken
            lambda: " cancelled " in terminal.screen() and "✗0 ⊗2" in terminal.screen(),
            "the attached app to show the run cancelled, its nodes cancelled and none failed",
        )
        assert workspace.run_status(str(waiting["run_id"])) == "cancelled"
        assert workspace.inbox() == []
        assert not list(root.rglob("ended.md")) and not list(root.rglob("after.md"))
    finally:
        workspace.close()
