"""Call watches sharing one timer: deadlines and cancel signals still end each call, one timer serves all."""

from __future__ import annotations

import asyncio

import pytest

from ditto_tui.interaction.mcp.watch import SIGNAL_POLL_SECONDS, CallWatch, Ticker, bounded
from ditto_tui.signal import CancelSignal


async def test_back_to_back_calls_share_one_timer() -> None:
    ticker = Ticker(asyncio.get_running_loop())
    with CallWatch(None, 30.0, ticker=ticker):
        await asyncio.sleep(0)
    first = ticker.handle
    for _ in range(3):
        with CallWatch(None, 30.0, ticker=ticker):
            await asyncio.sleep(0)
    assert first is not None and ticker.handle is first and not ticker.watches


async def test_the_timer_stops_once_nothing_is_watched() -> None:
    ticker = Ticker(asyncio.get_running_loop())
    with CallWatch(CancelSignal(), None, ticker=ticker):
        await asyncio.sleep(0)
    await asyncio.sleep(SIGNAL_POLL_SECONDS * 2)
    assert ticker.handle is None and not ticker.watches


async def test_a_deadline_ends_its_own_call_and_no_other() -> None:
    ticker = Ticker(asyncio.get_running_loop())
    slow = asyncio.ensure_future(bounded(lambda: asyncio.sleep(0.3, "done"), CancelSignal(), 5.0, ticker))
    with pytest.raises(TimeoutError):
        await bounded(lambda: asyncio.sleep(5), None, 0.05, ticker)
    assert await slow == "done"


async def test_a_cancelled_signal_ends_the_call_within_a_poll() -> None:
    ticker = Ticker(asyncio.get_running_loop())
    signal = CancelSignal()
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, signal.cancel, "stopped")
    started = loop.time()
    with pytest.raises(asyncio.CancelledError):
        await bounded(lambda: asyncio.sleep(5), signal, None, ticker)
    assert loop.time() - started < 0.05 + SIGNAL_POLL_SECONDS * 3


async def test_progress_moves_the_deadline_without_a_new_timer() -> None:
    ticker = Ticker(asyncio.get_running_loop())

    async def progressing(watch: CallWatch) -> str:
        for _ in range(4):
            await asyncio.sleep(0.03)
            watch.restart()
        return "done"

    with CallWatch(None, 0.05, cap=1.0, ticker=ticker) as watch:
        assert await progressing(watch) == "done"
