"""``make bench``'s command benchmark runs and meets its targets (a few calls, so it stays quick)."""

from __future__ import annotations

from benchmarks.bench_commands import TARGET_RSS_GROWTH, benchmark


def test_o01_the_benchmark_meets_its_targets() -> None:
    report = benchmark(3)
    assert report["all_success"] and report["exit_codes"] == [-9] and report["stdout_truncated"]
    assert report["surviving_processes"] == 0
    assert report["time_target_met"] and report["peak_rss_growth_bytes"] < TARGET_RSS_GROWTH
