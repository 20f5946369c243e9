"""Breakpoints and step mode in the TUI: `b` on a node, `S` for every node, and the breakpoint view.

Each test runs a real graph in the app: a first run ends, the person sets a breakpoint (or step mode)
for the rest of the session, and the next run pauses before the node with the view open. Its answers
are journaled and a replay of the journal shows them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import TextArea

from ditto_tui.infer import InferMessage
from ditto_tui.runtime import (
    BreakpointRequest,
    BreakpointRequested,
    BreakpointResolved,
    NodeInfo,
    NodeStarted,
    RunStarted,
)
from ditto_tui.runtime.events import FlaggedSpan, ModeChanged, ReviewRequested, ReviewResolved
from ditto_tui.supervise import read_journal
from ditto_tui.supervise.journal import list_runs
from ditto_tui.tui import DittoApp
from ditto_tui.tui.replay import ReplayApp
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.breakpoint import BreakpointModal
from ditto_tui.tui.screens.replay import ReplayScreen
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.widgets.dag import BREAKPOINT_MARKER
from ditto_tui.tui.widgets.detail import entry_detail
from tests.tui.run_fixtures import SIZE, app_for, keys_armed, outputs, run_screen, wait_until, workspace
from tests.tui.test_agent_loop_tui import SIZE as AGENT_SIZE
from tests.tui.test_agent_loop_tui import agent_app

WRITE_NOTE = "graphs/write_note.py"
LOOP = "graphs/read_and_deliver.py"
NOTE = ".ditto/notes/hello.md"


# -- helpers -----------------------------------------------------------------------------------------------


async def approve_write(pilot: Pilot[Any]) -> None:
    """Approve the note's write once (write_note asks for it) when its approval view opens."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalModal))
    view = app.screen
    assert isinstance(view, ApprovalModal)
    await wait_until(pilot, lambda: view.armed)
    await pilot.press("a")
    await keys_armed(pilot)


async def first_run(pilot: Pilot[Any], graph: str) -> RunScreen:
    """Let the first run (which no breakpoint stops) end; the Run screen, its keys armed again."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: isinstance(app.screen_stack[0], RunScreen) and run_screen(app).runner)
    if graph == WRITE_NOTE:
        await approve_write(pilot)
    screen = run_screen(app)
    await wait_until(pilot, lambda: screen.runner is not None and screen.runner.is_finished)
    await keys_armed(pilot)
    return screen


async def break_before(pilot: Pilot[Any], screen: RunScreen, node_id: str) -> None:
    """Select ``node_id`` in the graph and press ``b``."""
    screen.dag.focus()
    screen.dag.select(node_id)
    await pilot.press("b")
    await wait_until(
        pilot, lambda: screen.bridge.breakpoints is not None and node_id in screen.bridge.breakpoints
    )


async def paused(pilot: Pilot[Any], node_id: str) -> BreakpointModal:
    """The breakpoint view once it is open on ``node_id``, its keys armed."""
    app = pilot.app
    await wait_until(
        pilot, lambda: isinstance(app.screen, BreakpointModal) and app.screen.request.node_id == node_id
    )
    view = app.screen
    assert isinstance(view, BreakpointModal)
    await wait_until(pilot, lambda: view.armed)
    return view


async def answer(pilot: Pilot[Any], *keys: str) -> None:
    """Press ``keys`` in the open breakpoint view, then wait until it closed and keys work again."""
    app = pilot.app
    view = app.screen
    await pilot.press(*keys)
    await wait_until(pilot, lambda: app.screen is not view)
    await keys_armed(pilot)


async def write_in_editor(pilot: Pilot[Any], view: BreakpointModal, text: str) -> None:
    editor = view.query_one("#editor", TextArea)
    await wait_until(pilot, lambda: editor.display and editor.has_focus)
    editor.text = text
    await pilot.pause()


def resolved(app: DittoApp) -> list[BreakpointResolved]:
    """Every answer at a breakpoint the Run screen saw, in order."""
    entries = run_screen(app).model.entries
    return [event for entry in entries for event in entry.events if isinstance(event, BreakpointResolved)]


def requested(app: DittoApp) -> list[BreakpointRequested]:
    entries = run_screen(app).model.entries
    return [event for entry in entries for event in entry.events if isinstance(event, BreakpointRequested)]


def phase(screen: RunScreen) -> str:
    """The run's phase now (a function, so that a test reads it afresh after waiting)."""
    return screen.model.phase


