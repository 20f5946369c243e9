"""Argument-aware approval rules (issue 16): args, effects, strictest wins, layers, provenance, lint."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.__main__ import main
from ditto_tui.config import load_runtime_config_file
from ditto_tui.errors import ConfigError, ValidationError
from ditto_tui.headless import run_headless
from ditto_tui.runtime import ApprovalResolved, ExecutionEvent
from ditto_tui.supervise import ApprovalDecision, ApprovalPolicy, QueueApprover
from ditto_tui.supervise.lint import glob_covers, lint, shadowed
from ditto_tui.supervise.matching import glob_regex
from ditto_tui.trust import trust
from ditto_tui.workspace import BUILTIN_CONFIG, resolve_config
from tests.journal.journal_fixtures import (
    STEPS_GRAPH,
    executions,
    journals,
    load,
    make_workspace,
)
from tests.properties import examples
from tests.supervise.test_gate import Recorder, Scripted, act, approve, deny, setup

PATH_RULE = {"tool": "write_text", "args": {"path": "notes/**"}, "decision": "allow"}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _write_text(policy: ApprovalPolicy, path: str) -> str:
    return policy.for_tool("write_text", True, ["write"], {"path": path, "text": "x"}).decision


# -- args ------------------------------------------------------------------------------------------------


def test_p02_a_path_rule_allows_its_folder_and_asks_for_traversal_and_other_files() -> None:
    policy = ApprovalPolicy([PATH_RULE])
    assert _write_text(policy, "notes/a/b.md") == "allow"
    assert _write_text(policy, "notes/a.md") == "allow"
    assert _write_text(policy, "./notes//a.md") == "allow"  # compared as the sandbox normalises it
    assert _write_text(policy, "notes/../x") == "ask"  # P-02: a '..' component is never allowed
    assert _write_text(policy, "notes/../notes/x") == "ask"
    assert _write_text(policy, "other.md") == "ask"
    assert _write_text(policy, "notes") == "ask"  # the folder itself is not inside it
    assert _write_text(policy, "/abs/notes/x") == "ask"


def test_a_deny_glob_also_matches_the_path_as_written_and_resolved() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "write_text", "decision": "allow"},
            {"tool": "write_text", "args": {"path": ".git/**"}, "decision": "deny"},
        ]
    )
    assert _write_text(policy, "src/a.py") == "allow"
    assert _write_text(policy, ".git/config") == "deny"
    assert _write_text(policy, "./.git//config") == "deny"
    assert _write_text(policy, "src/../.git/config") == "deny"


def test_globs_stop_at_slashes_unless_doubled() -> None:
    assert glob_regex("*.md").fullmatch("a.md") and not glob_regex("*.md").fullmatch("a/b.md")
    assert glob_regex("**/*.md").fullmatch("a.md") and glob_regex("**/*.md").fullmatch("a/b/c.md")
    assert glob_regex("a/**/b").fullmatch("a/b") and glob_regex("a/**/b").fullmatch("a/x/y/b")
    assert not glob_regex("a/?").fullmatch("a/bc")


def test_equals_in_regex_ranges_and_dotted_fields() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "t", "args": {"mode": {"in": ["append", "create"]}}, "decision": "allow"},
            {"tool": "t", "args": {"options.recursive": {"equals": True}}, "decision": "deny"},
            {"tool": "t", "args": {"limit": {"min": 100}}, "decision": "ask"},
            {"tool": "t", "args": {"name": {"regex": "tmp-[0-9]+"}}, "decision": "deny"},
        ]
    )

    def decide(**arguments: Any) -> str:
        return policy.for_tool("t", False, ["write"], arguments).decision

    assert decide(mode="append") == "allow"
    assert decide(mode="overwrite") == "allow"  # no rule matches: the tool's default
    assert decide(mode="append", options={"recursive": True}) == "deny"
    assert decide(mode="append", options={"recursive": 1}) == "allow"  # JSON equality: 1 is not true
    assert decide(mode="append", limit=100) == "ask" and decide(mode="append", limit=99.5) == "allow"
    assert decide(limit=True) == "allow"  # a boolean is not a number
    assert decide(name="tmp-12") == "deny" and decide(name="tmp-12x") == "allow"  # a full match


def test_a_list_argument_is_allowed_only_when_every_item_is_and_denied_when_any_is() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "t", "args": {"paths": "docs/**"}, "decision": "allow"},
            {"tool": "t", "args": {"paths": "**/.env"}, "decision": "deny"},
        ]
    )

    def decide(paths: list[str]) -> str:
        return policy.for_tool("t", True, ["write"], {"paths": paths}).decision

    assert decide(["docs/a", "docs/b/c"]) == "allow"
    assert decide(["docs/a", "src/b"]) == "ask"
    assert decide(["docs/a", "docs/.env"]) == "deny"
    assert decide([]) == "ask"


def test_a_missing_argument_matches_no_rule() -> None:
    policy = ApprovalPolicy([{"tool": "t", "args": {"path": "**"}, "decision": "allow"}])
    assert policy.for_tool("t", True, ["write"], {}).decision == "ask"


def test_without_arguments_a_listing_says_the_verdict_depends_on_them() -> None:
    policy = ApprovalPolicy([PATH_RULE, {"tool": "read_*", "decision": "allow"}])
    verdict = policy.for_tool("write_text", True, ["write"])
    assert verdict.decision == "ask" and verdict.decided_by == "default"
    assert verdict.depends == ("tool:write_text [path=notes/**] → allow",)
    assert verdict.shown_rule == "default; depends on arguments: tool:write_text [path=notes/**] → allow"
    assert policy.for_tool("read_text", False, ["read"]).depends == ()


# -- effects (S-03) --------------------------------------------------------------------------------------


def test_s03_effect_rules_allow_only_what_is_declared_and_ask_for_what_nobody_can_tell() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "*", "effects": ["read"], "decision": "allow"},
            {"tool": "*", "effects": ["network"], "decision": "deny"},
        ]
    )
    assert policy.for_tool("cat", True, ["read"]).decision == "allow"
    assert policy.for_tool("edit", False, ["read", "write"]).decision == "allow"  # the default: no rule
    assert policy.for_tool("edit", True, ["read", "write"]).decision == "ask"
    assert policy.for_tool("fetch", False, ["read", "network"]).decision == "deny"
    assert policy.for_tool("mystery", False, None).decision == "deny"  # no effects declared
    assert policy.for_tool("odd", False, ["exfiltrate"]).decision == "deny"  # an unknown one


def test_effects_and_hints_belong_to_their_kind_of_rule() -> None:
    with pytest.raises(ValidationError, match="effects apply only to tool rules"):
        ApprovalPolicy([{"mcp": "demo:*", "effects": ["read"], "decision": "allow"}])
    with pytest.raises(ValidationError, match="onTimeout: allow applies only to ask rules"):
        ApprovalPolicy([{"tool": "t", "decision": "deny", "onTimeout": "allow"}])


# -- strictest wins --------------------------------------------------------------------------------------


def test_every_matching_rule_counts_whatever_the_order() -> None:
    rules: list[dict[str, Any]] = [
        {"tool": "write_*", "decision": "allow"},
        {"tool": "write_secrets", "decision": "deny"},
        {"tool": "write_*", "decision": "ask", "timeoutSeconds": 9},
        {"tool": "write_*", "decision": "ask", "timeoutSeconds": 3, "onTimeout": "allow"},
    ]
    for order in (rules, rules[::-1]):
        policy = ApprovalPolicy(order)
        assert policy.for_tool("write_secrets", False).decision == "deny"
        asked = policy.for_tool("write_note", False)
        # Both ask rules decide: the shorter timeout, and allow on timeout only if every one says so.
        assert asked.decision == "ask" and asked.timeout == 3 and asked.on_timeout == "deny"
        assert len(asked.rules) == 2


def test_u13_read_only_demo_tools_are_still_allowed_by_the_shipped_policy() -> None:
    policy = ApprovalPolicy.from_config(load_runtime_config_file(BUILTIN_CONFIG, {}).approval)
    verdict = policy.for_mcp("demo", "read_note", {"readOnlyHint": True}, {"name": "a"})
    assert verdict.decision == "allow" and verdict.decided_by == "rule"
    assert policy.for_mcp("demo", "write_note", {}, {"name": "a"}).decision == "ask"
    assert policy.for_tool("write_text", True, ["write"], {"path": "a.md"}).decision == "ask"


# -- layers and provenance -------------------------------------------------------------------------------


def test_a_deny_in_the_user_layer_beats_an_allow_in_the_workspace_layer(
    ditto_home: str, tmp_path: Path
) -> None:
    user = _write(
        Path(ditto_home) / "config" / "ditto.yaml",
        "approval:\n  rules:\n    - tool: write_text\n      args: {path: 'notes/private/**'}\n"
        "      decision: deny\n",
    )
    workspace = tmp_path / "project"
    _write(
        workspace / "ditto.yaml",
        "sandbox: {tools: [write_text], write: true}\napproval:\n  rules:\n"
        "    - tool: write_text\n      args: {path: 'notes/**'}\n      decision: allow\n",
    )
    trust(workspace)
    resolved = resolve_config(None, workspace)
    assert resolved.source == str(workspace / "ditto.yaml")
    policy = ApprovalPolicy.from_config(resolved.config.approval)
    assert _write_text(policy, "notes/todo.md") == "allow"
    denied = policy.for_tool("write_text", True, ["write"], {"path": "notes/private/diary.md"})
    assert denied.decision == "deny"
    (rule,) = denied.rules
    assert (rule.file, rule.line, rule.layer) == (str(user), 3, "user")


def test_provenance_names_the_file_and_line_of_each_deciding_rule(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "ditto.yaml",
        "# rules\napproval:\n  rules:\n    - tool: read_*\n      decision: allow\n"
        "    - tool: write_text\n      args:\n        path: 'notes/**'\n      decision: allow\n",
    )
    policy = ApprovalPolicy.from_config(load_runtime_config_file(file, {}).approval)
    verdict = policy.for_tool("write_text", True, ["write"], {"path": "notes/a.md"})
    assert verdict.decided_by == "rule" and verdict.rule == "tool:write_text [path=notes/**] → allow"
    assert [(rule.file, rule.line, rule.layer) for rule in verdict.rules] == [(str(file), 6, "config")]
    assert str(policy.rules[0].source) == f"{file}:4"
    default = policy.for_tool("write_text", True, ["write"], {"path": "x.md"})
    assert default.decided_by == "default" and default.rules == () and default.rule is None


def test_rules_built_in_code_are_known_by_the_callers_label() -> None:
    policy = ApprovalPolicy([{"tool": "t", "decision": "deny"}], source="tests")
    (rule,) = policy.for_tool("t", False).rules
    assert (rule.file, rule.line, rule.layer) == (None, None, "tests")


def test_a_rule_that_does_not_parse_is_one_error_naming_file_line_and_key(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "ditto.yaml",
        "approval:\n  rules:\n    - tool: write_text\n      args:\n        path: {regex: '(unclosed'}\n"
        "      decision: allow\n",
    )
    with pytest.raises(ConfigError) as raised:
        load_runtime_config_file(file, {})
    message = raised.value.message
    assert message.count("\n") == 0, message
    assert message.startswith(f"{file}:5: approval.rules[0].args.path.regex: invalid regular expression")


def test_an_unknown_match_key_gets_the_closest_known_one(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "ditto.yaml",
        "approval:\n  rules:\n    - tool: t\n      args: {n: {mni: 1}}\n      decision: allow\n",
    )
    with pytest.raises(ConfigError, match=r"ditto.yaml:4: approval.rules\[0\].args.n.mni: unknown key"):
        load_runtime_config_file(file, {})


def test_u12_policy_is_honoured_before_or_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    strict = _write(tmp_path / "strict.yaml", "approval:\n  rules:\n    - tool: '*'\n      decision: deny\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for argv in (
        ["--policy", str(strict), "policy", "lint", "--workspace", str(workspace)],
        ["policy", "lint", "--workspace", str(workspace), "--policy", str(strict)],
    ):
        assert main(argv) == 1
        out = capsys.readouterr().out
        # The built-in read_* allow can never decide under a deny of every tool.
        assert f"{BUILTIN_CONFIG}:" in out and "shadowed: tool:read_* → allow" in out
        assert f"tool:* → deny ({strict}:3)" in out


def test_a_policy_file_holds_only_rules(tmp_path: Path) -> None:
    policy = _write(tmp_path / "p.yaml", "sandbox: {write: true}\napproval:\n  timeoutSeconds: 5\n")
    with pytest.raises(ConfigError) as raised:
        resolve_config(None, tmp_path, policy=str(policy))
    assert raised.value.message.splitlines() == [
        f"{policy}:1: sandbox: a policy file holds only approval.rules",
        f"{policy}:3: approval.timeoutSeconds: a policy file holds only approval.rules",
    ]


# -- lint ------------------------------------------------------------------------------------------------


def test_lint_finds_a_shadowed_rule_and_leaves_the_others() -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "write_*", "decision": "ask"},
            {"tool": "write_text", "decision": "allow"},  # shadowed by the ask above
            {"tool": "write_text", "args": {"path": "notes/**"}, "decision": "allow"},  # shadowed too
            {"tool": "read_*", "args": {"path": "**"}, "decision": "deny"},  # args: cannot shadow
            {"tool": "read_text", "decision": "allow"},
            {"mcp": "demo:*", "hints": {"readOnly": True}, "decision": "allow"},
            {"mcp": "demo:*", "decision": "ask"},  # needs no hint: shadows the one above
        ]
    )
    found = [(policy.rules.index(finding.rule), finding.kind) for finding in shadowed(policy)]
    assert found == [(1, "shadowed"), (2, "shadowed"), (5, "shadowed")]


def test_glob_coverage_is_proved_only_for_plain_shapes() -> None:
    assert glob_covers("write_*", "write_t*") and glob_covers("*", "a?c") and glob_covers("w*", "write")
    assert glob_covers("*:*", "demo:*", mcp=True) and glob_covers("demo:*", "demo:read_*", mcp=True)
    assert not glob_covers("write_*", "*_text") and not glob_covers("w?ite", "w*")


def test_lint_reports_rules_no_recorded_call_matched(tmp_path: Path) -> None:
    from ditto_tui.supervise.journal import read_journal

    journal = _write(
        tmp_path / "run.jsonl",
        '{"kind":"journal","run_id":"r1","tools":{"write_text":{"effects":["write"]}}}\n'
        '{"kind":"node_started","run_id":"r1","seq":1,"at":1,"node_id":"w","node_type":"INTERACTION.ACT.TOOL",'
        '"execution_id":"e1","input":{"call":{"id":"c1","name":"write_text","arguments":{"path":"notes/a"}}}}\n',
    )
    policy = ApprovalPolicy(
        [
            PATH_RULE,
            {"tool": "write_text", "args": {"path": "src/**"}, "decision": "deny"},
            {"tool": "*", "effects": ["network"], "decision": "deny"},
        ]
    )
    unused = [(policy.rules.index(item.rule), item.kind) for item in lint(policy, [read_journal(journal)])]
    assert unused == [(1, "unused"), (2, "unused")]


# -- a reference for the property ----------------------------------------------------------------------


def reference_glob(pattern: list[str], path: list[str]) -> bool:
    """Segment by segment: ``**`` last stands for one or more folders, elsewhere for zero or more."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        least = 1 if not rest else 0
        return any(reference_glob(rest, path[skip:]) for skip in range(least, len(path) + 1))
    if not path:
        return False
    segment = path[0]
    fits = head == segment or head == "*" or (head.endswith("*") and segment.startswith(head[:-1]))
    return fits and reference_glob(rest, path[1:])


