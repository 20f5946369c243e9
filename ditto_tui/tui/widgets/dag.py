"""The run's graph drawn as a DAG: layered box-drawn nodes and edges, state by colour and glyph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ditto_tui.runtime.breakpoints import STEP, Breakpoints
from ditto_tui.tui.run_state import GLYPHS, NodeView, RunModel, format_seconds, short_type
from ditto_tui.tui.widgets.dag_layout import BOX_HEIGHT, LINES, Box, DagLayout, layout
from ditto_tui.tui.widgets.inline import fit, one_line

TIMING_WIDTH = 5
"""Room kept on a box's second line for its time (``850ms``, ``12.4s``)."""
BREAKPOINT_MARKER = "●"
"""Drawn at the end of a box's first line when the run pauses before the node (a breakpoint is set)."""


def box_width(nodes: Iterable[NodeView]) -> int:
    """The box width that shows every node's id after its glyph, and its short type beside a time."""
    inner = max(
        (max(len(node.id) + 2, len(short_type(node.type)) + 1 + TIMING_WIDTH) for node in nodes), default=0
    )
    return inner + 2


class DagView(ScrollView, can_focus=True):
    """The plan's nodes in layers by dependency depth; arrows and clicks select a node."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "dag--header",
        "dag--edge",
        "dag--selected",
        "dag--detail",
        "dag--breakpoint",
        "dag--paused",
        *(f"dag--{state}" for state in GLYPHS),
    }
    DEFAULT_CSS = """
    DagView > .dag--header { text-style: bold; }
    DagView > .dag--edge { color: $primary-lighten-1; }
    DagView > .dag--selected { text-style: bold reverse; }
    DagView > .dag--detail { color: $text-muted; }
    DagView > .dag--breakpoint { color: $error; text-style: bold; }
    DagView > .dag--paused { color: $accent; text-style: bold; }
    DagView > .dag--pending { color: $text-muted; }
    DagView > .dag--running { color: $warning; }
    DagView > .dag--awaiting { color: $accent; text-style: bold; }
    DagView > .dag--succeeded { color: $success; }
    DagView > .dag--failed { color: $error; }
    DagView > .dag--cancelled { color: $text-muted; text-style: italic; }
    DagView > .dag--skipped { color: $text-disabled; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(0, -1)", "Previous node", show=False),
        Binding("right", "move(0, 1)", "Next node", show=False),
        Binding("up", "move(-1, 0)", "Layer above", show=False),
        Binding("down", "move(1, 0)", "Layer below", show=False),
    ]

    class NodeSelected(Message):
        """The user selected a node of the graph."""

        def __init__(self, node_id: str) -> None:
            super().__init__()
            self.node_id = node_id

    class CanvasResized(Message):
        """The drawing's width changed: the pane may make room for it."""

        def __init__(self, width: int) -> None:
            super().__init__()
            self.width = width

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.selected: str | None = None
        self.breakpoints: Breakpoints | None = None
        """The session's live breakpoints: a node they stop before is marked (None: none known)."""
        self._model: RunModel | None = None
        self._now = 0.0
        self._layout = DagLayout()
        self._layout_version = -1
        self._lines: list[Strip] = []

    # -- attributes down --------------------------------------------------------------------------------

    def show(self, model: RunModel, now: float) -> None:
        """Draw ``model``'s nodes as they stand at wall time ``now``."""
        self._model, self._now = model, now
        if model.layout_version != self._layout_version:
            self._layout_version = model.layout_version
            nodes = model.nodes.values()
            self._layout = layout({node.id: node.deps for node in nodes}, box_width(nodes))
            if self._layout.width != self.virtual_size.width:
                self.post_message(self.CanvasResized(self._layout.width))
            self.virtual_size = Size(self._layout.width, self._layout.height)
        self._paint()

    def show_breakpoints(self, breakpoints: Breakpoints | None) -> None:
        """Mark the nodes ``breakpoints`` pause before (step mode is named in the header instead)."""
        self.breakpoints = breakpoints
        self._paint()

    def marked(self, node: NodeView) -> bool:
        """Whether a breakpoint other than step mode's is set on ``node``."""
        breakpoints = self.breakpoints
        if not breakpoints:
            return False
        return any(
            pattern != STEP and (fnmatchcase(node.id, pattern) or fnmatchcase(node.type, pattern))
            for pattern in breakpoints
        )

    def select(self, node_id: str | None) -> None:
        """Highlight ``node_id`` without announcing it (the screen already knows)."""
        if node_id != self.selected:
            self.selected = node_id
            self._paint()
            self._scroll_to_selected()

    # -- drawing ----------------------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"dag--{name}")

    def _paint(self) -> None:
        if self._model is None:
            return
        pieces: dict[int, list[tuple[int, list[Segment]]]] = {}
        for box in self._layout.boxes.values():
            node = self._model.nodes.get(box.node_id)
            if node is not None:
                for offset, row in enumerate(self._box_rows(box, node)):
                    pieces.setdefault(box.y + offset, []).append((box.x, row))
        edge = self._style("edge")
        width = self._layout.width
        lines = [self._header()]
        for y in range(1, self._layout.height):
            lines.append(self._line(y, sorted(pieces.get(y, ()), key=lambda piece: piece[0]), edge, width))
        self._lines = lines
        self.refresh()

    def _header(self) -> Strip:
        model = self._model
        assert model is not None
        text = one_line(model.plan or "waiting for the run to start", style=self._style("header"))
        if model.plan_kind:
            text.append(f" · {model.plan_kind}")
        if model.iteration is not None:
            text.append(f" · iteration {model.iteration}/{model.max_iterations}")
        if self.breakpoints is not None and self.breakpoints.step:
            text.append(" · ⏸ step mode", style=self._style("paused"))
        return Strip(list(text.render(self.app.console)))

    def _line(self, y: int, pieces: list[tuple[int, list[Segment]]], edge: Style, width: int) -> Strip:
        segments: list[Segment] = []
        x = 0
        for start, row in pieces:
            segments.append(Segment(self._edges(y, x, start), edge))
            segments.extend(row)
            x = start + self._layout.box_width
        segments.append(Segment(self._edges(y, x, width), edge))
        return Strip(segments)

    def _edges(self, y: int, start: int, end: int) -> str:
        lines = self._layout.lines
        return "".join(LINES.get(lines.get((x, y), 0), " ") for x in range(start, end))

    def _box_rows(self, box: Box, node: NodeView) -> list[list[Segment]]:
        state = self._style(node.state)
        border = state + self._style("selected") if box.node_id == self.selected else state
        tees = self._layout.tees
        top = "".join(tees.get((box.x + i, box.y), "─") for i in range(1, box.width - 1))
        bottom_y = box.y + BOX_HEIGHT - 1
        bottom = "".join(tees.get((box.x + i, bottom_y), "─") for i in range(1, box.width - 1))
        inner = box.width - 2
        detail = self._detail(node, inner)
        title = Text.assemble((GLYPHS[node.state] + " ", state), one_line(node.id))
        if self.marked(node):
            title = fit(title, inner - 2).append(" " + BREAKPOINT_MARKER, self._style("breakpoint"))
        console = self.app.console
        return [
            [Segment(f"╭{top}╮", border)],
            [Segment("│", border), *fit(title, inner).render(console), Segment("│", border)],
            [Segment("│", border), *fit(detail, inner).render(console), Segment("│", border)],
            [Segment(f"╰{bottom}╯", border)],
        ]

    def _detail(self, node: NodeView, inner: int) -> Text:
        """The second line of a box: short node type, runs, and elapsed or final time."""
        if node.state in ("running", "awaiting") and node.started_at is not None:
            timing = format_seconds(max(0.0, self._now - node.started_at))
        elif node.duration_ms is not None:
            timing = format_seconds(node.duration_ms / 1000)
        else:
            timing = ""
        runs = f" ×{node.runs}" if node.runs > 1 else ""
        label = one_line(short_type(node.type) + runs)
        if node.paused:
            label = Text("paused", style=self._style("paused"))
        room = inner - len(timing) - 1
        left = fit(label, room) if room > 0 else Text()
        return Text.assemble(left, " ", timing, style=self._style("detail"))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        row = scroll_y + y
        if row >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[row].crop_extend(scroll_x, scroll_x + width, self.rich_style)

    # -- selection --------------------------------------------------------------------------------------

    def _scroll_to_selected(self) -> None:
        box = self._layout.boxes.get(self.selected or "")
        if box is not None:
            self.scroll_to_region(Region(box.x, box.y, box.width, BOX_HEIGHT), animate=False, immediate=True)

    def _choose(self, node_id: str) -> None:
        self.select(node_id)
        self.post_message(self.NodeSelected(node_id))

    def on_click(self, event: events.Click) -> None:
        """Select the node under the pointer."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        box = self._layout.box_at(offset.x + self.scroll_offset.x, offset.y + self.scroll_offset.y)
        if box is not None:
            self._choose(box.node_id)

    def action_move(self, layers: int, steps: int) -> None:
        """Move the selection ``steps`` nodes along its layer, or ``layers`` layers up or down."""
        boxes = self._layout.boxes
        rows = [[key for key in layer if key in boxes] for layer in self._layout.layers]
        rows = [row for row in rows if row]
        if not rows:
            return
        current = boxes.get(self.selected or "")
        if current is None:
            self._choose(rows[0][0])
            return
        index = next(i for i, row in enumerate(rows) if current.node_id in row)
        if steps:
            row = rows[index]
            self._choose(row[max(0, min(len(row) - 1, row.index(current.node_id) + steps))])
            return
        target = rows[max(0, min(len(rows) - 1, index + layers))]
        self._choose(min(target, key=lambda key: abs(boxes[key].center - current.center)))

    @property
    def node_boxes(self) -> Mapping[str, Box]:
        """Where each node is drawn (canvas coordinates)."""
        return self._layout.boxes
