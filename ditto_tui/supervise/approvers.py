"""Approvers: an inbox a person (or a test) answers by request id, and a fixed answer for headless runs."""

from __future__ import annotations

from typing import Literal

from ditto_tui.supervise.inbox import Inbox
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest


class QueueApprover(Inbox):
    """An inbox a person (or a test) answers by request id: given as the gate's approver, it is the gate's
    own table of pending requests (``ApprovalGate(approver=QueueApprover())``), so the screen and the
    gate read one queue."""

    def __init__(self) -> None:
        super().__init__()


class StaticApprover:
    """Answers every tool call the same way: the headless ``--approve allow|deny``. It answers nothing
    else (``kinds``): a fixed answer never lets a result through unreviewed, nor answers a server."""

    request_kinds = frozenset({"tool_call"})

    def __init__(self, answer: Literal["allow", "deny"]) -> None:
        if answer not in ("allow", "deny"):
            raise ValueError("answer must be 'allow' or 'deny'")
        self.answer = answer

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Approve once, or deny with a reason naming this approver."""
        if self.answer == "allow":
            return ApprovalDecision(kind="approve", reason="approved by --approve allow")
        return ApprovalDecision(kind="deny", reason="denied by --approve deny")
