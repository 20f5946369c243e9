"""Fault injection, output sink: a sink whose ``deliver`` raises (with a secret and a path in its message).

The OUTPUT node fails the run with an error naming it; the delivery was attempted exactly once; the
application stays up and shows the failure in one sanitised line.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.errors import GraphExecutionError
from ditto_tui.headless import run_headless
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.program import Program
from ditto_tui.runtime import create_ditto, graph
from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui.widgets.timeline import Timeline
from tests.faults.fault_fixtures import (
    SIZE,
    app_for,
    finished_run,
    make_workspace,
    run_screen,
    screen_text,
    settings,
    still_answers,
    wait_until,
)
from tests.typed import graph_plan

SECRET = "sk-proj-" + "S" * 40
MESSAGE = f"queue at /srv/private/spool refused the message\nAuthorization: Bearer {SECRET}"


class RaisingSink:
    """A sink that counts its deliveries and fails every one of them."""

    def __init__(self) -> None:
        self.deliveries: list[str] = []

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        self.deliveries.append(input.delivery_id)
        raise ConnectionError(MESSAGE)


def _program(sink: RaisingSink) -> Program:
    plan = graph("deliver").node(
        "output",
        "INTERACTION.OUTPUT",
        [],
        lambda _i, _d: {"deliveryId": "d-1", "message": {"role": "assistant", "content": "the answer"}},
    )
    return Program(name="deliver", description="Deliver one answer.", plan=plan, output=sink)


async def test_a_raising_sink_fails_the_node_once_with_a_clear_error(tmp_path: Path) -> None:
    sink = RaisingSink()
    worker = create_interaction_worker(output=sink)
    async with create_ditto(workspace=tmp_path, workers=[worker]) as runtime:
        with pytest.raises(GraphExecutionError) as caught:
            await runtime.run(graph_plan(_program(sink)))
    assert sink.deliveries == ["d-1"]
    public = public_message_from_exception(caught.value, workspace=tmp_path)
    assert "output" in public and "refused the message" in public and "ConnectionError" not in public
    assert SECRET not in public and "/srv/private" not in public and "\n" not in public


async def test_a_raising_sink_in_a_headless_run_is_one_line_on_stderr(tmp_path: Path) -> None:
    sink = RaisingSink()
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(_program(sink), settings({}), tmp_path, out=out, err=err, journal=False)
    assert code == 1 and sink.deliveries == ["d-1"]
    assert err.getvalue().count("\n") == 1 and "run failed" in err.getvalue()
    assert SECRET not in err.getvalue() + out.getvalue() and "/srv/private" not in err.getvalue()


async def test_the_ui_stays_up_and_shows_a_sink_failure_without_its_secret(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    sink = RaisingSink()
    app = app_for(root, settings({}), _program(sink))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        worker = await finished_run(pilot)
        assert isinstance(worker.error, GraphExecutionError)
        await wait_until(pilot, lambda: "Run failed" in screen_text(app))
        text = screen_text(app)
        assert "refused the message" in text and "ConnectionError" not in text
        assert SECRET not in text and "/srv/private" not in text
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.finished)
        for entry in screen.model.entries:  # every event's detail, the failure's included
            screen.timeline.focus()
            screen.timeline.select(entry.index)
            screen.entry_selected(Timeline.EntrySelected(entry))
            shown = screen.detail.text.plain
            assert SECRET not in shown and "/srv/private" not in shown, shown
        await still_answers(pilot)
    assert sink.deliveries == ["d-1"]