def reference_matches(
    rule: Mapping[str, Any], tool: str, effects: list[str] | None, args: dict[str, Any]
) -> bool:
    import fnmatch

    if not fnmatch.fnmatchcase(tool, rule["tool"]):
        return False
    listed = rule.get("effects")
    if listed is not None:
        if rule["decision"] == "allow" and (effects is None or not set(effects) <= set(listed)):
            return False
        if rule["decision"] != "allow" and effects is not None and not set(effects) & set(listed):
            return False
    for field, match in rule.get("args", {}).items():
        if field not in args:
            return False
        value = args[field]
        if isinstance(match, str):
            if not reference_glob(match.split("/"), value.split("/")):
                return False
        elif "in" in match and value not in match["in"]:
            return False
        elif "min" in match and not match["min"] <= value <= match["max"]:
            return False
    return True


def reference_decision(
    rules: list[dict[str, Any]], tool: str, requires: bool, effects: list[str] | None, args: dict[str, Any]
) -> str:
    order = ["allow", "ask", "deny"]
    matched: list[str] = [rule["decision"] for rule in rules if reference_matches(rule, tool, effects, args)]
    if matched:
        return max(matched, key=order.index)
    return "ask" if requires or effects is None else "allow"


_TOOLS = ["read_a", "write_a", "write_b"]
_EFFECTS = ["read", "write", "execute", "network"]
_SEGMENTS = ["a", "b", "ab"]


