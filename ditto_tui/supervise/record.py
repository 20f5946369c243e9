"""The record of decisions: a port the approval gate calls after every decision, before what it allows.

The run journal implements it. The gate asks :meth:`DecisionRecorder.ready` before it asks anyone (a
decision that could not be recorded is not asked for), and calls :meth:`DecisionRecorder.record` with the
``approval_resolved`` event of every decision before the call it approves executes; ``record`` raising
means the call does not execute (fail closed).
"""

from __future__ import annotations

from typing import Protocol

from ditto_tui.runtime.events import ApprovalResolved


class DecisionRecorder(Protocol):
    """Where decisions go on the record: durable before the execution they allow, or refused."""

    def ready(self, run_id: str) -> None:
        """Raise when a decision of ``run_id`` cannot be recorded now (its record already failed)."""
        ...

    def record(self, decision: ApprovalResolved) -> None:
        """Make ``decision`` durable; raise to refuse the execution it would allow."""
        ...


__all__ = ["DecisionRecorder"]
