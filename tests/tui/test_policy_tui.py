"""Grants and modes as a person uses them in the app: a grant of K uses, a project grant that outlives
the app, a grant applied to the queue, the mode key and the status bar, and a desktop notification."""

from __future__ import annotations

import functools
from pathlib import Path

from textual.widget import Widget

from ditto_tui.program import load_program
from ditto_tui.runtime import ApprovalResolved, ModeChanged
from ditto_tui.supervise import read_journal
from ditto_tui.supervise.journal import list_runs
from ditto_tui.supervise.modes import MODE_DENIED
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.notify import Notifier
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.grants import GrantsModal
from tests.tui.run_fixtures import (
    ROOT,
    SIZE,
    app_for,
    approval_view,
    approve_always,
    config,
    decisions,
    keys_armed,
    outputs,
    run_screen,
    screen_text,
    wait_until,
    workspace,
)

THREE_WRITES = "tests/data/graphs/three_writes.py"


def _app(root: Path, graph_file: str, *, mode: str = "ask") -> DittoApp:
    settings = config(root)
    program = load_program(ROOT / graph_file, settings, root)
    return DittoApp(RunSpec(config=settings, workspace=root, program=program, mode=mode))  # type: ignore[arg-type]


async def test_a_grant_of_one_use_approves_the_next_call_and_the_one_after_asks(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, THREE_WRITES)
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await approve_always(pilot, scope="tool", lifetime="uses", count=1)
        view = await approval_view(pilot)  # the third call: the grant's one use went to the second
        assert view.request.call.arguments["path"] == "third.md"
        await pilot.press("a")
        result = await outputs(pilot)
        assert [result[n].status for n in ("first", "second", "third")] == ["success"] * 3
        assert app.bridge.grant_states() == []  # used up
        granted = [e for e in run_screen(app).model.entries if e.kind == "approval" and e.status == "granted"]
        assert len(granted) == 1 and granted[0].summary.startswith("grant g-")
    lines = [entry.event for entry in read_journal(list_runs(root)[-1].path).entries]
    by = [(e.decision, e.decided_by, e.via) for e in lines if isinstance(e, ApprovalResolved)]
    assert by == [  # the person answered in the terminal (a grant's own decision names no place)
        ("approve_always", "human", "terminal"),
        ("approve_always", "grant", None),
        ("approve", "human", "terminal"),
    ]


