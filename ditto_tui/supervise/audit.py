"""The approval trail of a journaled run, and what another policy would decide for its calls."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ditto_tui.digest import arguments_digest
from ditto_tui.errors import ValidationError
from ditto_tui.runtime.approval import DECISION_KINDS
from ditto_tui.runtime.events import (
    ApprovalRequested,
    ApprovalResolved,
    CustomEvent,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    RuleRef,
)
from ditto_tui.supervise.journal import (
    ACT_MCP,
    ACT_TOOL,
    EVERY_DECISION,
    OBSERVE,
    OUTPUT,
    JournalEntry,
    JournalRead,
    field_of,
)
from ditto_tui.supervise.matching import Call
from ditto_tui.supervise.policy import VERDICT_EVENT, ApprovalPolicy, Verdict, recorded_verdict, tool_default

NOT_EXECUTED = frozenset(
    (
        "APPROVAL_DENIED",
        "APPROVAL_TIMEOUT",
        "APPROVAL_CANCELLED",
        "APPROVAL_MISMATCH",
        "APPROVAL_EDIT_INVALID",
    )
)
"""Error codes of results the approval gate returned without executing the call."""

NO_DECISION: Mapping[str, str] = {
    "timeout": "timed out: no one decided within the approval timeout",
    "cancelled": "cancelled: the call was withdrawn while its approval was pending",
}
"""What a request that no one decided on came to, in words, by its recorded decision."""


def arguments_diff(asked: Any, ran: Any) -> list[str]:
    """An edit of a call's arguments as unified-diff lines of their pretty JSON, asked → executed."""
    before, after = (
        json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2, default=repr).splitlines()
        for value in (asked, ran)
    )
    return list(difflib.unified_diff(before, after, "requested", "executed", lineterm=""))


@dataclass(kw_only=True)
class CallRecord:
    """One tool or MCP call of a run: how it was approved, what executed, what was observed, delivered.

    ``decision`` is the recorded ``approval_resolved`` decision, None when the call never asked (the
    policy decided, or an earlier "always" grant covered it). ``status`` is the result's status,
    ``raised`` when the call raised, None when the journal ends before the call does.
    """

    call_id: str
    tool: str
    server: str | None = None
    node_id: str | None = None
    arguments: Any = None
    started_at: float | None = None
    request_id: str | None = None
    requested_at: float | None = None
    rule: str | None = None
    arguments_digest: str | None = None
    tool_digest: str | None = None
    decision: str | None = None
    decided_at: float | None = None
    reason: str | None = None
    edited: bool = False
    executed_arguments: Any = None
    status: str | None = None
    error_code: str | None = None
    error: str | None = None
    cancelled: bool = False
    duration_ms: float | None = None
    observation: str | None = None
    delivery: str | None = None
    redacted: bool = False
    verdict: Verdict | None = None
    """What the policy said when the gate decided the call (recorded for MCP calls), None when the
    journal did not record it (a registered tool's call, an older journal)."""
    annotations: Mapping[str, Any] | None = None
    annotations_recorded: bool = False
    """Whether the journal recorded the annotations the MCP tool had when it was called (``annotations``;
    None: the server sent none, or the tool was not listed)."""
    decided_by: str | None = None
    """The provenance the journal recorded (human, timeout, grant, mode: the mode, or an approver that
    answered by itself; rule or default: the policy by itself), None in older journals."""
    rules: tuple[RuleRef, ...] = ()
    """The rules the decision names, with their file and line (the policy's own decisions)."""
    via: str | None = None
    """Where the person answered (terminal, browser, link, cli, client), None when not recorded."""
    approver: str | None = None
    """The approver that answered by itself (``decided_by: approver``), as the journal named it."""

    @property
    def executed(self) -> bool | None:
        """Whether the call executed: None when the journal cannot tell (it raised, or never ended)."""
        if self.status is None or self.status == "raised":
            return None
        return self.error_code not in NOT_EXECUTED

    @property
    def ran_with(self) -> Any:
        """The arguments that executed: the edited ones when the person edited them, else the requested."""
        return self.executed_arguments if self.edited else self.arguments

    def arguments_diff(self) -> list[str]:
        """The edit as unified-diff lines of the arguments' pretty JSON (empty when nothing was edited)."""
        if not self.edited or self.executed_arguments is None:
            return []
        return arguments_diff(self.arguments, self.executed_arguments)

    @property
    def digest_check(self) -> str:
        """Whether the recorded arguments hash to the digest that was approved."""
        if self.arguments_digest is None:
            return "no approval request"
        if self.edited:
            if isinstance(self.executed_arguments, Mapping) and not self.redacted:
                matches = arguments_digest(self.executed_arguments) == self.arguments_digest
                return "edited: the approval binds the edited arguments, " + (
                    "verified" if matches else "MISMATCH"
                )
            return "edited: the approval binds the edited arguments"
        if self.redacted or not isinstance(self.arguments, Mapping):
            return "not checked: arguments redacted in the journal"
        try:
            matches = arguments_digest(self.arguments) == self.arguments_digest
        except (TypeError, ValueError):
            return "not checked: arguments are not JSON"
        return "verified" if matches else "MISMATCH"

    @property
    def outcome(self) -> str:
        """What happened to the call, in a few words."""
        if self.status is None:
            return "no result: the journal ends before the call does"
        if self.status == "raised":
            return "was cancelled" if self.cancelled else f"error: {self.error or 'unexpected error'}"
        if self.error_code in NOT_EXECUTED:
            return f"not executed: {self.error_code}"
        return self.status if self.error_code is None else f"{self.status}: {self.error_code}"


