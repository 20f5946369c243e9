"""``ditto-tui serve`` beside the terminal, in one run: the first frame and the keys' round trip.

- **First frame**: a page opened in Debian's Chromium (Playwright), from the page's ``load`` event to
  the websocket frame that draws the Run screen's header, against ``ditto-tui`` started in a
  pseudo-terminal to its first frame (``bench_tui``'s cold start), medians of alternating runs. Target:
  at most 1.5 times the terminal's.
- **Key round trip** over the websocket on loopback: a digit typed into the task box (``["stdin", …]``)
  to the first frame that draws it, 60 keys. Target: p50 at most 30 ms.
- **Flood**: a graph making 20,000 calls (``flood_graph.py``, 40,000 events) as the trusted workspace's
  default graph, from the first frame to the Run screen saying ``finished``, in a served tab against
  the same in a terminal. Target: at most 1.5 times the terminal's.

    python -m benchmarks.bench_serve [--json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_tui import DITTO_FRAME, DITTO_READY, Seen, _ditto_command, cold_start
from benchmarks.flood_graph import CALLS

ROOT = Path(__file__).resolve().parent.parent
TARGET_FRAME_RATIO = 1.5
TARGET_KEY_P50_MS = 30.0
TARGET_FLOOD_RATIO = 1.5
FINISHED = " finished "
QUIT = "\u0011"
"""ctrl+q, as a tab sends it: the app quits."""
FLOOD = ROOT / "benchmarks" / "flood_graph.py"
FINISHED_MARK = FINISHED.encode()


def flood_workspace(folder: Path) -> Path:
    """A trusted folder whose default graph is the flood; returns its home."""
    (folder / "graphs").mkdir(parents=True)
    (folder / "home").mkdir()
    shutil.copy(FLOOD, folder / "graphs" / "react_agent.py")
    env = {**os.environ, "DITTO_TUI_HOME": str(folder / "home"), "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "ditto_tui", "trust", "."],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    return folder / "home"


def terminal_flood(folder: Path) -> float:
    """Seconds from ditto-tui's first frame in a pseudo-terminal to its Run screen saying finished."""
    home = flood_workspace(folder)
    run = cold_start(_ditto_command(), DITTO_FRAME, FINISHED_MARK, home, folder)
    if run.ready_s is None:
        raise RuntimeError("the flood did not finish in the terminal")
    return run.ready_s - run.frame_s


async def served_flood(serve: Serve) -> float:
    """Seconds from a served tab's first frame to its Run screen saying finished."""
    import aiohttp

    async with serve.socket() as socket:
        seen, framed, first = Seen(), Seen(), None
        while True:
            message = await asyncio.wait_for(socket.receive(), 300)
            if message.type != aiohttp.WSMsgType.BINARY:
                if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    raise RuntimeError("the served tab closed before the flood finished")
                continue
            now = time.perf_counter()
            if first is None and framed.add(message.data, DITTO_FRAME):
                first = now
            if first is not None and seen.add(message.data, FINISHED_MARK):
                await socket.send_str(json.dumps(["stdin", QUIT]))
                return now - first


