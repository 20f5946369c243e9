"""Approvers: a queue a person (or a test) answers by request id, and a fixed answer for headless runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest

logger = logging.getLogger(__name__)

RequestListener = Callable[[ApprovalRequest], object]


@dataclass
class _Entry:
    request: ApprovalRequest
    answered: asyncio.Future[None]
    decisions: list[ApprovalDecision] = field(default_factory=list)


class QueueApprover:
    """Pending requests in arrival order, each answered by :meth:`resolve` with its request id.

    An unknown, stale or late request id is refused (``resolve`` returns False); a second approval of the
    same request is ignored; a denial that arrives together with an approval wins (fail closed).
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._listeners: list[RequestListener] = []

    def on_request(self, listener: RequestListener) -> Callable[[], None]:
        """Call ``listener(request)`` for each new request; returns a function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def pending(self) -> list[ApprovalRequest]:
        """Requests still waiting, oldest first."""
        return [entry.request for entry in self._entries.values() if not entry.answered.done()]

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait for :meth:`resolve`; if the wait is cancelled the request disappears from the queue."""
        entry = _Entry(request, asyncio.get_running_loop().create_future())
        self._entries[request.request_id] = entry
        for listener in tuple(self._listeners):
            listener(request)
        try:
            await entry.answered
            await asyncio.sleep(0)  # a denial sent in the same instant as an approval still counts
        finally:
            del self._entries[request.request_id]
        denials = [decision for decision in entry.decisions if not decision.approves]
        return denials[0] if denials else entry.decisions[0]

    def resolve(self, request_id: str, decision: ApprovalDecision) -> bool:
        """Answer a pending request; False when the id is unknown, stale or already approved."""
        entry = self._entries.get(request_id)
        if entry is None:
            logger.info("decision for unknown or expired approval request %r refused", request_id)
            return False
        if entry.decisions and decision.approves:
            logger.info("duplicate decision for approval request %r ignored", request_id)
            return False
        entry.decisions.append(decision)
        if not entry.answered.done():
            entry.answered.set_result(None)
        return True


class StaticApprover:
    """Answers every request the same way: the headless ``--approve allow|deny``."""

    def __init__(self, answer: Literal["allow", "deny"]) -> None:
        if answer not in ("allow", "deny"):
            raise ValueError("answer must be 'allow' or 'deny'")
        self.answer = answer

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Approve once, or deny with a reason naming this approver."""
        if self.answer == "allow":
            return ApprovalDecision(kind="approve", reason="approved by --approve allow")
        return ApprovalDecision(kind="deny", reason="denied by --approve deny")
