"""Supervision: the approval policy, the approval gate, approvers and the execution events."""

from ditto_tui.runtime.approval import Approval
from ditto_tui.runtime.events import (
    ApprovalRequested,
    ApprovalResolved,
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
from ditto_tui.supervise.gate import ApprovalGate, Approver
from ditto_tui.supervise.policy import ApprovalPolicy, ApprovalRule, Verdict
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest

__all__ = [
    "Approval",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRequested",
    "ApprovalResolved",
    "ApprovalRule",
    "Approver",
    "ExecutionEvent",
    "LoopIteration",
    "NodeFailed",
    "NodeFinished",
    "NodeSkipped",
    "NodeStarted",
    "QueueApprover",
    "RunFinished",
    "RunStarted",
    "StaticApprover",
    "Verdict",
]
