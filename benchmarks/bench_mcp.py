"""MCP overhead: INTERACTION.ACT.MCP and registry discovery beside the raw SDK, on one real stdio server.

Both sides use the same bundled demo server (a subprocess, over stdio) in the same run and take turns
call by call, so they share machine conditions:

- invoke: ``runtime.invoke("INTERACTION.ACT.MCP", invoke read_note)`` beside ``session.call_tool`` on the
  same session;
- discovery: ``registry.discover`` of 1000 tools in pages of 100 beside the raw ``list_tools`` cursor loop;
- start-up: from ``open_mcp_servers`` to every server's tools listed, with 8 servers, beside the slowest
  of the same servers started alone (servers start concurrently, so 8 should cost little more than 1;
  on a 2-core machine 8 Python processes also compete for the CPU while they import).

The figures are median wall times; the ratio is the median, over back-to-back pairs, of ditto's time
over the raw SDK's (pairs share machine conditions, so a busy machine moves both). Targets: ≤ 1.05× for
invoke and discovery, ≤ 1.2× for start-up.

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

TARGET_RATIO = 1.05
STARTUP_TARGET_RATIO = 1.2
STARTUP_SERVERS = 8
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


def _row(name: str, pairs: tuple[list[float], list[float]], target: float = TARGET_RATIO) -> dict[str, Any]:
    raw, ours = pairs
    ratio = statistics.median(mine / theirs for theirs, mine in zip(raw, ours, strict=True))
    return {
        "measure": name,
        "raw_ms": round(statistics.median(raw) * 1000, 3),
        "ditto_ms": round(statistics.median(ours) * 1000, 3),
        "ratio": round(ratio, 3),
        "target": target,
        "met": ratio <= target,
    }


async def _startup(root: Path, repetitions: int) -> tuple[list[float], list[float]]:
    """Seconds from open to all tools listed: the slowest of 8 servers alone, then all 8 together."""
    from ditto_tui.demo.servers import demo_server_entry
    from ditto_tui.interaction import open_mcp_servers
    from ditto_tui.sandbox import Sandbox, SandboxPermissions

    names = [f"demo{n}" for n in range(STARTUP_SERVERS)]
    entries = {name: demo_server_entry(root / name) for name in names}
    sandbox = Sandbox(SandboxPermissions(mcp=names), workspace=root)

    async def listed(chosen: list[str]) -> float:
        start = time.perf_counter()
        async with open_mcp_servers(
            {name: entries[name] for name in chosen}, log_dir=root / "logs"
        ) as registry:
            await registry.discover(None, sandbox)
            return time.perf_counter() - start

    alone: list[float] = []
    together: list[float] = []
    await listed(names[:1])  # warm the file cache
    for _ in range(repetitions):
        alone.append(max([await listed([name]) for name in names]))
        together.append(await listed(names))
    return alone, together


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
    startup = await _startup(root, max(2, int(5 * scale)))
    rows = [
        _row("invoke read_note (ms)", invoke),
        _row(f"discover {CATALOGUE + 5} tools, pages of 100 (ms)", listing),
        _row(f"start {STARTUP_SERVERS} servers, all tools listed (ms)", startup, STARTUP_TARGET_RATIO),
    ]
    return {
        "python": platform.python_version(),
        "target_ratio": TARGET_RATIO,
        "verdict": "met" if all(row["met"] for row in rows) else "NOT met",
        "results": rows,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"MCP overhead over stdio (median) — Python {report['python']}")
    header = ("measure", "raw SDK / 1", "ditto / 8", "ratio")
    print(f"{header[0]:>42}  {header[1]:>9}  {header[2]:>9}  {header[3]:>9}")
    for row in report["results"]:
        print(f"{row['measure']:>42}  {row['raw_ms']:>9.3f}  {row['ditto_ms']:>9.3f}  {row['ratio']:>8.2f}x")
    targets = f"invoke and discovery ≤ {report['target_ratio']:.2f}x, start-up ≤ {STARTUP_TARGET_RATIO:.1f}x"
    print(f"targets: {targets} — {report['verdict']}")
    print(f"(start-up row: the slowest server started alone, then all {STARTUP_SERVERS} together)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_table, argv)


if __name__ == "__main__":
    sys.exit(main())
