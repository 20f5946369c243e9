"""V-09: ``policy lint`` names a rule that can never take effect, because a stricter rule matches every call
it does, with both lines: where the shadowed rule is written and where the rule that shadows it is."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.__main__ import main
from ditto_tui.supervise import ApprovalPolicy
from ditto_tui.supervise.lint import covers, shadowed
from ditto_tui.supervise.matching import Call, rule_matches
from ditto_tui.workspace import user_config_file


def _rules_file(path: Path, *rules: str) -> Path:
    """A ``ditto.yaml`` with ``rules`` (each a YAML flow mapping) at lines 3, 4, ..."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("approval:\n  rules:\n" + "".join(f"    - {rule}\n" for rule in rules), encoding="utf-8")
    return path


def _lint(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["policy", "lint", *argv])
    return code, capsys.readouterr().out.splitlines()


def test_v09_a_deny_of_every_tool_shadows_a_later_allow_and_both_lines_are_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _rules_file(
        tmp_path / "ditto.yaml",
        "{tool: '*', decision: deny}",
        "{tool: read_text, decision: ask}",
        "{tool: write_text, decision: allow}",
    )
    code, lines = _lint(capsys, "--config", str(config), "--workspace", str(tmp_path))
    assert code == 1
    assert lines[:2] == [
        f"{config}:4: shadowed: tool:read_text → ask: never decides: tool:* → deny ({config}:3) "
        "matches every call it does",
        f"{config}:5: shadowed: tool:write_text → allow: never decides: tool:* → deny ({config}:3) "
        "matches every call it does",
    ]
    assert lines[2].startswith("3 rule(s), 2 finding(s)")


def test_v09_an_allow_on_notes_under_a_users_deny_on_every_path_names_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = _rules_file(user_config_file(), "{tool: write_text, args: {path: '**'}, decision: deny}")
    config = _rules_file(
        tmp_path / "ws" / "ditto.yaml",
        "{tool: read_text, decision: allow}",
        "{tool: write_text, args: {path: notes/**}, decision: allow}",
    )
    code, lines = _lint(capsys, "--config", str(config), "--workspace", str(tmp_path / "ws"))
    assert code == 1
    assert lines == [
        f"{config}:4: shadowed: tool:write_text [path=notes/**] → allow: never decides: "
        f"tool:write_text [path=**] → deny ({user}:3) matches every call it does",
        "3 rule(s), 1 finding(s); checked against no recorded runs (unused rules not checked)",
    ]


def test_v09_a_results_review_is_shadowed_only_by_a_deny() -> None:
    reviewed = {"tool": "write_text", "decision": "allow", "review": "results"}
    under_ask = ApprovalPolicy([{"tool": "write_*", "decision": "ask"}, reviewed])
    assert shadowed(under_ask) == []
    assert under_ask.for_tool("write_text", False, ["write"], {}).review  # the review still applies
    under_deny = ApprovalPolicy([{"tool": "write_*", "decision": "deny"}, reviewed])
    assert [under_deny.rules.index(finding.rule) for finding in shadowed(under_deny)] == [1]


@pytest.mark.parametrize(
    ("stricter", "rule"),
    [
        # narrower arguments than the rule: the rule matches calls the stricter one does not
        ({"args": {"path": "notes/secret/**"}}, {"args": {"path": "notes/**"}}),
        ({"args": {"path": "notes/*"}}, {"args": {"path": "notes/**"}}),
        # an argument the rule does not need: a call without it matches only the rule
        ({"args": {"path": "**"}}, {}),
        ({"args": {"path": "**"}}, {"args": {"text": "**"}}),
        # '**' matches text only; equals, in and a range may match other values
        ({"args": {"path": "**"}}, {"args": {"path": {"equals": 3}}}),
        ({"args": {"n": "**"}}, {"args": {"n": {"min": 1}}}),
        # JSON values that Python calls equal but the rules do not
        ({"args": {"flag": {"equals": 1}}}, {"args": {"flag": {"equals": True}}}),
        ({"args": {"flag": {"in": [1]}}}, {"args": {"flag": {"in": [True]}}}),
        # effects, hints and globs that do not plainly cover
        ({"effects": ["write"]}, {}),
        ({"tool": "*_text"}, {"tool": "write_*"}),
    ],
)
def test_v09_no_rule_is_reported_that_a_call_could_still_be_decided_by(
    stricter: dict[str, Any], rule: dict[str, Any]
) -> None:
    policy = ApprovalPolicy(
        [
            {"tool": "write_*", **stricter, "decision": "deny"},
            {"tool": "write_text", **rule, "decision": "allow"},
        ]
    )
    assert shadowed(policy) == []