@st.composite
def _rules(draw: st.DrawFn) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "tool": draw(st.sampled_from(["*", "read_*", "write_*", "write_a", "w*", "*_b"])),
        "decision": draw(st.sampled_from(["allow", "ask", "deny"])),
    }
    if draw(st.booleans()):
        rule["effects"] = draw(st.lists(st.sampled_from(_EFFECTS), min_size=1, max_size=2, unique=True))
    args: dict[str, Any] = {}
    if draw(st.booleans()):
        pattern = draw(st.lists(st.sampled_from(["a", "b", "*", "a*", "**"]), min_size=1, max_size=3))
        args["path"] = "/".join(pattern)
    if draw(st.booleans()):
        if draw(st.booleans()):
            args["n"] = {"in": draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))}
        else:
            low = draw(st.integers(0, 4))
            args["n"] = {"min": low, "max": draw(st.integers(low, 4))}
    if args:
        rule["args"] = args
    return rule


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, bool, list[str] | None, dict[str, Any]]:
    effects = draw(st.none() | st.lists(st.sampled_from(_EFFECTS), max_size=3, unique=True))
    args: dict[str, Any] = {}
    if draw(st.booleans()):
        args["path"] = "/".join(draw(st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4)))
    if draw(st.booleans()):
        args["n"] = draw(st.integers(0, 4))
    return draw(st.sampled_from(_TOOLS)), draw(st.booleans()), effects, args


