"""``ditto-tui replay``: the Run screen rebuilt from a journal, stepped event by event, executing nothing.

The snapshot replays ``tests/data/journal/react_agent.jsonl``, recorded from the default demo with
``ditto-tui run graphs/react_agent.py --headless --approve allow`` in a copy of the repository's README
and ditto.yaml: its times and ids are fixed, and a replay never reads the wall clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from ditto_tui.runtime import NodeInfo, NodeStarted, RunFinished, RunStarted
from ditto_tui.runtime.client import Runtime
from ditto_tui.supervise import RunJournal, read_journal
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.replay import ReplayApp
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.screens.replay import ReplayScreen
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.widgets.timeline import RESIZE_SECONDS, Timeline
from tests.journal.journal_fixtures import (
    DATA,
    NOTE_CONFIG,
    NOTE_GRAPH,
    executions,
    journals,
    load,
    make_workspace,
    screen_text,
    wait_until,
)

SIZE = (120, 36)
DEMO = DATA / "journal" / "react_agent.jsonl"


def _body(text: str) -> list[str]:
    """The screen without its header and footer (the titles and keys differ between live and replay)."""
    return text.splitlines()[1:-1]


def _state(model: RunModel) -> list[Any]:
    rows = [
        (entry.kind, entry.title, entry.status, entry.summary, entry.duration_ms) for entry in model.entries
    ]
    nodes = [(node.id, node.state, node.runs, node.duration_ms) for node in model.nodes.values()]
    return [model.phase, rows, nodes]


def _refuse_runtimes(*_args: Any, **_kwargs: Any) -> None:
    raise AssertionError("a replay built a runtime")


async def test_replay_shows_the_live_final_screen_and_executes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path, NOTE_CONFIG)
    config, program = load(root, NOTE_GRAPH)
    app = DittoApp(RunSpec(config=config, workspace=root, program=program))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.desk.open is not None and app.screen is app.desk.open)
        view = app.desk.open
        assert view is not None
        await wait_until(pilot, lambda: view.armed)
        await pilot.press("a")
        run_screen = app.screen_stack[0]
        assert isinstance(run_screen, RunScreen)
        await wait_until(pilot, lambda: run_screen.model.finished and app.screen is run_screen)
        await pilot.pause()
        live = screen_text(app)
        live_state = _state(run_screen.model)
    assert executions(root) == ["note-1"]
    (path,) = journals(root)
    monkeypatch.setattr(Runtime, "__init__", _refuse_runtimes)
    journal = read_journal(path)
    replay = ReplayApp(journal)
    async with replay.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = replay.screen
        assert isinstance(screen, ReplayScreen)
        assert _body(screen_text(replay)) == _body(live)
        assert _state(screen.model) == live_state
        await pilot.press("s", *["n"] * len(journal.events))
        assert screen.position == len(journal.events)
        assert _state(screen.model) == live_state
    assert executions(root) == ["note-1"]
    assert (root / "note.md").read_text(encoding="utf-8") == "# Note\n\nRecorded.\n"


async def test_replay_steps_back_and_forward_one_event_at_a_time() -> None:
    journal = read_journal(DEMO)
    total = len(journal.events)
    app = ReplayApp(journal)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        end = _state(screen.model)
        assert screen.position == total and screen.model.finished
        await pilot.press("b")
        expected = RunModel()
        expected.apply(journal.events[: total - 1])
        assert screen.position == total - 1 and _state(screen.model) == _state(expected)
        assert screen.timeline.selected is not None
        assert any(event is journal.events[total - 2] for event in screen.timeline.selected.events)
        await pilot.press("n")
        assert _state(screen.model) == end
        await pilot.press("s")
        assert screen.position == 0 and screen.model.entries == []
        assert "waiting for the run to start" in screen_text(app)
        await pilot.press("b")
        assert screen.position == 0
        for _ in range(total):
            await screen.action_step(1)
        assert _state(screen.model) == end
        await pilot.press("s", "e")
        assert _state(screen.model) == end
        assert screen.sub_title == f"react-agent · replay · event {total}/{total}"


async def test_replay_hides_the_live_run_actions() -> None:
    app = ReplayApp(read_journal(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "Next event" in screen_text(app).splitlines()[-1])
        footer = screen_text(app).splitlines()[-1]
        assert "Next event" in footer and "Cancel run" not in footer and "Grants" not in footer
        await pilot.press("c", "x", "g")
        assert isinstance(app.screen, ReplayScreen)


async def test_a_truncated_journal_opens_and_says_what_was_left_out(tmp_path: Path) -> None:
    data = DEMO.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: data.index(b"approval_resolved") + 40])
    journal = read_journal(cut)
    assert journal.truncated_tail and journal.finished is None
    app = ReplayApp(journal)
    notes: list[str] = []
    shown = app.notify

    def noted(message: str, **kwargs: Any) -> None:
        notes.append(message)
        shown(message, **kwargs)

    app.notify = noted  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.sub_title is not None
        assert screen.sub_title.endswith(f"event {len(journal.events)}/{len(journal.events)} · unfinished")
        assert notes == [journal.problems()[0]] and "ends inside a line" in notes[0]
        assert screen.model.pending_approvals


def test_snapshot_replay_of_the_recorded_demo_run(snap_compare: Any) -> None:
    assert snap_compare(ReplayApp(read_journal(DEMO)), terminal_size=SIZE)


def test_snapshot_replay_stepped_back_to_the_decision(snap_compare: Any) -> None:
    journal = read_journal(DEMO)
    decision = next(i for i, event in enumerate(journal.events) if event.kind == "approval_resolved")

    async def step_back(pilot: Pilot[Any]) -> None:
        await pilot.pause()  # the recorded events are posted to the screen when it opens
        screen = pilot.app.screen
        assert isinstance(screen, ReplayScreen)
        await screen.action_step(decision + 1 - len(journal.events))
        assert screen.position == decision + 1
        # The timeline takes its new length at most every RESIZE_SECONDS: let it, so the scroll bar
        # is drawn for the rows shown however quickly the step followed the opening.
        await pilot.pause(RESIZE_SECONDS * 2)
        timeline = screen.query_one(Timeline)
        assert timeline.vertical_scrollbar.position == timeline.scroll_y == timeline.max_scroll_y

    assert snap_compare(ReplayApp(journal), terminal_size=SIZE, run_before=step_back)


async def test_t01_t02_a_hostile_journal_replays_as_plain_text(tmp_path: Path) -> None:
    hostile = "evil\x1b]52;c;Y3VybA==\x07 [bold]x[/] \x1b[2J\u202e"
    journal = RunJournal(tmp_path / "runs", about={"program": hostile})
    base = {"run_id": "run-hostile", "at": 1.0}
    nodes = (NodeInfo(id=hostile, type="INTERACTION.ACT.TOOL"),)
    journal(RunStarted.trusted({**base, "seq": 1, "plan": hostile, "nodes": nodes}))
    call = {"call": {"id": hostile, "name": hostile, "arguments": {"text": hostile}}}
    identity = {"node_id": hostile, "node_type": "INTERACTION.ACT.TOOL", "execution_id": "exec-1"}
    journal(NodeStarted.trusted({**base, "seq": 2, **identity, "input": call}))
    journal(RunFinished.trusted({**base, "seq": 3, "status": "failed", "duration_ms": 1.0, "error": hostile}))
    app = ReplayApp(read_journal(tmp_path / "runs" / "run-hostile.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("b", "b")
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.position == 1 and screen.sub_title is not None
        assert "\x1b" not in screen.sub_title and "\u202e" not in screen.sub_title
        text = screen_text(app)
        assert "\x1b" not in text and "\x07" not in text and "[bold]x[/]" in text