def state(model: RunModel, node_id: str) -> str:
    return model.nodes[node_id].state


def last_journal(root: Path) -> Path:
    return list_runs(root)[-1].path


# -- b: a breakpoint on one node -----------------------------------------------------------------------------


async def test_b_marks_the_node_and_continue_runs_it_while_the_other_branch_goes_on(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        screen.dag.focus()
        await pilot.press("right")  # the first press selects the first node of the first layer
        while screen.dag.selected != "write":
            await pilot.press("right")
        await pilot.press("b")
        await wait_until(pilot, lambda: screen.dag.marked(screen.model.nodes["write"]))
        assert not screen.dag.marked(screen.model.nodes["read"])
        box = screen.dag.node_boxes["write"]
        assert BREAKPOINT_MARKER in screen.dag.render_line(box.y + 1 - screen.dag.scroll_offset.y).text

        await pilot.press("n")  # a new run
        view = await paused(pilot, "write")
        # The other branch keeps running while the write waits before it starts.
        await wait_until(pilot, lambda: screen.model.nodes["read"].state == "succeeded")
        write = screen.model.nodes["write"]
        assert write.paused and write.state == "awaiting"
        detail_row = box.y + 2 - screen.dag.scroll_offset.y
        assert "paused" in screen.dag.render_line(detail_row).text
        assert view.request.input["call"]["name"] == "write_text"
        await answer(pilot, "n")
        await approve_write(pilot)
        result = await outputs(pilot)
        assert result["write"].status == "success"
        assert [event.action for event in resolved(app)] == ["continue"]
        assert not write.paused

        # b again removes it: the next run does not pause.
        screen.dag.select("write")
        await pilot.press("b")
        await wait_until(pilot, lambda: not screen.dag.marked(write))
        await pilot.press("r")
        await approve_write(pilot)
        await outputs(pilot)
        assert requested(app) == []


async def test_b_with_nothing_selected_says_what_to_do(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        screen.dag.select(None)
        await pilot.press("b")
        await wait_until(pilot, lambda: any("Select a node" in str(n.message) for n in app._notifications))
        assert screen.bridge.breakpoints is not None and len(screen.bridge.breakpoints) == 0


async def test_a_bad_edit_is_refused_and_a_good_one_runs_with_the_edited_input(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "write")
        await pilot.press("n")
        view = await paused(pilot, "write")
        await pilot.press("e")
        await write_in_editor(pilot, view, '{"call": {"id": "write-1", ')
        await pilot.press("ctrl+s")
        assert view.mode == "edit"
        assert "not valid JSON" in view.problem.render().plain  # type: ignore[union-attr]
        await write_in_editor(pilot, view, "NaN")
        await pilot.press("ctrl+s")
        assert view.mode == "edit" and "JSON data" in str(view.problem.render())

        edited = (
            '{"call": {"id": "write-1", "name": "write_text",'
            ' "arguments": {"path": ".ditto/notes/hello.md", "text": "edited at the breakpoint\\n"}}}'
        )
        await write_in_editor(pilot, view, edited)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "edited")
        assert "edited at the breakpoint" in view.value_view.render().plain  # type: ignore[union-attr]
        await answer(pilot, "n")
        await approve_write(pilot)
        await outputs(pilot)
        assert (root / NOTE).read_text(encoding="utf-8") == "edited at the breakpoint\n"
        [decision] = resolved(app)
        assert decision.action == "edit"
        assert decision.input["call"]["arguments"]["text"] == "edited at the breakpoint\n"
        # The detail of the breakpoint's row shows the edit as a diff.
        entry = next(entry for entry in screen.model.entries if entry.kind == "breakpoint")
        screen.view.reveal(entry)
        await pilot.pause()
        assert "The input was edited" in screen.detail.text.plain
        added = [line for line in screen.detail.text.plain.splitlines() if line.startswith("+ ")]
        assert any('"text": "edited at the breakpoint\\n"' in line for line in added)


async def test_skip_gives_the_output_the_person_wrote(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "output")
        await pilot.press("n")
        await approve_write(pilot)
        view = await paused(pilot, "output")
        await pilot.press("k")
        await write_in_editor(pilot, view, "")
        await pilot.press("ctrl+s")
        assert view.mode == "skip" and "first" in str(view.problem.render())
        await write_in_editor(pilot, view, '{"skipped": "by the person"}')
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "skipping")
        await answer(pilot, "k")
        result = await outputs(pilot)
        assert result["output"] == {"skipped": "by the person"}
        [decision] = resolved(app)
        assert decision.action == "skip" and decision.output == {"skipped": "by the person"}
        entry = next(entry for entry in screen.model.entries if entry.kind == "breakpoint")
        assert entry.status == "skipped ✎"


