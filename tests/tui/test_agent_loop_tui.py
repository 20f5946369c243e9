"""The everyday agent loop in the app (Pilot): the task typed into the prompt box, the transcript as it
streams, the outcome panel, a follow-up journaled as such, rerun, a new run, the runs list and quitting
while a run is live."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot

from ditto_tui.config import load_runtime_config_file
from ditto_tui.infer import MESSAGE_DELTA, InferMessage, ModelProvider
from ditto_tui.infer.scripted import ScriptedProvider, ScriptTurn
from ditto_tui.program import load_program
from ditto_tui.runtime import CustomEvent, NodeFinished, NodeStarted
from ditto_tui.supervise.journal import list_runs
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.bridge import EventsArrived
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.screens.replay import ReplayScreen
from ditto_tui.tui.screens.runs import RunsModal
from ditto_tui.tui.widgets.transcript import CallLine, MarkdownText, OutcomePanel, TranscriptView
from tests.tui.run_fixtures import approval_view, keys_armed, run_screen, screen_text, wait_until

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "ditto_tui" / "agent"
SIZE = (140, 45)
STREAM_SECONDS = 0.002
"""The pause between streamed pieces in these tests. The packaged script waits 0.03 s so that a person can
watch the words arrive; nothing here measures that pause, and at 0.03 s it was most of each test's time.
The pieces are the same and each still arrives in a step of the event loop of its own."""


def quick_stream(provider: ModelProvider | None, seconds: float = STREAM_SECONDS) -> ScriptedProvider:
    """``provider`` (the packaged scripted model) with every turn's pause between pieces at most
    ``seconds``; its turns, their pieces and its streaming are unchanged."""
    assert isinstance(provider, ScriptedProvider) and provider.script.stream

    def quick(turn: ScriptTurn) -> ScriptTurn:
        return turn.model_copy(update={"delay_seconds": min(turn.delay_seconds, seconds)})

    turns = [
        quick(entry)
        if isinstance(entry, ScriptTurn)
        else entry.model_copy(update={"choose": [quick(turn) for turn in entry.choose]})
        for entry in provider.script.turns
    ]
    return ScriptedProvider(provider.script.model_copy(update={"turns": turns}), name=provider.name)


def agent_app(tmp_path: Path, *, ask_task: bool = True) -> DittoApp:
    """The app ``ditto-tui`` opens in a fresh project folder: the packaged agent and its config (its
    scripted model streaming :data:`STREAM_SECONDS` apart)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# Project\n\nRun it with make.\n", encoding="utf-8")
    shutil.copy(AGENT / "ditto.yaml", root / "ditto.yaml")
    config = load_runtime_config_file(root / "ditto.yaml", {})
    program = load_program(AGENT / "react_agent.py", config, root)
    program = dataclasses.replace(program, provider=quick_stream(program.provider))
    return DittoApp(RunSpec(config=config, workspace=root, program=program, ask_task=ask_task))


def transcript(app: DittoApp) -> TranscriptView:
    return run_screen(app).view.transcript


