"""A call's cancel signal: a task's cancellation noticed by waiters within one poll, whatever their number."""

from __future__ import annotations

import asyncio
import time

from ditto_tui.signal import TASK_POLL_SECONDS, CancelSignal


def _timers() -> int:
    return len(asyncio.get_running_loop()._scheduled)  # type: ignore[attr-defined]


async def test_a_thousand_calls_waiting_on_their_tasks_cost_the_loop_one_timer() -> None:
    """Each signal bound to a task is looked at by one poller of the loop: a thousand approvals waiting
    (each a bound signal) schedule one wake-up per tick, not a thousand."""
    started = asyncio.Event()
    count = 0

    async def call() -> None:
        nonlocal count
        signal = CancelSignal()
        signal.bind_task(asyncio.current_task())
        count += 1
        if count == 1000:
            started.set()
        await signal.wait()

    before = _timers()
    tasks = [asyncio.ensure_future(call()) for _ in range(1000)]
    await started.wait()
    await asyncio.sleep(TASK_POLL_SECONDS * 3)
    assert _timers() - before <= 1
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(TASK_POLL_SECONDS * 2)
    assert _timers() == before  # nobody waits: the poller stops


async def test_a_waiter_in_another_task_hears_the_bound_tasks_cancellation_within_a_poll() -> None:
    """A watcher (not the bound task) waiting on the signal returns once the bound task is being
    cancelled; the others, bound to tasks still running, keep waiting."""
    hold = asyncio.Event()
    caller = asyncio.ensure_future(hold.wait())
    other = asyncio.ensure_future(hold.wait())
    signal, untouched = CancelSignal(), CancelSignal()
    signal.bind_task(caller)
    untouched.bind_task(other)
    watcher = asyncio.ensure_future(signal.wait())
    bystander = asyncio.ensure_future(untouched.wait())
    await asyncio.sleep(TASK_POLL_SECONDS * 2)
    assert not watcher.done()
    caller.cancel()
    began = time.monotonic()
    await asyncio.wait_for(watcher, 1.0)
    assert time.monotonic() - began < TASK_POLL_SECONDS * 10
    assert not bystander.done()
    other.cancel()
    await asyncio.wait_for(bystander, 1.0)
    await asyncio.gather(caller, other, return_exceptions=True)


def test_a_loop_that_is_gone_takes_its_poller_with_it() -> None:
    """Each ``asyncio.run`` has a loop of its own; once it is closed and dropped, nothing of the signal
    machinery keeps it (a long-lived process runs many)."""
    import gc
    import weakref

    from ditto_tui.signal import _Poller

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one_wait() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        signal = CancelSignal()
        signal.bind_task(asyncio.current_task())
        waiter = asyncio.ensure_future(signal.wait())
        await asyncio.sleep(TASK_POLL_SECONDS * 2)
        signal.cancel()
        await waiter

    for _ in range(3):
        asyncio.run(one_wait())
    gc.collect()
    assert all(loop() is None for loop in loops)  # a poller holding its loop would keep it alive
    assert not any(loop is not None and loop in _Poller._of_loop for loop in (ref() for ref in loops))