async def test_abort_asks_why_and_ends_the_run(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        (root / NOTE).unlink()
        await break_before(pilot, screen, "write")
        await pilot.press("n")
        view = await paused(pilot, "write")
        await pilot.press("a")
        await wait_until(pilot, lambda: view.mode == "abort" and view.reason.has_focus)
        await pilot.press("escape")  # back: nothing decided yet
        await wait_until(pilot, lambda: view.mode == "review")
        await pilot.press("a")
        await wait_until(pilot, lambda: view.reason.has_focus)
        await pilot.press(*"wrong note", "enter")
        await wait_until(pilot, lambda: app.screen is not view)
        runner = screen.runner
        assert runner is not None
        await wait_until(pilot, lambda: runner.is_finished)
        assert runner.error is not None and "wrong note" in str(runner.error)
        assert screen.model.phase == "failed"
        assert screen.model.nodes["write"].state == "failed"
        assert not (root / NOTE).exists()
        [decision] = resolved(app)
        assert decision.action == "abort" and decision.reason == "wrong note"


async def test_later_leaves_the_node_paused_and_p_shows_it_again(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "write")
        await pilot.press("n")
        await paused(pilot, "write")
        await answer(pilot, "escape")
        assert isinstance(app.screen, RunScreen) and screen.model.nodes["write"].paused
        await wait_until(pilot, lambda: app.decisions_waiting == 1)
        await pilot.press("p")
        await paused(pilot, "write")
        await answer(pilot, "n")
        await approve_write(pilot)
        await outputs(pilot)


# -- step mode -----------------------------------------------------------------------------------------------


async def test_step_mode_pauses_before_every_node_and_n_goes_to_the_next(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        assert screen.check_action("step_on", ()) and not screen.check_action("step_off", ())
        await pilot.press("S")
        await wait_until(
            pilot, lambda: screen.bridge.breakpoints is not None and screen.bridge.breakpoints.step
        )
        await pilot.pause()
        assert "step mode" in screen.dag.render_line(0).text
        # While it is on, the footer offers to turn it off.
        assert screen.check_action("step_off", ()) and not screen.check_action("step_on", ())
        await pilot.press("r")
        seen: list[str] = []
        while len(seen) < 4:
            await wait_until(pilot, lambda: isinstance(app.screen, BreakpointModal | ApprovalModal))
            if isinstance(app.screen, ApprovalModal):
                await approve_write(pilot)
                continue
            modal = app.screen
            assert isinstance(modal, BreakpointModal)
            view = await paused(pilot, modal.request.node_id)
            assert view.request.pattern == "*"
            seen.append(view.request.node_id)
            await answer(pilot, "n")
        await outputs(pilot)
        assert sorted(seen) == ["observe", "output", "read", "write"]
        assert seen.index("write") < seen.index("observe") < seen.index("output")
        assert [entry.title for entry in screen.model.entries if entry.kind == "breakpoint"] == ["step"] * 4

        # Off again: the next run does not pause.
        await pilot.press("S")
        await wait_until(pilot, lambda: not screen.bridge.breakpoints.step)  # type: ignore[union-attr]
        await pilot.press("r")
        await approve_write(pilot)
        await outputs(pilot)
        assert requested(app) == []


# -- loops ---------------------------------------------------------------------------------------------------


async def test_a_breakpoint_in_a_loop_pauses_in_each_iteration(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, LOOP)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, LOOP)
        await break_before(pilot, screen, "read")
        await pilot.press("r")
        iterations = []
        for path in ("README.md", "ditto.yaml"):
            view = await paused(pilot, "read")
            assert view.request.iteration is not None and view.again_line.display
            assert view.request.input["call"]["arguments"]["path"] == path
            iterations.append(view.request.iteration)
            await answer(pilot, "n")
        await wait_until(pilot, lambda: screen.model.finished)
        assert screen.model.phase == "succeeded"
        assert len(set(iterations)) == 2
        assert [event.again for event in resolved(app)] == [True, True]


async def test_not_again_in_this_run_stops_the_loop_pausing(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, LOOP)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, LOOP)
        await break_before(pilot, screen, "read")
        await pilot.press("r")
        view = await paused(pilot, "read")
        await pilot.press("t")
        await wait_until(pilot, lambda: not view.again)
        assert "Not again in this run" in view.again_line.render().plain  # type: ignore[union-attr]
        await answer(pilot, "n")
        await wait_until(pilot, lambda: screen.model.finished)
        assert screen.model.phase == "succeeded"
        assert len(requested(app)) == 1
        [decision] = resolved(app)
        assert decision.action == "continue" and decision.again is False
        # The breakpoint still stands for the session: the next run pauses again.
        await pilot.press("r")
        await paused(pilot, "read")
        await answer(pilot, "a", *"enough", "enter")
        await wait_until(pilot, lambda: screen.model.finished)
        assert phase(screen) == "failed"


