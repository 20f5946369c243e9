"""Call deadlines and cancel signals, watched by one timer for all the calls of a client."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

from ditto_tui.signal import CancelSignal

T = TypeVar("T")

SIGNAL_POLL_SECONDS = 0.02
"""How often a running call checks its cancel signal (the runtime's own polling interval)."""


class Ticker:
    """One timer for many :class:`CallWatch` es: it fires at the earliest deadline or signal poll among them.

    A call that ends quickly then costs no timer of its own: back-to-back calls share one timer, which
    stops once no call is watched.
    """

    __slots__ = ("at", "handle", "loop", "watches")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.watches: set[CallWatch] = set()
        self.handle: asyncio.TimerHandle | None = None
        self.at = math.inf

    def add(self, watch: CallWatch) -> None:
        """Watch ``watch`` until :meth:`discard` or until it fires."""
        self.watches.add(watch)
        self._arm(watch.due(self.loop.time()))

    def discard(self, watch: CallWatch) -> None:
        """Stop watching ``watch`` (the timer, if armed, finds nothing due and stops)."""
        self.watches.discard(watch)

    def _arm(self, when: float) -> None:
        if when < self.at:
            if self.handle is not None:
                self.handle.cancel()
            self.at = when
            self.handle = self.loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self.handle, self.at = None, math.inf
        now = self.loop.time()
        self.watches.difference_update([watch for watch in self.watches if watch.fire(now)])
        if self.watches:
            self._arm(min(watch.due(now) for watch in self.watches))


class CallWatch:
    """Cancels the current task when ``signal`` is cancelled or ``timeout`` seconds pass, until :meth:`stop`.

    Awaited code sees an ordinary cancellation (the MCP SDK then tells the server with
    ``notifications/cancelled``). The signal is polled by ``ticker`` (a timer of the watch's own when none
    is given), not watched by a task; ``expired`` tells a deadline from any other cancellation. As a
    ``with`` block, the watch stops when the block ends and a cancellation by the deadline leaves it as
    ``TimeoutError``.
    """

    __slots__ = ("cancelling", "deadline", "expired", "limit", "signal", "task", "ticker", "timeout")

    def __init__(
        self,
        signal: CancelSignal | None,
        timeout: float | None,
        cap: float | None = None,
        ticker: Ticker | None = None,
    ) -> None:
        if signal is not None:
            signal.raise_if_cancelled()
        self.signal = signal
        self.task = asyncio.current_task()
        self.timeout = timeout
        self.cancelling = self.task.cancelling() if self.task is not None else 0
        self.expired = False
        self.deadline: float | None = None
        self.limit: float | None = None
        self.ticker: Ticker | None = None
        if signal is None and timeout is None:
            return
        self.ticker = ticker if ticker is not None else Ticker(asyncio.get_running_loop())
        if timeout is not None:
            now = self.ticker.loop.time()
            self.deadline = now + timeout
            self.limit = None if cap is None else now + max(cap, timeout)
        self.ticker.add(self)

    def due(self, now: float) -> float:
        """When the watch must next be looked at: its deadline, or sooner to poll its signal."""
        if self.signal is None:
            assert self.deadline is not None
            return self.deadline
        poll = now + SIGNAL_POLL_SECONDS
        return poll if self.deadline is None else min(poll, self.deadline)

    def fire(self, now: float) -> bool:
        """Cancel the task if the deadline passed or the signal was cancelled; whether it did."""
        if self.deadline is not None and now >= self.deadline:
            self.expired = True
            self._cancel("deadline")
            return True
        if self.signal is not None and self.signal.cancelled:
            self._cancel(self.signal.reason or "cancelled")
            return True
        return False

    def _cancel(self, reason: str) -> None:
        if self.task is not None and self.task.cancelling() <= self.cancelling:
            self.task.cancel(reason)

    def restart(self) -> None:
        """Start the deadline again from now (a sign of progress), never past the total cap."""
        if self.timeout is None or self.deadline is None or self.ticker is None:
            return
        # A later deadline needs no new timer: the ticker finds nothing due at the old one and waits on.
        deadline = self.ticker.loop.time() + self.timeout
        self.deadline = deadline if self.limit is None else min(deadline, self.limit)

    def timed_out(self) -> bool:
        """After a cancellation: whether it was this deadline (and not an outer cancellation)."""
        return self.expired and self.task is not None and self.task.uncancel() <= self.cancelling

    def stop(self) -> None:
        """Stop watching."""
        if self.ticker is not None:
            self.ticker.discard(self)

    def __enter__(self) -> CallWatch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
        if kind is not None and issubclass(kind, asyncio.CancelledError) and self.timed_out():
            raise TimeoutError from None


async def bounded(
    operation: Callable[[], Awaitable[T]],
    signal: CancelSignal | None,
    timeout: float | None,
    ticker: Ticker | None = None,
) -> T:
    """``await operation()`` in this task; raise ``TimeoutError`` after ``timeout`` seconds and
    ``asyncio.CancelledError`` once ``signal`` is cancelled (watched by ``ticker`` when given)."""
    if signal is None and timeout is None:
        return await operation()
    with CallWatch(signal, timeout, ticker=ticker):
        return await operation()