@settings(max_examples=examples(300), deadline=None)
@given(rules=st.lists(_rules(), max_size=6), call=_calls())
def test_property_the_decision_is_the_strictest_of_the_matching_rules(
    rules: list[dict[str, Any]], call: tuple[str, bool, list[str] | None, dict[str, Any]]
) -> None:
    tool, requires, effects, args = call
    verdict = ApprovalPolicy(rules).for_tool(tool, requires, effects, args)
    assert verdict.decision == reference_decision(rules, tool, requires, effects, args)
    assert (verdict.decided_by == "rule") == any(reference_matches(r, tool, effects, args) for r in rules)
    # Order never matters.
    assert ApprovalPolicy(rules[::-1]).for_tool(tool, requires, effects, args).decision == verdict.decision


# -- through the real gate: timeouts, the three codes, the decision line -------------------------------


async def _invoke(
    tmp_path: Path, rules: list[dict[str, Any]], approver: Any, timeout: float | None = None
) -> tuple[Any, list[ExecutionEvent], Recorder]:
    recorder = Recorder()
    runtime, _gate, events = setup(tmp_path, [recorder.tool], approver, rules=rules, timeout=timeout)
    result = await asyncio.wait_for(runtime.invoke("INTERACTION.ACT.TOOL", act()), 5)
    return result, events, recorder