async def test_the_loop_toggle_is_only_offered_inside_a_loop(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "read")
        await pilot.press("n")
        view = await paused(pilot, "read")
        assert not view.again_line.display
        assert view.check_action("not_again", ()) is False
        await pilot.press("t")
        assert view.again
        await answer(pilot, "n")
        await approve_write(pilot)
        await outputs(pilot)


# -- the journal and the replay ------------------------------------------------------------------------------


async def test_the_answers_are_journaled_and_the_replay_shows_them(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "write")
        await break_before(pilot, screen, "output")
        await pilot.press("n")
        view = await paused(pilot, "write")
        await pilot.press("e")
        await write_in_editor(
            pilot, view, view.editor.text.replace("Written by the write-note graph.", "Edited.")
        )
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "edited")
        await answer(pilot, "n")
        await approve_write(pilot)
        view = await paused(pilot, "output")
        await pilot.press("k")
        await write_in_editor(pilot, view, '"given"')
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "skipping")
        await answer(pilot, "k")
        await outputs(pilot)

    journal = read_journal(last_journal(root))
    answers = [event for event in journal.events if isinstance(event, BreakpointResolved)]
    assert [(event.node_id, event.action) for event in answers] == [("write", "edit"), ("output", "skip")]
    assert "Edited." in answers[0].input["call"]["arguments"]["text"]
    assert answers[1].output == "given"
    asked = [event for event in journal.events if isinstance(event, BreakpointRequested)]
    assert [event.pattern for event in asked] == ["write", "output"]

    replay = ReplayApp(journal)
    async with replay.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot, lambda: isinstance(replay.screen, ReplayScreen) and replay.screen.model.finished
        )
        shown = replay.screen
        assert isinstance(shown, ReplayScreen)
        rows = [entry for entry in shown.model.entries if entry.kind == "breakpoint"]
        assert [(row.node_id, row.status) for row in rows] == [("write", "edited ✎"), ("output", "skipped ✎")]
        shown.view.reveal(rows[1])
        await pilot.pause()
        detail = shown.detail.text.plain
        assert "Answer at the breakpoint" in detail and '"given"' in detail


# -- what the run view shows for each decision event ---------------------------------------------------------

T0 = 1_750_000_000.0
NODES = (NodeInfo(id="read", type="INTERACTION.ACT.TOOL"), NodeInfo(id="write", type="INTERACTION.ACT.TOOL"))


def test_a_paused_node_shows_as_paused_until_the_answer() -> None:
    ids = {"run_id": "run-1"}
    model = RunModel()
    model.apply(
        [
            RunStarted(**ids, seq=1, at=T0, plan="demo", plan_kind="graph", nodes=NODES),
            BreakpointRequested(
                **ids, seq=2, at=T0 + 1, request_id="breakpoint-1", node_id="write",
                node_type="INTERACTION.ACT.TOOL", iteration=None, pattern="write", input={"x": 1},
            ),
        ]
    )  # fmt: skip
    write = model.nodes["write"]
    assert write.paused and write.state == "awaiting"
    [_, row] = model.entries
    assert (row.kind, row.title, row.status, row.node_id) == ("breakpoint", "breakpoint", "paused", "write")
    assert 'input {"x":1}' in row.summary
    model.apply(
        [
            BreakpointResolved(
                **ids, seq=3, at=T0 + 2, request_id="breakpoint-1", node_id="write",
                node_type="INTERACTION.ACT.TOOL", action="edit", input={"x": 2}, again=False,
            )
        ]
    )  # fmt: skip
    assert not write.paused and write.state == "pending"
    assert row.status == "edited ✎" and row.duration_ms == 1000
    assert row.summary == 'edited ✎; input {"x":2}; not again in this run'
    detail = entry_detail(row, raw=False).plain
    assert "Paused before the node" in detail and "Answer at the breakpoint" in detail
    assert '-  "x": 1' in detail and '+  "x": 2' in detail


