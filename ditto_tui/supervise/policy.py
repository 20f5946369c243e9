"""Approval policy: ordered rules that allow, ask for or deny tool and MCP calls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

from ditto_tui.errors import ValidationError

if TYPE_CHECKING:
    from ditto_tui.config import ApprovalConfig as ApprovalSettings

PolicyDecision = Literal["allow", "ask", "deny"]
_DECISIONS = ("allow", "ask", "deny")


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRule:
    """One rule: a glob over tool names, or over ``SERVER:TOOL`` for MCP calls, and its decision."""

    decision: PolicyDecision
    tool: str | None = None
    mcp: str | None = None
    timeout_seconds: float | None = None

    def __post_init__(self) -> None:
        if (self.tool is None) == (self.mcp is None):
            raise ValidationError("an approval rule needs exactly one of 'tool' or 'mcp'")
        pattern = self.tool if self.tool is not None else self.mcp
        if not isinstance(pattern, str) or not pattern:
            raise ValidationError("an approval rule pattern must be a nonempty string")
        if self.decision not in _DECISIONS:
            raise ValidationError(f"approval rule decision {self.decision!r} must be allow, ask or deny")
        timeout = self.timeout_seconds
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValidationError("an approval rule timeout must be a positive number of seconds")

    @property
    def label(self) -> str:
        """How the rule reads in the approval view and the journal, e.g. ``tool:write_* → ask``."""
        subject = f"tool:{self.tool}" if self.tool is not None else f"mcp:{self.mcp}"
        return f"{subject} → {self.decision}"

    @classmethod
    def coerce(cls, value: ApprovalRule | Mapping[str, Any]) -> ApprovalRule:
        """A rule from a rule or a ``{tool|mcp, decision}`` mapping."""
        if isinstance(value, ApprovalRule):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError("an approval rule must be a mapping with 'tool' or 'mcp' and 'decision'")
        unknown = set(value) - {"tool", "mcp", "decision", "timeout_seconds", "timeoutSeconds"}
        if unknown:
            raise ValidationError(f"unknown approval rule keys {sorted(unknown)!r}")
        return cls(
            decision=value.get("decision"),  # type: ignore[arg-type]
            tool=value.get("tool"),
            mcp=value.get("mcp"),
            timeout_seconds=value.get("timeout_seconds", value.get("timeoutSeconds")),
        )


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
        self.rules: tuple[ApprovalRule, ...] = tuple(ApprovalRule.coerce(rule) for rule in rules)
        if mcp_default not in _DECISIONS:
            raise ValidationError("mcp_default must be allow, ask or deny")
        self.mcp_default: PolicyDecision = mcp_default

    @classmethod
    def from_config(cls, approval: ApprovalSettings) -> ApprovalPolicy:
        """The policy of a ``ditto.yaml`` ``approval`` section."""
        return cls(rule.model_dump(exclude_none=True) for rule in approval.rules)

    def for_tool(self, name: str, requires_approval: bool) -> Verdict:
        """The verdict for registered tool ``name``."""
        for rule in self.rules:
            if rule.tool is not None and fnmatchcase(name, rule.tool):
                return Verdict(decision=rule.decision, rule=rule.label, timeout=rule.timeout_seconds)
        return Verdict(decision="ask" if requires_approval else "allow", rule=None)

    def for_mcp(self, server: str, tool: str) -> Verdict:
        """The verdict for tool ``tool`` of MCP server ``server``."""
        subject = f"{server}:{tool}"
        for rule in self.rules:
            if rule.mcp is not None and fnmatchcase(subject, rule.mcp):
                return Verdict(decision=rule.decision, rule=rule.label, timeout=rule.timeout_seconds)
        return Verdict(decision=self.mcp_default, rule=None)
