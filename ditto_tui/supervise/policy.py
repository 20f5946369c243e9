"""Approval policy: ordered rules that allow, ask for or deny tool and MCP calls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

from ditto_tui.errors import ValidationError
from ditto_tui.sandbox.permissions import EFFECTS

if TYPE_CHECKING:
    from ditto_tui.config import ApprovalConfig as ApprovalSettings

PolicyDecision = Literal["allow", "ask", "deny"]
_DECISIONS = ("allow", "ask", "deny")

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


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRule:
    """One rule: a glob over tool names, or over ``SERVER:TOOL`` for MCP calls, and its decision."""

    decision: PolicyDecision
    tool: str | None = None
    mcp: str | None = None
    timeout_seconds: float | None = None
    hints: Mapping[str, bool] | None = None

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
        self._check_hints()

    def _check_hints(self) -> None:
        if self.hints is None:
            return
        if self.mcp is None:
            raise ValidationError("approval rule hints apply only to mcp rules")
        for name, value in self.hints.items():
            if name not in HINTS or not isinstance(value, bool):
                raise ValidationError(
                    f"approval rule hint {name!r} must be one of {sorted(HINTS)} with true/false"
                )

    def matches_hints(self, annotations: Mapping[str, Any] | None) -> bool:
        """Whether the tool's annotations say what the rule's ``hints`` need (no hints: always)."""
        return all(hint_value(annotations, name) == value for name, value in (self.hints or {}).items())

    @property
    def label(self) -> str:
        """How the rule reads in the approval view and the journal, e.g. ``tool:write_* → ask``."""
        subject = f"tool:{self.tool}" if self.tool is not None else f"mcp:{self.mcp}"
        hints = "".join(f" [{name}={str(value).lower()}]" for name, value in (self.hints or {}).items())
        return f"{subject}{hints} → {self.decision}"

    @classmethod
    def coerce(cls, value: ApprovalRule | Mapping[str, Any]) -> ApprovalRule:
        """A rule from a rule or a ``{tool|mcp, decision}`` mapping."""
        if isinstance(value, ApprovalRule):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError("an approval rule must be a mapping with 'tool' or 'mcp' and 'decision'")
        unknown = set(value) - {"tool", "mcp", "decision", "timeout_seconds", "timeoutSeconds", "hints"}
        if unknown:
            raise ValidationError(f"unknown approval rule keys {sorted(unknown)!r}")
        return cls(
            decision=value.get("decision"),  # type: ignore[arg-type]
            tool=value.get("tool"),
            mcp=value.get("mcp"),
            timeout_seconds=value.get("timeout_seconds", value.get("timeoutSeconds")),
            hints=_hints(value.get("hints")),
        )


_HINT_SPELLINGS = {
    **{name: name for name in HINTS},
    "readOnly": "read_only",
    "openWorld": "open_world",
}


def _hints(raw: object) -> dict[str, bool] | None:
    """Rule hints in either spelling (``readOnly`` or ``read_only``), unset ones dropped."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValidationError("approval rule hints must be a mapping such as {readOnly: true}")
    return {
        _HINT_SPELLINGS.get(str(name), str(name)): value for name, value in raw.items() if value is not None
    }


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

    def for_tool(self, name: str, requires_approval: bool, effects: Sequence[str] | None = ()) -> Verdict:
        """The verdict for registered tool ``name``, which declares ``effects`` (``None``: none declared).

        With no rule that decides, a tool asks when it requires approval, and also when nobody can tell
        what it does: it declares no effects, or an effect outside the known four (revised S-03: effects
        are descriptive, so an undeclared one is unrestricted as far as anyone can tell).
        """
        for rule in self.rules:
            if rule.tool is not None and fnmatchcase(name, rule.tool):
                return Verdict(decision=rule.decision, rule=rule.label, timeout=rule.timeout_seconds)
        unknown = effects is None or not set(effects) <= EFFECTS
        return Verdict(decision="ask" if requires_approval or unknown else "allow", rule=None)

    def for_mcp(self, server: str, tool: str, annotations: Mapping[str, Any] | None = None) -> Verdict:
        """The verdict for tool ``tool`` of MCP server ``server``, whose definition has ``annotations``.

        A rule with ``hints`` matches only a tool whose annotations, as last listed, say so: a tool not
        discovered yet, or added later without ``readOnlyHint``, falls through to the next rule.
        """
        subject = f"{server}:{tool}"
        for rule in self.rules:
            if rule.mcp is not None and fnmatchcase(subject, rule.mcp) and rule.matches_hints(annotations):
                return Verdict(decision=rule.decision, rule=rule.label, timeout=rule.timeout_seconds)
        return Verdict(decision=self.mcp_default, rule=None)