def test_v09_a_hint_the_rule_does_not_need_keeps_it_from_being_shadowed() -> None:
    policy = ApprovalPolicy(
        [
            {"mcp": "demo:*", "hints": {"readOnly": False}, "decision": "deny"},
            {"mcp": "demo:read", "decision": "allow"},
            {"mcp": "demo:write", "hints": {"readOnly": False, "destructive": True}, "decision": "allow"},
        ]
    )
    assert [policy.rules.index(finding.rule) for finding in shadowed(policy)] == [2]


_STRICTER: list[dict[str, Any]] = [
    {"tool": "write_*", "decision": "deny"},
    {"tool": "write_text", "args": {"path": "**"}, "decision": "deny"},
    {"tool": "write_text", "args": {"path": "notes/**"}, "decision": "ask"},
    {"tool": "write_text", "args": {"path": {"regex": "notes/.*"}}, "decision": "ask"},
    {"tool": "write_text", "args": {"mode": {"in": ["a", 1]}}, "decision": "deny"},
    {"tool": "write_text", "args": {"size": {"max": 10}}, "decision": "deny"},
]
_SHADOWED: list[dict[str, Any]] = [
    {"tool": "write_text", "decision": "allow"},
    {"tool": "write_text", "args": {"path": "notes/**"}, "decision": "allow"},
    {"tool": "write_text", "args": {"path": "notes/**", "mode": {"in": ["a", 1]}}, "decision": "allow"},
    {"tool": "write_text", "args": {"path": {"regex": "notes/.*"}}, "decision": "allow"},
    {"tool": "write_text", "args": {"path": {"regex": "notes/.*"}}, "decision": "ask"},
    {"tool": "write_text", "args": {"path": "**", "size": {"max": 10}}, "decision": "allow"},
]
_MISSING = object()
_VALUES: dict[str, list[Any]] = {
    "path": [
        _MISSING,
        *["notes/a.md", "./notes//a.md", "notes/../.env", "/etc/passwd", "other", "", "notes/", "a\nb"],
        ["notes/a", "notes/b"],
        ["notes/a", 3],
        [],
        7,
    ],
    "mode": [_MISSING, "a", 1, True, 1.0],
    "size": [_MISSING, 10, 10.5, "10"],
}
_ARGUMENTS = [
    {name: value for name, value in zip(_VALUES, values, strict=True) if value is not _MISSING}
    for values in itertools.product(*_VALUES.values())
]


def test_v09_every_shadowing_lint_proves_holds_for_every_call_tried() -> None:
    """Whenever lint says a rule is covered, no call the rule matches escapes the stricter rule."""
    proved = 0
    for stricter_body, rule_body in itertools.product(_STRICTER, _SHADOWED):
        stricter, rule = ApprovalPolicy([stricter_body, rule_body]).rules
        if rule.decision == stricter.decision or not covers(stricter, rule):
            continue
        proved += 1
        for arguments in _ARGUMENTS:
            call = Call(tool="write_text", effects=["write"], arguments=arguments)
            if rule_matches(rule, call):
                assert rule_matches(stricter, call), (stricter_body, rule_body, arguments)
    assert proved >= 10  # the pools hold real findings, not only pairs lint leaves alone
