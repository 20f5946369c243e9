"""Every graph in graphs/ runs headless; the CLI prints one JSON event per line and exits as documented."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.__main__ import main
from ditto_tui.config import load_runtime_config_file
from ditto_tui.errors import ConfigError
from ditto_tui.headless import run_headless
from ditto_tui.program import load_program
from ditto_tui.trust import trust, untrust

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = sorted((ROOT / "graphs").glob("*.py"))
NEEDS_A_KEY = {"web_search": "BRAVE_API_KEY"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A trusted copy of the repository's README and ditto.yaml (trust lives in the test's own home)."""
    for name in ("README.md", "ditto.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    trust(tmp_path)
    return tmp_path


def events_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("graph_file", GRAPHS, ids=[g.stem for g in GRAPHS])
@pytest.mark.parametrize("approve", ["deny", "allow"])
async def test_every_graph_runs_headless(workspace: Path, graph_file: Path, approve: str) -> None:
    config = load_runtime_config_file(workspace / "ditto.yaml", {})
    if graph_file.stem in NEEDS_A_KEY:
        # Without its key the graph refuses to start; tests/infer runs it against a loopback server.
        with pytest.raises(ConfigError, match=NEEDS_A_KEY[graph_file.stem]):
            load_program(graph_file, config, workspace)
        return
    program = load_program(graph_file, config, workspace)
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(program, config, workspace, approve=approve, out=out, err=err)  # type: ignore[arg-type]
    assert code == 0, err.getvalue()
    events = events_of(out.getvalue())
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_finished"
    assert events[-1]["status"] == "succeeded"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)


async def test_write_note_asks_and_follows_the_headless_answer(workspace: Path) -> None:
    config = load_runtime_config_file(workspace / "ditto.yaml", {})
    note = workspace / ".ditto/notes/hello.md"
    for approve, written in (("deny", False), ("allow", True)):
        out = io.StringIO()
        program = load_program(ROOT / "graphs/write_note.py", config, workspace)
        await run_headless(program, config, workspace, approve=approve, out=out)  # type: ignore[arg-type]
        resolved = [e for e in events_of(out.getvalue()) if e["kind"] == "approval_resolved"]
        asked = [e for e in resolved if e["decided_by"] not in ("rule", "default")]  # not the policy's own
        assert [e["decision"] for e in asked] == ["approve" if written else "deny"]
        assert note.exists() is written


def test_cli_module_runs_the_default_graph_and_prints_json_lines(workspace: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shutil.copytree(ROOT / "graphs", workspace / "graphs")
    completed = subprocess.run(
        [sys.executable, "-m", "ditto_tui", "--headless"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    events = events_of(completed.stdout)
    assert events[-1]["kind"] == "run_finished" and events[-1]["status"] == "succeeded"
    assert events[0]["plan"] == "react-agent"  # the default graph: the ReAct agent on the scripted model
    delivered = [e for e in events if e["kind"] == "node_finished" and e["node_type"] == "INTERACTION.OUTPUT"]
    assert len(delivered) == 1 and delivered[0]["output"]["status"] == "accepted"


def test_cli_failure_is_one_line_and_nonzero(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "bad.yaml").write_text("sandbox:\n  tools: 3\n", encoding="utf-8")
    code = main(
        [
            "run",
            str(ROOT / "graphs/read_and_deliver.py"),
            "--config",
            str(workspace / "bad.yaml"),
            "--workspace",
            str(workspace),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "sandbox.tools" in err


def test_cli_run_that_fails_exits_nonzero_with_a_reason(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    (workspace / "README.md").unlink()
    code = main(
        ["run", str(ROOT / "graphs/read_and_deliver.py"), "--workspace", str(workspace), "--headless"]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("ditto-tui: run failed:") and captured.err.count("\n") == 1
    assert str(workspace) not in captured.err


def test_an_input_the_loop_example_cannot_take_is_refused_in_words(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", str(ROOT / "graphs/read_and_deliver.py"), "--workspace", str(workspace), "--headless"]
    code = main([*argv, "--input", '{"path": "ditto.yaml"}'])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert 'its input is the loop\'s counter, 0 to 1, not {"path": "ditto.yaml"}' in err
    assert "tuple indices" not in err
    assert main([*argv, "--input", "1"]) == 0  # a counter: it reads ditto.yaml only


def test_help_explains_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "run" in capsys.readouterr().out


def test_s07_a_workspace_config_is_not_trusted_implicitly(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    untrust(workspace)
    # The workspace's own policy would let every write through without asking.
    (workspace / "ditto.yaml").write_text(
        "sandbox:\n  tools: [read_text, write_text]\n  read: true\n  write: true\n"
        "approval:\n  rules:\n    - tool: '*'\n      decision: allow\n"
    )
    code = main(["run", str(ROOT / "graphs/write_note.py"), "--workspace", str(workspace), "--headless"])
    captured = capsys.readouterr()
    assert "not using ditto.yaml of" in captured.err and "ditto-tui trust" in captured.err
    assert code == 0 and '"APPROVAL_DENIED"' in captured.out  # the built-in policy asked: denied headless
    assert not (workspace / ".ditto/notes/hello.md").exists()
