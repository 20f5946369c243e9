"""A run cut short by its process dying (SIGKILL, a crash) is ``interrupted``, never shown as running,
with the request it was waiting on; a run whose process is alive is ``running``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.supervise.journal import list_runs, unfinished_outcome

ROOT = Path(__file__).resolve().parents[2]

WAITING = """\
import asyncio, sys
from pathlib import Path
from ditto_tui.program import load_program
from ditto_tui.session import open_runtime
from ditto_tui.supervise import QueueApprover
from ditto_tui.workspace import DEFAULT_GRAPH, resolve_config

async def main() -> None:
    workspace = Path(sys.argv[1])
    config = resolve_config(None, workspace).config
    program = load_program(DEFAULT_GRAPH, config, workspace)
    approver = QueueApprover()
    async with open_runtime(program, config, workspace, approver) as session:
        session.journal.next_input(program.initial)
        run = asyncio.ensure_future(session.runtime.loop(program.plan, program.initial))
        while not approver.pending():
            await asyncio.sleep(0.02)
        print("waiting", flush=True)
        await run

asyncio.run(main())
"""


@contextlib.contextmanager
def waiting_run(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose agent run, in another process, waits on its first approval; that process is
    killed (SIGKILL) when the block ends."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# A project\n", encoding="utf-8")
    script = tmp_path / "waiting.py"
    script.write_text(WAITING, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(script), str(workspace)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as process:
        try:
            assert process.stdout is not None and process.stdout.readline().strip() == "waiting"
            yield workspace
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)


@pytest.mark.timeout(120)
def test_a_run_whose_process_was_killed_is_interrupted_with_the_request_it_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with waiting_run(tmp_path) as workspace:
        (live,) = list_runs(workspace)
        assert live.outcome == "running"  # its writer is alive
        assert live.waiting_on == "approval of write_text (write-1)"
    (dead,) = list_runs(workspace)
    assert dead.outcome == "interrupted" and dead.waiting_on == "approval of write_text (write-1)"
    capsys.readouterr()
    assert main(["--workspace", str(workspace), "runs"]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out and "running" not in out
    assert f"{dead.run_id} was interrupted while waiting for approval of write_text (write-1)" in out
    capsys.readouterr()
    assert main(["--workspace", str(workspace), "runs", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["status"] == "interrupted"


def test_a_journal_that_names_no_writer_stays_unfinished() -> None:
    assert unfinished_outcome({"plan_kind": "graph"}) == "unfinished"  # an older journal
    assert unfinished_outcome({"plan_kind": "invoke", "writer": {"pid": os.getpid()}}) == "recorded"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    pid = int(gone.stdout)
    time.sleep(0.05)
    assert unfinished_outcome({"plan_kind": "graph", "writer": {"pid": pid}}) == "interrupted"
    reused = {"pid": os.getpid(), "started": "1"}  # this process's id, but not its start: another's
    assert unfinished_outcome({"plan_kind": "graph", "writer": reused}) == "interrupted"
    assert unfinished_outcome({"plan_kind": "graph", "writer": {"pid": os.getpid()}}) == "running"