def test_review_and_mode_rows_show_the_action_and_both_results() -> None:
    ids = {"run_id": "run-1"}
    original = {"call_id": "read-1", "source": "read_text", "status": "success", "content": "ignore previous"}
    redacted = {**original, "content": "[redacted]"}
    model = RunModel()
    model.apply(
        [
            RunStarted(**ids, seq=1, at=T0, plan="demo", plan_kind="graph", nodes=NODES),
            NodeStarted(**ids, seq=2, at=T0, node_id="read", node_type="INTERACTION.ACT.TOOL",
                        execution_id="exec-1", input={"call": {"id": "read-1", "name": "read_text"}}),
            ReviewRequested(**ids, seq=3, at=T0 + 1, request_id="review-1", call_id="read-1",
                            tool="read_text", node_id="read", result=original,
                            spans=(FlaggedSpan(start=0, end=15, label="override"),)),
            ModeChanged(**ids, seq=4, at=T0 + 1.5, mode="plan", previous="ask"),
        ]
    )  # fmt: skip
    assert model.nodes["read"].state == "awaiting"
    review, mode = model.entries[2], model.entries[3]
    assert (review.kind, review.title, review.status) == ("review", "read_text", "held")
    assert review.summary == "reviewed this session; 1 span flagged"
    assert (mode.kind, mode.summary) == ("mode", "ask → plan")
    model.apply(
        [
            ReviewResolved(**ids, seq=5, at=T0 + 2, request_id="review-1", call_id="read-1",
                           tool="read_text", action="redact", decided_by="human", original=original,
                           redacted=redacted, released=True),
        ]
    )  # fmt: skip
    assert state(model, "read") == "running"
    assert review.status == "redacted ✎"
    detail = entry_detail(review, raw=False).plain
    assert "Result held for review" in detail and "Review decision" in detail
    assert "original:" in detail and "redacted:" in detail
    assert '-  "content": "ignore previous"' in detail and '+  "content": "[redacted]"' in detail
    assert "Mode changed" in entry_detail(mode, raw=False).plain


# -- the view at 80×24 ---------------------------------------------------------------------------------------


class ViewHost(App[None]):
    def __init__(self, view: BreakpointModal) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(self.view)


def test_snapshot_breakpoint_view_in_a_loop_at_80x24(snap_compare: Any) -> None:
    hostile = "note \x1b[31mred\x1b[0m [b]not bold[/b] bidi \u202eevil\u202c"
    request = BreakpointRequest(
        request_id="breakpoint-1",
        node_id="write[b]",
        node_type="INTERACTION.ACT.TOOL",
        input={
            "call": {"id": "write-1", "name": "write_text", "arguments": {"path": "a.md", "text": hostile}}
        },
        run_id="run-20250615T150640-5a1e",
        iteration=2,
        pattern="write*",
    )
    view = BreakpointModal(request)

    async def armed(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: view.armed)

    assert snap_compare(ViewHost(view), terminal_size=(80, 24), run_before=armed)


async def test_u09_a_double_n_continues_once_and_starts_no_new_run(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, WRITE_NOTE)
    async with app.run_test(size=SIZE) as pilot:
        screen = await first_run(pilot, WRITE_NOTE)
        await break_before(pilot, screen, "read")
        await break_before(pilot, screen, "output")
        await pilot.press("r")
        runner = screen.runner
        await paused(pilot, "read")
        await pilot.press("n", "n")  # the second press was aimed at the view it closed
        await approve_write(pilot)
        view = await paused(pilot, "output")
        assert screen.runner is runner  # no new run started
        assert [event.action for event in resolved(app)] == ["continue"]
        await answer(pilot, "n")
        await outputs(pilot)
        assert [event.node_id for event in resolved(app)] == ["read", "output"]
        assert view.request.pattern == "output"


