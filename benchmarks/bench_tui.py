"""The UI under an event flood, beside bare Textual: time to render everything, key latency, cold start.

Headless (``App.run_test``, 120×36), all in one run:

- **Run screen**: 20,000 tool calls (each a ``node_started`` and a ``node_finished`` event, 40,000
  events) fed to the bridge's runtime subscriber as fast as a runtime could emit them; timed until the
  timeline has drawn its last row.
- **RichLog, one line per message** and **RichLog, 100 lines per message**: a bare Textual ``RichLog``
  fed one line per tool call.
- In each, a key press every 50 ms during the flood (``v``, the Run screen's raw/normalised switch;
  ``up`` in the log); latency is the time from the key event to its action running.
- **Cold start**: a fresh process to its first frame (Textual's ``Ready``: the first screen painted),
  ``ditto-tui`` on the default graph against a Textual hello-world app, medians of alternating runs.

    python -m benchmarks.bench_tui [--json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import RichLog, Static

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
AppT = TypeVar("AppT", bound=App[Any])
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


class Hello(App[None]):
    """Textual's hello world."""

    def compose(self) -> ComposeResult:
        yield Static("Hello, world!")


def _first_frame_probe(base: type[AppT]) -> type[AppT]:
    """``base`` that prints ``frame`` when its first frame is painted (Textual's ``Ready``), then quits."""

    def on_ready(self: App[Any]) -> None:
        print("frame", flush=True)
        self.call_later(self.exit)

    css = [str(Path(sys.modules[base.__module__].__file__ or "").parent / path) for path in _css_paths(base)]
    return type(f"{base.__name__}Probe", (base,), {"on_ready": on_ready, "CSS_PATH": css})


def _css_paths(app: type[App[Any]]) -> list[str]:
    paths = app.CSS_PATH
    if paths is None:
        return []
    return [str(path) for path in (paths if isinstance(paths, list) else [paths])]


def first_frame(which: str) -> int:
    """(Child process) start the app headless at 120×36; print ``frame`` at its first frame, then quit."""
    if which == "hello":
        app: App[Any] = _first_frame_probe(Hello)()
    else:
        from ditto_tui.program import load_program
        from ditto_tui.tui import DittoApp, RunSpec
        from ditto_tui.workspace import default_graph, resolve_config

        config = resolve_config(None, ROOT).config
        program = load_program(default_graph(ROOT), config, ROOT)
        app = _first_frame_probe(DittoApp)(RunSpec(config=config, workspace=ROOT, program=program))
    app.run(headless=True, size=SIZE)
    return 0


def cold_start(which: str) -> float:
    """Seconds from spawning a process to its first frame."""
    begin = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_tui", "--first-frame", which],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    elapsed = time.perf_counter() - begin
    child.wait(timeout=60)
    if line.strip() != "frame":
        raise RuntimeError(f"{which}: no first frame (exit code {child.returncode})")
    return elapsed


def cold_starts(rounds: int) -> dict[str, float]:
    """Median cold start of each app, the two taking turns."""
    times: dict[str, list[float]] = {"hello": [], "ditto": []}
    for _ in range(rounds):
        for which in times:
            times[which].append(cold_start(which))
    return {which: statistics.median(values) for which, values in times.items()}


# --- report ---------------------------------------------------------------------------------------


def report(floods: list[Flood], cold: dict[str, float]) -> str:
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
    ratio = cold["ditto"] / cold["hello"]
    met = (
        ours.render_s <= TARGET_RENDER_S
        and ours.key_p50_ms <= TARGET_P50_MS
        and ours.key_max_ms <= TARGET_MAX_MS
        and ratio <= TARGET_COLD_RATIO
    )
    verdict = "met" if met else "NOT met"
    lines += [
        f"cold start to first frame: ditto-tui {cold['ditto']:.2f} s, "
        f"Textual hello world {cold['hello']:.2f} s ({ratio:.2f}x)",
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
    parser.add_argument("--first-frame", choices=("ditto", "hello"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.first_frame:
        return first_frame(args.first_frame)
    calls = CALLS // 10 if args.quick else CALLS
    results = asyncio.run(floods(calls))
    cold = cold_starts(1 if args.quick else 5)
    if args.json:
        print(json.dumps({"floods": [asdict(flood) for flood in results], "cold_start_s": cold}, indent=2))
    else:
        print(report(results, cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
