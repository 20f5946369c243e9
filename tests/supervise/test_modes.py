"""Modes over the policy: read-only and plan deny what does not just read, auto-edit allows workspace
writes the rules ask about, and no mode lets through what a rule denies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ditto_tui.errors import ValidationError
from ditto_tui.supervise.modes import MODES, ModeSwitch, apply_mode, check_mode, next_mode, reads_only


def test_ask_leaves_the_rules_alone() -> None:
    for decision in ("allow", "ask", "deny"):
        assert apply_mode("ask", decision, label="write_text", effects=("write",)) is None


@pytest.mark.parametrize("mode", ["read-only", "plan"])
def test_read_only_and_plan_deny_what_is_not_known_to_just_read(mode: Any) -> None:
    assert apply_mode(mode, "allow", label="read_text", effects=("read",)) is None
    for effects in (("write",), ("read", "network"), ("execute",), None, ()):
        verdict = apply_mode(mode, "allow", label="t", effects=effects)
        assert verdict is not None and verdict.decision == "deny" and mode in str(verdict.message)
    assert apply_mode(mode, "ask", label="s:t", mcp=True, annotations={"readOnlyHint": True}) is None
    for given_hints in (None, {}, {"readOnlyHint": False}, {"readOnlyHint": "yes"}):
        verdict = apply_mode(mode, "ask", label="s:t", mcp=True, annotations=given_hints)
        assert verdict is not None and verdict.decision == "deny"


def test_plan_tells_the_model_to_propose_a_plan() -> None:
    verdict = apply_mode("plan", "ask", label="write_text", effects=("write",))
    assert verdict is not None and "Propose the changes you would make as a plan" in str(verdict.message)


def test_auto_edit_allows_workspace_writes_the_rules_ask_about_and_nothing_else() -> None:
    verdict = apply_mode("auto-edit", "ask", label="write_text", effects=("read", "write"))
    assert verdict is not None and verdict.decision == "allow"
    assert apply_mode("auto-edit", "ask", label="run", effects=("write", "execute")) is None
    assert apply_mode("auto-edit", "ask", label="fetch", effects=("network",)) is None
    assert apply_mode("auto-edit", "ask", label="s:w", mcp=True, annotations={}) is None
    assert apply_mode("auto-edit", "ask", label="undeclared", effects=None) is None


@given(
    mode=st.sampled_from(MODES),
    effects=st.one_of(st.none(), st.lists(st.sampled_from(["read", "write", "execute", "network", "x"]))),
    mcp=st.booleans(),
    read_only=st.one_of(st.none(), st.booleans()),
)
def test_no_mode_lets_through_what_a_rule_denies(mode: Any, effects: Any, mcp: bool, read_only: Any) -> None:
    annotations = None if read_only is None else {"readOnlyHint": read_only}
    assert apply_mode(mode, "deny", label="t", effects=effects, mcp=mcp, annotations=annotations) is None
    for decision in ("allow", "ask"):
        verdict = apply_mode(mode, decision, label="t", effects=effects, mcp=mcp, annotations=annotations)
        if verdict is not None and verdict.decision == "allow":  # only auto-edit widens, only writes
            assert mode == "auto-edit" and decision == "ask" and not mcp and "write" in (effects or [])
        if mode in ("read-only", "plan") and not reads_only(
            effects=effects, mcp=mcp, annotations=annotations
        ):
            assert verdict is not None and verdict.decision == "deny"


def test_the_switch_checks_cycles_and_tells_its_listeners() -> None:
    switch = ModeSwitch()
    heard: list[tuple[str, str]] = []
    stop = switch.on_change(lambda mode, previous: heard.append((mode, previous)))
    assert switch.mode == "ask" and switch.cycle() == "read-only"
    assert not switch.set("read-only")  # no change, nothing heard
    assert switch.set("plan")
    stop()
    switch.set("ask")
    assert heard == [("read-only", "ask"), ("plan", "read-only")]
    assert [next_mode(m) for m in MODES] == ["read-only", "auto-edit", "plan", "ask"]
    with pytest.raises(ValidationError, match="ask, read-only, auto-edit, plan"):
        switch.set("yolo")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        check_mode("Plan")
