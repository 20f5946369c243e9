"""``ditto-tui runs``, ``audit RUN [--json]`` and ``policy check RUN``: what they print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.home import runs_dir
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    NodeFailed,
    NodeInfo,
    NodeStarted,
    RunStarted,
)
from ditto_tui.supervise import JournalRead, RunJournal
from tests.journal.journal_fixtures import STEPS_CONFIG, headless_steps, journals, make_workspace


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A workspace with two recorded runs of the steps graph: approved, then denied."""
    root = make_workspace(tmp_path, STEPS_CONFIG)
    common = headless_steps(root)
    assert main([*common, "--approve", "allow"]) == 0
    assert main([*common, "--approve", "deny"]) == 0
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_runs_lists_every_recorded_run(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "runs", "--workspace", str(recorded))
    assert code == 0
    header, allowed, denied = out.splitlines()
    assert header.split() == ["RUN", "GRAPH", "STARTED", "DURATION", "OUTCOME", "APPROVALS"]
    assert allowed.startswith(journals(recorded)[0].stem) or allowed.startswith(journals(recorded)[1].stem)
    assert "recorded-steps" in allowed and "succeeded" in allowed and allowed.endswith("approve 6")
    assert denied.endswith("deny 6")


def test_runs_says_so_when_nothing_was_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "runs", "--workspace", str(tmp_path))
    assert code == 0 and out.startswith("No recorded runs")


