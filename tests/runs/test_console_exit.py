"""How the ``ditto-tui`` program leaves once a command has run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('shutdown ran'))\n"
    "if sys.argv[1] == 'temporal': import temporalio.bridge.temporal_sdk_bridge\n"
    "from ditto_tui.__main__ import console\n"
    "console(['runs', '--json', '--workspace', sys.argv[2]])\n"
)


def test_a_command_that_loaded_the_temporal_client_leaves_without_the_interpreter_shutdown(
    tmp_path: Path,
) -> None:
    """The Temporal client's native threads can crash an interpreter that shuts down around them (a
    finished ``inbox --json`` died of SIGSEGV): such a command flushes its output and leaves at once,
    with its code, and the shutdown's hooks never run. A command that did not load it exits as usual."""
    env = {**os.environ, "DITTO_TUI_HOME": str(tmp_path / "home")}
    for loaded, shutdown in (("temporal", False), ("none", True)):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, loaded, str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert ("shutdown ran" in done.stdout) is shutdown
