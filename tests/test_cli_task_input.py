"""``--task`` and ``--input``: the run's input from the command line, for the agent graph and any graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ditto_tui.__main__ import main

GRAPH = """
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from ditto_tui.demo.tools import read_text_tool


def program(config, workspace):
    plan = graph("read-given").node(
        "read",
        "INTERACTION.ACT.TOOL",
        [],
        lambda given, _deps: {
            "call": {"id": "r1", "name": "read_text", "arguments": {"path": given["path"]}}
        },
    )
    return Program(name="read-given", description="reads the file its input names", plan=plan,
                   initial={"path": "missing.md"}, tools=(read_text_tool,))
"""


def _events(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_task_sets_the_agent_graphs_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = "Count the Markdown files and say how many there are"
    code = main(["--headless", "--approve", "allow", "--workspace", str(tmp_path), "--task", task])
    out = capsys.readouterr().out
    assert code == 0
    samples = [event for event in _events(out) if event.get("node_type") == "INFER.SAMPLE"]
    assert samples and task in json.dumps(samples[0]["input"])


@pytest.mark.parametrize("how", ["json", "file"])
def test_input_is_any_graphs_input(how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.md").write_text("hello\n", encoding="utf-8")
    graph_file = tmp_path / "read_given.py"
    graph_file.write_text(GRAPH, encoding="utf-8")
    given = json.dumps({"path": "notes.md"})
    if how == "file":
        (tmp_path / "input.json").write_text(given, encoding="utf-8")
        given = f"@{tmp_path / 'input.json'}"
    args = ["run", str(graph_file), "--headless", "--workspace", str(tmp_path), "--input", given]
    assert main(args) == 0
    (read,) = [event for event in _events(capsys.readouterr().out) if event.get("kind") == "node_finished"]
    assert "hello" in json.dumps(read["output"])


@pytest.mark.parametrize(
    ("given", "said"),
    [("{not json", "--input is not JSON"), ("@/no/such/file.json", "cannot read the file")],
)
def test_bad_input_is_one_line(
    given: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--headless", "--workspace", str(tmp_path), "--input", given]) == 2
    assert said in capsys.readouterr().err


def test_an_empty_task_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--headless", "--workspace", str(tmp_path), "--task", "  "]) == 2
    assert "--task is empty" in capsys.readouterr().err
