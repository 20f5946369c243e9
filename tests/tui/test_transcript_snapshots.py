"""Snapshots of the transcript: an agent run mid-stream, and its outcome panel, at 120×36 and 80×24.

The Run screen gets fixed events (fixed times and ids) and the UI clock is frozen, as in
``test_run_snapshots``; the model's text holds Markdown, markup and control characters, which must
show as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from ditto_tui.contracts import ExternalResult
from ditto_tui.infer import MESSAGE_DELTA, InferMessage
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    CustomEvent,
    ExecutionEvent,
    LoopIteration,
    NodeFinished,
    NodeInfo,
    NodeStarted,
    RunFinished,
    RunStarted,
)
from ditto_tui.tui.bridge import EventsArrived
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.widgets.transcript import TranscriptView
from tests.tui.run_fixtures import wait_until
from tests.tui.test_run_snapshots import RUN, T0, Host, _bridge

TASK = "Summarise the README and write notes/summary.md"
FIRST = (
    "Let me read the **README** first, then write the note.\n\n"
    "- `read_text` on README.md\n- `write_text` to notes/summary.md\n\n"
    "[bold]not markup[/bold] and \x1b[31mno colour\x1b[0m"
)
ANSWER = "I read the README and wrote *notes/summary.md*: it says how to run and test the project."


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ditto_tui.tui.clock.now", lambda: T0 + 4.2)


def _at(seq: int) -> dict[str, Any]:
    return {"run_id": RUN, "seq": seq, "at": T0 + seq * 0.1}


def streaming_events() -> list[ExecutionEvent]:
    """An agent's first turn streamed, its read done, its write approved and running."""
    nodes = (
        NodeInfo(id="sample", type="INFER.SAMPLE"),
        NodeInfo(id="act", type="INFER.REACT.ACT", deps=("sample",)),
    )
    user = {"messages": [{"role": "system", "content": "Be careful."}, {"role": "user", "content": TASK}]}
    read = {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}
    write = {
        "id": "write-1",
        "name": "write_text",
        "arguments": {"path": "notes/summary.md", "text": "# S\n"},
    }
    message = InferMessage.model_validate(
        {"role": "assistant", "content": FIRST, "actionRequests": [read, write]}
    )
    pieces = [FIRST[i : i + 9] for i in range(0, len(FIRST), 9)]
    events: list[ExecutionEvent] = [
        RunStarted(**_at(1), plan="react-agent", plan_kind="loop", nodes=nodes, max_iterations=8),
        LoopIteration(**_at(2), iteration=1, max_iterations=8),
        NodeStarted(**_at(3), node_id="sample", node_type="INFER.SAMPLE", execution_id="s-1", iteration=1,
                    input=user),
    ]  # fmt: skip
    events += [
        CustomEvent(**_at(4 + n), name=MESSAGE_DELTA, data={"text": piece, "executionId": "s-1"})
        for n, piece in enumerate(pieces)
    ]
    seq = 4 + len(pieces)
    events += [
        NodeFinished(**_at(seq), node_id="sample", node_type="INFER.SAMPLE", execution_id="s-1", iteration=1,
                     duration_ms=800.0, output={"message": message, "finishReason": "tool_calls"}),
        NodeStarted(**_at(seq + 1), node_id="act/read-1", node_type="INTERACTION.ACT.TOOL",
                    execution_id="a-1", iteration=1, input={"call": read}),
        NodeFinished(**_at(seq + 2), node_id="act/read-1", node_type="INTERACTION.ACT.TOOL",
                     execution_id="a-1", iteration=1, duration_ms=3.0,
                     output=ExternalResult.model_validate({"call_id": "read-1", "source": "read_text",
                                                           "status": "success", "content": "# Demo\n"})),
        NodeStarted(**_at(seq + 3), node_id="act/write-1", node_type="INTERACTION.ACT.TOOL",
                    execution_id="a-2", iteration=1, input={"call": write}),
        ApprovalRequested(**_at(seq + 4), request_id="approval-1", call_id="write-1", tool="write_text",
                          node_id="act/write-1", arguments=write["arguments"], arguments_digest="0" * 64,
                          tool_digest="1" * 64, rule="tool:write_* → ask"),
        ApprovalResolved(**_at(seq + 5), request_id="approval-1", call_id="write-1", tool="write_text",
                         decision="approve", arguments_digest="0" * 64),
    ]  # fmt: skip
    return events


def finished_events() -> list[ExecutionEvent]:
    """The same run to its end: the write done, the answer streamed, the run finished."""
    events = streaming_events()
    seq = events[-1].seq + 1
    answer = {"message": InferMessage(role="assistant", content=ANSWER), "finishReason": "stop"}
    events += [
        NodeFinished(**_at(seq), node_id="act/write-1", node_type="INTERACTION.ACT.TOOL", execution_id="a-2",
                     iteration=1, duration_ms=5.0,
                     output=ExternalResult.model_validate({"call_id": "write-1", "source": "write_text",
                                                           "status": "success", "content": "wrote 4 bytes"})),
        NodeStarted(**_at(seq + 1), node_id="sample", node_type="INFER.SAMPLE", execution_id="s-2",
                    iteration=2, input={"messages": []}),
        NodeFinished(**_at(seq + 2), node_id="sample", node_type="INFER.SAMPLE", execution_id="s-2",
                     iteration=2, duration_ms=400.0, output=answer),
        RunFinished(**_at(seq + 3), status="succeeded", duration_ms=3200.0),
    ]  # fmt: skip
    return events


def _fed(events: list[ExecutionEvent]) -> Any:
    async def feed(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        screen.post_message(EventsArrived(tuple(events)))
        await wait_until(pilot, lambda: len(screen.model.entries) > 3)
        await pilot.pause(0.3)

    return feed


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_snapshot_transcript_while_the_write_runs(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int]
) -> None:
    app = Host(lambda: RunScreen(_bridge(tmp_path)))
    assert snap_compare(app, terminal_size=size, run_before=_fed(streaming_events()))


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_snapshot_outcome_panel(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    app = Host(lambda: RunScreen(_bridge(tmp_path)))
    assert snap_compare(app, terminal_size=size, run_before=_fed(finished_events()))


async def test_the_end_of_a_run_that_arrives_while_the_app_quits_is_not_drawn(tmp_path: Path) -> None:
    app = Host(lambda: RunScreen(_bridge(tmp_path)))
    async with app.run_test(size=(120, 36)) as pilot:
        await _fed(streaming_events())(pilot)
        view = app.screen.query_one(TranscriptView)
        ending = finished_events()[len(streaming_events()) :]
        app.exit()  # quitting cancels the run, whose last events then arrive
        await view.apply(ending)  # folded into the model; mounting the outcome now would raise
        assert view.transcript.finished and view.outcome is None
