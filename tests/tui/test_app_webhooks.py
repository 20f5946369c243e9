"""The app's own (embedded) runs notify ``notify.webhook``: a call waiting, a timeout, the run's end.

A real loopback receiver (``tests/serve/receiver.py``) gets the POSTs while the app runs the write-note
graph under Pilot.
"""

from __future__ import annotations

import json
from pathlib import Path

from ditto_tui.config import NotifyConfig
from tests.serve.receiver import receiver
from tests.tui.run_fixtures import SIZE, app_for, approval_view, config, outputs, wait_until, workspace

WRITE_NOTE = "graphs/write_note.py"


async def test_the_app_notifies_a_waiting_call_and_the_runs_end_without_its_arguments(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    with receiver() as hook:
        settings = config(root)
        settings = settings.model_copy(update={"notify": NotifyConfig(webhook=hook.url)})
        app = app_for(root, WRITE_NOTE, settings)
        async with app.run_test(size=SIZE) as pilot:
            await approval_view(pilot)
            await wait_until(pilot, lambda: len(hook.posts) >= 1)
            (pending,) = [json.loads(post.body) for post in hook.posts]
            assert pending["event"] == "pending" and pending["summary"] == "approve write_text (write-1)"
            assert "arguments" not in pending and "link" not in pending  # no serve: no decision link
            await pilot.press("a")
            await outputs(pilot)
            await wait_until(pilot, lambda: len(hook.posts) >= 2)
        finished = json.loads(hook.posts[1].body)
        assert finished["event"] == "run_finished" and finished["status"] == "succeeded"
        assert finished["run_id"] == pending["run_id"] and len(hook.posts) == 2


async def test_a_timed_out_call_is_notified(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    with receiver() as hook:
        settings = config(root, timeout_seconds=0.5)
        settings = settings.model_copy(update={"notify": NotifyConfig(webhook=hook.url, on=("timed_out",))})
        app = app_for(root, WRITE_NOTE, settings)
        async with app.run_test(size=SIZE) as pilot:
            await outputs(pilot)
            await wait_until(pilot, lambda: len(hook.posts) >= 1)
        (timed_out,) = [json.loads(post.body) for post in hook.posts]
        assert (
            timed_out["event"] == "timed_out"
            and timed_out["summary"] == "timed out: approve write_text (write-1)"
        )