async def test_r08_on_timeout_deny_is_the_default_and_allow_lets_the_call_run(tmp_path: Path) -> None:
    ask = {"tool": "write_note", "decision": "ask", "timeoutSeconds": 0.05}
    result, events, recorder = await _invoke(tmp_path, [ask], QueueApprover())
    assert result.status == "timeout" and result.error.code == "APPROVAL_TIMEOUT" and recorder.executed == []
    (resolved,) = [event for event in events if isinstance(event, ApprovalResolved)]
    assert resolved.decision == "timeout" and resolved.decided_by == "timeout"

    result, events, recorder = await _invoke(tmp_path, [{**ask, "onTimeout": "allow"}], QueueApprover())
    assert result.status == "success"
    (_call_id, _arguments, approval) = recorder.executed[0]
    assert approval.decision == "approve" and approval.decided_by == "timeout"
    (resolved,) = [event for event in events if isinstance(event, ApprovalResolved)]
    assert resolved.decision == "approve" and resolved.decided_by == "timeout"
    assert [rule.rule for rule in resolved.rules] == ["tool:write_note → ask"]


async def test_r08_a_stricter_rule_without_on_timeout_allow_keeps_the_timeout_a_denial(
    tmp_path: Path,
) -> None:
    rules: list[dict[str, Any]] = [
        {"tool": "write_*", "decision": "ask", "timeoutSeconds": 0.05, "onTimeout": "allow"},
        {"tool": "write_note", "decision": "ask"},
    ]
    result, _events, recorder = await _invoke(tmp_path, rules, QueueApprover())
    assert result.error.code == "APPROVAL_TIMEOUT" and recorder.executed == []


