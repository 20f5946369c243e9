"""Supervision: approval policy, approval gate, approvers, execution events and the run journal."""

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
    RunFinished,
    RunStarted,
)
from ditto_tui.supervise.approvers import QueueApprover, StaticApprover
from ditto_tui.supervise.breakpoints import InboxBreakpoints
from ditto_tui.supervise.gate import ApprovalGate
from ditto_tui.supervise.inbox import Approver, Inbox, InboxAnswer, InboxRequest
from ditto_tui.supervise.journal import JournalEntry, JournalError, JournalRead, RunJournal, read_journal
from ditto_tui.supervise.policy import ApprovalPolicy, Verdict
from ditto_tui.supervise.record import DecisionRecorder
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest
from ditto_tui.supervise.sign_in import InboxAuthorizer, SignInAnswer, SignInRequest

__all__ = [
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
    "RunFinished",
    "RunJournal",
    "RunStarted",
    "SignInAnswer",
    "SignInRequest",
    "StaticApprover",
    "Verdict",
    "read_journal",
]
