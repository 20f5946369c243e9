"""Cooperative cancellation: the ``signal`` a handler, tool, executor or client watches."""

from __future__ import annotations

import asyncio
import weakref

TASK_POLL_SECONDS = 0.02


class CancelSignal:
    """Tells cooperating code that its call was cancelled.

    ``cancelled`` is true once :meth:`cancel` was called on this signal or a parent, or while a task the
    signal (or a parent) is bound to is being cancelled. ``await wait()`` returns when that happens.
    """

    __slots__ = ("_children", "_event", "_parent", "_reason", "_task", "__weakref__")

    def __init__(self, parent: CancelSignal | None = None) -> None:
        self._event: asyncio.Event | None = None
        self._reason: str | None = None
        self._task: asyncio.Task[object] | None = None
        self._parent = parent
        self._children: weakref.WeakSet[CancelSignal] | None = None
        if parent is not None:
            parent._adopt(self)

    def _adopt(self, child: CancelSignal) -> None:
        if self._reason is not None:
            child.cancel(self._reason)
            return
        if self._children is None:
            self._children = weakref.WeakSet()
        self._children.add(child)

    def bind_task(self, task: asyncio.Task[object] | None) -> None:
        """Report the signal as cancelled while ``task`` is being cancelled."""
        self._task = task

    @property
    def cancelled(self) -> bool:
        """Whether the call this signal belongs to was cancelled."""
        signal: CancelSignal | None = self
        while signal is not None:
            if signal._reason is not None:
                return True
            task = signal._task
            if task is not None and task.cancelling() > 0:
                return True
            signal = signal._parent
        return False

    @property
    def reason(self) -> str | None:
        """Why the signal was cancelled, when :meth:`cancel` gave a reason."""
        return self._reason

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel this signal and every signal derived from it; later calls change nothing."""
        if self._reason is not None:
            return
        self._reason = reason
        if self._event is not None:
            self._event.set()
        for child in list(self._children or ()):
            child.cancel(reason)

    def _bound(self) -> bool:
        signal: CancelSignal | None = self
        while signal is not None:
            if signal._task is not None:
                return True
            signal = signal._parent
        return False

    async def wait(self) -> None:
        """Return once the signal is cancelled.

        :meth:`cancel` wakes waiters at once. A call cancelled through its task (the caller's task was
        cancelled) is noticed within ``TASK_POLL_SECONDS``: handlers run in the caller's task, so that
        task learns of the cancellation before the runtime can set the signal. One poller of the loop
        looks at every such waiter each tick, so a thousand calls waiting cost one wake-up, not a
        thousand.
        """
        if self._event is None:
            self._event = asyncio.Event()
        while not self.cancelled:
            if self._reason is None:
                self._event.clear()  # set by the poller for a task's cancellation that was withdrawn
            if not self._bound():
                await self._event.wait()
                return
            poller = _Poller.of(asyncio.get_running_loop())
            poller.watch(self)
            try:
                await self._event.wait()
            finally:
                poller.unwatch(self)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`asyncio.CancelledError` when the signal is cancelled."""
        if self.cancelled:
            raise asyncio.CancelledError(self._reason or "cancelled")


class _Poller:
    """Wakes, every ``TASK_POLL_SECONDS`` while any wait, the waiters whose signal's task is cancelled.

    One per loop, kept by the loop only weakly: the poller holds no reference to its loop but its timer,
    which it drops when the last waiter leaves, so a loop that is gone takes its poller with it."""

    _of_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Poller] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._waiting: dict[CancelSignal, int] = {}
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _Poller:
        poller = cls._of_loop.get(loop)
        if poller is None:
            poller = cls._of_loop[loop] = cls()
        return poller

    def watch(self, signal: CancelSignal) -> None:
        self._waiting[signal] = self._waiting.get(signal, 0) + 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(TASK_POLL_SECONDS, self._tick)

    def unwatch(self, signal: CancelSignal) -> None:
        count = self._waiting.pop(signal, 0) - 1
        if count > 0:
            self._waiting[signal] = count
        elif not self._waiting and self._timer is not None:
            self._timer.cancel()  # nobody waits: no tick, and no handle holding the loop
            self._timer = None

    def _tick(self) -> None:
        self._timer = None
        for signal in list(self._waiting):
            if signal._event is not None and signal.cancelled:
                signal._event.set()
        if self._waiting:
            self._timer = asyncio.get_running_loop().call_later(TASK_POLL_SECONDS, self._tick)
