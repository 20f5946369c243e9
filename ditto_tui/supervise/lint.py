"""``ditto-tui policy lint``: rules that can never decide, and rules no recorded call matched.

Both checks are conservative: a finding is always true, but not every such rule is found.

- **Shadowed**: a stricter rule matches every call the rule matches, so the rule never decides (the
  strictest match wins, wherever either was written). This is proved only when the stricter rule has no
  ``effects``, needs no hint the rule does not also need, and its glob plainly covers the rule's: the same
  glob, ``*`` (``*:*`` for MCP), a literal prefix followed by ``*`` (``write_*`` covers ``write_text`` and
  ``write_t*``), or one that matches the rule's glob when that has no wildcard. Each of its ``args`` must
  be one the rule has too, the same (``path: notes/**`` covers ``path: notes/**``) or a ``**`` glob where
  the rule's is a glob or a regex (``path: "**"`` covers ``path: notes/**``). A rule with ``review`` still
  has its results reviewed under a stricter ask, so only a deny shadows it.
- **Unused**: no call of the recorded runs matched the rule. What a journal does not keep counts as
  matching: the hints of MCP tools (runs do not record annotations), the effects of a tool the header
  does not list, and redacted arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from ditto_tui.config import ApprovalRule, ArgMatch
from ditto_tui.runtime.client import short_run_id
from ditto_tui.supervise.audit import call_records, recorded_call
from ditto_tui.supervise.journal import JournalError, JournalRead, list_runs, read_journal
from ditto_tui.supervise.matching import Call, given_hints, rule_matches
from ditto_tui.supervise.policy import STRICTNESS, ApprovalPolicy, rule_label

_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One rule ``policy lint`` reports, and why."""

    rule: ApprovalRule
    kind: Literal["shadowed", "unused"]
    detail: str

    def line(self) -> str:
        """``FILE:LINE: shadowed: tool:write_text → allow: …`` (where the rule was written first)."""
        return f"{self.rule.source}: {self.kind}: {rule_label(self.rule)}: {self.detail}"


def glob_covers(outer: str, inner: str, *, mcp: bool = False) -> bool:
    """Whether glob ``outer`` certainly matches every name glob ``inner`` matches (see the module)."""
    if outer == inner or outer == "*" or (mcp and outer == "*:*"):
        return True
    if not _WILDCARDS & set(inner):
        return fnmatchcase(inner, outer)
    prefix = outer[:-1]
    return outer.endswith("*") and not _WILDCARDS & set(prefix) and inner.startswith(prefix)


def _match_text(match: ArgMatch) -> str:
    """An argument match as JSON text (``true`` and ``1`` differ here, as they do to the rules)."""
    return json.dumps(match.model_dump(mode="json", by_alias=True), sort_keys=True)


def _match_covers(outer: ArgMatch, inner: ArgMatch) -> bool:
    """Whether an ask or deny rule's ``outer`` certainly matches every argument ``inner`` matches (a
    stricter rule matches a path as written and as resolved, a superset of what an allow rule matches)."""
    if outer.glob == "**":  # any text at all; a glob or a regex matches only text
        return inner.glob is not None or inner.compiled is not None
    return _match_text(outer) == _match_text(inner)


def _args_cover(stricter: ApprovalRule, rule: ApprovalRule) -> bool:
    mine = rule.args or {}
    return all(
        path in mine and _match_covers(match, mine[path]) for path, match in (stricter.args or {}).items()
    )


def covers(stricter: ApprovalRule, rule: ApprovalRule) -> bool:
    """Whether ``stricter`` (an ask or deny rule) certainly matches every call ``rule`` matches."""
    if stricter.effects is not None or not _args_cover(stricter, rule):
        return False
    needed = given_hints(rule)
    if any(needed.get(name) != value for name, value in given_hints(stricter).items()):
        return False
    if stricter.tool is not None and rule.tool is not None:
        return glob_covers(stricter.tool, rule.tool)
    if stricter.mcp is not None and rule.mcp is not None:
        return glob_covers(stricter.mcp, rule.mcp, mcp=True)
    return False


