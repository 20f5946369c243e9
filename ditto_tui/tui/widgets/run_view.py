"""The run view the Run and Replay screens share: the status bar, the DAG, the transcript of an agent run,
the timeline and the detail. The graph's width is the user's (``[`` and ``]``, ``z`` for the whole
screen); ``t`` gives the transcript the whole side."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widget import Widget

from ditto_tui.infer import MESSAGE_DELTA
from ditto_tui.runtime import CustomEvent, ExecutionEvent
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.run_state import Entry, RunModel
from ditto_tui.tui.widgets.dag import DagView
from ditto_tui.tui.widgets.detail import TextView, entry_detail
from ditto_tui.tui.widgets.status import RunStatus
from ditto_tui.tui.widgets.timeline import Timeline
from ditto_tui.tui.widgets.transcript import TranscriptView

__all__ = ["DETAIL_BINDINGS", "PLACEHOLDER", "RunView"]

TICK_SECONDS = 0.5
GRAPH_WIDTH = 42
GRAPH_STEP = 6
GRAPH_CHROME = 4
"""Columns of the graph pane around its drawing: the border and a vertical scrollbar."""
MIN_GRAPH_WIDTH = 18
FOLD_SLICE = 2_000
PLACEHOLDER = (
    "Select an event in the timeline (↑ ↓, click) or a node in the graph (← → ↑ ↓, click) to see all of it "
    "here: arguments, content, structured content, references, error, metadata."
)
DETAIL_BINDINGS: list[BindingType] = [
    Binding("v", "toggle_raw", "Raw/normalised"),
    Binding("f", "toggle_full", "Full detail", show=False),
]
"""The detail's keys, which each screen places among its own (the footer lists them in that order)."""


