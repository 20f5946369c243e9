"""Telling whether a recorded process still runs (journal writers, the local run server, serve)."""

from __future__ import annotations

import subprocess
import sys
import time

from ditto_tui.processes import end_process, process_alive, process_started


def test_a_process_that_ended_is_not_alive_before_its_parent_collects_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_started(child.pid)
    deadline = time.monotonic() + 10
    while process_alive(child.pid, started) is not False and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_alive(child.pid, started) is False  # ended, though not yet waited for (a zombie)
    assert child.poll() == 0


def test_end_process_waits_for_the_end_and_not_longer() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_started(child.pid)
        assert process_alive(child.pid, started) is True
        begin = time.monotonic()
        end_process(child.pid, started, 10.0)
        assert time.monotonic() - begin < 5.0  # it ended at once: no wait for the whole 10 s
        assert process_alive(child.pid, started) is False
    finally:
        child.kill()
        child.wait()
    assert process_alive(child.pid, "not its start") is False
