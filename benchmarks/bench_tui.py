"""The UI under an event flood, beside bare Textual: time to render everything, key latency, cold start.

Headless (``App.run_test``, 120×36), all in one run:

- **Run screen**: 20,000 tool calls (each a ``node_started`` and a ``node_finished`` event, 40,000
  events) fed to the bridge's runtime subscriber as fast as a runtime could emit them; timed until the
  timeline has drawn its last row.
- **RichLog, one line per message** and **RichLog, 100 lines per message**: a bare Textual ``RichLog``
  fed one line per tool call.
- In each, a key press every 50 ms during the flood (``v``, the Run screen's raw/normalised switch;
  ``up`` in the log); latency is the time from the key event to its action running.
- **Cold start**: ``ditto-tui`` (the installed command, on the default graph, in a new empty folder)
  against a Textual hello-world script importing nothing else, each started in a fresh pseudo-terminal
  of 120×36, timed until its first frame has reached the terminal; and until ditto-tui's Run screen
  is laid out in full (its task box waiting for the task). Medians of alternating runs.

    python -m benchmarks.bench_tui [--json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import RichLog

from ditto_tui.config import RuntimeConfig
from ditto_tui.contracts import ExternalResult
from ditto_tui.program import Program
from ditto_tui.runtime import ExecutionEvent, NodeFinished, NodeInfo, NodeStarted, RunStarted, graph
from ditto_tui.tui.bridge import RunBridge, RunSpec
from ditto_tui.tui.heap import IdleCollector
from ditto_tui.tui.screens.run import RunScreen

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 36)
CALLS = 20_000
CHUNK = 200
KEY_INTERVAL = 0.05
TARGET_RENDER_S = 2.0
TARGET_P50_MS = 50.0
TARGET_MAX_MS = 250.0
TARGET_COLD_RATIO = 1.5
GIVE_UP_S = 120.0


@dataclass(frozen=True, kw_only=True)
class Flood:
    """One flood: how long until everything was drawn, and how fast key presses were answered."""

    name: str
    items: int
    render_s: float
    keys: int
    key_p50_ms: float
    key_max_ms: float


# --- what flows in ------------------------------------------------------------------------------


def tool_call_events(calls: int) -> Iterator[list[ExecutionEvent]]:
    """A run of ``calls`` tool calls on one node, as the runtime reports them, ``CHUNK`` events at a time.

    Built while streaming, as a runtime builds them (``model_construct``, no validation), so the
    flood's objects are as young as in a real run.
    """
    run: dict[str, Any] = {"run_id": "run-bench"}
    chunk: list[ExecutionEvent] = [
        RunStarted.model_construct(
            **run, seq=0, at=0.0, plan="flood", plan_kind="graph", max_iterations=None,
            nodes=(NodeInfo(id="act", type="INTERACTION.ACT.TOOL"),),
        )
    ]  # fmt: skip
    for index in range(calls):
        call_id = f"call-{index}"
        identity: dict[str, Any] = {
            "node_id": "act",
            "node_type": "INTERACTION.ACT.TOOL",
            "execution_id": f"exec-{index}",
        }
        arguments = {"path": f"src/module_{index % 97}.py", "pattern": "TODO"}
        result = ExternalResult.model_construct(
            call_id=call_id, source="grep", status="success", content=f"{index % 7} matches"
        )
        call = {"call": {"id": call_id, "name": "grep", "arguments": arguments}}
        chunk.append(
            NodeStarted.model_construct(**run, **identity, seq=2 * index + 1, at=index * 1e-3, input=call)
        )
        chunk.append(
            NodeFinished.model_construct(
                **run, **identity, seq=2 * index + 2, at=index * 1e-3, duration_ms=0.5, output=result
            )
        )
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def log_lines(calls: int) -> Iterator[list[Text]]:
    """One line per tool call, ``CHUNK`` lines at a time."""
    for start in range(0, calls, CHUNK):
        yield [
            Text(f"call-{i} grep path=src/module_{i % 97}.py success")
            for i in range(start, min(calls, start + CHUNK))
        ]


async def stream(deliver: Callable[[Sequence[Any]], None], chunks: Iterable[Sequence[Any]]) -> None:
    """Hand each chunk over as it is made, yielding to the event loop in between."""
    for chunk in chunks:
        deliver(chunk)
        await asyncio.sleep(0)


class KeyClock:
    """Presses a key every ``KEY_INTERVAL`` and records how long each took to reach its action."""

    def __init__(self, app: App[Any], key: str) -> None:
        self.app = app
        self.key = key
        self.sent: list[float] = []
        self.handled: list[float] = []

    def wrap(self, action: Callable[..., Any]) -> Callable[..., Any]:
        """``action``, timing each call."""

        def timed(*args: Any) -> Any:
            self.handled.append(time.perf_counter())
            return action(*args)

        return timed

    async def run(self, until: Callable[[], bool]) -> None:
        while not until():
            self.sent.append(time.perf_counter())
            self.app.post_message(events.Key(self.key, None))
            await asyncio.sleep(KEY_INTERVAL)

    def latencies_ms(self) -> list[float]:
        return [(handled - sent) * 1000 for sent, handled in zip(self.sent, self.handled, strict=False)]


async def measure(
    name: str,
    items: int,
    app: App[Any],
    start: Callable[
        [Pilot[Any]], Awaitable[tuple[Callable[[], Awaitable[None]], Callable[[], bool], KeyClock]]
    ],
) -> Flood:
    """Run one flood in ``app``: ``start`` returns the producer, the "all drawn" test and the key clock."""
    async with app.run_test(size=SIZE) as pilot:
        produce, drawn, keys = await start(pilot)
        begin = time.perf_counter()
        presser = asyncio.ensure_future(keys.run(drawn))
        await produce()
        while not drawn():
            if time.perf_counter() - begin > GIVE_UP_S:
                raise RuntimeError(f"{name}: not everything was drawn within {GIVE_UP_S} s")
            await asyncio.sleep(0.002)
        elapsed = time.perf_counter() - begin
        await presser
        await pilot.pause()
    latencies = keys.latencies_ms() or [0.0]
    return Flood(
        name=name,
        items=items,
        render_s=elapsed,
        keys=len(latencies),
        key_p50_ms=statistics.median(latencies),
        key_max_ms=max(latencies),
    )


# --- the Run screen -----------------------------------------------------------------------------


class RunHost(App[None]):
    """The Run screen on a session that never opens (only the events below reach it), with the
    app's garbage-collection policy."""

    def __init__(self, bridge: RunBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self.heap = IdleCollector()

    def on_mount(self) -> None:
        self.push_screen(RunScreen(self.bridge))

    def on_ready(self) -> None:
        self.heap.start()
        self.set_interval(1.0, self.heap.tick)

    def on_events_arrived(self) -> None:
        self.heap.busy()

    def on_unmount(self) -> None:
        self.heap.stop()


def _idle_bridge() -> RunBridge:
    program = Program(name="flood", description="", plan=graph("flood"))
    return RunBridge(RunSpec(config=RuntimeConfig(), workspace=ROOT, program=program))


async def run_screen_flood(calls: int) -> Flood:
    """The flood through the bridge's subscriber into the Run screen."""
    bridge = _idle_bridge()
    app = RunHost(bridge)

    async def start(pilot: Pilot[Any]) -> tuple[Callable[[], Awaitable[None]], Callable[[], bool], KeyClock]:
        while not isinstance(app.screen, RunScreen):
            await pilot.pause()
        screen = app.screen
        screen.timeline.focus()
        keys = KeyClock(app, "v")
        screen.action_toggle_raw = keys.wrap(screen.action_toggle_raw)  # type: ignore[method-assign]

        def deliver(batch: Sequence[ExecutionEvent]) -> None:
            for event in batch:
                bridge.pump(event)

        def drawn() -> bool:
            return screen.timeline.rendered_rows >= calls + 1 and len(screen.model.entries) == calls + 1

        async def produce() -> None:
            await stream(deliver, tool_call_events(calls))
            bridge.pump.flush()

        return produce, drawn, keys

    return await measure("Run screen (ditto-tui)", calls, app, start)


# --- bare RichLog -------------------------------------------------------------------------------


class Lines(Message):
    """Lines for the log."""

    def __init__(self, lines: Sequence[Text]) -> None:
        super().__init__()
        self.lines = lines


class LogApp(App[None]):
    """A bare ``RichLog`` that writes every line it is sent."""

    def compose(self) -> ComposeResult:
        yield RichLog(max_lines=None, wrap=False, markup=False, highlight=False)

    def on_lines(self, message: Lines) -> None:
        log = self.query_one(RichLog)
        if len(message.lines) == 1:
            log.write(message.lines[0])
        else:
            log.write(Text("\n").join(message.lines))


async def rich_log_flood(calls: int, per_message: int) -> Flood:
    """One line per tool call, ``per_message`` lines in each message."""
    app = LogApp()

    async def start(pilot: Pilot[Any]) -> tuple[Callable[[], Awaitable[None]], Callable[[], bool], KeyClock]:
        await pilot.pause()
        log = app.query_one(RichLog)
        log.focus()
        keys = KeyClock(app, "up")
        log.action_scroll_up = keys.wrap(log.action_scroll_up)  # type: ignore[method-assign]
        painted = asyncio.Event()

        def drawn() -> bool:
            if len(log.lines) >= calls and not painted.is_set():
                log.call_after_refresh(painted.set)
            return painted.is_set()

        def deliver(batch: Sequence[Text]) -> None:
            for start_at in range(0, len(batch), per_message):
                app.post_message(Lines(batch[start_at : start_at + per_message]))

        async def produce() -> None:
            await stream(deliver, log_lines(calls))

        return produce, drawn, keys

    label = "one line per message" if per_message == 1 else f"{per_message} lines per message"
    return await measure(f"RichLog, {label}", calls, app, start)


# --- cold start -----------------------------------------------------------------------------------

HELLO_APP = """\
from textual.app import App
from textual.widgets import Static


class Hello(App[None]):
    def compose(self):
        yield Static("Hello, world!")


Hello().run()
"""
"""Textual's hello world, run as a script: it imports Textual and nothing else."""

HELLO_FRAME = b"Hello, world!"
DITTO_FRAME = b"ditto-tui \xe2\x80\x94 "
"""What each first frame shows: hello world's text, the header of ditto-tui's Run screen (``ditto-tui —``)."""

DITTO_READY = b"Enter runs the graph"
"""The task box's hint: the Run screen laid out in full, ready for the task."""

_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


class Seen:
    """What a screen stream has drawn, searched as it arrives: each chunk's escape sequences removed,
    across chunk boundaries, without going over what came before again (a flood writes megabytes)."""

    def __init__(self) -> None:
        self._raw_tail = b""
        self._text_tail = b""

    def add(self, data: bytes, marker: bytes) -> bool:
        """Take ``data``; whether ``marker`` has now been drawn."""
        text = _ESCAPES.sub(b"", self._raw_tail + data)
        found = marker in self._text_tail + text
        self._raw_tail, self._text_tail = data[-64:], text[-256:]
        return found


@dataclass(frozen=True, kw_only=True)
class ColdStart:
    """Seconds from spawning the command in a terminal to its first frame (and to ``ready`` if given)."""

    frame_s: float
    ready_s: float | None


def _ditto_command() -> list[str]:
    script = Path(sys.executable).with_name("ditto-tui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ditto_tui"]


def cold_start(command: Sequence[str], frame: bytes, ready: bytes | None, home: Path, cwd: Path) -> ColdStart:
    """Start ``command`` in a fresh pseudo-terminal (120×36) and time what it writes to the screen.

    The first frame is the moment the terminal has received ``frame`` (escape sequences removed);
    ``ready`` is timed the same way. The process is killed as soon as both are seen.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "DITTO_TUI_HOME": str(home), "PYTHONPATH": str(ROOT)}
    begin = time.perf_counter()
    child = subprocess.Popen(
        list(command), stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True
    )
    os.close(slave)
    framed, readied = Seen(), Seen()
    frame_s: float | None = None
    ready_s: float | None = None
    try:
        while time.perf_counter() - begin < GIVE_UP_S:
            readable, _, _ = select.select([master], [], [], 0.5)
            if not readable:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            now = time.perf_counter() - begin
            if frame_s is None and framed.add(chunk, frame):
                frame_s = now
            if ready_s is None and ready is not None and readied.add(chunk, ready):
                ready_s = now
            if frame_s is not None and (ready is None or ready_s is not None):
                break
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        os.close(master)
    if frame_s is None:
        raise RuntimeError(f"{command[0]}: no first frame (exit code {child.returncode})")
    return ColdStart(frame_s=frame_s, ready_s=ready_s)


def cold_starts(rounds: int) -> dict[str, ColdStart]:
    """Median cold starts, the two apps taking turns, each in a new empty folder with a new home."""
    times: dict[str, list[ColdStart]] = {"hello": [], "ditto": []}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as scratch:
        hello = Path(scratch) / "hello.py"
        hello.write_text(HELLO_APP, encoding="utf-8")
        for turn in range(rounds):
            for which in times:
                workspace = Path(scratch) / f"{which}-{turn}"
                (workspace / "home").mkdir(parents=True)
                if which == "hello":
                    run = cold_start(
                        [sys.executable, str(hello)], HELLO_FRAME, None, workspace / "home", workspace
                    )
                else:
                    run = cold_start(
                        _ditto_command(), DITTO_FRAME, DITTO_READY, workspace / "home", workspace
                    )
                times[which].append(run)
    medians: dict[str, ColdStart] = {}
    for which, runs in times.items():
        ready = [run.ready_s for run in runs if run.ready_s is not None]
        medians[which] = ColdStart(
            frame_s=statistics.median(run.frame_s for run in runs),
            ready_s=statistics.median(ready) if ready else None,
        )
    return medians


# --- report ---------------------------------------------------------------------------------------


def report(floods: list[Flood], cold: dict[str, ColdStart]) -> str:
    """The figures as a table, with the targets and whether they are met."""
    lines = [
        f"{'flood':<34}{'items':>8}{'render s':>11}{'keys':>7}{'key p50 ms':>13}{'key max ms':>13}",
    ]
    for flood in floods:
        lines.append(
            f"{flood.name:<34}{flood.items:>8}{flood.render_s:>11.2f}{flood.keys:>7}"
            f"{flood.key_p50_ms:>13.1f}{flood.key_max_ms:>13.1f}"
        )
    ours = floods[0]
    ratio = cold["ditto"].frame_s / cold["hello"].frame_s
    graph = cold["ditto"].ready_s
    met = (
        ours.render_s <= TARGET_RENDER_S
        and ours.key_p50_ms <= TARGET_P50_MS
        and ours.key_max_ms <= TARGET_MAX_MS
        and ratio <= TARGET_COLD_RATIO
    )
    verdict = "met" if met else "NOT met"
    lines += [
        f"cold start to first frame, in a terminal: ditto-tui {cold['ditto'].frame_s:.2f} s, "
        f"Textual hello world {cold['hello'].frame_s:.2f} s ({ratio:.2f}x); "
        f"ditto-tui's Run screen ready for the task at {'-' if graph is None else f'{graph:.2f} s'}",
        f"targets: render ≤ {TARGET_RENDER_S} s, key p50 ≤ {TARGET_P50_MS:.0f} ms, "
        f"key max ≤ {TARGET_MAX_MS:.0f} ms, cold start ≤ {TARGET_COLD_RATIO}x — {verdict}",
    ]
    return "\n".join(lines)


async def floods(calls: int) -> list[Flood]:
    return [
        await run_screen_flood(calls),
        await rich_log_flood(calls, 1),
        await rich_log_flood(calls, 100),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="a tenth of the calls, one cold start each")
    args = parser.parse_args(argv)
    calls = CALLS // 10 if args.quick else CALLS
    results = asyncio.run(floods(calls))
    cold = cold_starts(1 if args.quick else 5)
    if args.json:
        cold_s = {which: asdict(run) for which, run in cold.items()}
        print(json.dumps({"floods": [asdict(flood) for flood in results], "cold_start_s": cold_s}, indent=2))
    else:
        print(report(results, cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