class RunView(Guarded, Vertical):
    """One run as it stands: events go in with :meth:`apply`, times are read from ``clock``.

    It knows nothing of where the events come from: the Run screen feeds it a runtime's, the Replay
    screen a journal's. Its selection handlers fail without stopping its loop, as a screen's do.
    """

    DEFAULT_CSS = """
    RunView {
        #status {
            height: 1;
            padding: 0 1;
            background: $panel;
        }
        #main {
            height: 1fr;
        }
        #dag {
            width: 42;
            border: round $primary-darken-2;
            border-title-color: $text-muted;
        }
        #side {
            width: 1fr;
        }
        #transcript {
            height: 2fr;
            border: round $primary-darken-2;
            border-title-color: $text-muted;
            display: none;
        }
        &.-agent #transcript { display: block; }
        &.-transcript-only #timeline, &.-transcript-only #detail { display: none; }
        &.-graph-only #side { display: none; }
        #timeline {
            height: 1fr;
            border: round $primary-darken-2;
            border-title-color: $text-muted;
        }
        #detail {
            height: 1fr;
            border: round $primary-darken-2;
            border-title-color: $text-muted;
            padding: 0 1;
        }
        #dag:focus, #timeline:focus, #detail:focus, #transcript:focus-within {
            border: round $primary;
            border-title-color: $text;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "transcript_only", "Transcript", show=False),
        Binding("z", "graph_only", "Graph only", show=False),
        Binding("left_square_bracket", "graph_width(-1)", "Narrower graph", show=False),
        Binding("right_square_bracket", "graph_width(1)", "Wider graph", show=False),
    ]

    status = getters.query_one("#status", RunStatus)
    dag = getters.query_one("#dag", DagView)
    timeline = getters.query_one("#timeline", Timeline)
    detail = getters.query_one("#detail", TextView)
    transcript = getters.query_one("#transcript", TranscriptView)

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.model = RunModel()
        self.raw = False
        self.full = False
        self._shown: tuple[Entry, int] | None = None
        self.graph_width = GRAPH_WIDTH
        self.sized = False

    def compose(self) -> ComposeResult:
        yield RunStatus(id="status")
        with Horizontal(id="main"):
            yield DagView(id="dag")
            with Vertical(id="side"):
                yield TranscriptView(id="transcript")
                yield Timeline(id="timeline")
                yield TextView(id="detail")

    def on_mount(self) -> None:
        self.dag.border_title = "Graph"
        self.timeline.border_title = "Timeline"
        self.transcript.border_title = "Transcript"
        self._title_detail()
        self.show_placeholder()
        self._refresh()
        self.set_interval(TICK_SECONDS, self._tick)

    # -- events in --------------------------------------------------------------------------------------

    async def apply(self, events: Sequence[ExecutionEvent]) -> None:
        """Fold ``events`` into the model and redraw once.

        A large batch is folded in slices with a yield between them, so keys stay answered.
        """
        run_events = [event for event in events if not _streamed(event)]
        for start in range(0, len(run_events), FOLD_SLICE):
            if start:
                await asyncio.sleep(0)
            self.model.apply(run_events[start : start + FOLD_SLICE])
        await self.transcript.apply(events)
        if self.transcript.transcript.agent:
            self.add_class("-agent")
        self._refresh()

    async def restart(self, *, keep_transcript: bool = False) -> None:
        """Start again from an empty model (the next :meth:`apply` lays the graph out afresh); the
        transcript goes on when ``keep_transcript`` (a follow-up continues the conversation)."""
        previous = self.model
        self.model = RunModel()
        self.model.layout_version = previous.layout_version + 1
        self._shown = None
        if keep_transcript:
            self.transcript.follow_up()
        else:
            await self.transcript.restart()
        self.show_placeholder()
        self._refresh()

    def _refresh(self) -> None:
        now = self.clock()
        self.status.show(self.model, now)
        self.dag.show(self.model, now)
        self.timeline.show(self.model.entries, self.model.started_at)
        if self._shown is not None and self._shown[0].version != self._shown[1]:
            self._show_detail(self._shown[0])

    def _tick(self) -> None:
        if not self.model.finished:
            now = self.clock()
            self.status.show(self.model, now)
            self.dag.show(self.model, now)

    # -- selection --------------------------------------------------------------------------------------

    @on(Timeline.EntrySelected)
    def entry_selected(self, event: Timeline.EntrySelected) -> None:
        """Show the selected entry and highlight its node."""
        self.dag.select(event.entry.node_id)
        self._show_detail(event.entry)

    @on(DagView.NodeSelected)
    def node_selected(self, event: DagView.NodeSelected) -> None:
        """Show the latest entry of the selected node."""
        node = self.model.nodes.get(event.node_id)
        if node is not None and node.entry is not None:
            self.timeline.select(node.entry.index)
            self._show_detail(node.entry)

    def reveal(self, entry: Entry) -> None:
        """Select ``entry`` in the timeline, scrolled into view, and show it as if it were clicked."""
        # After the model was rebuilt shorter than the list the timeline last scrolled, settle the
        # scroll at the newest rows now, so that selecting reveals the row from where it really is.
        rows = len(self.model.entries) - self.timeline.scrollable_content_region.height
        self.timeline.scroll_to(y=max(0, rows), animate=False, immediate=True)
        self.timeline.select(entry.index)
        self.entry_selected(Timeline.EntrySelected(entry))

    @on(TranscriptView.CallSelected)
    def call_selected(self, event: TranscriptView.CallSelected) -> None:
        """Reveal the call picked in the transcript (from the outcome panel) in the timeline."""
        node = self.model.nodes.get(event.turn.node_id or "")
        if node is not None and node.entry is not None:
            self.reveal(node.entry)

    # -- layout -----------------------------------------------------------------------------------------

    def action_transcript_only(self) -> None:
        """Give the transcript the whole side, or share it with the timeline and detail again."""
        self.toggle_class("-transcript-only")

    def action_graph_only(self) -> None:
        """Give the graph the whole width, or share it again."""
        self.toggle_class("-graph-only")
        self._apply_graph_width()

    def _apply_graph_width(self) -> None:
        self.dag.styles.width = "1fr" if self.has_class("-graph-only") else self.graph_width

    def on_resize(self, event: events.Resize) -> None:
        """Size the graph pane for the new screen width, unless the person sized it."""
        self._fit_graph(event.size.width)

    @on(DagView.CanvasResized)
    def _canvas_resized(self, event: DagView.CanvasResized) -> None:
        """Widen the pane for a wider drawing; never narrow it while the screen keeps its size (a loop's
        nested nodes come and go with each iteration, and the panes would jump)."""
        self._fit_graph(self.size.width, max(event.width, self.graph_width - GRAPH_CHROME))

    def _fit_graph(self, width: int, canvas: int | None = None) -> None:
        """Until the person sizes it, the graph pane is as wide as its drawing, between
        :data:`GRAPH_WIDTH` and half the screen (a third below 120 columns, where the side needs room)."""
        if self.sized or not width:
            return
        canvas = self.dag.virtual_size.width if canvas is None else canvas
        if width >= 120:
            wanted = max(GRAPH_WIDTH, min(width // 2, canvas + GRAPH_CHROME))
        else:
            wanted = max(MIN_GRAPH_WIDTH, min(width // 3, canvas + GRAPH_CHROME))
        if wanted != self.graph_width:
            self.graph_width = wanted
            self._apply_graph_width()

    def action_graph_width(self, step: int) -> None:
        """Make the graph pane narrower or wider; from then on its width is the person's."""
        width = self.size.width or GRAPH_WIDTH * 3
        self.sized = True
        self.graph_width = max(
            MIN_GRAPH_WIDTH, min(width - MIN_GRAPH_WIDTH, self.graph_width + step * GRAPH_STEP)
        )
        self._apply_graph_width()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The transcript key only when there is a transcript."""
        if action == "transcript_only":
            return self.has_class("-agent")
        return True

    def focusable_panes(self) -> list[Widget]:
        """The panes Tab moves between, in order."""
        return [self.dag, self.transcript, self.timeline, self.detail]

    def show_placeholder(self) -> None:
        """Show, in the detail, how to select something to show there."""
        self.detail.show(Text(PLACEHOLDER, style="italic"))

    def _show_detail(self, entry: Entry) -> None:
        self._shown = (entry, entry.version)
        self.detail.show(entry_detail(entry, raw=self.raw, full=self.full))

    # -- the detail's views -----------------------------------------------------------------------------

    def _title_detail(self) -> None:
        view = "raw JSON" if self.raw else "normalised"
        self.detail.border_title = f"Detail · {view} (v switches, f shows long values in full)"

    def toggle_full(self) -> None:
        """Show long values in full in the detail, or in part again (huge values take a while to lay out)."""
        self.full = not self.full
        if self._shown is not None:
            self._show_detail(self._shown[0])

    def toggle_raw(self) -> None:
        """Switch the detail between the normalised view and the raw JSON."""
        self.raw = not self.raw
        self._title_detail()
        if self._shown is not None:
            self._show_detail(self._shown[0])


def _streamed(event: ExecutionEvent) -> bool:
    """A model's streamed piece: only the transcript shows it (the timeline has the whole message)."""
    return isinstance(event, CustomEvent) and event.name == MESSAGE_DELTA
