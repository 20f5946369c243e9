"""The MCP gateway beside direct calls, in one run, over stdio with the SDK's client on both sides.

- **Allowed call**: ``call_tool("list_notes")`` (a rule allows it: no one is asked) on
  a session with the bundled demo server, against the same call through ``ditto-tui mcp serve`` fronting
  the same server (the gate, the run's node, the journal, a second stdio hop). Calls alternate, the
  ratio is the median of back-to-back pairs. Target: at most 1.2 times the direct call.
- For context (no target), the same call through a bare pass-through proxy (``null_proxy.py``: the
  SDK's server and client with nothing between): the cost of the extra hop alone, the floor under the
  gateway's figure.
- **Listing 8 servers**: ``list_tools`` through a gateway fronting 8 demo servers (listed concurrently),
  against ``list_tools`` of each of the same 8 servers alone, the slowest of them. Target: at most 1.2
  times the slowest.

    python -m benchmarks.bench_gateway [--json] [--quick]
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_mcp import _pairs, _row
from benchmarks.cli import run_benchmark

TARGET_CALL_RATIO = 1.2
TARGET_LISTING_RATIO = 1.2
SERVERS = 8


@contextlib.asynccontextmanager
async def session(command: str, args: list[str], env: dict[str, str], log: Path) -> AsyncIterator[Any]:
    from mcp import ClientSession, types
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    with open(log, "a", encoding="utf-8") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name="bench", version="1")) as client,
        ):
            await client.initialize()
            yield client


def _config(folder: Path, count: int) -> Path:
    from ditto_tui.demo.servers import demo_server_args

    names = [f"notes{n}" for n in range(count)]
    servers = {
        name: {"command": sys.executable, "args": demo_server_args(folder / name / "notes")} for name in names
    }
    config = folder / f"gateway-{count}.yaml"
    allowed = {"rules": [{"mcp": f"{name}:list_notes", "decision": "allow"} for name in names]}
    config.write_text(
        json.dumps({"sandbox": {"mcp": names}, "mcp": {"servers": servers}, "approval": allowed}),
        encoding="utf-8",
    )
    return config


async def benchmark(scale: float) -> dict[str, Any]:
    from ditto_tui.demo.servers import demo_server_args

    repetitions = max(20, int(300 * scale))
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        (folder / "project").mkdir()
        env = {**os.environ, "DITTO_TUI_HOME": str(folder / "home")}
        log = folder / "stderr.log"
        gateway_args = ["-m", "ditto_tui", "--workspace", str(folder / "project"), "--config"]
        demo = demo_server_args(folder / "direct" / "notes")
        proxy = [str(Path(__file__).with_name("null_proxy.py")), sys.executable, *demo]
        async with (
            session(sys.executable, demo, env, log) as direct,
            session(
                sys.executable, [*gateway_args, str(_config(folder, 1)), "mcp", "serve"], env, log
            ) as gated,
            session(sys.executable, proxy, env, log) as hop,
        ):

            async def raw_call() -> Any:
                return await direct.call_tool("list_notes", {})

            async def gated_call() -> Any:
                return await gated.call_tool("list_notes", {})

            async def hop_call() -> Any:
                return await hop.call_tool("list_notes", {})

            first = await gated_call()
            assert not first.is_error, first.content
            calls = _row(
                "allowed call: direct vs through the gateway",
                await _pairs(raw_call, gated_call, repetitions),
                TARGET_CALL_RATIO,
            )
            floor = _row(
                "  for context: direct vs a bare pass-through proxy",
                await _pairs(raw_call, hop_call, repetitions),
                None,
            )
        listing_repetitions = max(10, int(60 * scale))
        many = _config(folder, SERVERS)
        async with contextlib.AsyncExitStack() as stack:
            singles = [
                await stack.enter_async_context(
                    session(sys.executable, demo_server_args(folder / f"single{n}" / "notes"), env, log)
                )
                for n in range(SERVERS)
            ]
            gated = await stack.enter_async_context(
                session(sys.executable, [*gateway_args, str(many), "mcp", "serve"], env, log)
            )
            slowest: list[float] = []
            through: list[float] = []
            for _ in range(3):
                await gated.list_tools()
                for single in singles:
                    await single.list_tools()
            for _ in range(listing_repetitions):
                times = []
                for single in singles:
                    start = time.perf_counter()
                    await single.list_tools()
                    times.append(time.perf_counter() - start)
                slowest.append(max(times))
                start = time.perf_counter()
                listed = await gated.list_tools()
                through.append(time.perf_counter() - start)
            assert len(listed.tools) == 5 * SERVERS
            listing = _row(
                f"list_tools: slowest of {SERVERS} servers alone vs {SERVERS} through the gateway",
                (slowest, through),
                TARGET_LISTING_RATIO,
            )
    rows = [calls, floor, listing]
    return {
        "python": platform.python_version(),
        "rows": rows,
        "verdict": "all targets met" if all(row["met"] for row in rows) else "targets NOT met",
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"MCP gateway over stdio (median) — Python {report['python']}")
    print(f"{'measure':>72}  {'direct ms':>9}  {'gateway':>9}  {'ratio':>9}")
    for row in report["rows"]:
        print(f"{row['measure']:>72}  {row['raw_ms']:>9.3f}  {row['ditto_ms']:>9.3f}  {row['ratio']:>8.2f}x")
    print("(the indented row is for context and has no target: one more stdio hop, nothing in between)")
    print(f"targets: call ≤ {TARGET_CALL_RATIO}×, listing ≤ {TARGET_LISTING_RATIO}× — {report['verdict']}")


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(__doc__, benchmark, print_table, argv)


if __name__ == "__main__":
    sys.exit(main())
