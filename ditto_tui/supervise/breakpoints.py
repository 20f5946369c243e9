"""Breakpoints through the inbox: the runtime's breakpoint approver port, answered by the person.

The runtime pauses before a node and asks its :class:`~ditto_tui.runtime.breakpoints.BreakpointApprover`;
:class:`InboxBreakpoints` is that approver for a session with a person: the request waits in the one
inbox (kind ``breakpoint``) until the screen answers it with ``inbox.resolve(request_id, decision)``.
A request that ends unanswered (withdrawn, or the run's journal cannot record the answer) aborts the run.
"""

from __future__ import annotations

from ditto_tui.runtime.breakpoints import BreakpointDecision, BreakpointRequest
from ditto_tui.supervise.inbox import Inbox, answers, approver_name
from ditto_tui.supervise.record import DecisionRecorder


class InboxBreakpoints:
    """Asks the inbox's person at each breakpoint; ``recorder`` (the run journal) must be able to record."""

    def __init__(self, inbox: Inbox, recorder: DecisionRecorder | None = None) -> None:
        self.inbox = inbox
        self.recorder = recorder

    def answered_by(self) -> tuple[str, str | None]:
        """``("human", None)`` when a person answers the inbox, else the inbox's own answerer, by name."""
        answerer = self.inbox.answerer
        if answerer is None or not answers(answerer, BreakpointRequest.kind):
            return "human", None
        return "approver", approver_name(answerer)

    async def decide(self, request: BreakpointRequest) -> BreakpointDecision:
        """The person's decision; an answer that cannot be recorded is not asked for (the run aborts)."""
        if self.recorder is not None:
            self.recorder.ready(request.run_id)
        answer = await self.inbox.ask(request)
        if isinstance(answer, BreakpointDecision):
            return answer
        return BreakpointDecision(action="abort", reason="the breakpoint ended without a decision")


__all__ = ["InboxBreakpoints"]
