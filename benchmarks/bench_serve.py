"""``ditto-tui serve`` beside the terminal, in one run: the first frame and the keys' round trip.

- **First frame**: a page opened in Debian's Chromium (Playwright), from the page's ``load`` event to
  the websocket frame that draws the Run screen's header, against ``ditto-tui`` started in a
  pseudo-terminal to its first frame (``bench_tui``'s cold start), medians of alternating runs. Target:
  at most 1.5 times the terminal's.
- **Key round trip** over the websocket on loopback: a digit typed into the task box (``["stdin", …]``)
  to the first frame that draws it, 60 keys. Target: p50 at most 30 ms.

    python -m benchmarks.bench_serve [--json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.bench_tui import DITTO_FRAME, DITTO_READY, _ditto_command, cold_start

ROOT = Path(__file__).resolve().parent.parent
TARGET_FRAME_RATIO = 1.5
TARGET_KEY_P50_MS = 30.0
HEADER = "ditto-tui \u2014 "
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def _plain(data: bytes) -> str:
    return _ESCAPES.sub("", data.decode("utf-8", "replace"))


class Serve:
    """A ``ditto-tui serve`` in a folder of its own: its origin and token."""

    def __init__(self, folder: Path) -> None:
        (folder / "home").mkdir(parents=True)
        env = {**os.environ, "DITTO_TUI_HOME": str(folder / "home"), "PYTHONPATH": str(ROOT)}
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

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


async def browser_first_frame(serve: Serve, chromium: str) -> float:
    """Seconds from the page's ``load`` event to the frame that draws the Run screen's header."""
    from playwright.async_api import async_playwright

    seen: list[tuple[float, bytes]] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.on(
                "websocket",
                lambda socket: socket.on(
                    "framereceived",
                    lambda data: seen.append(
                        (time.perf_counter(), data if isinstance(data, bytes) else data.encode())
                    ),
                ),
            )
            await page.goto(serve.url, wait_until="load")
            loaded = time.perf_counter()
            deadline = loaded + 60
            while time.perf_counter() < deadline:
                data = b""
                for at, frame in list(seen):
                    data += frame
                    if HEADER in _plain(data):
                        return at - loaded
                await asyncio.sleep(0.01)
            raise RuntimeError("the served app drew no first frame")
        finally:
            await browser.close()


async def key_round_trips(serve: Serve, keys: int) -> list[float]:
    """Milliseconds from each digit sent over the websocket to the first frame that draws it."""
    import aiohttp

    times: list[float] = []
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        session.cookie_jar.update_cookies({"ditto_tui_session": serve.token})
        url = f"{serve.origin}/ws?width=120&height=36"
        async with session.ws_connect(url, headers={"Origin": serve.origin}) as socket:
            screen = b""
            while DITTO_READY.decode() not in _plain(screen):
                message = await asyncio.wait_for(socket.receive(), 60)
                if message.type == aiohttp.WSMsgType.BINARY:
                    screen += message.data
            await asyncio.sleep(0.5)  # let the first frames settle
            for index in range(keys):
                digit = str(index % 10)
                sent = time.perf_counter()
                await socket.send_str(json.dumps(["stdin", digit]))
                drawn = b""
                while digit not in _plain(drawn):
                    message = await asyncio.wait_for(socket.receive(), 10)
                    if message.type == aiohttp.WSMsgType.BINARY:
                        drawn += message.data
                times.append((time.perf_counter() - sent) * 1000)
                await asyncio.sleep(0.03)
            await socket.send_str(json.dumps(["stdin", "\u0011"]))
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
    return {
        "terminal_first_frame_s": statistics.median(terminal),
        "browser_first_frame_s": statistics.median(browser),
        "key_p50_ms": statistics.median(trips),
        "key_max_ms": max(trips),
    }


def report(figures: dict[str, float]) -> str:
    ratio = figures["browser_first_frame_s"] / figures["terminal_first_frame_s"]
    met = ratio <= TARGET_FRAME_RATIO and figures["key_p50_ms"] <= TARGET_KEY_P50_MS
    return "\n".join(
        [
            f"first frame: in the browser {figures['browser_first_frame_s']:.2f} s after the page loaded, "
            f"in a terminal {figures['terminal_first_frame_s']:.2f} s after the start ({ratio:.2f}x)",
            f"key round trip over the websocket: p50 {figures['key_p50_ms']:.1f} ms, "
            f"max {figures['key_max_ms']:.1f} ms",
            f"targets: first frame <= {TARGET_FRAME_RATIO}x the terminal's, key p50 <= "
            f"{TARGET_KEY_P50_MS:.0f} ms — {'met' if met else 'NOT met'}",
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
