"""One durable run, three doors: its first write approved from a decision link (a phone), its second in a
served browser tab, its third in the app in a real terminal. All three land in the run's journal as a
person's decisions with where each was made, and ``audit`` shows them.

Every part is its own process, as a user runs them: the local run server, a detached run of the
three-writes graph and its worker, ``ditto-tui serve`` (printing each request's link), Debian's Chromium
on the served address, and ``ditto-tui attach RUN_ID`` in tmux.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ditto_tui.runtime.client import short_run_id
from ditto_tui.runtime.events import ApprovalResolved
from ditto_tui.supervise import read_journal
from tests.journal.journal_fixtures import journals
from tests.runs.workspace import Workspace
from tests.serve.test_decision_links import next_link, post
from tests.serve.test_serve_browser import ARTIFACTS, Screen, tab, until
from tests.serve.test_serve_door import Served, start_serve, stop_serve
from tests.tui.test_tmux_e2e import Terminal, _poll

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "tests" / "data" / "graphs" / "three_writes.py"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))
    given = Workspace(root, tmp_path / "home")
    shutil.copy(GRAPH, root / "graphs" / "three_writes.py")
    yield given
    given.close()


def waiting_call(workspace: Workspace, run_id: str, call_id: str) -> dict[str, object]:
    """The run's one waiting request, once it is ``call_id``'s approval."""
    for _ in range(300):
        (waiting,) = workspace.waiting(run_id=run_id)
        if waiting["call_id"] == call_id:
            return waiting
    raise AssertionError(f"{call_id} never waited")


async def approve_in_a_tab(served: Served, workspace: Workspace, run_id: str, request_id: str) -> None:
    """Open the served address in Chromium: the tab's app lists the run server's waiting request in its
    approval view (nothing started in the tab); approve it with the keyboard."""
    screen = Screen()
    async with tab(served.url, screen) as page:
        await until(lambda: "Approve write_text" in screen.text(), "the tab's approval view")
        assert "second.md" in screen.text()
        assert f"of run {short_run_id(run_id)}" in screen.text()  # a run the tab did not start
        await page.screenshot(path=ARTIFACTS / "doors-2-browser.png")
        await page.locator(".xterm-helper-textarea").focus()

        async def still_waiting() -> bool:
            listed = await asyncio.to_thread(workspace.waiting, 0)
            return any(p["request_id"] == request_id for p in listed)

        pending = True

        async def press() -> None:
            nonlocal pending
            await page.keyboard.press("a")
            pending = await still_waiting()

        await until(lambda: not pending, "the tab's approval to be taken", every=press)


def test_one_runs_approvals_from_a_link_a_browser_and_a_terminal_land_in_its_journal_with_their_via(
    workspace: Workspace, tmp_path: Path
) -> None:
    root = workspace.root
    served = start_serve(root, workspace.home)
    terminal = Terminal()
    try:
        assert served.process.stdout is not None
        served.process.stdout.readline()  # "Ctrl+C here, or ..."
        run_id = workspace.cli("run", "graphs/three_writes.py", "--detach").stdout.strip()
        workspace.worker(graph="graphs/three_writes.py")

        first = waiting_call(workspace, run_id, "w-1")  # from the phone: the link serve printed
        summary, path = next_link(served)
        assert summary == first["summary"]
        approved = post(served, path, {"decision": "approve"})
        assert approved.status_code == 200 and "Approved" in approved.text

        second = waiting_call(workspace, run_id, "w-2")  # in a browser tab
        assert (root / "first.md").read_text() == "one\n" and not (root / "second.md").exists()
        asyncio.run(approve_in_a_tab(served, workspace, run_id, str(second["request_id"])))

        third = waiting_call(workspace, run_id, "w-3")  # in the app, in a terminal
        assert (root / "second.md").read_text() == "two\n" and not (root / "third.md").exists()
        app = ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "ditto_tui", "attach", run_id]
        terminal.start(app, root)
        _poll(lambda: "a Approve once" in terminal.screen(), "the terminal's approval view", timeout=60)
        assert "third.md" in terminal.screen() and "of run" not in terminal.screen()  # the run it shows
        _poll(
            lambda: all(p["request_id"] != third["request_id"] for p in workspace.waiting(count=0)),
            "the terminal's approval to be taken",
            every=lambda: terminal.press("a"),
        )
        assert workspace.run_status(run_id) == "succeeded"
        assert (root / "third.md").read_text() == "three\n"
    finally:
        terminal.close()
        stop_serve(served)

    parts = [path for path in journals(root) if path.name.startswith(run_id)]
    resolved = {
        e.call_id: e for part in parts for e in read_journal(part).events if isinstance(e, ApprovalResolved)
    }
    assert {call: (e.decision, e.decided_by, e.via) for call, e in resolved.items()} == {
        "w-1": ("approve", "human", "link"),
        "w-2": ("approve", "human", "browser"),
        "w-3": ("approve", "human", "terminal"),
    }
    assert {e.request_id for e in resolved.values()} == {
        first["request_id"],
        second["request_id"],
        third["request_id"],
    }
    audit = workspace.cli("audit", run_id).stdout
    for via in ("via link", "via browser", "via terminal"):
        assert via in audit, audit