async def test_a_project_grant_outlives_the_app_and_shows_in_the_grants_panel(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    first = app_for(root, "tests/data/graphs/two_writes.py")
    async with first.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await approve_always(pilot, scope="tool", lifetime="project")
        await outputs(pilot)
    (root / "first.md").unlink()
    (root / "second.md").unlink()
    again = app_for(root, "tests/data/graphs/two_writes.py")
    async with again.run_test(size=SIZE) as pilot:
        result = await outputs(pilot)  # no approval view: the project grant approves both
        assert [result[n].status for n in ("first", "second")] == ["success", "success"]
        assert again.desk.open is None
        await keys_armed(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(again.screen, GrantsModal))
        assert "this project" in screen_text(again) and "write_text: every call" in screen_text(again)


async def test_a_new_grant_is_offered_to_the_pending_requests_it_covers(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/parallel_writes.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await wait_until(pilot, lambda: len(app.bridge.pending()) == 2)
        await approve_always(pilot, scope="tool", lifetime="run")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        confirm = app.screen
        assert isinstance(confirm, ConfirmModal) and "also covers 1 pending request:" in confirm.question
        assert "right.md" in confirm.question
        await keys_armed(pilot)  # keys pressed just after the approval view closed are held back (U-09)
        await pilot.press("y")
        result = await outputs(pilot)
        assert [result[n].status for n in ("left", "right")] == ["success", "success"]
        assert (root / "left.md").exists() and (root / "right.md").exists()
        reasons = [event.reason or "" for event in decisions(app)]
        assert any(reason.endswith("applied to the queue") for reason in reasons)


async def test_read_only_mode_is_shown_and_denies_a_write_without_asking(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = _app(root, "graphs/write_note.py", mode="read-only")
    async with app.run_test(size=SIZE) as pilot:
        result = await outputs(pilot)
        assert result["write"].error.code == MODE_DENIED and app.desk.open is None
        status = run_screen(app).query_one("#status")
        assert "read-only mode (M)" in str(status.render())
        await keys_armed(pilot)
        # The run has finished, so no tick redraws the status bar: it follows each change at once.
        for mode in ("auto-edit", "plan"):
            await pilot.press("M")
            await wait_until(pilot, functools.partial(_shows, status, f"{mode} mode (M)"))
        await pilot.press("M")
        await wait_until(pilot, lambda: "mode (M)" not in str(status.render()))
        assert app.session_mode == "ask"
    header = read_journal(list_runs(root)[-1].path).header
    assert header["mode"] == "read-only"


def _shows(widget: Widget, text: str) -> bool:
    return text in str(widget.render())


async def test_at_80_columns_the_status_bar_keeps_the_mode_and_the_pending_approval(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/write_note.py")
    async with app.run_test(size=(80, 24)) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")  # later: the write waits, and the status bar counts it
        await keys_armed(pilot)
        await pilot.press("M")  # ask → read-only, for the next call
        status = run_screen(app).query_one("#status")
        await wait_until(pilot, lambda: "read-only (M)" in str(status.render()))
        line = status.render()
        assert "1 approval pending (p)" in str(line) and "⏸1 " in str(line)
        assert len(str(line)) <= status.content_region.width
        await pilot.resize_terminal(160, 30)
        await wait_until(pilot, lambda: "read-only mode (M)" in str(status.render()))
        assert "⏸ 1 awaiting" in str(status.render())


async def test_the_mode_key_during_a_decision_is_journaled_and_applies_to_the_next_call(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/two_writes.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")  # later: the first call waits while the person changes the mode
        await keys_armed(pilot)
        await pilot.press("M")  # ask → read-only
        await wait_until(pilot, lambda: app.session_mode == "read-only")
        await pilot.press("p")
        await approval_view(pilot)
        await pilot.press("a")
        result = await outputs(pilot)
        assert result["first"].status == "success"
        assert result["second"].error.code == MODE_DENIED
    lines = [entry.event for entry in read_journal(list_runs(root)[-1].path).entries]
    changes = [(event.previous, event.mode) for event in lines if isinstance(event, ModeChanged)]
    assert changes == [("ask", "read-only")]


async def test_a_request_while_the_terminal_is_unfocused_sends_one_notification(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    written: list[str] = []
    app.notifier = Notifier(written.append, lambda: False, method="osc9", env={})
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        notices = [text for text in written if "\x1b]9;" in text]
        assert len(notices) == 1 and "approve write_text" in notices[0]
        assert any(text.startswith("\x1b]2;ditto-tui · 1 waiting") for text in written)
        await pilot.press("d", *"no", "enter")
        await outputs(pilot)


async def test_the_grant_chooser_fits_80x24_with_every_choice_readable(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    async with app.run_test(size=(80, 24)) as pilot:
        await approval_view(pilot)
        await pilot.press("s")
        await wait_until(pilot, lambda: "Approve always: which calls of write_text?" in screen_text(app))
        await pilot.pause()
        shown = screen_text(app)
        for label in ("exactly this call", "calls like it", "every call of the tool"):
            assert label in shown
        for label in ("this run", "this session", "N minutes", "K uses", "this project"):
            assert label in shown
        assert "it would have approved 1 of 2 calls" in shown  # this run's read and this write
        assert '"path": ".ditto/notes/hello.md"' in shown  # the arguments stay in view
        await pilot.press("escape")
        await pilot.press("d", *"no", "enter")
        await outputs(pilot)


async def test_the_timeline_says_the_mode_decided_a_call_nobody_was_asked_about(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = _app(root, "graphs/write_note.py", mode="auto-edit")
    async with app.run_test(size=SIZE) as pilot:
        result = await outputs(pilot)
        assert result["write"].status == "success" and app.desk.open is None
        rows = [e for e in run_screen(app).model.entries if e.kind == "approval"]
        assert [(row.title, row.status) for row in rows] == [("write_text", "approved (mode)")]
        assert rows[0].summary.startswith("auto-edit mode:")
