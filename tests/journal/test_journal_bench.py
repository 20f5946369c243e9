"""The journal benchmark runs and reports every figure (a small scale: a smoke test, not a measurement)."""

from __future__ import annotations

from benchmarks.bench_journal import benchmark


async def test_the_journal_benchmark_reports_its_figures() -> None:
    report = await benchmark(0.02)
    assert report["events_per_run"] == 102
    assert report["write_us_per_event"] > 0 and report["approval_resolved_us"] > 0
    assert set(report["run_us"]) == {"plain", "events", "journal"}
    assert report["targets"]["write_verdict"] in ("met", "NOT met")
