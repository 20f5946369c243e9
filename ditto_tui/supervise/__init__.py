"""Supervision: approval policy and gate, result review, approvers, execution events, the run journal."""

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
