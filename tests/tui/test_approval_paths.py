"""Every approval path through the real runtime: the decision taken in the view, the result in the run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from ditto_tui.tui import keys
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.grants import GrantsModal
from ditto_tui.tui.widgets.schema_form import SchemaForm
from tests.tui.run_fixtures import (
    SIZE,
    app_for,
    approval_view,
    approve_always,
    config,
    decisions,
    keys_armed,
    outputs,
    run_screen,
    run_worker,
    screen_text,
    wait_until,
    workspace,
)

NOTE = ".ditto/notes/hello.md"
WRITE_NOTE = "graphs/write_note.py"


async def test_approve_once_writes_the_file_and_the_run_finishes(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        assert view.request.tool == "write_text" and view.request.node_id == "write"
        await pilot.press("a")
        result = await outputs(pilot)
        assert result["write"].status == "success"
        assert result["output"].status == "accepted"
        assert (root / NOTE).read_text() == "# Hello\n\nWritten by the write-note graph.\n"
        await wait_until(pilot, lambda: app.bridge.pending() == [])
        assert app.screen_stack[-1] is not view


async def test_approve_always_covers_the_next_call_and_the_grant_can_be_revoked(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/two_writes.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await approve_always(pilot)
        result = await outputs(pilot)
        assert [result[n].status for n in ("first", "second")] == ["success", "success"]
        assert (root / "first.md").read_text() == "one\n" and (root / "second.md").read_text() == "two\n"
        assert app.bridge.grants() == ["write_text"]
        [state] = app.bridge.grant_states()
        assert (state.grant.scope, state.grant.lifetime) == ("tool", "session")
        await keys_armed(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(app.screen, GrantsModal))
        shown = screen_text(app)
        assert state.grant.id in shown and "write_text: every call" in shown and "this session" in shown
        await pilot.press("r")
        await wait_until(pilot, lambda: app.bridge.grants() == [])
        assert "No grants." in screen_text(app)
        await pilot.press("escape")


async def test_deny_with_a_typed_reason_returns_it_to_the_graph(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        await pilot.press("d")
        assert isinstance(view.focused, Input)
        await pilot.press(*"not here", "enter")
        result = await outputs(pilot)
        write = result["write"]
        assert (write.status, write.error.code, write.error.message) == (
            "failed",
            "APPROVAL_DENIED",
            "not here",
        )
        assert not (root / NOTE).exists()
        assert result["output"].status == "accepted"  # the graph goes on with the denial as data


async def test_edited_arguments_are_checked_by_the_tool_then_approved_as_edited(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        await pilot.press("e")
        editor = await _json_editor(pilot, view)
        editor.text = json.dumps({"path": "", "text": "x"})
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert view.mode == "edit" and "path must not be empty" in screen_text(app)
        # A path the sandbox would refuse is refused by the check, before it can be approved.
        editor.text = json.dumps({"path": "../evil.md", "text": "x"})
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert view.mode == "edit" and "path contains a '..' component" in screen_text(app)
        editor.text = json.dumps({"path": "edited.md", "text": "edited text\n"})
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "edited")
        assert "Edited arguments (checked; approval binds to sha256" in screen_text(app)
        await pilot.press("a")
        result = await outputs(pilot)
        assert result["write"].status == "success"
        assert (root / "edited.md").read_text() == "edited text\n" and not (root / NOTE).exists()
        (decision,) = decisions(app)
        assert decision.decision == "approve" and decision.edited


async def test_an_unanswered_request_times_out_and_the_view_closes(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE, config(root, timeout_seconds=4))  # long enough for a busy machine
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot, armed=False)
        assert re.search(r"Times out in [1-4] s: then the call fails with APPROVAL_TIMEOUT", screen_text(app))
        result = await outputs(pilot)
        assert (result["write"].status, result["write"].error.code) == ("timeout", "APPROVAL_TIMEOUT")
        await wait_until(pilot, lambda: app.desk.open is None and app.screen is not view)
        assert not (root / NOTE).exists()


async def test_two_pending_requests_queue_and_are_answered_in_turn(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/parallel_writes.py")
    async with app.run_test(size=SIZE) as pilot:
        first = await approval_view(pilot)
        await wait_until(pilot, lambda: len(app.bridge.pending()) == 2)
        await pilot.pause()
        assert "Queue: 2 pending" in screen_text(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: app.desk.open is not None and app.desk.open is not first)
        second = await approval_view(pilot)
        assert second.request.call.id != first.request.call.id
        await pilot.press("d", *"one", "enter")
        result = await outputs(pilot)
        approved, denied = first.request.node_id, second.request.node_id
        assert approved is not None and denied is not None
        assert result[approved].status == "success" and result[denied].error.code == "APPROVAL_DENIED"
        assert (root / f"{approved}.md").exists() and not (root / f"{denied}.md").exists()


async def test_cancelling_the_call_in_the_view_ends_it_cancelled_unexecuted(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("c")
        result = await outputs(pilot)
        assert (result["write"].status, result["write"].error.code) == ("cancelled", "APPROVAL_CANCELLED")
        assert not (root / NOTE).exists()
        assert [d.decision for d in decisions(app)] == ["cancelled"]


async def test_cancelling_the_run_while_an_approval_waits_settles_it_cancelled(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")  # later: the request stays pending, the Run screen is back
        await wait_until(pilot, lambda: app.desk.open is None)
        assert len(app.bridge.pending()) == 1
        await keys_armed(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert "Cancel the whole run?" in screen_text(app)
        await pilot.press("y")
        worker = run_worker(app)
        await wait_until(pilot, lambda: worker.is_finished)
        assert worker.is_cancelled
        await wait_until(pilot, lambda: [d.decision for d in decisions(app)] == ["cancelled"])
        assert app.bridge.pending() == [] and not (root / NOTE).exists()
        assert run_screen(app).model.phase == "cancelled"


async def test_a_request_set_aside_comes_back_with_p(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.desk.open is None)
        assert "1 approval pending (p)" in screen_text(app)
        await keys_armed(pilot)
        await pilot.press("p")
        await approval_view(pilot)
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"


async def test_r10_enter_and_early_keys_never_approve_a_new_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keys, "ARM_SECONDS", 60.0)  # keys typed ahead all land before arming
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot, armed=False)
        await pilot.press("enter", "a", "s", "d", "e", "c", "enter")
        assert not view.armed and view.mode == "review"
        assert app.bridge.pending() and app.screen is view and not (root / NOTE).exists()
        view.arm()
        await pilot.press("enter", "space")
        await pilot.pause()
        assert app.bridge.pending() and app.screen is view
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"


async def test_r15_long_multiline_and_hidden_character_arguments_are_shown_in_full(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "long.txt").write_text("before\n", encoding="utf-8")
    app = app_for(root, "tests/data/graphs/long_write.py")
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        shown = str(view.arguments_view.visual)
        assert "line one⏎" in shown and "⟨U+202E⟩⟨U+200B⟩" in shown
        assert "x" * 10_000 + "END" in shown  # nothing cut: the view scrolls
        diff = view.diff_text
        assert "-before" in diff and "+line one" in diff
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"
        assert (root / "long.txt").read_text(encoding="utf-8").endswith("x" * 10_000 + "END")


async def test_cancelling_one_running_call_leaves_the_rest_of_the_run(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/slow_call.py")
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        model = screen.model
        await wait_until(pilot, lambda: "read" in model.nodes and model.nodes["read"].state == "succeeded")
        entry = screen.model.nodes["wait"].entry
        assert entry is not None and entry.status == "running"
        screen.timeline.focus()
        screen.timeline.select(entry.index)
        await pilot.press("x")
        result = await outputs(pilot)
        assert result["wait"].status == "cancelled" and result["read"].status == "success"
        assert screen.model.phase == "succeeded"


async def _json_editor(pilot: Pilot[Any], view: ApprovalModal) -> TextArea:
    """The edit form switched to its JSON editor (the form's own Form/JSON action)."""
    await wait_until(pilot, lambda: bool(view.query(SchemaForm)))
    form = view.query_one(SchemaForm)
    if not form.json_mode:
        await form.action_toggle_json()
        await wait_until(pilot, lambda: form.json_mode and bool(form.query("#schema-json")))
    return form.query_one("#schema-json", TextArea)


async def test_t08_t02_t09_hostile_arguments_open_the_view_and_show_literally(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/hostile_write.py")
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        text = screen_text(app)
        for literal in (
            '"[red]note.md"',
            "[/b] [bold red]APPROVED[/]",
            "⟨ESC⟩[31mred",
            "⟨ESC⟩]52;c;",
            "⟨U+202E⟩",
        ):
            assert literal in text, literal
        assert "\x1b" not in text and "\u202e" not in text
        raw = view.request.call.arguments["text"]
        assert isinstance(raw, str) and raw.startswith("[/b] [bold red]")  # raw bytes kept for the digest
        await pilot.press("a")
        assert (await outputs(pilot))["write"].status == "success"
        assert "\x1b]52;c;" in (root / "[red]note.md").read_text()  # approved exactly as shown


async def test_q_in_the_approval_view_asks_to_quit_and_no_comes_back_to_the_request(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        await pilot.press("q")  # a modal cuts the app's bindings off: the view has its own q
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "1 decision is pending" in screen_text(app)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is view)
        assert [request.request_id for request in app.bridge.pending()] == [view.request.request_id]
        assert decisions(app) == []
    assert not (root / NOTE).exists()
