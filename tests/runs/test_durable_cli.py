"""Durable runs end to end, every step its own process as a user runs them: ``run --detach`` waits on an
approval; its worker is killed with SIGKILL; ``inbox --json`` lists the request from another process and
``decide`` answers it with no worker alive; a new worker applies it and the write happens exactly once.
An approval whose timer (6 s: long enough to be listed on a loaded machine) ran out while no worker was
alive ends timed out without executing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

GRAPH = Path(__file__).resolve().parents[2] / "graphs" / "write_note.py"
NOTE = Path(".ditto/notes/hello.md")


class Workspace:
    """A trusted folder whose runs live on the user's local run server, in a home of its own."""

    def __init__(self, root: Path, home: Path, rules: str = "") -> None:
        self.root, self.env = root, {**os.environ, "DITTO_TUI_HOME": str(home)}
        self.workers: list[subprocess.Popen[bytes]] = []
        (root / "graphs").mkdir()
        shutil.copy(GRAPH, root / "graphs" / "write_note.py")
        (root / "README.md").write_text("# readme\n")
        self.cli("init")
        config = (root / "ditto.yaml").read_text()
        config = config.replace("approval:\n  rules:\n", "approval:\n  rules:\n" + rules, 1)
        (root / "ditto.yaml").write_text(config + "runs:\n  host: local\n")
        self.cli("trust", ".")

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "ditto_tui", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{args} failed ({done.returncode}): {done.stderr}")
        return done

    def worker(self) -> subprocess.Popen[bytes]:
        with open(self.root.parent / f"worker-{len(self.workers)}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "ditto_tui", "worker", "graphs/write_note.py"],
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        self.workers.append(process)
        return process

    def inbox(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.cli("inbox", "--json").stdout.splitlines()]

    def waiting(self, count: int = 1, seconds: float = 90) -> list[dict[str, object]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pending = self.inbox()
            if len(pending) >= count:
                return pending
            time.sleep(0.2)
        raise AssertionError("no request waited")

    def run_status(self, run_id: str, seconds: float = 90) -> str:
        deadline = time.monotonic() + seconds
        status = "?"
        while time.monotonic() < deadline:
            for line in self.cli("runs", "--json").stdout.splitlines():
                run = json.loads(line)
                if run["run_id"] == run_id:
                    status = run["status"]
            if status != "running":
                return status
            time.sleep(0.2)
        return status

    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.cli("server", "stop", check=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "project"
    root.mkdir()
    given = Workspace(root, tmp_path / "home")
    yield given
    given.close()


def test_a_detached_run_outlives_its_killed_worker_and_is_answered_from_another_process(
    workspace: Workspace,
) -> None:
    run_id = workspace.cli("run", "graphs/write_note.py", "--detach").stdout.strip()
    assert run_id.startswith("run-")
    first = workspace.worker()
    (waiting,) = workspace.waiting()
    assert (waiting["run_id"], waiting["tool"], waiting["call_id"]) == (run_id, "write_text", "write-1")
    first.send_signal(signal.SIGKILL)
    first.wait()
    decided = workspace.cli("decide", str(waiting["request_id"]), "approve")
    assert "no worker is running" in decided.stdout and not (workspace.root / NOTE).exists()
    refused = workspace.cli("decide", "approval-forged-1", "approve", check=False)
    assert refused.returncode == 1 and "decision refused" in refused.stderr
    workspace.worker()
    assert workspace.run_status(run_id) == "succeeded"
    assert (workspace.root / NOTE).read_text().startswith("# Hello")
    assert workspace.inbox() == []
    again = workspace.cli("decide", str(waiting["request_id"]), "deny", check=False)
    assert again.returncode == 1 and "no longer pending" in again.stderr


def test_an_approval_whose_timer_ran_out_with_no_worker_alive_ends_timed_out_unexecuted(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    rules = "    - tool: write_text\n      decision: ask\n      timeoutSeconds: 6\n"
    workspace = Workspace(root, tmp_path / "home", rules)
    try:
        run_id = workspace.cli("run", "graphs/write_note.py", "--detach").stdout.strip()
        first = workspace.worker()
        (waiting,) = workspace.waiting()
        assert isinstance(waiting["expires_at"], float)
        first.send_signal(signal.SIGKILL)
        first.wait()
        time.sleep(max(0.0, float(waiting["expires_at"]) - time.time()) + 0.5)
        workspace.worker()
        assert workspace.run_status(run_id) == "succeeded"  # the graph delivers "not written: ..."
        assert not (workspace.root / NOTE).exists() and workspace.inbox() == []
    finally:
        workspace.close()
