"""Approval policy: ordered rules that allow, ask for or deny tool and MCP calls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, get_args

import pydantic

from ditto_tui.config import ApprovalConfig, ApprovalRule, Decision
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.sandbox.permissions import EFFECTS

PolicyDecision = Decision
"""What a rule says: allow, ask or deny (the config's own word for it)."""
_DECISIONS = get_args(Decision)

HINTS = {
    "read_only": ("readOnlyHint", False),
    "destructive": ("destructiveHint", True),
    "idempotent": ("idempotentHint", False),
    "open_world": ("openWorldHint", True),
}
"""Rule hint → (MCP annotation, its default in the MCP specification when the server sends none)."""


def hint_value(annotations: Mapping[str, Any] | None, hint: str) -> bool:
    """What ``annotations`` say for ``hint``, the MCP default when they are silent.

    ``destructiveHint`` and ``idempotentHint`` mean something only for a tool that is not read-only, so a
    read-only tool is never destructive.
    """
    key, default = HINTS[hint]
    given = (annotations or {}).get(key)
    if hint == "destructive" and hint_value(annotations, "read_only"):
        return False
    return given if isinstance(given, bool) else default


def _given_hints(rule: ApprovalRule) -> dict[str, bool]:
    return {
        name: value
        for name, value in (rule.hints.model_dump() if rule.hints else {}).items()
        if value is not None
    }


def matches_hints(rule: ApprovalRule, annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool's annotations say what the rule's ``hints`` need (no hints: always)."""
    return all(hint_value(annotations, name) == value for name, value in _given_hints(rule).items())


def rule_label(rule: ApprovalRule) -> str:
    """How a rule reads in the approval view and the journal, e.g. ``tool:write_* → ask``."""
    subject = f"tool:{rule.tool}" if rule.tool is not None else f"mcp:{rule.mcp}"
    hints = "".join(f" [{name}={str(value).lower()}]" for name, value in _given_hints(rule).items())
    return f"{subject}{hints} → {rule.decision}"


def coerce_rule(value: ApprovalRule | Mapping[str, Any]) -> ApprovalRule:
    """A rule of ``approval.rules``, or its mapping in either spelling; one clear error when it is not."""
    if isinstance(value, ApprovalRule):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError("an approval rule must be a mapping with 'tool' or 'mcp' and 'decision'")
    try:
        return ApprovalRule.model_validate(dict(value))
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid approval rule: {validation_summary(exc)}") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """What the policy says about one call, and which rule said it (``None``: the default)."""

    decision: PolicyDecision
    rule: str | None
    timeout: float | None = None


class ApprovalPolicy:
    """Ordered rules, first match wins.

    Without a matching rule a registered tool with ``requires_approval`` asks and other tools are
    allowed; MCP calls ask (``mcp_default``), whatever hints the server sends about its tools.
    """

    def __init__(
        self, rules: Iterable[ApprovalRule | Mapping[str, Any]] = (), *, mcp_default: PolicyDecision = "ask"
    ) -> None:
        self.rules: tuple[ApprovalRule, ...] = tuple(coerce_rule(rule) for rule in rules)
        if mcp_default not in _DECISIONS:
            raise ValidationError("mcp_default must be allow, ask or deny")
        self.mcp_default: PolicyDecision = mcp_default

    @classmethod
    def from_config(cls, approval: ApprovalConfig) -> ApprovalPolicy:
        """The policy of a ``ditto.yaml`` ``approval`` section."""
        return cls(approval.rules)

    def for_tool(self, name: str, requires_approval: bool, effects: Sequence[str] | None = ()) -> Verdict:
        """The verdict for registered tool ``name``, which declares ``effects`` (``None``: none declared).

        With no rule that decides, a tool asks when it requires approval, and also when nobody can tell
        what it does: it declares no effects, or an effect outside the known four (revised S-03: effects
        are descriptive, so an undeclared one is unrestricted as far as anyone can tell).
        """
        for rule in self.rules:
            if rule.tool is not None and fnmatchcase(name, rule.tool):
                return Verdict(decision=rule.decision, rule=rule_label(rule), timeout=rule.timeout_seconds)
        unknown = effects is None or not set(effects) <= EFFECTS
        return Verdict(decision="ask" if requires_approval or unknown else "allow", rule=None)

    def for_mcp(self, server: str, tool: str, annotations: Mapping[str, Any] | None = None) -> Verdict:
        """The verdict for tool ``tool`` of MCP server ``server``, whose definition has ``annotations``.

        A rule with ``hints`` matches only a tool whose annotations, as last listed, say so: a tool not
        discovered yet, or added later without ``readOnlyHint``, falls through to the next rule.
        """
        subject = f"{server}:{tool}"
        for rule in self.rules:
            if rule.mcp is not None and fnmatchcase(subject, rule.mcp) and matches_hints(rule, annotations):
                return Verdict(decision=rule.decision, rule=rule_label(rule), timeout=rule.timeout_seconds)
        return Verdict(decision=self.mcp_default, rule=None)
