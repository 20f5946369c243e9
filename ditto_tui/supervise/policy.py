"""Approval policy: rules that allow, ask for or deny tool and MCP calls; the strictest match wins."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

import pydantic

from ditto_tui.config import BUILT_IN, ApprovalConfig, ApprovalRule, ArgMatch, Decision, OnTimeout, RuleSource
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.runtime.events import ReviewCause, RuleRef
from ditto_tui.sandbox.permissions import EFFECTS
from ditto_tui.supervise.matching import HINTS, Call, given_hints, hint_value, matches_hints, rule_matches

PolicyDecision = Decision
"""What a rule says: allow, ask or deny (the config's own word for it)."""
_DECISIONS = get_args(Decision)

STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
"""How strict each decision is: of the rules that match a call, the strictest decides."""

DEPENDS = "depends on arguments"
"""What a verdict reached without the call's arguments says when a rule on arguments could change it."""


def strictest(decisions: Iterable[PolicyDecision]) -> PolicyDecision:
    """The strictest of ``decisions`` (deny > ask > allow); there must be at least one."""
    return max(decisions, key=STRICTNESS.__getitem__)


def _match_text(match: ArgMatch) -> str:
    dumped = match.model_dump(mode="json", by_alias=True)
    return (
        dumped if isinstance(dumped, str) else json.dumps(dumped, separators=(",", ":"), ensure_ascii=False)
    )


def rule_label(rule: ApprovalRule) -> str:
    """How a rule reads in the approval view and the journal, e.g. ``tool:write_text [path=notes/**] →
    allow``."""
    subject = f"tool:{rule.tool}" if rule.tool is not None else f"mcp:{rule.mcp}"
    hints = "".join(f" [{name}={str(value).lower()}]" for name, value in given_hints(rule).items())
    args = "".join(f" [{path}={_match_text(match)}]" for path, match in (rule.args or {}).items())
    effects = f" [effects={','.join(rule.effects)}]" if rule.effects else ""
    review = f", review: {rule.review}" if rule.review is not None else ""
    return f"{subject}{hints}{effects}{args} → {rule.decision}{review}"


def rule_ref(rule: ApprovalRule) -> RuleRef:
    """The rule as a decision names it: label, file, line and layer."""
    source = rule.source
    return RuleRef(rule=rule_label(rule), file=source.file, line=source.line, layer=source.layer)


def rule_record(rule: ApprovalRule) -> dict[str, Any]:
    """The rule as a journal header records it: its body as written, and where, when from a file
    (:func:`coerce_rule` reads it back)."""
    source = rule.source
    if source.file is None:
        return rule.body()
    return {**rule.body(), "source": {"file": source.file, "line": source.line, "layer": source.layer}}


def _source_of(value: Any) -> RuleSource | None:
    if not isinstance(value, Mapping):
        return None
    file, line, layer = value.get("file"), value.get("line"), value.get("layer")
    return RuleSource(
        file=file if isinstance(file, str) else None,
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        layer=layer if isinstance(layer, str) else BUILT_IN.layer,
    )


def coerce_rule(value: ApprovalRule | Mapping[str, Any], source: str | None = None) -> ApprovalRule:
    """A rule of ``approval.rules``, or its mapping in either spelling (with the ``source`` a journal
    header records); one clear error when it is not. A rule built in code is known by ``source``
    (default ``built-in``)."""
    if isinstance(value, ApprovalRule):
        rule = value
    elif isinstance(value, Mapping):
        body = {key: item for key, item in value.items() if key != "source"}
        try:
            rule = ApprovalRule.model_validate(body)
        except pydantic.ValidationError as exc:
            raise ValidationError(f"invalid approval rule: {validation_summary(exc)}") from None
        recorded = _source_of(value.get("source"))
        if recorded is not None:
            return rule.with_source(recorded)
    else:
        raise ValidationError("an approval rule must be a mapping with 'tool' or 'mcp' and 'decision'")
    if source is not None and rule.source == BUILT_IN:
        return rule.with_source(RuleSource(layer=source))
    return rule


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """What the policy says about one call, and what said it.

    ``decided_by`` is ``rule`` when rules matched (``rules``: those of the strictest decision, with file
    and line; ``rule``: the first one's label) and ``default`` when none did (``rule`` is None).
    ``timeout`` and ``on_timeout`` apply when the decision is ask: the shortest ``timeoutSeconds`` of the
    deciding rules, ``wait`` when any says ``onTimeout: wait`` (no timeout then applies), and ``allow``
    only when every one of them says ``onTimeout: allow``. ``depends``
    holds the labels of rules on arguments that could change the verdict when the arguments were not
    given (a screen listing tools).

    ``review`` says whether the call's result waits for a person's review before anything sees it:
    true when any matching rule says ``review: results`` (``review_rule`` is the first one's label;
    ``review_timeout`` the shortest of their ``timeoutSeconds``, ``review_on_timeout`` ``allow`` only
    when every one of them says ``onTimeout: allow``).
    """

    decision: PolicyDecision
    rule: str | None
    timeout: float | None = None
    on_timeout: OnTimeout = "deny"
    decided_by: Literal["rule", "default"] = "default"
    rules: tuple[RuleRef, ...] = ()
    depends: tuple[str, ...] = ()
    review: bool = False
    review_rule: str | None = None
    review_timeout: float | None = None
    review_on_timeout: OnTimeout = "deny"

    @property
    def shown_rule(self) -> str | None:
        """``rule`` as a screen shows it, saying when the arguments could change the verdict."""
        if not self.depends:
            return self.rule
        return f"{self.rule or 'default'}; {DEPENDS}: {', '.join(self.depends)}"


class ApprovalPolicy:
    """Rules of any layer; every rule that matches a call counts, and the strictest decision wins.

    Without a matching rule a registered tool with ``requires_approval`` asks, and so does one that
    declares no effects or an unknown one; other tools are allowed. MCP calls ask (``mcp_default``),
    whatever hints the server sends about its tools. Rules built in code are known by ``source``.
    """

    def __init__(
        self,
        rules: Iterable[ApprovalRule | Mapping[str, Any]] = (),
        *,
        mcp_default: PolicyDecision = "ask",
        source: str | None = None,
    ) -> None:
        self.rules: tuple[ApprovalRule, ...] = tuple(coerce_rule(rule, source) for rule in rules)
        if mcp_default not in _DECISIONS:
            raise ValidationError("mcp_default must be allow, ask or deny")
        self.mcp_default: PolicyDecision = mcp_default

    @classmethod
    def from_config(cls, approval: ApprovalConfig) -> ApprovalPolicy:
        """The policy of a ``ditto.yaml`` ``approval`` section (its rules keep their files and lines)."""
        return cls(approval.rules)

    def for_tool(
        self,
        name: str,
        requires_approval: bool,
        effects: Sequence[str] | None = (),
        arguments: Mapping[str, Any] | None = None,
    ) -> Verdict:
        """The verdict for registered tool ``name``, which declares ``effects`` (``None``: none declared),
        called with ``arguments`` (``None``: not known, see :attr:`Verdict.depends`).

        With no rule that matches, a tool asks when it requires approval, and also when nobody can tell
        what it does: it declares no effects, or an effect outside the known four (revised S-03: effects
        are descriptive, so an undeclared one is unrestricted as far as anyone can tell).
        """
        call = Call(tool=name, effects=effects, arguments=arguments)
        return self.verdict(call, tool_default(requires_approval, effects))

    def for_mcp(
        self,
        server: str,
        tool: str,
        annotations: Mapping[str, Any] | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> Verdict:
        """The verdict for tool ``tool`` of MCP server ``server``, whose definition has ``annotations``.

        A rule with ``hints`` matches only a tool whose annotations, as last listed, say so: a tool not
        discovered yet, or added later without ``readOnlyHint``, is not matched by it.
        """
        call = Call(mcp=f"{server}:{tool}", annotations=annotations, arguments=arguments)
        return self.verdict(call, self.mcp_default)

    def verdict(self, call: Call, default: PolicyDecision) -> Verdict:
        """The verdict for ``call``: the strictest decision of the rules that match, else ``default``."""
        matches = [(rule, rule_matches(rule, call)) for rule in self.rules]
        certain = [rule for rule, match in matches if match is True]
        verdict = _decided(certain) if certain else Verdict(decision=default, rule=None)
        reviewing = [rule for rule in certain if rule.review is not None]
        if reviewing:
            verdict = _reviewed(verdict, reviewing)
        depends = tuple(
            rule_label(rule) for rule, match in matches if match is None and _could_change(rule, verdict)
        )
        return dataclasses.replace(verdict, depends=depends) if depends else verdict

    def matching(self, call: Call) -> list[ApprovalRule]:
        """The rules that match ``call``, or could (what is not known counts as matching)."""
        return [rule for rule in self.rules if rule_matches(rule, call) is not False]


VERDICT_EVENT = "policy_verdict"
"""The name of the custom event in which the gate records what the policy said about an MCP call, with the
annotations of the tool it judged (the journal header cannot hold them: MCP tools are listed, and may
change, while a run goes on). Its data: ``call_id``, ``tool``, ``server``, ``annotations`` and the
verdict's ``decision``, ``decided_by``, ``rule`` and ``rules``."""


def verdict_data(verdict: Verdict) -> dict[str, Any]:
    """The verdict as a :data:`VERDICT_EVENT` records it (:func:`recorded_verdict` reads it back)."""
    return {
        "decision": verdict.decision,
        "decided_by": verdict.decided_by,
        "rule": verdict.rule,
        "rules": [ref.model_dump() for ref in verdict.rules],
    }


def recorded_verdict(data: Mapping[str, Any]) -> Verdict | None:
    """The verdict a :data:`VERDICT_EVENT` recorded; None when it does not hold one."""
    decision, rule, rules = data.get("decision"), data.get("rule"), data.get("rules")
    if decision not in _DECISIONS or not (rule is None or isinstance(rule, str)):
        return None
    try:
        refs = tuple(RuleRef.model_validate(ref) for ref in rules) if isinstance(rules, list) else ()
    except pydantic.ValidationError:
        refs = ()
    by: Literal["rule", "default"] = "rule" if data.get("decided_by") == "rule" else "default"
    return Verdict(decision=cast(PolicyDecision, decision), rule=rule, decided_by=by, rules=refs)


def tool_default(requires_approval: bool, effects: Sequence[str] | None) -> PolicyDecision:
    """What a registered tool gets when no rule matches it."""
    unknown = effects is None or not set(effects) <= EFFECTS
    return "ask" if requires_approval or unknown else "allow"


def _decided(rules: list[ApprovalRule]) -> Verdict:
    decision = strictest(rule.decision for rule in rules)
    deciding = [rule for rule in rules if rule.decision == decision]
    timeouts = [rule.timeout_seconds for rule in deciding if rule.timeout_seconds is not None]
    return Verdict(
        decision=decision,
        rule=rule_label(deciding[0]),
        timeout=min(timeouts) if timeouts else None,
        on_timeout=_on_timeout(deciding) if decision == "ask" else "deny",
        decided_by="rule",
        rules=tuple(rule_ref(rule) for rule in deciding),
    )


def _reviewed(verdict: Verdict, rules: list[ApprovalRule]) -> Verdict:
    timeouts = [rule.timeout_seconds for rule in rules if rule.timeout_seconds is not None]
    return dataclasses.replace(
        verdict,
        review=True,
        review_rule=rule_label(rules[0]),
        review_timeout=min(timeouts) if timeouts else None,
        review_on_timeout=_on_timeout(rules),
    )


def _on_timeout(rules: Sequence[ApprovalRule]) -> OnTimeout:
    """What the deciding rules say happens when nobody answers in time: any ``wait`` keeps the request
    open (a person asked to be waited for); ``allow`` only when every one of them says so; else deny."""
    said = {rule.on_timeout for rule in rules}
    if "wait" in said:
        return "wait"
    return "allow" if said == {"allow"} else "deny"


class ReviewToggles:
    """The tools whose results a person reviews for the rest of the session, whatever the rules say.

    A live set of tool labels (a registered tool's name, ``SERVER:TOOL`` for an MCP tool) the gate
    reads on every call, so a screen can turn review on or off for a tool while runs go on. Each
    remembers who turned it on (:meth:`cause`): the person, or the graph the session runs.
    """

    def __init__(self, tools: Iterable[str] = ()) -> None:
        self._tools: dict[str, ReviewCause] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: str, *, by: Literal["graph", "person"] = "person") -> None:
        """Review the results of ``tool``, as asked ``by`` the person or the graph."""
        if not isinstance(tool, str) or not tool:
            raise ValidationError("a tool to review is a non-empty tool name or SERVER:TOOL")
        self._tools[tool] = by

    def cause(self, tool: str) -> ReviewCause | None:
        """Who turned review of ``tool`` on (``graph`` or ``person``); None when it is off."""
        return self._tools.get(tool)

    def remove(self, tool: str) -> bool:
        """Stop reviewing ``tool`` (its rules may still ask for review); False when it was not on."""
        if tool in self._tools:
            del self._tools[tool]
            return True
        return False

    def toggle(self, tool: str) -> bool:
        """Turn review of ``tool`` on if it was off, else off; returns whether it is on now."""
        if self.remove(tool):
            return False
        self.add(tool)
        return True

    def __contains__(self, tool: object) -> bool:
        return tool in self._tools

    def __bool__(self) -> bool:
        return bool(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._tools))

    def __repr__(self) -> str:
        return f"ReviewToggles({sorted(self._tools)!r})"


def _could_change(rule: ApprovalRule, verdict: Verdict) -> bool:
    if verdict.decided_by == "default":
        return rule.decision != verdict.decision
    return STRICTNESS[rule.decision] > STRICTNESS[verdict.decision]


__all__ = [
    "DEPENDS",
    "HINTS",
    "STRICTNESS",
    "ApprovalPolicy",
    "PolicyDecision",
    "ReviewCause",
    "ReviewToggles",
    "VERDICT_EVENT",
    "Verdict",
    "coerce_rule",
    "hint_value",
    "matches_hints",
    "recorded_verdict",
    "rule_label",
    "rule_record",
    "rule_ref",
    "strictest",
    "tool_default",
    "verdict_data",
]