def _run_ids(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    _code, out, _ = _run(capsys, "runs", "--workspace", str(root))
    allowed, denied = (line.split()[0] for line in out.splitlines()[1:])
    return allowed, denied


def test_audit_prints_who_decided_what_and_what_executed(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, denied = _run_ids(recorded, capsys)
    code, out, _ = _run(capsys, "audit", allowed, "--workspace", str(recorded))
    assert code == 0
    assert "Approver: fixed answer (--approve allow)" in out
    block = out.split("\n\n")[-1].splitlines()
    assert block[0] == "step-6  record_step  (node step6)"
    assert block[1].startswith("  requested ") and "tool:record_* → ask" in block[1]
    assert "approve by fixed answer (--approve allow): approved by --approve allow" in block[2]
    assert block[3] == '  arguments  {"step":6}'
    assert "(verified), tool " in block[4]
    assert block[5].startswith("  executed   success")
    assert block[6:] == ["  observed   success", "  delivered  steps:1 accepted"]
    _code, out, _ = _run(capsys, "audit", denied, "--workspace", str(recorded))
    assert "deny by fixed answer (--approve deny): denied by --approve deny" in out
    assert "executed   not executed: APPROVAL_DENIED" in out


def test_a_fixed_answer_is_recorded_as_the_sessions_setting_not_a_persons_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_workspace(tmp_path, STEPS_CONFIG)
    code, out, _ = _run(capsys, *headless_steps(root))
    assert code == 0
    printed = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    resolved = [line for line in printed if line["kind"] == "approval_resolved"]
    assert len(resolved) == 6
    assert {(line["decision"], line["reason"], line["decided_by"]) for line in resolved} == {
        ("deny", "denied by --approve deny", "mode")
    }
    (path,) = journals(root)
    recorded = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {line["decided_by"] for line in recorded if line["kind"] == "approval_resolved"} == {"mode"}
    _code, out, _ = _run(capsys, "audit", str(path))
    assert out.count("deny by fixed answer (--approve deny): denied by --approve deny") == 6


def test_audit_json_has_every_call(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allowed, _ = _run_ids(recorded, capsys)
    path = journals(recorded)[0] if journals(recorded)[0].stem == allowed else journals(recorded)[1]
    code, out, _ = _run(capsys, "audit", str(path), "--json")
    assert code == 0
    trail = json.loads(out)
    assert trail["runId"] == allowed and trail["outcome"] == "succeeded" and not trail["truncatedTail"]
    assert [call["callId"] for call in trail["calls"]] == [f"step-{n}" for n in range(1, 7)]
    first = trail["calls"][0]
    assert first["decision"] == "approve" and first["decidedBy"] == "fixed answer (--approve allow)"
    assert first["executed"] is True and first["digestCheck"] == "verified"
    assert first["requestedAt"] <= first["decidedAt"]


def test_policy_check_shows_what_another_policy_would_decide(
    recorded: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    allowed, _ = _run_ids(recorded, capsys)
    code, out, _ = _run(
        capsys,
        "policy",
        "check",
        allowed,
        "--workspace",
        str(recorded),
        "--config",
        str(recorded / "ditto.yaml"),
    )
    assert code == 0 and out.endswith("0 of 6 call(s) would be decided differently.\n")
    stricter = tmp_path / "stricter.yaml"
    stricter.write_text(STEPS_CONFIG.replace("decision: ask", "decision: deny"), encoding="utf-8")
    code, out, _ = _run(
        capsys, "policy", "check", allowed, "--workspace", str(recorded), "--config", str(stricter)
    )
    lines = out.splitlines()
    assert lines[1].split() == ["CALL", "TOOL", "RECORDED", "POLICY", "THEN", "POLICY", "NOW"]
    assert lines[2].split()[:3] == ["step-1", "record_step", "approve"]
    assert "ask (tool:record_* → ask)" in lines[2] and "deny (tool:record_* → deny)" in lines[2]
    assert lines[2].endswith("changed")
    assert lines[-1] == "6 of 6 call(s) would be decided differently."


def test_an_unknown_run_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "audit", "run-404", "--workspace", str(tmp_path))
    assert code == 2 and err.startswith("ditto-tui: run journal: no journal for 'run-404'")


def test_t01_audit_text_shows_escape_sequences_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = RunJournal(runs_dir(tmp_path))
    hostile = "x\x1b[2J\x1b]52;c;Y3VybA==\x07\u202e"
    base = {"run_id": "run-hostile", "at": 1.0}
    journal(
        RunStarted.trusted({**base, "seq": 1, "plan": "h\x1b[31m", "nodes": (NodeInfo(id="a", type="T.X"),)})
    )
    call = {"call": {"id": hostile, "name": "write_text", "arguments": {"text": hostile}}}
    started = {"node_id": "a", "node_type": "INTERACTION.ACT.TOOL", "execution_id": "exec-1", "input": call}
    journal(NodeStarted.trusted({**base, "seq": 2, **started}))
    request = {
        "request_id": "r-1",
        "call_id": hostile,
        "tool": "write_text",
        "arguments_digest": "d",
        "tool_digest": "t",
    }
    journal(
        ApprovalRequested.trusted(
            {**base, "seq": 3, **request, "node_id": "a", "arguments": {"text": hostile}}
        )
    )
    journal(ApprovalResolved.trusted({**base, "seq": 4, **request, "decision": "deny", "reason": hostile}))
    code, out, _ = _run(capsys, "audit", "run-hostile", "--workspace", str(tmp_path))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "x\\u001b[2J\\u001b]52;c;Y3VybA==\\u0007\\u202e" in out


def test_a_call_cancelled_while_pending_reads_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = RunJournal(runs_dir(tmp_path))
    base = {"run_id": "run-cancel", "at": 1.0}
    journal(RunStarted.trusted({**base, "seq": 1, "plan": "p", "nodes": (NodeInfo(id="a", type="T.X"),)}))
    call = {"call": {"id": "c-1", "name": "write_text", "arguments": {}}}
    ids = {"node_id": "a", "node_type": "INTERACTION.ACT.TOOL", "execution_id": "exec-1"}
    journal(NodeStarted.trusted({**base, "seq": 2, **ids, "input": call}))
    request = {"request_id": "r-1", "call_id": "c-1", "tool": "write_text", "arguments_digest": "d"}
    journal(ApprovalRequested.trusted({**base, "seq": 3, **request, "node_id": "a", "tool_digest": "t"}))
    journal(ApprovalResolved.trusted({**base, "seq": 4, **request, "decision": "cancelled"}))
    old = {"error_type": "CancelledError", "error": "CancelledError", "cancelled": True}  # as once recorded
    journal(NodeFailed.trusted({**base, "seq": 5, **ids, **old, "duration_ms": 1.0}))
    code, out, _ = _run(capsys, "audit", "run-cancel", "--workspace", str(tmp_path))
    assert code == 0
    assert "cancelled: the call was withdrawn while its approval was pending" in out
    assert "executed   was cancelled" in out
    assert "nobody" not in out and "by no one" not in out and "CancelledError" not in out


def test_replay_reads_the_run_and_opens_it(
    recorded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[JournalRead] = []

    def open_replay(journal: JournalRead) -> int:
        opened.append(journal)
        return 0

    monkeypatch.setattr("ditto_tui.__main__._open_replay", open_replay)
    allowed, _ = _run_ids(recorded, capsys)
    assert main(["replay", allowed[:-3], "--workspace", str(recorded)]) == 0
    (journal,) = opened
    assert journal.run_id == allowed and journal.finished is not None


@pytest.fixture
def agent_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The journal of the packaged agent's headless run in a fresh folder: its demo server's read-only
    ``search_notes`` runs, allowed by the built-in rule on the tool's ``readOnlyHint``."""
    root = tmp_path / "fresh"
    root.mkdir()
    assert main(["init", str(root)]) == 0
    assert main(["--headless", "--workspace", str(root)]) == 0
    capsys.readouterr()
    (path,) = journals(root)
    return path


HINT_RULE = "mcp:demo:* [read_only=true] → allow"


def test_audit_and_policy_check_name_the_hint_rule_that_allowed_an_mcp_call(
    agent_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.loads(line) for line in agent_run.read_text(encoding="utf-8").splitlines()]
    (verdict,) = [line for line in lines if line.get("name") == "policy_verdict"]
    assert verdict["data"]["annotations"]["readOnlyHint"] is True
    assert (verdict["data"]["decision"], verdict["data"]["rule"]) == ("allow", HINT_RULE)
    assert verdict["links"] == {"callId": "notes-1"}
    _code, out, _ = _run(capsys, "audit", str(agent_run))
    block = next(block for block in out.split("\n\n") if block.startswith("notes-1"))
    assert f"approve by policy: allow ({HINT_RULE}) at " in block and "grant" not in block
    trail = json.loads(_run(capsys, "audit", str(agent_run), "--json")[1])
    (notes,) = [call for call in trail["calls"] if call["callId"] == "notes-1"]
    assert notes["decidedBy"].startswith(f"policy: allow ({HINT_RULE}) at ")  # and the rule's file:line
    assert notes["decidedBy"].endswith(tuple(f"ditto.yaml:{n}" for n in range(1, 200)))
    code, out, _ = _run(capsys, "policy", "check", str(agent_run))
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("notes-1")]
    assert row.count(f"allow ({HINT_RULE})") == 2 and "changed" not in row
    assert "0 of 4 call(s) would be decided differently." in out


def test_an_older_journal_without_the_annotations_says_unknown_rather_than_guessing(
    agent_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = [  # as a journal written before verdicts and the policy's own decisions were recorded
        line
        for line in agent_run.read_text(encoding="utf-8").splitlines()
        if "policy_verdict" not in line and '"decided_by":"rule"' not in line.replace(" ", "")
    ]
    kept[0] = kept[0].replace(',"decisions":"every"', "")
    assert '"decisions"' not in kept[0]
    agent_run.write_text("\n".join(kept) + "\n", encoding="utf-8")
    _code, out, _ = _run(capsys, "audit", str(agent_run))
    block = next(block for block in out.split("\n\n") if block.startswith("notes-1"))
    assert "unknown: the journal does not record what decides" in block and HINT_RULE in block
    assert "grant" not in block
    _code, out, _ = _run(capsys, "policy", "check", str(agent_run))
    (row,) = [line for line in out.splitlines() if line.startswith("notes-1")]
    assert row.count("unknown (not recorded)") == 2 and row.endswith("unknown")
    assert "1 call(s) cannot be checked: the journal does not record what decides" in out
