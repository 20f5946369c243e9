"""MCP overhead: INTERACTION.ACT.MCP and registry discovery beside the raw SDK, on one real stdio server.

Both sides use the same bundled demo server (a subprocess, over stdio) in the same run and take turns
call by call, so they share machine conditions:

- invoke: ``runtime.invoke("INTERACTION.ACT.MCP", invoke read_note)`` beside ``session.call_tool`` on the
  same session, sending the same request (with a progress token, as ditto's every call does); a second
  row, for context, puts it beside a call with no progress token (the SDK's progress bookkeeping,
  about 0.1 ms a call);
- discovery: ``registry.discover`` of 1000 tools in pages of 100 beside the raw ``list_tools`` cursor loop;
- start-up: from ``open_mcp_servers`` to every server's tools listed, with 8 servers, beside the slowest
  of the same servers started alone. Servers start concurrently, so 8 should cost little more than 1
  when their start-up waits on something else than this machine's CPU (the target row: servers that
  take a second to start). A second row, for context, starts 8 Python demo servers: each spends about
  half a second of CPU importing, so on a 2-core machine 8 of them take about 4 times 1, whatever the
  client does.

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


def _row(
    name: str, pairs: tuple[list[float], list[float]], target: float | None = TARGET_RATIO
) -> dict[str, Any]:
    """One measure; a row with no target is shown for context and does not count in the verdict."""
    raw, ours = pairs
    ratio = statistics.median(mine / theirs for theirs, mine in zip(raw, ours, strict=True))
    return {
        "measure": name,
        "raw_ms": round(statistics.median(raw) * 1000, 3),
        "ditto_ms": round(statistics.median(ours) * 1000, 3),
        "ratio": round(ratio, 3),
        "target": target,
        "met": target is None or ratio <= target,
    }


SLOW_START_SECONDS = 1.0
"""How long each server of the latency-bound start-up row takes to start (``slow_start_server.py``)."""


def _slow_start_entry(_folder: Path) -> dict[str, Any]:
    script = Path(__file__).with_name("slow_start_server.py")
    return {"command": sys.executable, "args": [str(script), str(SLOW_START_SECONDS)]}


def _demo_entry(folder: Path) -> dict[str, Any]:
    from ditto_tui.demo.servers import demo_server_entry

    return demo_server_entry(folder)


async def _startup(
    root: Path, repetitions: int, entry: Callable[[Path], dict[str, Any]]
) -> tuple[list[float], list[float]]:
    """Seconds from open to all tools listed: the slowest of 8 servers alone, then all 8 together."""
    from ditto_tui.interaction import open_mcp_servers
    from ditto_tui.sandbox import Sandbox, SandboxPermissions

    names = [f"server{n}" for n in range(STARTUP_SERVERS)]
    entries = {name: entry(root / name) for name in names}
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

            async def progressed(progress: float, total: float | None, message: str | None) -> None:
                return None

            async def raw_call() -> Any:
                # The request ditto sends: every call carries a progress token.
                return await session.call_tool("read_note", {"name": "welcome"}, progress_callback=progressed)

            async def bare_call() -> Any:
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
            bare = await _pairs(bare_call, act_mcp, max(20, int(1000 * scale)))
            listing = await _pairs(raw_listing, discovery, max(5, int(60 * scale)))
    waiting = await _startup(root, max(2, int(5 * scale)), _slow_start_entry)
    busy = await _startup(root, max(2, int(5 * scale)), _demo_entry)
    rows = [
        _row("invoke read_note (ms)", invoke),
        _row("  the same, raw SDK with no progress token", bare, None),
        _row(f"discover {CATALOGUE + 5} tools, pages of 100 (ms)", listing),
        _row(
            f"start {STARTUP_SERVERS} servers, {SLOW_START_SECONDS:g} s each, tools listed",
            waiting,
            STARTUP_TARGET_RATIO,
        ),
        _row(f"  the same, {STARTUP_SERVERS} Python demo servers (CPU-bound)", busy, None),
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
    print(f"(start-up rows: the slowest server started alone, then all {STARTUP_SERVERS} together;")
    print(" indented rows are for context and have no target)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    return run_benchmark(__doc__, benchmark, print_table, argv)


if __name__ == "__main__":
    sys.exit(main())