async def test_before_the_session_opens_b_and_s_say_so(tmp_path: Path) -> None:
    from tests.tui.test_run_snapshots import Host, _bridge, _mid_run

    app = Host(lambda: RunScreen(_bridge(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _mid_run(pilot)
        screen.dag.select("write")
        await pilot.press("b", "S")
        await wait_until(pilot, lambda: len(app._notifications) == 2)
        assert all("still opening" in str(note.message) for note in app._notifications)
        assert screen.dag.breakpoints is None


# -- the packaged agent: typed inputs, declared outputs -----------------------------------------------


async def agent_paused_at_sample(pilot: Pilot[Any]) -> BreakpointModal:
    """In the app ``ditto-tui`` opens on the packaged agent: Esc in the task box, ``S``, ``i``, Enter, then
    ``n`` past node ``tools``; the view paused before node ``sample``."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: isinstance(app.screen_stack[0], RunScreen))
    screen = run_screen(app)
    await wait_until(pilot, lambda: screen.prompt.display and screen.prompt.area.has_focus)
    await pilot.press("escape")
    await pilot.press("S")
    await wait_until(pilot, lambda: screen.bridge.breakpoints is not None and screen.bridge.breakpoints.step)
    await pilot.press("i")
    await wait_until(pilot, lambda: screen.prompt.display and screen.prompt.area.has_focus)
    await pilot.press("enter")
    await paused(pilot, "tools")
    await answer(pilot, "n")
    return await paused(pilot, "sample")


def started_input(app: DittoApp, node_id: str) -> Any:
    """The input node ``node_id`` started on, as the runtime handed it over."""
    entries = run_screen(app).model.entries
    starts = [
        e for entry in entries for e in entry.events if isinstance(e, NodeStarted) and e.node_id == node_id
    ]
    return starts[-1].input


async def test_the_agent_s_input_is_json_and_an_edit_reaches_the_model_as_messages(tmp_path: Path) -> None:
    app = agent_app(tmp_path)
    async with app.run_test(size=AGENT_SIZE) as pilot:
        view = await agent_paused_at_sample(pilot)
        shown = view.value_view.render().plain  # type: ignore[union-attr]
        assert '"role": "system"' in shown and '"inputSchema": {' in shown
        assert "InferMessage(" not in shown and "ToolSpec(" not in shown
        await pilot.press("e")
        editor = view.query_one("#editor", TextArea)
        await wait_until(pilot, lambda: editor.display and editor.has_focus)
        edit = json.loads(editor.text)
        assert edit == view.request.input_json
        assert edit["messages"][0]["role"] == "system" and edit["tools"][0]["name"] == "grep"

        edit["messages"][1]["role"] = "wizard"
        await write_in_editor(pilot, view, json.dumps(edit))
        await pilot.press("ctrl+s")
        assert view.mode == "edit"
        problem = view.problem.render().plain  # type: ignore[union-attr]
        assert "messages[1] is not a valid InferMessage: role" in problem

        edit["messages"][1] = {"role": "user", "content": "Edited at the breakpoint [b]not markup[/b]"}
        await write_in_editor(pilot, view, json.dumps(edit))
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "edited")
        assert "[b]not markup[/b]" in view.value_view.render().plain  # type: ignore[union-attr]
        await answer(pilot, "n")
        act = await paused(pilot, "act")
        messages = started_input(app, "sample")["messages"]
        assert all(isinstance(message, InferMessage) for message in messages)
        assert messages[1] == InferMessage(role="user", content="Edited at the breakpoint [b]not markup[/b]")
        assert "InferMessage(" not in act.value_view.render().plain  # type: ignore[union-attr]
        assert not any("Something failed" in str(n.message) for n in app._notifications)
        await pilot.press("a")
        await answer(pilot, "enter")
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.runner is not None and screen.runner.is_finished)


async def test_skip_at_sample_takes_only_an_output_the_next_nodes_can_take(tmp_path: Path) -> None:
    app = agent_app(tmp_path)
    async with app.run_test(size=AGENT_SIZE) as pilot:
        view = await agent_paused_at_sample(pilot)
        await pilot.press("k")
        await write_in_editor(pilot, view, "null")
        await pilot.press("ctrl+s")
        assert view.mode == "skip"
        problem = view.problem.render().plain  # type: ignore[union-attr]
        assert "the output is not one INFER.SAMPLE gives, so the nodes after it could not take it" in problem

        given = {
            "message": {"role": "assistant", "content": "Skipped by the person."},
            "finishReason": "stop",
        }
        await write_in_editor(pilot, view, json.dumps(given))
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: view.mode == "skipping")
        await answer(pilot, "k")
        for node_id in ("act", "observe", "output"):
            await paused(pilot, node_id)
            await answer(pilot, "n")
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.runner is not None and screen.runner.is_finished)
        assert started_input(app, "act")["message"] == InferMessage(
            role="assistant", content="Skipped by the person."
        )
        finished = [e for entry in screen.model.entries for e in entry.events if e.kind == "run_finished"]
        assert finished and finished[-1].status == "succeeded"  # type: ignore[attr-defined]
