"""Where a DAG's boxes and edges go: layers by dependency depth, dummy slots for long edges, line masks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

BOX_WIDTH = 18
"""The narrowest box; a layout's boxes widen to fit its longest label, up to :data:`MAX_BOX_WIDTH`."""
MAX_BOX_WIDTH = 34
BOX_HEIGHT = 4
DUMMY_WIDTH = 3
GAP = 2
HEADER_ROWS = 2

UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
LINES: Mapping[int, str] = {
    UP: "╵",
    DOWN: "╷",
    LEFT: "╴",
    RIGHT: "╶",
    UP | DOWN: "│",
    LEFT | RIGHT: "─",
    DOWN | RIGHT: "╭",
    DOWN | LEFT: "╮",
    UP | RIGHT: "╰",
    UP | LEFT: "╯",
    UP | DOWN | RIGHT: "├",
    UP | DOWN | LEFT: "┤",
    DOWN | LEFT | RIGHT: "┬",
    UP | LEFT | RIGHT: "┴",
    UP | DOWN | LEFT | RIGHT: "┼",
}
"""The box-drawing character for each set of directions a line leaves a cell in."""

Deps = Mapping[str, Sequence[str]]
"""Nodes in a topological order, each with the ids it depends on."""


@dataclass(frozen=True, kw_only=True)
class Box:
    """Where one node is drawn: its top-left corner on the canvas and its layer."""

    node_id: str
    x: int
    y: int
    layer: int
    width: int = BOX_WIDTH

    @property
    def center(self) -> int:
        """The column edges attach to."""
        return self.x + self.width // 2

    def contains(self, x: int, y: int) -> bool:
        """Whether canvas cell ``(x, y)`` is inside the box."""
        return self.x <= x < self.x + self.width and self.y <= y < self.y + BOX_HEIGHT


@dataclass(kw_only=True)
class DagLayout:
    """Boxes for the nodes, line masks and border tees for the edges, and the canvas size."""

    boxes: dict[str, Box] = field(default_factory=dict)
    layers: list[list[str]] = field(default_factory=list)
    lines: dict[tuple[int, int], int] = field(default_factory=dict)
    tees: dict[tuple[int, int], str] = field(default_factory=dict)
    width: int = 0
    height: int = HEADER_ROWS
    box_width: int = BOX_WIDTH

    def box_at(self, x: int, y: int) -> Box | None:
        """The box covering canvas cell ``(x, y)``, if any."""
        return next((box for box in self.boxes.values() if box.contains(x, y)), None)


@dataclass(frozen=True, slots=True)
class _Slot:
    """A place in a layer: a node, or a dummy carrying a long edge through the layer."""

    key: str
    node: str | None
    feeders: tuple[str, ...]
    width: int = DUMMY_WIDTH


def layout(deps: Deps, box_width: int = BOX_WIDTH) -> DagLayout:
    """Lay out ``deps`` in boxes ``box_width`` wide (clamped to :data:`BOX_WIDTH`…:data:`MAX_BOX_WIDTH`):
    layer ``k`` holds the nodes whose longest dependency chain has ``k`` links."""
    box_width = max(BOX_WIDTH, min(MAX_BOX_WIDTH, box_width))
    depth = _depths(deps)
    layers = _slots(deps, depth, box_width)
    _order(layers)
    centers, width = _columns(layers)
    result = DagLayout(
        layers=[[slot.key for slot in layer] for layer in layers], width=width, box_width=box_width
    )
    y = HEADER_ROWS
    for index, layer in enumerate(layers):
        _place(result, layer, index, y, centers)
        y += BOX_HEIGHT
        if index + 1 < len(layers):
            y += _band(result, layers[index + 1], centers, y)
    result.height = y
    return result


def _depths(deps: Deps) -> dict[str, int]:
    depth: dict[str, int] = {}
    for node_id, node_deps in deps.items():
        known = [depth[dep] for dep in node_deps if dep in depth]
        depth[node_id] = 1 + max(known) if known else 0
    return depth


