"""The Run screen's model folded from events, and where the DAG puts boxes and edges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.interaction import create_interaction_worker, open_mcp_servers
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    ExecutionEvent,
    LoopIteration,
    NodeFailed,
    NodeFinished,
    NodeInfo,
    NodeStarted,
    RunFinished,
    RunStarted,
    create_ditto,
    graph,
)
from ditto_tui.tui.run_state import RunModel, arguments_summary, format_seconds, progress_status
from ditto_tui.tui.widgets.dag_layout import BOX_HEIGHT, DOWN, LINES, UP, layout
from tests.mcp.mcp_helpers import python_server

IDS: dict[str, Any] = {"run_id": "run-1"}


def _start(nodes: tuple[NodeInfo, ...], kind: str = "graph") -> RunStarted:
    return RunStarted(**IDS, seq=1, at=100.0, plan="p", plan_kind=kind, nodes=nodes)


def _tool(seq: int, node: str, at: float) -> NodeStarted:
    call = {"call": {"id": f"c-{node}", "name": "write_text", "arguments": {"path": "a.md", "text": "x\n"}}}
    return NodeStarted(
        **IDS,
        seq=seq,
        at=at,
        node_id=node,
        node_type="INTERACTION.ACT.TOOL",
        execution_id=f"e-{node}",
        input=call,
    )


def _done(seq: int, node: str, status: str) -> NodeFinished:
    fields: dict[str, Any] = (
        {"content": "ok"} if status == "success" else {"error": {"code": "X", "message": "no"}}
    )
    result = ExternalResult.model_validate(
        {"call_id": f"c-{node}", "source": "write_text", "status": status, **fields}
    )
    return NodeFinished(
        **IDS, seq=seq, at=101.0, node_id=node, node_type="INTERACTION.ACT.TOOL", execution_id=f"e-{node}",
        duration_ms=12.0, output=result,
    )  # fmt: skip


def test_a_cancelled_node_is_counted_cancelled_not_failed_and_so_is_one_left_running_by_a_cancelled_run() -> (
    None
):
    """Ending a run (``x`` in the runs list, ctrl+c) is not a failure: its nodes say cancelled (the
    status line counts them so once there are any: the tmux test of ending a gateway session sees it)."""
    nodes = tuple(NodeInfo(id=name, type="T.TOOL") for name in ("a", "b", "c"))
    model = RunModel()
    model.apply([_start(nodes), _tool(2, "a", 100.5), _tool(3, "b", 100.6), _tool(4, "c", 100.7)])
    model.apply(
        [
            NodeFailed(
                **IDS, seq=5, at=101.0, node_id="a", node_type="INTERACTION.ACT.TOOL", execution_id="e-a",
                duration_ms=500.0, error_type="CancelledError", error="cancelled", cancelled=True,
            ),
            NodeFailed(
                **IDS, seq=6, at=101.0, node_id="b", node_type="INTERACTION.ACT.TOOL", execution_id="e-b",
                duration_ms=400.0, error_type="ValueError", error="broke",
            ),
            RunFinished(**IDS, seq=7, at=101.1, status="cancelled", duration_ms=1100.0),
        ]
    )  # fmt: skip
    assert [model.nodes[name].state for name in ("a", "b", "c")] == ["cancelled", "failed", "cancelled"]
    assert model.counts() == {"cancelled": 2, "failed": 1}


def test_calls_and_approvals_move_nodes_through_their_states() -> None:
    model = RunModel()
    events: list[ExecutionEvent] = [
        _start((NodeInfo(id="a", type="T.TOOL"), NodeInfo(id="b", type="T.TOOL"))),
        _tool(2, "a", 100.5),
        ApprovalRequested(
            **IDS, seq=3, at=100.6, request_id="r-1", call_id="c-a", tool="write_text", node_id="a",
            arguments={"path": "a.md"}, arguments_digest="0" * 64, tool_digest="1" * 64, rule="tool:write_*",
        ),
    ]  # fmt: skip
    model.apply(events)
    assert model.nodes["a"].state == "awaiting" and model.counts()["pending"] == 1
    assert list(model.pending_approvals) == ["r-1"] and model.elapsed(104.0) == pytest.approx(4.0)
    model.apply(
        [
            ApprovalResolved(
                **IDS, seq=4, at=101.0, request_id="r-1", call_id="c-a", tool="write_text", decision="deny",
                reason="not now", arguments_digest="0" * 64,
            ),
            _done(5, "a", "failed"),
            _tool(6, "b", 101.0),
            _done(7, "b", "success"),
            RunFinished(**IDS, seq=8, at=102.0, status="succeeded", duration_ms=2000.0),
        ]
    )  # fmt: skip
    assert (model.nodes["a"].state, model.nodes["b"].state) == ("failed", "succeeded")
    approval = next(entry for entry in model.entries if entry.kind == "approval")
    assert approval.status == "denied" and approval.summary == "denied: not now"
    call = model.nodes["a"].entry
    assert call is not None and call.status == "failed" and call.summary == "X: no"
    assert model.phase == "succeeded" and model.elapsed(500.0) == pytest.approx(2.0)
    assert model.pending_approvals == {}


def test_a_nested_node_hangs_under_its_caller_and_a_loop_counts_its_runs() -> None:
    model = RunModel()
    model.apply([_start((NodeInfo(id="step", type="AGENT.STEP"),), "loop")])
    for iteration in (1, 2):
        model.apply(
            [
                LoopIteration(**IDS, seq=10 * iteration, at=100.0, iteration=iteration, max_iterations=5),
                _tool(10 * iteration + 1, "step", 100.0),
                _tool(10 * iteration + 2, "step/act-1", 100.1),
            ]
        )
    assert model.iteration == 2 and model.nodes["step"].runs == 2
    nested = model.nodes["step/act-1"]
    assert nested.deps == ("step",) and nested.nested and nested.runs == 1  # each iteration its own calls
    model.apply([LoopIteration(**IDS, seq=30, at=100.0, iteration=3, max_iterations=5)])
    assert list(model.nodes) == ["step"]
    assert [entry.title for entry in model.entries if entry.kind == "iteration"] == [
        "iteration 1/5",
        "iteration 2/5",
        "iteration 3/5",
    ]


def test_summaries_and_durations_are_short() -> None:
    assert arguments_summary({"path": "a.md", "text": "x" * 500}).count("x") < 60
    assert arguments_summary({"text": "a\nb"}) == 'text="a\\nb"'
    assert [format_seconds(s) for s in (0.0123, 4.25, 185)] == ["12ms", "4.2s", "3m05s"]


def test_layers_follow_dependency_depth_and_a_long_edge_runs_straight_through() -> None:
    result = layout({"read": (), "write": (), "observe": ("write",), "output": ("observe", "write")})
    assert [layer for layer in result.layers if layer][0] == ["read", "write"]
    assert result.layers[1][0] == "observe" and result.layers[1][1].startswith("write->output")
    boxes = result.boxes
    assert boxes["observe"].y > boxes["write"].y and boxes["output"].y > boxes["observe"].y
    # The dummy of write -> output carries a straight vertical line beside observe.
    column = boxes["write"].center
    rows = range(boxes["observe"].y, boxes["observe"].y + BOX_HEIGHT)
    assert all(result.lines.get((column, row)) == UP | DOWN for row in rows)
    assert result.tees[(column, boxes["write"].y + BOX_HEIGHT - 1)] == "┬"
    assert result.box_at(boxes["output"].x + 1, boxes["output"].y + 1) is boxes["output"]
    assert LINES[UP | DOWN] == "│" and result.box_at(-1, -1) is None


def test_a_chain_is_one_column() -> None:
    result = layout({"a": (), "b": ("a",), "c": ("b",)})
    assert len({box.x for box in result.boxes.values()}) == 1 and result.layers == [["a"], ["b"], ["c"]]
    assert DOWN & result.lines[(result.boxes["a"].center, result.boxes["a"].y + BOX_HEIGHT)]


async def test_an_mcp_calls_progress_shows_on_its_own_row_not_as_rows_of_its_own(tmp_path: Path) -> None:
    events: list[ExecutionEvent] = []
    entries = {"hostile": python_server("hostile.py")}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as registry:
        worker = create_interaction_worker(mcp=registry)
        async with create_ditto(
            sandbox={"mcp": ["hostile"]}, workspace=tmp_path, workers=[worker]
        ) as runtime:
            runtime.subscribe(events.append)
            call = {"id": "p1", "name": "progress_flood", "arguments": {"count": 40}}
            plan = graph("progress").node(
                "call",
                "INTERACTION.ACT.MCP",
                [],
                lambda _i, _d: {"operation": "invoke", "server": "hostile", "call": call},
            )
            await runtime.run(plan)
    model = RunModel()
    statuses: list[str] = []
    for event in events:
        model.apply([event])
        rows = [entry for entry in model.entries if entry.kind == "mcp"]
        if rows:
            statuses.append(rows[0].status)
    assert [entry.kind for entry in model.entries] == ["run", "mcp", "run"]  # no row per progress step
    assert statuses[-1] == "success" and "▰▰▰▰▰ 100%" in statuses
    assert all(status in ("running", "success") or status.startswith(("▰", "▱")) for status in statuses)


def test_progress_without_a_total_counts_steps() -> None:
    assert progress_status(3, None) == "step 3"
    assert progress_status(1, 4) == "▰▱▱▱▱ 25%"
    assert progress_status("x", 4) == "running"
    assert progress_status(9, 4) == "▰▰▰▰▰ 100%"