class Serve:
    """A ``ditto-tui serve`` in a folder of its own: its origin and token."""

    def __init__(self, folder: Path, home: Path | None = None) -> None:
        if home is None:
            home = folder / "home"
            home.mkdir(parents=True)
        env = {**os.environ, "DITTO_TUI_HOME": str(home), "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ditto_tui", "serve", "--port", "0"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        found = re.search(r"open (http://[^/\s]+)/\?token=(\S+)", self.process.stdout.readline())
        if found is None:
            self.process.kill()
            raise RuntimeError("ditto-tui serve printed no address")
        self.origin, self.token = found.group(1), found.group(2)

    @property
    def url(self) -> str:
        return f"{self.origin}/?token={self.token}"

    @contextlib.asynccontextmanager
    async def socket(self) -> AsyncIterator[Any]:
        """A tab's websocket, as its page opens it (the cookie, the served origin), at 120×36."""
        import aiohttp

        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            session.cookie_jar.update_cookies({"ditto_tui_session": self.token})
            url = f"{self.origin}/ws?width=120&height=36"
            async with session.ws_connect(url, headers={"Origin": self.origin}, max_msg_size=0) as socket:
                yield socket

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


async def browser_first_frame(serve: Serve, chromium: str) -> float:
    """Seconds from the page's ``load`` event to the frame that draws the Run screen's header."""
    from playwright.async_api import async_playwright

    drawn = asyncio.get_running_loop().create_future()
    framed = Seen()

    def received(data: str | bytes) -> None:
        if not drawn.done() and framed.add(data if isinstance(data, bytes) else data.encode(), DITTO_FRAME):
            drawn.set_result(time.perf_counter())

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("websocket", lambda socket: socket.on("framereceived", received))
            await page.goto(serve.url, wait_until="load")
            loaded = time.perf_counter()
            at: float = await asyncio.wait_for(drawn, 60)
            return max(0.0, at - loaded)
        finally:
            await browser.close()


async def key_round_trips(serve: Serve, keys: int) -> list[float]:
    """Milliseconds from each digit sent over the websocket to the first frame that draws it."""
    import aiohttp

    times: list[float] = []
    async with serve.socket() as socket:
        ready = Seen()
        while True:
            message = await asyncio.wait_for(socket.receive(), 60)
            if message.type == aiohttp.WSMsgType.BINARY and ready.add(message.data, DITTO_READY):
                break
        await asyncio.sleep(0.5)  # let the first frames settle
        for index in range(keys):
            digit = str(index % 10)
            sent = time.perf_counter()
            await socket.send_str(json.dumps(["stdin", digit]))
            echoed = Seen()
            while True:
                message = await asyncio.wait_for(socket.receive(), 10)
                if message.type == aiohttp.WSMsgType.BINARY and echoed.add(message.data, digit.encode()):
                    break
            times.append((time.perf_counter() - sent) * 1000)
            await asyncio.sleep(0.03)
        await socket.send_str(json.dumps(["stdin", QUIT]))
    return times


def measure(rounds: int, keys: int) -> dict[str, float]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("bench_serve needs Chromium (apt-get install chromium)")
    terminal: list[float] = []
    browser: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as scratch:
        for turn in range(rounds):
            folder = Path(scratch) / f"terminal-{turn}"
            (folder / "home").mkdir(parents=True)
            terminal.append(cold_start(_ditto_command(), DITTO_FRAME, None, folder / "home", folder).frame_s)
            serve = Serve(Path(scratch) / f"browser-{turn}")
            try:
                browser.append(asyncio.run(browser_first_frame(serve, chromium)))
            finally:
                serve.close()
        serve = Serve(Path(scratch) / "keys")
        try:
            trips = asyncio.run(key_round_trips(serve, keys))
        finally:
            serve.close()
        terminal_floods, served_floods = [], []
        for turn in range(rounds):
            terminal_floods.append(terminal_flood(Path(scratch) / f"flood-terminal-{turn}"))
            folder = Path(scratch) / f"flood-served-{turn}"
            serve = Serve(folder, flood_workspace(folder))
            try:
                served_floods.append(asyncio.run(served_flood(serve)))
            finally:
                serve.close()
    return {
        "terminal_flood_s": statistics.median(terminal_floods),
        "served_flood_s": statistics.median(served_floods),
        "terminal_first_frame_s": statistics.median(terminal),
        "browser_first_frame_s": statistics.median(browser),
        "key_p50_ms": statistics.median(trips),
        "key_max_ms": max(trips),
    }


def report(figures: dict[str, float]) -> str:
    ratio = figures["browser_first_frame_s"] / figures["terminal_first_frame_s"]
    flood = figures["served_flood_s"] / figures["terminal_flood_s"]
    met = (
        ratio <= TARGET_FRAME_RATIO
        and figures["key_p50_ms"] <= TARGET_KEY_P50_MS
        and flood <= TARGET_FLOOD_RATIO
    )
    return "\n".join(
        [
            f"first frame: in the browser {figures['browser_first_frame_s']:.2f} s after the page loaded, "
            f"in a terminal {figures['terminal_first_frame_s']:.2f} s after the start ({ratio:.2f}x)",
            f"key round trip over the websocket: p50 {figures['key_p50_ms']:.1f} ms, "
            f"max {figures['key_max_ms']:.1f} ms",
            f"{CALLS:,} calls drawn to the end: served {figures['served_flood_s']:.2f} s, "
            f"in a terminal {figures['terminal_flood_s']:.2f} s ({flood:.2f}x)",
            f"targets: first frame <= {TARGET_FRAME_RATIO}x the terminal's, key p50 <= "
            f"{TARGET_KEY_P50_MS:.0f} ms, flood <= {TARGET_FLOOD_RATIO}x — {'met' if met else 'NOT met'}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="one round, 20 keys")
    args = parser.parse_args(argv)
    figures = measure(1 if args.quick else 3, 20 if args.quick else 60)
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
