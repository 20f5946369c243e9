"""One timer per call that ends it on its deadline or when its cancel signal fires."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ditto_tui.signal import CancelSignal

T = TypeVar("T")

SIGNAL_POLL_SECONDS = 0.02
"""How often a running call checks its cancel signal (the runtime's own polling interval)."""


class CallWatch:
    """Cancels the current task when ``signal`` is cancelled or ``timeout`` seconds pass, until :meth:`stop`.

    Awaited code sees an ordinary cancellation (the MCP SDK then tells the server with
    ``notifications/cancelled``). The signal is polled by a timer, not watched by a task, so a call that
    ends quickly costs one timer; ``expired`` tells a deadline from any other cancellation.
    """

    def __init__(self, signal: CancelSignal | None, timeout: float | None, cap: float | None = None) -> None:
        if signal is not None:
            signal.raise_if_cancelled()
        self.signal = signal
        self.task = asyncio.current_task()
        self.loop = asyncio.get_running_loop()
        self.timeout = timeout
        now = self.loop.time()
        self.deadline = None if timeout is None else now + timeout
        self.limit = None if cap is None or timeout is None else now + max(cap, timeout)
        self.cancelling = self.task.cancelling() if self.task is not None else 0
        self.expired = False
        self.handle = self.loop.call_at(self._next(), self._check)

    def _next(self) -> float:
        if self.signal is None:
            assert self.deadline is not None
            return self.deadline
        poll = self.loop.time() + SIGNAL_POLL_SECONDS
        return poll if self.deadline is None else min(poll, self.deadline)

    def _check(self) -> None:
        if self.deadline is not None and self.loop.time() >= self.deadline:
            self.expired = True
            self._cancel("deadline")
        elif self.signal is not None and self.signal.cancelled:
            self._cancel(self.signal.reason or "cancelled")
        else:
            self.handle = self.loop.call_at(self._next(), self._check)

    def _cancel(self, reason: str) -> None:
        if self.task is not None and self.task.cancelling() <= self.cancelling:
            self.task.cancel(reason)

    def restart(self) -> None:
        """Start the deadline again from now (a sign of progress), never past the total cap."""
        if self.timeout is None or self.deadline is None:
            return
        deadline = self.loop.time() + self.timeout
        self.deadline = deadline if self.limit is None else min(deadline, self.limit)
        if self.signal is None:
            self.handle.cancel()
            self.handle = self.loop.call_at(self._next(), self._check)

    def timed_out(self) -> bool:
        """After a cancellation: whether it was this deadline (and not an outer cancellation)."""
        return self.expired and self.task is not None and self.task.uncancel() <= self.cancelling

    def stop(self) -> None:
        """Stop watching."""
        self.handle.cancel()


async def bounded(
    operation: Callable[[], Awaitable[T]],
    signal: CancelSignal | None,
    timeout: float | None,
    *,
    cap: float | None = None,
    watching: Callable[[CallWatch], None] | None = None,
) -> T:
    """``await operation()`` in this task; raise ``TimeoutError`` after ``timeout`` seconds and
    ``asyncio.CancelledError`` once ``signal`` is cancelled.

    ``watching`` is given the call's :class:`CallWatch` before the operation starts, so progress can
    :meth:`~CallWatch.restart` the deadline; ``cap`` bounds the whole call however often it restarts.
    """
    if signal is None and timeout is None:
        return await operation()
    watch = CallWatch(signal, timeout, cap)
    if watching is not None:
        watching(watch)
    try:
        return await operation()
    except asyncio.CancelledError:
        if watch.timed_out():
            raise TimeoutError from None
        raise
    finally:
        watch.stop()