def call_records(journal: JournalRead) -> list[CallRecord]:
    """Every tool and MCP call of the run in the order they started, each with its whole trail."""
    trail = _Trail()
    for entry in journal.entries:
        trail.add(entry)
    return trail.records


class _Trail:
    """Folds journal entries into call records, matching events by execution id and request id."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self._running: dict[str, CallRecord] = {}
        self._by_node: dict[str, CallRecord] = {}
        self._by_request: dict[str, CallRecord] = {}

    def add(self, entry: JournalEntry) -> None:
        event = entry.event
        if isinstance(event, NodeStarted):
            self._started(event, entry)
        elif isinstance(event, ApprovalRequested):
            self._requested(event)
        elif isinstance(event, ApprovalResolved):
            self._resolved(event)
        elif isinstance(event, NodeFinished):
            self._finished(event, entry)
        elif isinstance(event, CustomEvent) and event.name == VERDICT_EVENT:
            self._verdict(event)
        elif isinstance(event, NodeFailed):
            record = self._running.pop(event.execution_id, None)
            if record is not None:
                record.status, record.error, record.duration_ms = "raised", event.error, event.duration_ms
                record.cancelled = event.cancelled or event.error_type == "CancelledError"

    def _started(self, event: NodeStarted, entry: JournalEntry) -> None:
        call = field_of(event.input, "call", "call")
        if event.node_type == ACT_MCP and field_of(event.input, "operation", "operation") != "invoke":
            return
        if event.node_type not in (ACT_TOOL, ACT_MCP) or call is None:
            return
        name = str(field_of(call, "name", "name"))
        server = field_of(event.input, "server", "server") if event.node_type == ACT_MCP else None
        record = CallRecord(
            call_id=entry.call_id or str(field_of(call, "id", "id")),
            tool=f"{server}:{name}" if server else name,
            server=server if isinstance(server, str) else None,
            node_id=event.node_id,
            arguments=field_of(call, "arguments", "arguments"),
            started_at=event.at,
            redacted=entry.redacted,
        )
        self.records.append(record)
        self._running[event.execution_id] = record
        self._by_node[event.node_id] = record

    def _verdict(self, event: CustomEvent) -> None:
        data = event.data
        if not isinstance(data, Mapping):
            return
        record = next(
            (r for r in reversed(self.records) if r.call_id == data.get("call_id") and r.verdict is None),
            None,
        )
        if record is None:
            return
        annotations = data.get("annotations")
        record.verdict = recorded_verdict(data)
        record.annotations = annotations if isinstance(annotations, Mapping) else None
        record.annotations_recorded = record.verdict is not None

    def _requested(self, event: ApprovalRequested) -> None:
        record = self._by_node.get(event.node_id) if event.node_id else None
        if record is None or record.call_id != event.call_id:
            record = CallRecord(
                call_id=event.call_id, tool=event.tool, server=event.server, node_id=event.node_id
            )
            self.records.append(record)
        record.request_id, record.requested_at, record.rule = event.request_id, event.at, event.rule
        record.arguments_digest, record.tool_digest = event.arguments_digest, event.tool_digest
        record.arguments = event.arguments
        self._by_request[event.request_id] = record

    def _resolved(self, event: ApprovalResolved) -> None:
        record = self._by_request.get(event.request_id)
        if record is None and event.decided_by in _UNASKED:  # decided without asking anyone
            record = next(
                (r for r in reversed(self.records) if r.call_id == event.call_id and r.decision is None), None
            )
            if record is not None and event.decided_by not in _BY_POLICY:  # the policy asked no one
                record.request_id = event.request_id
        if record is None:
            record = CallRecord(call_id=event.call_id, tool=event.tool, request_id=event.request_id)
            self.records.append(record)
        record.decision, record.decided_at, record.reason = event.decision, event.at, event.reason
        record.decided_by, record.rules, record.via = event.decided_by, event.rules, event.via
        record.approver = event.approver
        if event.decided_by in _BY_POLICY:
            return  # no request was made: there is no approved digest to check
        record.arguments_digest, record.edited = event.arguments_digest, event.edited
        if event.edited:
            record.executed_arguments = event.arguments

    def _finished(self, event: NodeFinished, entry: JournalEntry) -> None:
        record = self._running.pop(event.execution_id, None)
        if record is not None:
            result = field_of(event.output, "result", "result") if record.server else event.output
            error = field_of(result, "error", "error")
            record.status = str(field_of(result, "status", "status"))
            record.error_code = _text(field_of(error, "code", "code"))
            record.error = _text(field_of(error, "message", "message"))
            record.duration_ms = event.duration_ms
            record.redacted = record.redacted or entry.redacted
        elif event.node_type == OBSERVE:
            observed = next((r for r in reversed(self.records) if r.call_id == entry.call_id), None)
            if observed is not None and observed.observation is None:
                observed.observation = str(field_of(event.output, "status", "status"))
        elif event.node_type == OUTPUT:
            receipt = f"{entry.delivery_id} {field_of(event.output, 'status', 'status')}"
            for waiting in self.records:
                waiting.delivery = waiting.delivery or receipt


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- who decided ------------------------------------------------------------------------------------------


def recorded_policy(header: Mapping[str, Any]) -> ApprovalPolicy | None:
    """The approval policy the run ran under, from the journal header (None when it has none)."""
    rules = header.get("policy")
    if not isinstance(rules, list):
        return None
    default = header.get("mcp_default", "ask")
    try:
        return ApprovalPolicy(rules, mcp_default=default)
    except ValidationError:
        return None


def requires_approval(header: Mapping[str, Any], record: CallRecord) -> bool:
    """Whether the tool of ``record`` asks for approval by itself (as the journal header recorded it)."""
    tools = header.get("tools")
    known = tools.get(record.tool) if isinstance(tools, Mapping) else None
    if isinstance(known, Mapping):
        return known.get("requiresApproval") is True
    return record.request_id is not None and record.rule is None


def recorded_call(header: Mapping[str, Any], record: CallRecord) -> Call:
    """A recorded call as the rules see it; what the journal did not keep counts as unknown."""
    arguments = record.arguments if isinstance(record.arguments, Mapping) and not record.redacted else None
    if record.server is not None:
        return Call(
            mcp=record.tool,
            arguments=arguments,
            annotations=record.annotations,
            annotations_known=record.annotations_recorded,
        )
    tools = header.get("tools")
    known = tools.get(record.tool) if isinstance(tools, Mapping) else None
    effects = known.get("effects") if isinstance(known, Mapping) else None
    listed = isinstance(effects, list) and all(isinstance(effect, str) for effect in effects)
    return Call(
        tool=record.tool, effects=effects if listed else None, arguments=arguments, effects_known=listed
    )


def verdict_for(policy: ApprovalPolicy, header: Mapping[str, Any], record: CallRecord) -> Verdict:
    """What ``policy`` says about the call of ``record``, as the journal recorded it: an MCP call with the
    annotations its tool had then (:attr:`Verdict.depends` names the rules that need what the journal
    did not keep)."""
    call = recorded_call(header, record)
    if record.server is not None:
        return policy.verdict(call, policy.mcp_default)
    effects = call.effects if call.effects_known else ()
    return policy.verdict(call, tool_default(requires_approval(header, record), effects))


def unknown_verdict(verdict: Verdict) -> str | None:
    """Why ``verdict`` cannot be told from the journal (None: it can): the rules whose match depends on
    what it did not record (an MCP tool's annotations, redacted arguments, a tool's effects)."""
    if not verdict.depends:
        return None
    return "unknown: the journal does not record what decides " + "; ".join(verdict.depends)


_BY_POLICY = ("rule", "default")
_UNASKED = ("grant", "mode", *_BY_POLICY)


def _policy_said(record: CallRecord) -> str:
    """The policy's own decision as its journal line recorded it: the rules, then where they are written."""
    said = "deny" if record.decision == "deny" else "allow"
    if not record.rules:
        return f"policy: {said} ({'the tool does not ask' if said == 'allow' else 'its default'})"
    rules = "; ".join(ref.rule for ref in record.rules)
    where = ", ".join(f"{ref.file}:{ref.line}" for ref in record.rules if ref.file and ref.line)
    return f"policy: {said} ({rules})" + (f" at {where}" if where else "")


