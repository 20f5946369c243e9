"""The idle collector: no automatic full collection while events flow, one when the app is quiet."""

from __future__ import annotations

import gc

import pytest

from ditto_tui.tui import heap
from ditto_tui.tui.heap import IdleCollector


def test_full_collections_wait_for_a_quiet_moment_and_stop_restores_the_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = gc.get_threshold()
    collector = IdleCollector()
    collector.start()
    try:
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**6
        assert gc.get_freeze_count() > 0
        gc.collect(1)  # something promoted into the oldest generation
        collector.busy()
        assert collector.tick() is False  # events just arrived
        monkeypatch.setattr(heap, "IDLE_SECONDS", 0.0)
        assert collector.tick() is True and gc.get_count()[2] == 0
    finally:
        collector.stop()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
