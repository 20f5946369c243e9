"""The Run screen over real runs: graph, timeline, detail, status, selection by keyboard and mouse."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.tui.widgets.dag_layout import BOX_HEIGHT
from tests.tui.run_fixtures import (
    SIZE,
    app_for,
    approval_view,
    keys_armed,
    outputs,
    run_screen,
    run_worker,
    screen_text,
    wait_until,
    workspace,
)


async def test_a_finished_run_shows_every_node_entry_and_count(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("a")
        await outputs(pilot)
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.phase == "succeeded")
        await pilot.pause()
        assert {node.state for node in screen.model.nodes.values()} == {"succeeded"}
        kinds = [entry.kind for entry in screen.model.entries]
        assert kinds.count("call") == 2 and "approval" in kinds and "observation" in kinds
        assert "output" in kinds
        text = screen_text(app)
        assert "finished" in text and "✓ 4 succeeded" in text and "0 approvals pending" in text
        for label in ("✓ read", "✓ write", "✓ observe", "✓ output", "write_text", "read_text", "approved"):
            assert label in text, label
        assert "write-note · graph" in text


async def test_selecting_an_entry_shows_all_of_it_and_v_switches_to_raw_json(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/write_note.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await pilot.press("a")
        await outputs(pilot)
        await keys_armed(pilot)
        screen = run_screen(app)
        write = screen.model.nodes["write"].entry
        assert write is not None
        screen.timeline.focus()
        await pilot.press("home")
        for _ in range(write.index):
            await pilot.press("down")
        assert screen.timeline.selected is write and screen.dag.selected == "write"
        detail = screen.detail.text.plain
        for part in ('"path": ".ditto/notes/hello.md"', "Wrote 42 bytes", '"bytes": 42', '"role": "tool"'):
            assert part in detail, part
        assert "# Hello⏎" in detail  # the normalised view shows newlines as markers
        await pilot.press("v")
        raw = screen.detail.text.plain
        assert '"structuredContent": {' in raw and '"text": "# Hello\\n\\nWritten' in raw
        assert "raw JSON" in str(screen.detail.border_title)


async def test_graph_nodes_are_selected_with_arrows_and_the_mouse(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/slow_call.py")
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        model = screen.model
        await wait_until(pilot, lambda: "read" in model.nodes and model.nodes["read"].state == "succeeded")
        screen.dag.focus()
        await pilot.press("right")
        first = screen.dag.selected
        await pilot.press("right")
        second = screen.dag.selected
        assert {first, second} == {"wait", "read"}
        assert screen.timeline.selected is model.nodes[str(second)].entry
        box = screen.dag.node_boxes[str(first)]
        await pilot.click(screen.dag, offset=(box.x + 3, box.y + BOX_HEIGHT // 2 + 1))
        assert screen.dag.selected == first
        assert screen.timeline.selected is model.nodes[str(first)].entry
        assert "◐ wait" in screen_text(app)
        await pilot.press("x")
        await outputs(pilot)


async def test_a_loop_shows_its_iteration_and_how_often_each_node_ran(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "graphs/read_and_deliver.py")
    async with app.run_test(size=SIZE) as pilot:
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.phase == "succeeded")
        await pilot.pause()
        assert run_worker(app).result == 2  # the loop's final state
        assert screen.model.iteration == 2
        assert {node.runs for node in screen.model.nodes.values()} == {2}
        text = screen_text(app)
        assert "read-and-deliver · loop · iteration 2/2" in text and "×2" in text
        assert text.count("iteration 1/2") == 1  # the timeline row of the first iteration
