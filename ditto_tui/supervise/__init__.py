"""Supervision: approval policy and gate, result review, approvers, execution events, the run journal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ditto_tui._lazy import load

if TYPE_CHECKING:
    from ditto_tui.config import ApprovalRule
    from ditto_tui.runtime.approval import Approval
    from ditto_tui.runtime.breakpoints import BreakpointDecision, BreakpointRequest, Breakpoints
    from ditto_tui.runtime.events import (
        ApprovalRequested,
        ApprovalResolved,
        BreakpointRequested,
        BreakpointResolved,
        ExecutionEvent,
        LoopIteration,
        NodeFailed,
        NodeFinished,
        NodeSkipped,
        NodeStarted,
        ReviewRequested,
        ReviewResolved,
        RunFinished,
        RunStarted,
    )
    from ditto_tui.supervise.approvers import QueueApprover, StaticApprover
    from ditto_tui.supervise.breakpoints import InboxBreakpoints
    from ditto_tui.supervise.gate import RESULT_REJECTED, REVIEW_NO_REVIEWER, ApprovalGate
    from ditto_tui.supervise.inbox import Approver, Inbox, InboxAnswer, InboxRequest
    from ditto_tui.supervise.journal import JournalEntry, JournalError, JournalRead, RunJournal, read_journal
    from ditto_tui.supervise.policy import ApprovalPolicy, ReviewToggles, Verdict
    from ditto_tui.supervise.record import DecisionRecorder
    from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest, ReviewDecision, ReviewRequest
    from ditto_tui.supervise.review import Span, suspicious_spans
    from ditto_tui.supervise.sign_in import InboxAuthorizer, SignInAnswer, SignInRequest

_EXPORTS: dict[str, tuple[str, ...]] = {
    "ditto_tui.config": ("ApprovalRule",),
    "ditto_tui.runtime.approval": ("Approval",),
    "ditto_tui.runtime.breakpoints": (
        "BreakpointDecision",
        "BreakpointRequest",
        "Breakpoints",
    ),
    "ditto_tui.runtime.events": (
        "ApprovalRequested",
        "ApprovalResolved",
        "BreakpointRequested",
        "BreakpointResolved",
        "ExecutionEvent",
        "LoopIteration",
        "NodeFailed",
        "NodeFinished",
        "NodeSkipped",
        "NodeStarted",
        "ReviewRequested",
        "ReviewResolved",
        "RunFinished",
        "RunStarted",
    ),
    "ditto_tui.supervise.approvers": (
        "QueueApprover",
        "StaticApprover",
    ),
    "ditto_tui.supervise.breakpoints": ("InboxBreakpoints",),
    "ditto_tui.supervise.gate": (
        "RESULT_REJECTED",
        "REVIEW_NO_REVIEWER",
        "ApprovalGate",
    ),
    "ditto_tui.supervise.inbox": (
        "Approver",
        "Inbox",
        "InboxAnswer",
        "InboxRequest",
    ),
    "ditto_tui.supervise.journal": (
        "JournalEntry",
        "JournalError",
        "JournalRead",
        "RunJournal",
        "read_journal",
    ),
    "ditto_tui.supervise.policy": (
        "ApprovalPolicy",
        "ReviewToggles",
        "Verdict",
    ),
    "ditto_tui.supervise.record": ("DecisionRecorder",),
    "ditto_tui.supervise.requests": (
        "ApprovalDecision",
        "ApprovalRequest",
        "ReviewDecision",
        "ReviewRequest",
    ),
    "ditto_tui.supervise.review": (
        "Span",
        "suspicious_spans",
    ),
    "ditto_tui.supervise.sign_in": (
        "InboxAuthorizer",
        "SignInAnswer",
        "SignInRequest",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
"""Each public name's module: loaded on first use, so importing one module of the package (``modes``,
``journal``) does not load them all (the gate, its schema checks, the inbox...)."""

__all__ = [
    "RESULT_REJECTED",
    "REVIEW_NO_REVIEWER",
    "Approval",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRequested",
    "ApprovalResolved",
    "ApprovalRule",
    "BreakpointDecision",
    "BreakpointRequest",
    "BreakpointRequested",
    "BreakpointResolved",
    "Breakpoints",
    "DecisionRecorder",
    "Approver",
    "ExecutionEvent",
    "Inbox",
    "InboxAnswer",
    "InboxAuthorizer",
    "InboxBreakpoints",
    "InboxRequest",
    "JournalEntry",
    "JournalError",
    "JournalRead",
    "LoopIteration",
    "NodeFailed",
    "NodeFinished",
    "NodeSkipped",
    "NodeStarted",
    "QueueApprover",
    "ReviewDecision",
    "ReviewRequest",
    "ReviewRequested",
    "ReviewResolved",
    "ReviewToggles",
    "RunFinished",
    "RunJournal",
    "RunStarted",
    "SignInAnswer",
    "SignInRequest",
    "Span",
    "StaticApprover",
    "Verdict",
    "read_journal",
    "suspicious_spans",
]


def __getattr__(name: str) -> Any:
    return load(__name__, _MODULE_OF, name)
