"""ADVERSARIAL V-07: every decision is a journal line before its call runs, whoever made it.

A call a rule allows, one a layered rule denies (the user's own file under the workspace's), one the
tool asks about, answered here by ``--approve``: each has an
``approval_resolved`` line with ``decided_by`` and the deciding rule's file and line before the call's
``node_finished``, and ``audit`` names who decided every call.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.home import config_dir
from tests.journal.journal_fixtures import executions, headless_steps, journals, make_workspace

WORKSPACE_RULES = """\
sandbox:
  tools: [record_step]
  write: true
approval:
  rules:
    - tool: record_step
      args: {step: {min: 1, max: 4}}
      decision: allow
    - tool: record_step
      args: {step: {equals: 5}}
      decision: ask
"""

USER_RULES = """\
approval:
  rules:
    - tool: record_step
      args: {step: {equals: 4}}
      decision: deny
"""


def test_v07_rule_allows_layered_denies_and_answers_are_each_on_the_record_before_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_workspace(tmp_path, WORKSPACE_RULES)
    user = config_dir() / "ditto.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER_RULES, encoding="utf-8")
    assert main([*headless_steps(root), "--approve", "allow"]) == 0
    assert executions(root) == ["step-1", "step-2", "step-3", "step-5", "step-6"]  # 4: the user's deny
    (path,) = journals(root)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    decided = {
        line["call_id"]: (index, line)
        for index, line in enumerate(lines)
        if line["kind"] == "approval_resolved"
    }
    assert set(decided) == {f"step-{n}" for n in range(1, 7)}  # no call without its decision
    finished = {
        line["links"]["callId"]: index
        for index, line in enumerate(lines)
        if line["kind"] == "node_finished" and "callId" in line.get("links", {})
    }
    for call, (index, _line) in decided.items():
        assert index < finished[call], f"{call}: decided after it ran"
    workspace_file, user_file = str(root / "ditto.yaml"), str(user)
    expected = {
        "step-1": ("approve", "rule", [(workspace_file, 6)]),
        "step-4": ("deny", "rule", [(user_file, 3)]),
        "step-5": ("approve", "mode", [(workspace_file, 9)]),  # --approve answered: a session setting
        "step-6": ("approve", "mode", []),  # no rule matched: the tool's own requires_approval asked
    }
    for call, (decision, by, rules) in expected.items():
        line = decided[call][1]
        assert (line["decision"], line["decided_by"]) == (decision, by), call
        assert [(ref["file"], ref["line"]) for ref in line["rules"]] == rules, call
    capsys.readouterr()
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    blocks = {block.split()[0]: block for block in out.split("\n\n") if block.startswith("step-")}
    assert "by policy: allow (" in blocks["step-1"] and f"at {workspace_file}:6" in blocks["step-1"]
    assert "by policy: deny (" in blocks["step-4"] and f"at {user_file}:3" in blocks["step-4"]
    assert "by fixed answer (--approve allow)" in blocks["step-6"]
    assert "not recorded" not in out


REFUSED_TURNS = """\
turns:
  - actions:
      - {id: outside-1, name: write_text, arguments: {path: /etc/ditto-outside.txt, text: x}}
      - {id: inside-1, name: write_text, arguments: {path: notes/inside.md, text: x}}
  - content: done
"""


def test_v07_a_call_refused_before_any_decision_is_not_given_one_by_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    config = (Path(__file__).resolve().parents[2] / "ditto_tui" / "agent" / "ditto.yaml").read_text()
    scripted = "infer:\n  provider: scripted\n"
    config = config.replace(scripted, scripted + "  script: t.yaml\n")
    (root / "ditto.yaml").write_text(config, encoding="utf-8")
    (root / "t.yaml").write_text(REFUSED_TURNS, encoding="utf-8")
    argv = ["--workspace", str(root), "--config", str(root / "ditto.yaml"), "--headless"]
    assert main([*argv, "--approve", "allow", "--task", "write"]) == 0
    assert (root / "notes" / "inside.md").exists()
    (path,) = journals(root)
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header["decisions"] == "every"
    capsys.readouterr()
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    blocks = {block.split()[0]: block for block in out.split("\n\n") if block.split()}
    outside = blocks["outside-1"]
    assert "by nothing: the call was refused before the policy was asked (" in outside, outside
    assert "policy: allow" not in outside and "grant" not in outside
    assert "by fixed answer (--approve allow)" in blocks["inside-1"]
