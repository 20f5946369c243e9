"""A trusted folder whose runs live on the user's local run server (``runs: {host: local}``), in a home of
its own, driven as a user drives it: each command its own process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ditto_tui.durable_cli import pending_json
from ditto_tui.runs import DurableRunHost, PendingRequest, open_durable_run_host

T = TypeVar("T")

GRAPH = Path(__file__).resolve().parents[2] / "graphs" / "write_note.py"
NOTE = Path(".ditto/notes/hello.md")


class Workspace:
    """A trusted folder whose runs live on the user's local run server, in a home of its own."""

    def __init__(self, root: Path, home: Path, rules: str = "") -> None:
        self.root, self.home = root, home
        self.env = {**os.environ, "DITTO_TUI_HOME": str(home)}
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

    def worker(self, *options: str, graph: str = "graphs/write_note.py") -> subprocess.Popen[bytes]:
        with open(self.root.parent / f"worker-{len(self.workers)}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "ditto_tui", *options, "worker", graph],
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

    @contextlib.contextmanager
    def home_env(self) -> Iterator[None]:
        """This process in the workspace's home (its state directory, key and server) for a while."""
        previous = os.environ.get("DITTO_TUI_HOME")
        os.environ["DITTO_TUI_HOME"] = str(self.home)
        try:
            yield
        finally:
            if previous is None:
                del os.environ["DITTO_TUI_HOME"]
            else:
                os.environ["DITTO_TUI_HOME"] = previous

    def host(self, ask: Callable[[DurableRunHost], Coroutine[Any, Any, T]]) -> T:
        """``ask(host)`` on the workspace's run host from this process (polling as a CLI call each time
        would cost a process start): the same server and key as the commands, in the workspace's home."""
        with self.home_env():
            return asyncio.run(ask(open_durable_run_host({"host": "local"})))

    def waiting(
        self, count: int = 1, seconds: float = 90, run_id: str | None = None
    ) -> list[dict[str, object]]:
        """The waiting requests (of ``run_id``, else of every run) as ``inbox --json`` lists them, once
        ``count`` wait."""

        async def poll(host: DurableRunHost) -> list[dict[str, object]]:
            return [pending_json(request) for request in await listed(host, count, seconds, run_id)]

        return self.host(poll)

    def run_status(self, run_id: str, seconds: float = 90) -> str:
        """The run's status once it is no longer running (or after ``seconds``)."""

        async def poll(host: DurableRunHost) -> str:
            deadline = time.monotonic() + seconds
            status = "?"
            while time.monotonic() < deadline:
                status = next((r.status for r in await host.runs() if r.run_id == run_id), "?")
                if status != "running":
                    return status
                await asyncio.sleep(0.1)
            return status

        return self.host(poll)

    def stop_workers(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.workers.clear()

    def close(self) -> None:
        self.stop_workers()

        async def stop_server(_host: DurableRunHost) -> None:
            from ditto_tui.runs.temporal import server

            server.stop()

        self.host(stop_server)


async def listed(
    host: DurableRunHost, count: int = 1, seconds: float = 90, run_id: str | None = None
) -> list[PendingRequest]:
    """The host's waiting requests (of ``run_id``, else of every run) once ``count`` wait."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending = [p for p in await host.pending() if run_id is None or p.run_id == run_id]
        if len(pending) >= count:
            return pending
        await asyncio.sleep(0.05)
    raise AssertionError("no request waited")
