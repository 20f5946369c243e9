"""The graph pane: boxes as wide as the longest label, the pane as wide as the drawing (up to half a wide
screen), ``[`` and ``]`` to size it by hand and ``z`` to give it the whole width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from ditto_tui.tui.run_state import NodeView
from ditto_tui.tui.widgets.dag import DagView, box_width
from ditto_tui.tui.widgets.dag_layout import BOX_WIDTH, MAX_BOX_WIDTH, layout
from ditto_tui.tui.widgets.run_view import GRAPH_WIDTH, RunView
from tests.tui.run_fixtures import SIZE, app_for, approval_view, keys_armed, run_screen, wait_until, workspace
from tests.tui.test_agent_loop_tui import agent_app, approve_the_write, ask, finished


def node(node_id: str, node_type: str = "INTERACTION.ACT.TOOL") -> NodeView:
    return NodeView(id=node_id, type=node_type, deps=())


def test_boxes_widen_for_the_longest_label_within_limits() -> None:
    assert box_width([node("read")]) == 2 + max(len("✓ read"), len("ACT.TOOL 12.4s"))
    assert layout({"a": ()}, box_width([node("a")])).box_width == BOX_WIDTH
    long = node("act/call_9pXk2hQ7Lm")
    wide = layout({long.id: ()}, box_width([long]))
    assert wide.box_width == len("✓ act/call_9pXk2hQ7Lm") + 2 and wide.boxes[long.id].width == wide.box_width
    assert wide.width == wide.box_width
    huge = node("n" * 80)
    assert layout({huge.id: ()}, box_width([huge])).box_width == MAX_BOX_WIDTH


def dag_rows(dag: DagView) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in dag._lines]


def assert_every_label_whole(view: RunView) -> None:
    """Every box of the graph is inside the pane and shows its node's id and type uncut."""
    dag = view.dag
    assert dag.scrollable_content_region.width >= dag.virtual_size.width, "the whole drawing is in view"
    rows = "\n".join(dag_rows(dag))
    assert "…" not in rows, rows
    for node_id in view.model.nodes:
        assert node_id in rows, node_id


async def test_the_shipped_write_note_graph_is_whole_at_120_columns(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/write_note.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)  # every node is drawn by now; the write waits
        await pilot.press("escape")
        await pilot.pause()
        view = run_screen(app).view
        assert GRAPH_WIDTH <= view.graph_width <= SIZE[0] // 2
        assert_every_label_whole(view)


async def test_the_packaged_agent_is_whole_at_120_columns(tmp_path: Path) -> None:
    app = agent_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Summarise the README")
        await approve_the_write(pilot)
        await finished(pilot)
        view = run_screen(app).view
        assert {"tools", "sample", "act", "observe", "output"} <= set(view.model.nodes)
        assert_every_label_whole(view)


async def press_armed(pilot: Pilot[Any], *keys: str) -> None:
    await keys_armed(pilot)
    await pilot.press(*keys)
    await pilot.pause()


async def test_brackets_size_the_pane_and_z_gives_it_the_whole_width(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/write_note.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")
        screen = run_screen(app)
        view = screen.view
        await wait_until(pilot, lambda: view.dag.virtual_size.width > 0)
        fitted = view.graph_width
        view.dag.focus()
        await press_armed(pilot, "right_square_bracket")
        assert view.graph_width == fitted + 6 and view.dag.outer_size.width == fitted + 6
        await press_armed(pilot, "left_square_bracket", "left_square_bracket")
        assert view.graph_width == fitted - 6 and view.dag.outer_size.width == fitted - 6
        await pilot.resize_terminal(140, 40)
        await pilot.pause()
        assert view.graph_width == fitted - 6, "a width the person chose stays through a resize"
        await press_armed(pilot, "z")
        assert view.dag.outer_size.width == 140 and not view.query_one("#side").display
        await press_armed(pilot, "z")
        assert view.dag.outer_size.width == fitted - 6


async def test_below_120_columns_the_pane_keeps_a_third(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "graphs/write_note.py")
    async with app.run_test(size=(90, 30)) as pilot:
        await approval_view(pilot)
        await pilot.press("escape")
        view = run_screen(app).view
        await wait_until(pilot, lambda: view.dag.virtual_size.width > 0)
        assert view.graph_width == 30, "the side keeps two thirds; z or ] show the rest"


def _band_edge_by_edge(result: Any, below: Any, centers: Any, top: int) -> int:
    """How a band was drawn before: each edge's horizontal run on its own (the reference)."""
    from ditto_tui.tui.widgets.dag_layout import _horizontal, _vertical

    edges = [(feeder, slot) for slot in below for feeder in slot.feeders]
    bent = sorted({feeder for feeder, slot in edges if centers[feeder] != centers[slot.key]})
    rows = max(1, len(bent))
    for feeder, slot in edges:
        start, end = centers[feeder], centers[slot.key]
        bus = top + (bent.index(feeder) if feeder in bent else rows - 1)
        if feeder in result.boxes:
            result.tees[(start, top - 1)] = "┬"
        _vertical(result.lines, start, top, bus, down=False)
        _horizontal(result.lines, bus, start, end)
        _vertical(result.lines, end, bus, top + rows - 1, up=False)
        if slot.node is not None:
            result.tees[(end, top + rows)] = "┴"
    return rows


def test_a_node_with_many_calls_is_drawn_as_each_edge_would_be_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node feeding a thousand (a loop's nested calls) draws each band once per feeder, the union of
    the runs its edges drew one by one (which made the band quadratic in its width): the same picture."""
    from ditto_tui.tui.widgets import dag_layout

    shapes = [
        {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c")},
        {"a": (), "b": (), "c": ("a", "b"), "d": ("a",), "e": ("c", "d", "b")},
        *(
            {"flood": (), **{f"call-{i}": ("flood",) for i in range(n)}, "out": ("call-0",)}
            for n in (1, 5, 300)
        ),
    ]
    for deps in shapes:
        drawn = dag_layout.layout(deps)
        with monkeypatch.context() as patched:
            patched.setattr(dag_layout, "_band", _band_edge_by_edge)
            before = dag_layout.layout(deps)
        assert (drawn.lines, drawn.tees, drawn.boxes) == (before.lines, before.tees, before.boxes)
