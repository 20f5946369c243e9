"""The record of decisions: a port the approval gate calls after every decision, before what it allows.

The run journal implements it. The gate asks :meth:`DecisionRecorder.ready` before it asks anyone (a
decision that could not be recorded is not asked for), and calls :meth:`DecisionRecorder.record` with the
``approval_resolved`` event of every decision before the call it approves executes, and with the
``review_resolved`` event of every result review before the result it lets through goes on; ``record``
raising means the call does not execute, or its result does not go on (fail closed).
"""

from __future__ import annotations

from typing import Protocol

from ditto_tui.runtime.events import ApprovalResolved, ReviewResolved

Decision = ApprovalResolved | ReviewResolved
"""What goes on the record: an approval decision, or the end of a result review."""


class DecisionRecorder(Protocol):
    """Where decisions go on the record: durable before the execution they allow, or refused."""

    def ready(self, run_id: str) -> None:
        """Raise when a decision of ``run_id`` cannot be recorded now (its record already failed)."""
        ...

    def record(self, decision: Decision) -> None:
        """Make ``decision`` durable; raise to refuse the execution (or the result) it would allow."""
        ...


__all__ = ["Decision", "DecisionRecorder"]
