"""The runs list (l): one line per run, in columns that line up whatever the graph names."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.supervise.journal import RunSummary
from ditto_tui.tui.screens.runs import MAX_GRAPH_COLUMN, graph_column, run_label


def summary(graph: str, outcome: str, duration_ms: float | None, run: str) -> RunSummary:
    return RunSummary(
        run_id=f"run-20261203T17390{run}-0000000{run}",
        path=Path(f"/state/{run}.jsonl"),
        graph=graph,
        started_at=1_796_000_000.0,
        duration_ms=duration_ms,
        outcome=outcome,
        approvals={"approve": 1} if run == "1" else {},
    )


def test_the_columns_line_up_from_row_to_row() -> None:
    runs = [
        summary("review-result", "succeeded", 3500.0, "1"),
        summary("react-agent", "cancelled", 850.0, "2"),
        summary("x", "unfinished", None, "3"),
    ]
    width = graph_column(runs)
    lines = [run_label(run, live=False, graph_width=width).plain for run in runs]
    assert width == len("review-result")
    outcomes = [
        line.index(word) for line, word in zip(lines, ("succeeded", "cancelled", "unfinished"), strict=True)
    ]
    assert len(set(outcomes)) == 1, lines
    assert lines[1].index("00000002") == lines[2].index("00000003"), lines  # the short run ids
    assert lines[0].index("3.5s") + len("3.5s") == lines[1].index("850ms") + len("850ms"), lines
    assert "1 decision" in lines[0]


def test_a_long_or_hostile_graph_name_is_cut_and_shown_plainly() -> None:
    long = summary("g" * 60, "failed", 10.0, "1")
    hostile = summary("[bold]x\x1b[31m", "succeeded", 10.0, "2")
    width = graph_column([long, hostile])
    assert width == MAX_GRAPH_COLUMN
    cut = run_label(long, live=False, graph_width=width).plain
    assert "g" * (MAX_GRAPH_COLUMN - 1) + "…" in cut and "g" * MAX_GRAPH_COLUMN not in cut
    shown = run_label(hostile, live=True, graph_width=width)
    assert "[bold]x⟨ESC⟩[31m" in shown.plain and shown.plain.startswith("● ")


def test_a_gateway_session_names_its_client_plainly() -> None:
    session = summary("mcp-gateway", "running", None, "1")
    given = {"connection": "gw-1", "client": {"name": "Claude[red]\x1b", "version": "1.2"}}
    session = RunSummary(**{**session.__dict__, "input": given, "has_input": True})
    assert session.client == "Claude[red]\x1b 1.2"
    line = run_label(session, live=False).plain
    assert "Claude[red]⟨ESC⟩ 1.2" in line
    other = summary("react-agent", "succeeded", 1.0, "2")
    assert RunSummary(**{**other.__dict__, "input": given}).client is None  # only a gateway session


async def test_x_in_the_run_hosts_list_ends_the_highlighted_running_run_and_only_a_running_one() -> None:
    from textual.app import App

    from ditto_tui.runs import RunSummary as HostRun
    from ditto_tui.tui.screens.runs import EndRun, HostRunsModal

    runs = [
        HostRun(run_id="run-20261207T120000-0000000a", graph="mcp-gateway", status="running", started_at=2.0),
        HostRun(
            run_id="run-20261207T110000-0000000b", graph="write-note", status="succeeded", started_at=1.0
        ),
    ]
    chosen: list[object] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(HostRunsModal(runs, None), chosen.append)

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("down")  # the ended one: x says so and keeps the list open
        await pilot.press("x")
        await pilot.pause()
        assert chosen == [] and isinstance(app.screen, HostRunsModal)
        await pilot.press("up", "x")
        await pilot.pause()
    assert chosen == [EndRun("run-20261207T120000-0000000a")]
