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
        task learns of the cancellation before the runtime can set the signal.
        """
        if self._event is None:
            self._event = asyncio.Event()
        while not self.cancelled:
            if not self._bound():
                await self._event.wait()
                return
            try:
                async with asyncio.timeout(TASK_POLL_SECONDS):
                    await self._event.wait()
            except TimeoutError:
                continue

    def raise_if_cancelled(self) -> None:
        """Raise :class:`asyncio.CancelledError` when the signal is cancelled."""
        if self.cancelled:
            raise asyncio.CancelledError(self._reason or "cancelled")
