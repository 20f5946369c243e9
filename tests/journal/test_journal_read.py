"""Reading journals back: a truncated last line is reported and never fatal; finding and listing runs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ditto_tui.headless import run_headless
from ditto_tui.runtime import CustomEvent, NodeInfo, RunFinished, RunStarted
from ditto_tui.supervise import JournalError, RunJournal, read_journal
from ditto_tui.supervise.journal import find_journal, list_runs
from tests.journal.journal_fixtures import STEPS_CONFIG, STEPS_GRAPH, journals, load, make_workspace


def _small_journal(directory: Path) -> Path:
    """A journal of three events, one with multi-byte text, written by the journal itself."""
    journal = RunJournal(directory)
    base = {"run_id": "run-small", "at": 1.0}
    journal(
        RunStarted.trusted(
            {
                **base,
                "seq": 1,
                "plan": "small",
                "nodes": (NodeInfo(id="a", type="X.Y"),),
                "plan_kind": "graph",
            }
        )
    )
    journal(CustomEvent.trusted({**base, "seq": 2, "name": "note", "data": {"text": "naïve café ✓ 日本"}}))
    journal(RunFinished.trusted({**base, "seq": 3, "status": "succeeded", "duration_ms": 5.0}))
    return directory / "run-small.jsonl"


def test_a_journal_cut_anywhere_reads_back_its_complete_lines(tmp_path: Path) -> None:
    path = _small_journal(tmp_path / "runs")
    data = path.read_bytes()
    full = read_journal(path)
    assert [event.kind for event in full.events] == ["run_started", "custom", "run_finished"]
    assert not full.truncated_tail and full.problems() == []
    line_ends = {index + 1 for index, byte in enumerate(data) if byte == ord("\n")}
    cut_file = tmp_path / "cut.jsonl"
    for cut in range(len(data) + 1):
        cut_file.write_bytes(data[:cut])
        read = read_journal(cut_file)
        complete = data[:cut].count(b"\n")
        assert read.truncated_tail == (cut not in line_ends and cut > 0)
        assert read.events == full.events[: max(0, complete - 1)]
        assert read.invalid_lines == ()
        if read.truncated_tail:
            assert "ends inside a line" in read.problems()[0]


def test_unreadable_lines_are_left_out_and_reported(tmp_path: Path) -> None:
    path = _small_journal(tmp_path / "runs")
    lines = path.read_bytes().split(b"\n")
    lines.insert(2, b'{"kind": "no_such_kind", "run_id": "run-small"}')
    lines.insert(3, b"\xff\xfe not json")
    path.write_bytes(b"\n".join(lines))
    read = read_journal(path)
    assert [event.kind for event in read.events] == ["run_started", "custom", "run_finished"]
    assert read.invalid_lines == (3, 4)
    assert "2 unreadable line(s) left out: 3, 4" in read.problems()[0]


def test_a_missing_journal_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="cannot read journal 'nope.jsonl'"):
        read_journal(tmp_path / "nope.jsonl")
    with pytest.raises(JournalError, match="no journal for 'run-404'"):
        find_journal("run-404", tmp_path)


async def test_runs_are_found_by_id_prefix_or_path_and_listed(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    config, program = load(root, STEPS_GRAPH)
    for approve in ("allow", "deny"):
        assert await run_headless(program, config, root, approve=approve, out=io.StringIO()) == 0
    first, second = journals(root)
    assert find_journal(first.stem, root) == first
    assert find_journal(str(second), tmp_path) == second
    assert find_journal(first.stem[:-2], root) == first
    with pytest.raises(JournalError, match="names 2 runs"):
        find_journal("run-", root)
    short = first.stem.rpartition("-")[2]  # as the app's runs list and `grants` show it
    assert find_journal(short, root) == first and find_journal(short[:5], root) == first
    summaries = list_runs(root)
    assert [summary.outcome for summary in summaries] == ["succeeded", "succeeded"]
    assert [dict(summary.approvals) for summary in summaries] == [{"approve": 6}, {"deny": 6}]
    assert all(summary.graph == "recorded-steps" and summary.duration_ms for summary in summaries)