async def ask(pilot: Pilot[Any], text: str) -> None:
    """Type ``text`` into the prompt box and press Enter."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    box = run_screen(app).prompt
    await wait_until(pilot, lambda: box.display and box.area.has_focus)
    box.area.insert(text)
    await pilot.press("enter")


async def approve_the_write(pilot: Pilot[Any]) -> None:
    view = await approval_view(pilot)
    assert view.request.tool == "write_text"
    assert view.request.proposal == "I will write a short summary note; it needs your approval."
    await pilot.press("a")


async def finished(pilot: Pilot[Any]) -> OutcomePanel:
    app = pilot.app
    assert isinstance(app, DittoApp)
    await wait_until(pilot, lambda: transcript(app).outcome is not None, timeout=30)
    outcome = transcript(app).outcome
    assert outcome is not None
    await keys_armed(pilot)  # keys pressed just after the approval view closed are held back (U-09)
    await pilot.pause()
    return outcome


async def test_the_task_typed_in_the_prompt_box_runs_and_the_transcript_follows_it(tmp_path: Path) -> None:
    app = agent_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.prompt.display)
        assert screen.runner is None, "nothing runs before the person gives the task"
        await ask(pilot, "Summarise the README\\")  # a backslash before Enter is a new line, not the end
        assert screen.runner is None and screen.prompt.area.text == "Summarise the README\n"
        screen.prompt.area.insert("in two lines.")
        await pilot.press("enter")
        await approve_the_write(pilot)
        outcome = await finished(pilot)
        view = transcript(app)
        tasks = [turn.text for turn in view.transcript.turns if turn.kind == "task"]
        assert tasks == ["Summarise the README\nin two lines."]
        assistant = [turn for turn in view.transcript.turns if turn.kind == "assistant"]
        assert assistant[0].text == "Let me look around the workspace first." and not assistant[0].streaming
        calls = {line.turn.tool: line.turn.status for line in view.call_lines()}
        assert calls["write_text"] == "succeeded" and calls["ls"] == "succeeded"
        assert view.transcript.outcome() == {
            "approved": 1,
            "denied": 0,
            "edited": 0,
            "timed out": 0,
            "failed": 0,
        }
        text = screen_text(app)
        assert "Finished in" in text and "1 approved" in text and "wrote a summary" in text
        assert outcome.query_one("#count-approved").disabled is False
        history = screen.prompt.history.entries
        assert history[-1] == "Summarise the README\nin two lines."


async def test_pressing_a_count_selects_its_call_in_the_transcript_and_the_timeline(tmp_path: Path) -> None:
    app = agent_app(tmp_path, ask_task=False)
    async with app.run_test(size=SIZE) as pilot:
        await approve_the_write(pilot)
        await finished(pilot)
        await pilot.click("#count-approved")
        await pilot.pause()
        focused = app.focused
        assert isinstance(focused, CallLine) and focused.turn.tool == "write_text"
        await pilot.press("enter")
        assert "does not exist yet" not in focused.line_text().plain
        assert focused.expanded
        # ↑ and ↓ go from call to call; past the last one the key goes on to the pane, which scrolls.
        calls = transcript(app).call_lines()
        assert calls[-1] is focused and len(calls) >= 3
        await pilot.press("up")
        assert app.focused is calls[-2]
        await pilot.press("up", "down", "down")
        assert app.focused is calls[-1]
        await pilot.press("down")
        assert app.focused is calls[-1]


async def test_a_follow_up_continues_the_conversation_as_a_new_run_journaled_as_such(tmp_path: Path) -> None:
    app = agent_app(tmp_path, ask_task=False)
    async with app.run_test(size=SIZE) as pilot:
        await approve_the_write(pilot)
        await finished(pilot)
        screen = run_screen(app)
        first = app.bridge.runs[0]
        assert screen.prompt.display and screen.prompt.border_title == "Follow up"
        await ask(pilot, "And the tests?")
        await wait_until(pilot, lambda: len(app.bridge.runs) == 2, timeout=20)
        await finished(pilot)
        turns = transcript(app).transcript.turns
        assert [turn.text for turn in turns if turn.kind == "task"][-1] == "And the tests?"
        assert "cannot answer follow-up questions" in turns[-1].text
        final = screen.final
        assert final is not None and InferMessage(role="user", content="And the tests?") in final.messages
        await app.bridge.close()
    runs = {summary.run_id: summary for summary in list_runs(app.bridge.spec.workspace)}
    assert runs[app.bridge.runs[1]].follows == first and runs[first].follows is None


async def test_rerun_runs_the_same_input_again_and_n_asks_for_a_new_task(tmp_path: Path) -> None:
    app = agent_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Look around")
        await approve_the_write(pilot)
        await finished(pilot)
        screen = run_screen(app)
        await pilot.press("escape")  # leave the box: keys reach the screen
        await pilot.press("r")
        await wait_until(pilot, lambda: len(app.bridge.runs) == 2)
        await approve_the_write(pilot)
        await finished(pilot)
        tasks = [turn.text for turn in transcript(app).transcript.turns if turn.kind == "task"]
        assert tasks == ["Look around"], "a rerun starts the transcript afresh with the same task"
        await pilot.press("escape", "n")
        await wait_until(
            pilot, lambda: screen.prompt.display and screen.prompt.border_title == "Task for the agent"
        )
        assert not transcript(app).transcript.turns
        await pilot.press("ctrl+up")
        assert screen.prompt.area.text == "Look around"


async def test_the_runs_list_opens_a_finished_run_read_only_and_escape_comes_back(tmp_path: Path) -> None:
    app = agent_app(tmp_path, ask_task=False)
    async with app.run_test(size=SIZE) as pilot:
        await approve_the_write(pilot)
        await finished(pilot)
        await pilot.press("escape", "r")
        await wait_until(pilot, lambda: len(app.bridge.runs) == 2)
        await approve_the_write(pilot)
        await finished(pilot)
        await pilot.press("escape", "l")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsModal))
        assert "● " in screen_text(app)
        await pilot.press("down", "enter")  # the newest is the live one; the next is the first run
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen))
        replay = app.screen
        assert isinstance(replay, ReplayScreen) and replay.journal.run_id == app.bridge.runs[0]
        await pilot.pause()
        assert replay.view.transcript.transcript.outcome()["approved"] == 1
        await keys_armed(pilot)  # the runs list just closed (U-09)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is run_screen(app))


async def test_q_asks_before_quitting_while_a_decision_is_pending(tmp_path: Path) -> None:
    app = agent_app(tmp_path, ask_task=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await approval_view(pilot)
        await pilot.press("escape")  # later: the request stays pending
        await wait_until(pilot, lambda: app.screen is not view)
        await keys_armed(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "decision is pending" in screen_text(app)
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert app.is_running
        await keys_armed(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running)


async def test_streamed_model_text_is_markdown_that_cannot_act(tmp_path: Path) -> None:
    hostile = (
        "**Bold** and [a link](https://evil.example/x) and <b>html</b> and ![img](file:///etc/passwd)\n\n"
        "[@click=app.quit]markup[/] \x1b]8;;https://evil.example\x07osc\x1b]8;;\x07 \u202eevil"
    )
    app = agent_app(tmp_path, ask_task=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.runner is not None)
        runner = screen.runner
        assert runner is not None
        runner.cancel()
        await pilot.pause()
        started = NodeStarted.trusted(
            {
                "kind": "node_started",
                "run_id": "r",
                "seq": 1,
                "at": 1.0,
                "node_id": "sample",
                "node_type": "INFER.SAMPLE",
                "execution_id": "e1",
                "input": {"messages": []},
            }
        )
        pieces = [
            CustomEvent.trusted(
                {
                    "kind": "custom",
                    "run_id": "r",
                    "seq": 2 + n,
                    "at": 1.0,
                    "name": MESSAGE_DELTA,
                    "data": {"text": hostile[n : n + 7], "executionId": "e1"},
                }
            )
            for n in range(0, len(hostile), 7)
        ]
        await screen.view.restart()
        screen.post_message(EventsArrived((started, *pieces)))
        await wait_until(pilot, lambda: bool(transcript(app).transcript.turns))
        await wait_until(pilot, lambda: "⟨U+202E⟩" in screen_text(app))  # the last piece is drawn
        source = "".join(segment.source for segment in transcript(app).query(MarkdownText))
        assert "evil.example" in source and "\x1b" not in source and "\u202e" not in source
        text = screen_text(app)
        assert "Bold" in text and "⟨ESC⟩" in text and "⟨U+202E⟩" in text
        assert "[@click=app.quit]markup[/]" in text, "markup in model text is shown, never applied"
        rendered = app.screen._compositor.render_update(full=True)
        assert "\x1b]8;" not in str(rendered)
        done = NodeFinished.trusted(
            {
                "kind": "node_finished",
                "run_id": "r",
                "seq": 999,
                "at": 2.0,
                "node_id": "sample",
                "node_type": "INFER.SAMPLE",
                "execution_id": "e1",
                "duration_ms": 1.0,
                "output": {"message": {"role": "assistant", "content": hostile}},
            }
        )
        screen.post_message(EventsArrived((done,)))
        await wait_until(pilot, lambda: not transcript(app).transcript.turns[0].streaming)
        await pilot.pause(0.2)
        assert app.is_running


def test_model_markdown_renders_no_hyperlink_and_no_html() -> None:
    widget = MarkdownText("[x](https://a.example) ![i](b.png) <https://c.example> <b>html</b> **bold**")
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    segments = list(console.render(widget.document))
    assert not [segment for segment in segments if segment.style is not None and segment.style.link]
    console.print(widget.document)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b]8" not in output and "<b>" not in output
    assert "https://a.example" in output and "bold" in output
