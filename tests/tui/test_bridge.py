"""The bridge: events coalesced to one message per frame, the end of a run never held back."""

from __future__ import annotations

import asyncio

from textual.app import App

from ditto_tui.runtime import ExecutionEvent, NodeStarted, RunFinished
from ditto_tui.tui.bridge import EventPump, EventsArrived


class Sink(App[None]):
    """Records every batch it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[ExecutionEvent, ...]] = []

    def on_events_arrived(self, message: EventsArrived) -> None:
        self.batches.append(message.events)


def _started(seq: int) -> NodeStarted:
    return NodeStarted(
        run_id="run-1", seq=seq, at=0.0, node_id=f"n{seq}", node_type="T.X", execution_id=f"exec-{seq}"
    )


async def test_a_flood_of_events_arrives_in_order_in_few_messages() -> None:
    app = Sink()
    async with app.run_test() as pilot:
        pump = EventPump(app)
        events = [_started(seq) for seq in range(1, 5001)]
        for index, event in enumerate(events):
            pump(event)
            if index % 100 == 99:
                await asyncio.sleep(0)
        await pilot.pause(0.1)
        received = [event for batch in app.batches for event in batch]
        assert received == events
        assert len(app.batches) < len(events) / 100


async def test_run_finished_flushes_at_once_and_a_closed_pump_sends_nothing() -> None:
    app = Sink()
    async with app.run_test() as pilot:
        pump = EventPump(app, frame=60.0)
        pump(_started(1))
        pump(RunFinished(run_id="run-1", seq=2, at=0.0, status="succeeded", duration_ms=1.0))
        await pilot.pause()
        assert [[event.seq for event in batch] for batch in app.batches] == [[1, 2]]
        pump(_started(3))
        pump.close()
        pump.flush()
        await pilot.pause()
        assert len(app.batches) == 1