def _overrides(other: ApprovalRule, rule: ApprovalRule) -> bool:
    """Whether ``other``'s decision leaves ``rule`` nothing to do when both match: it is stricter, and a
    rule that reviews results is overridden only by a deny (under an ask its review still applies)."""
    if rule.review is not None and other.decision != "deny":
        return False
    return STRICTNESS[other.decision] > STRICTNESS[rule.decision]


def shadowed(policy: ApprovalPolicy) -> list[Finding]:
    """The rules a stricter rule covers: they never decide. Each finding names both rules' lines."""
    findings = []
    for rule in policy.rules:
        stricter = [other for other in policy.rules if _overrides(other, rule) and covers(other, rule)]
        if stricter:
            detail = (
                f"never decides: {rule_label(stricter[0])} ({stricter[0].source}) matches every call it does"
            )
            findings.append(Finding(rule=rule, kind="shadowed", detail=detail))
    return findings


RecordedCall = tuple[Call, str | None, str]
"""A call of a recorded run: as the rules see it, its arguments' digest, and a line naming it."""

RECENT_RUNS = 20
"""How many of the latest recorded runs a grant is checked against before it is saved."""


def recorded_calls(journals: Iterable[JournalRead]) -> list[RecordedCall]:
    """Every call of ``journals`` as a grant chooser checks it, each named like
    ``write_text {"path": "a.md"} (run 1a2b3c4d)``."""
    calls: list[RecordedCall] = []
    for journal in journals:
        run = short_run_id(str(journal.header.get("run_id") or ""))
        for record in call_records(journal):
            shown = (
                "" if record.redacted else json.dumps(record.arguments, ensure_ascii=False, sort_keys=True)
            )
            shown = shown if len(shown) <= 60 else shown[:59] + "…"
            label = f"{record.tool} {shown} (run {run})" if shown else f"{record.tool} (run {run})"
            calls.append((recorded_call(journal.header, record), record.arguments_digest, label))
    return calls


def recent_journals(workspace: str | os.PathLike[str], limit: int = RECENT_RUNS) -> list[JournalRead]:
    """The latest ``limit`` recorded runs of ``workspace`` that can be read, oldest first."""
    journals = []
    for summary in list_runs(workspace)[-limit:]:
        try:
            journals.append(read_journal(summary.path))
        except JournalError:
            continue
    return journals


def unused(policy: ApprovalPolicy, journals: Iterable[JournalRead]) -> list[Finding]:
    """The rules that no call of ``journals`` matched (or could have matched)."""
    left = list(policy.rules)
    calls = 0
    for journal in journals:
        for record in call_records(journal):
            calls += 1
            call = recorded_call(journal.header, record)
            left = [rule for rule in left if rule_matches(rule, call) is False]
    detail = f"matched none of the {calls} recorded calls"
    return [Finding(rule=rule, kind="unused", detail=detail) for rule in left]


def lint(policy: ApprovalPolicy, journals: Iterable[JournalRead]) -> list[Finding]:
    """Every finding: the shadowed rules, then the unused ones, each in the order of the rules."""
    return shadowed(policy) + unused(policy, journals)


def lint_report(policy: ApprovalPolicy, journals: list[JournalRead]) -> tuple[list[str], int]:
    """What ``policy lint`` prints, and its exit code (1 when it found something). Without recorded runs
    there is nothing to say about unused rules, and it says so."""
    findings = shadowed(policy) + (unused(policy, journals) if journals else [])
    lines = [finding.line() for finding in findings]
    runs = f"{len(journals)} recorded run(s)" if journals else "no recorded runs (unused rules not checked)"
    lines.append(f"{len(policy.rules)} rule(s), {len(findings)} finding(s); checked against {runs}")
    return lines, 1 if findings else 0


__all__ = [
    "RECENT_RUNS",
    "Finding",
    "RecordedCall",
    "covers",
    "glob_covers",
    "lint",
    "lint_report",
    "recent_journals",
    "recorded_call",
    "recorded_calls",
    "shadowed",
    "unused",
]
