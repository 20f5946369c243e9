"""A model's streamed answer into the transcript, beside a bare Textual ``Markdown`` widget.

Headless (``App.run_test``, 120×36), in one run:

- **Transcript (ditto-tui)**: 10,000 ``message_delta`` events (a few words each, Markdown with headings,
  lists and code) fed to the bridge's runtime subscriber as fast as a provider could hand them over,
  into the Run screen's transcript; timed until the transcript shows the whole text.
- **Bare Markdown, one append per delta**: Textual's ``Markdown`` widget, ``append`` called for each
  delta as it arrives (one message per delta).
- In each, a key press every 50 ms during the stream (``v`` on the Run screen, ``up`` on the bare one);
  latency is the time from the key event to its action running. "after last" is the time from the last
  delta handed over to all of it shown.

Targets: everything shown within 2 s of the last delta, key p50 ≤ 50 ms, key max ≤ 250 ms.

    python -m benchmarks.bench_stream [--json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Markdown

from benchmarks.bench_tui import GIVE_UP_S, SIZE, KeyClock, RunHost, _idle_bridge
from ditto_tui.infer import MESSAGE_DELTA, SAMPLE
from ditto_tui.runtime import CustomEvent, ExecutionEvent, NodeStarted, RunStarted
from ditto_tui.tui.screens.run import RunScreen
from ditto_tui.tui.text import marked
from ditto_tui.tui.widgets.transcript import MarkdownText

DELTAS = 10_000
CHUNK = 50
TARGET_AFTER_S = 2.0
TARGET_P50_MS = 50.0
TARGET_MAX_MS = 250.0
_WORDS = [
    "the ",
    "approval ",
    "gate ",
    "waits ",
    "for ",
    "a ",
    "person; ",
    "`nothing` ",
    "runs ",
    "**until** ",
]


def pieces(count: int) -> list[str]:
    """``count`` pieces of Markdown as a model streams it: words, with a heading, a list or code now and
    then."""
    out: list[str] = []
    for index in range(count):
        if index % 400 == 0:
            out.append(f"\n\n## Part {index // 400 + 1}\n\n")
        elif index % 97 == 0:
            out.append("\n\n- a point\n- another point\n\n")
        elif index % 251 == 0:
            out.append("\n\n```python\nprint('hello')\n```\n\n")
        else:
            out.append(_WORDS[index % len(_WORDS)])
    return out


@dataclass(frozen=True, kw_only=True)
class Stream:
    """One stream: how long it took, how long after the last delta until all was shown, key latency."""

    name: str
    deltas: int
    total_s: float
    after_last_s: float
    keys: int
    key_p50_ms: float
    key_max_ms: float


async def measure(
    name: str,
    app: App[Any],
    start: Callable[[Pilot[Any]], Awaitable[tuple[Callable[[str], None], Callable[[], bool], KeyClock]]],
    texts: Sequence[str],
) -> Stream:
    """Stream ``texts`` into ``app`` through ``deliver``, as fast as they come, pressing keys meanwhile."""
    async with app.run_test(size=SIZE) as pilot:
        deliver, shown, keys = await start(pilot)
        begin = time.perf_counter()
        presser = asyncio.ensure_future(keys.run(shown))
        for index, text in enumerate(texts, 1):
            deliver(text)
            if index % CHUNK == 0:
                await asyncio.sleep(0)
        last = time.perf_counter()
        while not shown():
            if time.perf_counter() - begin > GIVE_UP_S:
                raise RuntimeError(f"{name}: not everything was shown within {GIVE_UP_S} s")
            await asyncio.sleep(0.002)
        done = time.perf_counter()
        await presser
        await pilot.pause()
    latencies = keys.latencies_ms() or [0.0]
    return Stream(
        name=name,
        deltas=len(texts),
        total_s=done - begin,
        after_last_s=done - last,
        keys=len(latencies),
        key_p50_ms=statistics.median(latencies),
        key_max_ms=max(latencies),
    )


def _delta_events(texts: Sequence[str]) -> Iterator[ExecutionEvent]:
    run: dict[str, Any] = {"run_id": "run-stream"}
    yield RunStarted.model_construct(**run, seq=0, at=0.0, plan="stream", plan_kind="graph", nodes=())
    yield NodeStarted.model_construct(
        **run, seq=1, at=0.0, node_id="sample", node_type=SAMPLE, execution_id="exec-1",
        input={"messages": [{"role": "user", "content": "Write at length."}]},
    )  # fmt: skip
    for index, text in enumerate(texts, 2):
        yield CustomEvent.model_construct(
            **run, kind="custom", seq=index, at=0.0, name=MESSAGE_DELTA,
            data={"text": text, "nodeId": "sample", "executionId": "exec-1"},
        )  # fmt: skip


async def transcript_stream(texts: Sequence[str]) -> Stream:
    """The deltas through the bridge's subscriber into the Run screen's transcript."""
    bridge = _idle_bridge()
    app = RunHost(bridge)
    whole = marked("".join(texts))
    events = iter(_delta_events(texts))

    async def start(pilot: Pilot[Any]) -> tuple[Callable[[str], None], Callable[[], bool], KeyClock]:
        while not isinstance(app.screen, RunScreen) or not app.screen.query("#run-view"):
            await pilot.pause()
        screen = app.screen
        await pilot.pause()
        screen.timeline.focus()
        keys = KeyClock(app, "v")
        screen.action_toggle_raw = keys.wrap(screen.action_toggle_raw)  # type: ignore[method-assign]
        bridge.pump(next(events))
        bridge.pump(next(events))

        def deliver(_text: str) -> None:
            bridge.pump(next(events))

        def shown() -> bool:
            segments = screen.view.transcript.query(MarkdownText)
            return "".join(segment.source for segment in segments) == whole

        return deliver, shown, keys

    result = await measure("Transcript (ditto-tui)", app, start, texts)
    return result


class Piece(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class BareMarkdown(App[None]):
    """A bare ``Markdown`` widget in a scroll view that appends every piece it is sent."""

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown()

    async def on_piece(self, message: Piece) -> None:
        await self.query_one(Markdown).append(message.text)


async def bare_stream(texts: Sequence[str]) -> Stream:
    app = BareMarkdown()
    whole = "".join(texts)

    async def start(pilot: Pilot[Any]) -> tuple[Callable[[str], None], Callable[[], bool], KeyClock]:
        await pilot.pause()
        scroll = app.query_one(VerticalScroll)
        scroll.focus()
        keys = KeyClock(app, "up")
        scroll.action_scroll_up = keys.wrap(scroll.action_scroll_up)  # type: ignore[method-assign]

        def deliver(text: str) -> None:
            app.post_message(Piece(text))

        def shown() -> bool:
            return app.query_one(Markdown).source == whole

        return deliver, shown, keys

    return await measure("Bare Markdown, append per delta", app, start, texts)


def report(streams: list[Stream]) -> str:
    lines = [
        f"{'stream':<34}{'deltas':>8}{'total s':>10}{'after last s':>14}{'keys':>6}{'p50 ms':>9}{'max ms':>9}"
    ]
    for s in streams:
        lines.append(
            f"{s.name:<34}{s.deltas:>8}{s.total_s:>10.2f}{s.after_last_s:>14.2f}{s.keys:>6}"
            f"{s.key_p50_ms:>9.1f}{s.key_max_ms:>9.1f}"
        )
    ours, bare = streams
    met = (
        ours.after_last_s <= TARGET_AFTER_S
        and ours.key_p50_ms <= TARGET_P50_MS
        and ours.key_max_ms <= TARGET_MAX_MS
    )
    lines.append(
        f"transcript vs bare Markdown: total {ours.total_s / bare.total_s:.2f}x; targets: all shown ≤ "
        f"{TARGET_AFTER_S} s after the last delta, key p50 ≤ {TARGET_P50_MS:.0f} ms, max ≤ "
        f"{TARGET_MAX_MS:.0f} ms — {'met' if met else 'NOT met'}"
    )
    return "\n".join(lines)


async def streams(count: int) -> list[Stream]:
    texts = pieces(count)
    return [await transcript_stream(texts), await bare_stream(texts)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="a tenth of the deltas")
    args = parser.parse_args(argv)
    results = asyncio.run(streams(DELTAS // 10 if args.quick else DELTAS))
    print(json.dumps([asdict(s) for s in results], indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