def _slots(deps: Deps, depth: Mapping[str, int], box_width: int) -> list[list[_Slot]]:
    """Layered slots; an edge spanning several layers gets a dummy slot in each layer it crosses."""
    layers: list[list[_Slot]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node_id, node_deps in deps.items():
        feeders = []
        for dep in (dep for dep in node_deps if dep in depth):
            above = dep
            for layer in range(depth[dep] + 1, depth[node_id]):
                key = f"{dep}->{node_id}@{layer}"
                layers[layer].append(_Slot(key, None, (above,)))
                above = key
            feeders.append(above)
        layers[depth[node_id]].append(_Slot(node_id, node_id, tuple(feeders), box_width))
    return layers


def _order(layers: list[list[_Slot]]) -> None:
    """Sort each layer by the mean position of its feeders (one stable barycenter pass)."""
    position: dict[str, float] = {}
    for layer in layers:

        def weight(slot: _Slot) -> float:
            known = [position[key] for key in slot.feeders if key in position]
            return sum(known) / len(known) if known else float("inf")

        layer.sort(key=weight)
        position.update({slot.key: index for index, slot in enumerate(layer)})


def _columns(layers: Sequence[Sequence[_Slot]]) -> tuple[dict[str, int], int]:
    """The center column of every slot and the canvas width (that of the widest layer).

    Each layer starts at the left edge (the first nodes stay in view in a narrow pane); then each slot
    moves toward the mean of its feeders as far as its neighbours allow, so edges run as straight as
    they can without widening the canvas.
    """
    spans = [sum(slot.width for slot in layer) + GAP * (len(layer) - 1) for layer in layers]
    width = max(spans, default=0)
    centers: dict[str, int] = {}
    for layer in layers:
        lefts = []
        x = 0
        for slot in layer:
            lefts.append(x)
            x += slot.width + GAP
        for index, slot in enumerate(layer):
            known = [centers[key] for key in slot.feeders if key in centers]
            if known:
                low = lefts[index - 1] + layer[index - 1].width + GAP if index else 0
                high = lefts[index + 1] - GAP - slot.width if index + 1 < len(layer) else width - slot.width
                wanted = round(sum(known) / len(known)) - slot.width // 2
                lefts[index] = max(low, min(high, wanted))
        for slot, left in zip(layer, lefts, strict=True):
            centers[slot.key] = left + slot.width // 2
    return centers, width


def _place(result: DagLayout, layer: Sequence[_Slot], index: int, y: int, centers: Mapping[str, int]) -> None:
    for slot in layer:
        if slot.node is not None:
            x = centers[slot.key] - slot.width // 2
            result.boxes[slot.node] = Box(node_id=slot.node, x=x, y=y, layer=index, width=slot.width)
        else:
            _vertical(result.lines, centers[slot.key], y, y + BOX_HEIGHT - 1)


def _band(result: DagLayout, below: Sequence[_Slot], centers: Mapping[str, int], top: int) -> int:
    """Draw the edges from one layer into the next, below row ``top``; returns the rows they take.

    Each feeder whose edges bend gets a row of its own, so edges from different nodes never share a
    horizontal run.
    """
    edges = [(feeder, slot) for slot in below for feeder in slot.feeders]
    bent = sorted({feeder for feeder, slot in edges if centers[feeder] != centers[slot.key]})
    rows = max(1, len(bent))
    row_of = {feeder: row for row, feeder in enumerate(bent)}
    spans: dict[str, tuple[int, int, int]] = {}
    """Each feeder's bus row and the columns its edges span on it: drawn once, as the edges' union (a
    node with a thousand calls would otherwise draw a thousand overlapping runs, quadratic in width)."""
    for feeder, slot in edges:
        start, end = centers[feeder], centers[slot.key]
        bus = top + row_of.get(feeder, rows - 1)
        if feeder not in spans:
            if feeder in result.boxes:
                result.tees[(start, top - 1)] = "┬"
            _vertical(result.lines, start, top, bus, down=False)
            spans[feeder] = (bus, start, start)
        _, low, high = spans[feeder]
        spans[feeder] = (bus, min(low, end), max(high, end))
        _vertical(result.lines, end, bus, top + rows - 1, up=False)
        if slot.node is not None:
            result.tees[(end, top + rows)] = "┴"
    for bus, low, high in spans.values():
        _horizontal(result.lines, bus, low, high)
    return rows


def _mark(lines: dict[tuple[int, int], int], x: int, y: int, mask: int) -> None:
    lines[(x, y)] = lines.get((x, y), 0) | mask


def _vertical(
    lines: dict[tuple[int, int], int], x: int, start: int, end: int, *, up: bool = True, down: bool = True
) -> None:
    """A line down column ``x`` from row ``start`` to ``end``; ``up``/``down``: joined beyond its ends."""
    for row in range(start, end + 1):
        _mark(lines, x, row, (UP if up or row > start else 0) | (DOWN if down or row < end else 0))


def _horizontal(lines: dict[tuple[int, int], int], y: int, start: int, end: int) -> None:
    low, high = min(start, end), max(start, end)
    for column in range(low, high + 1):
        _mark(lines, column, y, (LEFT if column > low else 0) | (RIGHT if column < high else 0))
