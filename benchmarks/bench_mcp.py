"""MCP overhead: INTERACTION.ACT.MCP and registry discovery beside the raw SDK, on one real stdio server.

Both sides use the same bundled demo server (a subprocess, over stdio) in the same run and take turns
call by call, so they share machine conditions:

- invoke: ``runtime.invoke("INTERACTION.ACT.MCP", invoke read_note)`` beside ``session.call_tool`` on the
  same session;
- discovery: ``registry.discover`` of 1000 tools in pages of 100 beside the raw ``list_tools`` cursor loop.

The figures are median wall times; the ratio is the median, over back-to-back pairs, of ditto's time
over the raw SDK's (pairs share machine conditions, so a busy machine moves both). Target ≤ 1.1×.

    python -m benchmarks.bench_mcp [--json] [--quick]
"""

from __future__ import annotations

import gc
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.cli import run_benchmark

TARGET_RATIO = 1.1
CATALOGUE = 995  # plus the demo's five notes tools: 1000 tools, ten pages

Timed = Callable[[], Awaitable[Any]]


async def _pairs(raw: Timed, ours: Timed, repetitions: int) -> tuple[list[float], list[float]]:
    """Seconds of ``raw`` and ``ours``, run back to back ``repetitions`` times after a warm-up."""
    for _ in range(max(3, repetitions // 10)):
        await raw()
        await ours()
    gc.collect()
    samples: dict[str, list[float]] = {"raw": [], "ours": []}
    for _ in range(repetitions):
        for name, run in (("raw", raw), ("ours", ours)):
            start = time.perf_counter()
            await run()
            samples[name].append(time.perf_counter() - start)
    return samples["raw"], samples["ours"]


def _row(name: str, pairs: tuple[list[float], list[float]]) -> dict[str, Any]:
    raw, ours = pairs
    ratio = statistics.median(mine / theirs for theirs, mine in zip(raw, ours, strict=True))
    return {
        "measure": name,
        "raw_ms": round(statistics.median(raw) * 1000, 3),
        "ditto_ms": round(statistics.median(ours) * 1000, 3),
        "ratio": round(ratio, 3),
        "met": ratio <= TARGET_RATIO,
    }


async def benchmark(scale: float) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    from ditto_tui.demo.servers import demo_server_entry
    from ditto_tui.interaction import create_interaction_worker, open_mcp_servers
    from ditto_tui.interaction.mcp import SessionClient
    from ditto_tui.runtime import create_ditto
    from ditto_tui.sandbox import Sandbox, SandboxPermissions

    root = Path(tempfile.mkdtemp(prefix="ditto-bench-mcp-"))
    servers = {"demo": demo_server_entry(root / "notes", catalogue=CATALOGUE)}
    async with open_mcp_servers(servers, log_dir=root / "logs") as registry:
        client = registry.get("demo")
        assert isinstance(client, SessionClient) and isinstance(client.session, ClientSession)
        session = client.session
        sandbox = Sandbox(SandboxPermissions(mcp=["demo"]), workspace=root)
        await registry.discover("demo", sandbox)
        worker = create_interaction_worker(mcp=registry)
        async with create_ditto(sandbox={"mcp": ["demo"]}, workspace=root, workers=[worker]) as runtime:
            request = {
                "operation": "invoke",
                "server": "demo",
                "call": {"id": "bench", "name": "read_note", "arguments": {"name": "welcome"}},
            }

            async def raw_call() -> Any:
                return await session.call_tool("read_note", {"name": "welcome"})

            async def act_mcp() -> Any:
                response = await runtime.invoke("INTERACTION.ACT.MCP", request)
                assert response.result.status == "success"
                return response

            async def raw_listing() -> int:
                cursor: str | None = None
                count = 0
                while True:
                    params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
                    page = await session.list_tools(params=params)
                    count += len(page.tools)
                    if page.next_cursor is None:
                        return count
                    cursor = page.next_cursor

            async def discovery() -> int:
                return len(await registry.discover("demo", sandbox))

            assert await raw_listing() == await discovery() == CATALOGUE + 5
            invoke = await _pairs(raw_call, act_mcp, max(20, int(1000 * scale)))
            listing = await _pairs(raw_listing, discovery, max(5, int(60 * scale)))
    rows = [
        _row("invoke read_note (ms)", invoke),
        _row(f"discover {CATALOGUE + 5} tools, pages of 100 (ms)", listing),
    ]
    return {
        "python": platform.python_version(),
        "target_ratio": TARGET_RATIO,
        "verdict": "met" if all(row["met"] for row in rows) else "NOT met",
        "results": rows,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"MCP overhead over stdio (median) — Python {report['python']}")
    header = ("measure", "raw SDK", "ditto", "ditto/raw")
    print(f"{header[0]:>42}  {header[1]:>9}  {header[2]:>9}  {header[3]:>9}")
    for row in report["results"]:
        print(f"{row['measure']:>42}  {row['raw_ms']:>9.3f}  {row['ditto_ms']:>9.3f}  {row['ratio']:>8.2f}x")
    print(f"target: ditto/raw ≤ {report['target_ratio']:.1f}x on both — {report['verdict']}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_table, argv)


if __name__ == "__main__":
    sys.exit(main())