async def test_denied_timed_out_and_no_approver_are_three_distinct_codes(tmp_path: Path) -> None:
    ask = [{"tool": "write_note", "decision": "ask", "timeoutSeconds": 0.05}]
    by_rule, _, _ = await _invoke(tmp_path, [{"tool": "write_note", "decision": "deny"}], Scripted(approve))
    by_person, _, _ = await _invoke(tmp_path, ask, Scripted(deny))
    timed_out, _, _ = await _invoke(tmp_path, ask, QueueApprover())
    nobody, _, _ = await _invoke(tmp_path, ask, None)
    codes = [result.error.code for result in (by_rule, by_person, timed_out, nobody)]
    assert codes == ["APPROVAL_DENIED", "APPROVAL_DENIED", "APPROVAL_TIMEOUT", "APPROVAL_NO_APPROVER"]
    assert "rule tool:write_note → deny" in by_rule.error.message


async def test_an_edit_cannot_carry_a_call_past_a_rule_that_denies_it(tmp_path: Path) -> None:
    rules = [{"tool": "write_note", "args": {"text": {"regex": ".*secret.*"}}, "decision": "deny"}]
    edit = Scripted(lambda _request: ApprovalDecision(kind="approve", arguments={"text": "the secret"}))
    result, events, recorder = await _invoke(tmp_path, rules, edit)
    assert result.error.code == "APPROVAL_DENIED" and "edited arguments" in result.error.message
    assert recorder.executed == []
    (resolved,) = [event for event in events if isinstance(event, ApprovalResolved)]
    assert resolved.decision == "deny" and resolved.decided_by == "rule"