def decided_by(header: Mapping[str, Any], record: CallRecord) -> str:
    """Who or what decided the call: the approver, no one (a timeout, a withdrawal), the policy or a grant."""
    approver = str(header.get("approver") or "the approver")
    if record.decided_by == "approver" and record.approver:
        approver = record.approver
    if record.decided_by == "grant":
        return f"a grant ({record.reason})" if record.reason else "a grant"
    if record.decided_by == "mode" and record.requested_at is not None:  # the approver answered by itself
        return approver
    if record.decided_by == "mode":
        return f"the mode ({record.reason})" if record.reason else "the mode"
    if record.decided_by in _BY_POLICY:
        return _policy_said(record)
    if record.decision in DECISION_KINDS:
        return approver
    if record.decision in NO_DECISION:
        return "no one"
    if header.get("decisions") == EVERY_DECISION:  # no line: no decision was made
        if record.status is not None and record.status != "success":
            why = record.error_code or record.error or record.status
            return f"nothing: the call was refused before the policy was asked ({why})"
        return "not recorded: the journal has no decision for this call"
    verdict = record.verdict
    if verdict is None:
        policy = recorded_policy(header)
        if policy is None:
            return "not recorded"
        verdict = verdict_for(policy, header, record)
        unknown = unknown_verdict(verdict)
        if unknown is not None:
            return unknown
    rule = verdict.rule or ("the tool asks" if verdict.decision == "ask" else "the tool does not ask")
    if verdict.decision == "ask":
        if record.error_code == "APPROVAL_DENIED":
            return f"no approver ({rule})"
        return f"an earlier 'always' grant of the session ({rule})"
    return f"policy: {verdict.decision} ({rule})"


# -- trying another policy -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PolicyCheck:
    """One recorded call beside what a policy says about it now."""

    record: CallRecord
    then: Verdict | None
    now: Verdict

    @property
    def unknown(self) -> bool:
        """Whether the journal lacks what the policy now, or the run's policy, needs to decide the call."""
        return bool(self.now.depends) or (self.then is not None and bool(self.then.depends))

    @property
    def changed(self) -> bool:
        """Whether the policy now decides differently from the one the run ran under (known verdicts)."""
        if self.unknown:
            return False
        return self.then is None or self.then.decision != self.now.decision


def policy_check(journal: JournalRead, policy: ApprovalPolicy) -> list[PolicyCheck]:
    """For each recorded call: the verdict of the run's own policy (as the gate recorded it, when it did)
    and of ``policy``."""
    header = journal.header
    then_policy = recorded_policy(header)
    return [
        PolicyCheck(
            record=record,
            then=record.verdict
            or (None if then_policy is None else verdict_for(then_policy, header, record)),
            now=verdict_for(policy, header, record),
        )
        for record in call_records(journal)
    ]
