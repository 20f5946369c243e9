"""Garbage collection that stays out of the way: no full collection in the middle of an event flood.

A run keeps every event it shows, so the heap grows with the run, and a full (generation 2)
collection scans all of it: with 40,000 events that is a pause of a quarter of a second, long
enough to swallow key presses. The app therefore freezes what start-up allocated (``gc.freeze``: it
lives as long as the app), turns automatic full collections off, and runs them itself when no events
have arrived for :data:`IDLE_SECONDS` (or at least every :data:`MAX_DEFER_SECONDS`). Young
collections run as usual. :meth:`IdleCollector.stop` restores everything.
"""

from __future__ import annotations

import gc
import time

IDLE_SECONDS = 2.0
MAX_DEFER_SECONDS = 60.0
_NEVER = 1 << 30


class IdleCollector:
    """Defers full collections to quiet moments; :meth:`busy` marks activity, :meth:`tick` decides."""

    def __init__(self) -> None:
        self._thresholds = gc.get_threshold()
        self._busy_at = 0.0
        self._collected_at = time.monotonic()
        self._running = False

    def start(self) -> None:
        """Freeze the start-up heap and stop automatic full collections."""
        if self._running:
            return
        self._running = True
        gc.freeze()
        young, middle, _old = self._thresholds
        gc.set_threshold(young, middle, _NEVER)

    def busy(self) -> None:
        """Events arrived: hold off the next full collection."""
        self._busy_at = time.monotonic()

    def tick(self) -> bool:
        """Collect fully if the app has been idle long enough and there is something to collect."""
        now = time.monotonic()
        idle = now - self._busy_at >= IDLE_SECONDS
        overdue = now - self._collected_at >= MAX_DEFER_SECONDS
        if not self._running or not (idle or overdue) or gc.get_count()[2] == 0:
            return False
        gc.collect()
        self._collected_at = now
        return True

    def stop(self) -> None:
        """Restore the collector as it was, frozen objects included."""
        if self._running:
            self._running = False
            gc.set_threshold(*self._thresholds)
            gc.unfreeze()
