"""A capped command: the ``cat`` tool on a 2 GiB sparse file, timed, with this process's peak memory.

The tool runs the real ``cat`` through the local executor, which kills the command's process group as
soon as stdout passes the 64 KiB cap. Reported: the median and worst wall time of one call, the child's
exit status (``-9``: killed at the cap, not run to the end of the file), whether any ``cat`` outlived
its call, and how far this process's peak resident memory (``VmHWM``) rose above its resident memory
before the calls. The peak is reset through ``/proc/self/clear_refs`` where the kernel allows it.

    python -m benchmarks.bench_commands [--json] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ditto_tui.interaction import create_interaction_worker, create_read_only_command_tools
from ditto_tui.runtime import create_ditto
from ditto_tui.sandbox import create_local_sandbox_executor

SIZE = 2 * 1024**3
TARGET_SECONDS = 1.0
TARGET_RSS_GROWTH = 10 * 1024 * 1024


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise LookupError(field)


def _reset_peak() -> bool:
    """Make VmHWM start again from the current resident size (Linux 4.0+, own process)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def _survivors(marker: str) -> list[int]:
    """Processes whose command line still names the benchmark's file."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


async def _calls(root: Path, name: str, runs: int) -> tuple[list[float], list[Any]]:
    tools = create_read_only_command_tools()
    async with create_ditto(
        sandbox={"tools": ["cat"], "execute": True},
        sandbox_executor=create_local_sandbox_executor(root),
        workers=[create_interaction_worker(tools=tools)],
        workspace=root,
    ) as runtime:
        call = {"id": "warm-up", "name": "cat", "arguments": {"path": name}}
        await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        times, results = [], []
        for index in range(runs):
            call = {"id": f"cat-{index}", "name": "cat", "arguments": {"path": name}}
            started = time.perf_counter()
            results.append(await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call}))
            times.append(time.perf_counter() - started)
        return times, results


def benchmark(runs: int) -> dict[str, Any]:
    """Run the calls in a fresh workspace and collect the figures."""
    with tempfile.TemporaryDirectory(prefix="ditto-bench-") as directory:
        root = Path(directory)
        name = f"sparse-{os.getpid()}"
        with open(root / name, "wb") as big:
            big.truncate(SIZE)
        # Warm up imports and the event loop first, so the peak measures the calls, not start-up.
        asyncio.run(_calls(root, name, 1))
        baseline = _status_kib("VmRSS") * 1024
        maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        reset = _reset_peak()
        hwm_before = _status_kib("VmHWM") * 1024
        times, results = asyncio.run(_calls(root, name, runs))
        peak = _status_kib("VmHWM") * 1024
        survivors = _survivors(name)
    growth = peak - (baseline if reset else hwm_before)
    structured = [result.structured_content for result in results]
    return {
        "file_bytes": SIZE,
        "runs": runs,
        "median_seconds": statistics.median(times),
        "max_seconds": max(times),
        "all_success": all(result.status == "success" for result in results),
        "exit_codes": sorted({item["exitCode"] for item in structured}),
        "stdout_bytes": max(len(item["stdout"].encode()) for item in structured),
        "stdout_truncated": all(item["truncated"]["stdout"]["bytes"] for item in structured),
        "surviving_processes": len(survivors),
        "peak_reset": reset,
        "rss_before_bytes": baseline,
        "peak_rss_growth_bytes": growth,
        "ru_maxrss_growth_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - maxrss_before,
        "time_target_met": max(times) < TARGET_SECONDS,
        "memory_target_met": growth < TARGET_RSS_GROWTH,
    }


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def _print(report: dict[str, Any]) -> None:
    mib = 1024 * 1024
    gib = report["file_bytes"] // 1024**3
    median, worst = report["median_seconds"] * 1000, report["max_seconds"] * 1000
    print(f"cat of a {gib} GiB sparse file through the cat tool, {report['runs']} runs")
    print(f"  wall time per call: median {median:.1f} ms, max {worst:.1f} ms")
    print(
        f"  child exit status {report['exit_codes']} (-9: killed at the cap), stdout kept "
        f"{report['stdout_bytes']} bytes, truncated={report['stdout_truncated']}, "
        f"processes left behind: {report['surviving_processes']}"
    )
    method = "VmHWM after clear_refs" if report["peak_reset"] else "VmHWM before/after (no reset)"
    growth, before = report["peak_rss_growth_bytes"] / mib, report["rss_before_bytes"] / mib
    maxrss = report["ru_maxrss_growth_bytes"] / mib
    print(
        f"  peak RSS growth: {growth:.2f} MiB ({method}; resident before {before:.1f} MiB; "
        f"ru_maxrss growth {maxrss:.2f} MiB)"
    )
    print(
        f"target: each call < {TARGET_SECONDS:.0f} s — {_verdict(report['time_target_met'])}; "
        f"peak RSS growth < {TARGET_RSS_GROWTH // mib} MiB — {_verdict(report['memory_target_met'])}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--runs", type=int, default=20, help="calls to time (default 20)")
    args = parser.parse_args(argv)
    report = benchmark(max(1, args.runs))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    healthy = report["all_success"] and report["exit_codes"] == [-9] and not report["surviving_processes"]
    return 0 if healthy and report["time_target_met"] and report["memory_target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
