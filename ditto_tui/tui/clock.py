"""The wall clock the UI reads for elapsed times and countdowns (one place, so tests can freeze it)."""

from __future__ import annotations

import time


def now() -> float:
    """Seconds since the epoch, as in ``ExecutionEvent.at``."""
    return time.time()