STEP_RULES = """\
sandbox:
  tools: [record_step]
  write: true
approval:
  rules:
    - tool: record_step
      args: {step: {in: [4, 5]}}
      decision: ask
    - tool: record_step
      args: {step: {min: 1, max: 3}}
      decision: allow
    - tool: record_step
      args: {step: {equals: 6}}
      decision: deny
"""


async def test_the_journal_decision_line_names_who_decided_and_the_rule_file_and_line(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEP_RULES)
    config, program = load(root, STEPS_GRAPH)
    assert await run_headless(program, config, root, approve="allow", out=io.StringIO()) == 0
    assert executions(root) == ["step-1", "step-2", "step-3", "step-4", "step-5"]  # 6: denied by its rule
    (path,) = journals(root)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    decisions = {line["call_id"]: line for line in lines if line["kind"] == "approval_resolved"}
    # V-07: every call has its decision on the record, the rules' own as much as the answers
    assert set(decisions) == {f"step-{n}" for n in range(1, 7)}
    for step, decision, line in [(1, "approve", 9), (2, "approve", 9), (3, "approve", 9), (6, "deny", 12)]:
        ruled = decisions[f"step-{step}"]
        assert (ruled["decision"], ruled["decided_by"]) == (decision, "rule")
        assert [(ref["file"], ref["line"]) for ref in ruled["rules"]] == [(str(root / "ditto.yaml"), line)]
        assert f"ditto.yaml:{line}" in ruled["reason"]
    assert lines.index(decisions["step-1"]) < next(
        index for index, line in enumerate(lines) if line["kind"] == "node_finished"
    )
    asked = {
        "rule": 'tool:record_step [step={"in":[4,5]}] → ask',
        "file": str(root / "ditto.yaml"),
        "line": 6,
        "layer": "config",
    }
    # --approve allow answered, not a person: a setting of the session, as a mode is
    assert decisions["step-4"]["decided_by"] == "mode" and decisions["step-4"]["rules"] == [asked]
    header = lines[0]
    assert [rule["source"]["line"] for rule in header["policy"]] == [6, 9, 12]
    finished = [line for line in lines if line["kind"] == "node_finished"]
    denied = [line for line in finished if line.get("links", {}).get("callId") == "step-6"]
    assert denied[0]["output"]["error"]["code"] == "APPROVAL_DENIED"
    assert 'step={"equals":6}' in denied[0]["output"]["error"]["message"]


def test_the_readme_policy_examples_mean_what_their_comments_say(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Approval policy", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    file = _write(tmp_path / "ditto.yaml", block)
    policy = ApprovalPolicy.from_config(load_runtime_config_file(file, {}).approval)
    assert _write_text(policy, "notes/today.md") == "allow"
    assert _write_text(policy, "src/main.py") == "ask"
    assert _write_text(policy, ".git/hooks/pre-commit") == "deny"
    assert policy.for_tool("cat", False, ["read"]).decision == "allow"
    assert policy.for_tool("fetch", False, ["read", "network"]).decision == "deny"
    assert policy.for_tool("mystery", False, None).decision == "deny"
    assert policy.for_mcp("demo", "read_note", {"readOnlyHint": True}, {}).decision == "allow"
    assert policy.for_mcp("demo", "export", {}, {}).decision == "ask"
    search = policy.for_mcp("search", "web", None, {"q": "x", "limit": 50})
    assert search.decision == "ask" and search.timeout == 60 and search.on_timeout == "allow"
    assert policy.for_mcp("search", "web", None, {"q": "x", "limit": 5}).on_timeout == "deny"
