"""A trusted folder whose runs live on the user's local run server (``runs: {host: local}``), in a home of
its own, driven as a user drives it: each command its own process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

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
