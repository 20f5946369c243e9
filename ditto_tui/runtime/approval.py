"""The decision vocabulary, defined once, and the approval a call carries in ``context.approval``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

DecisionKind = Literal["approve", "approve_always", "deny"]
"""What an approver answers: approve once, approve for the session, or deny."""

Resolution = Literal[DecisionKind, "timeout", "cancelled"]
"""How a request ended: a decision, no decision in time, or withdrawn with its call."""

DECISION_KINDS: tuple[DecisionKind, ...] = get_args(DecisionKind)
APPROVING: frozenset[str] = frozenset({"approve", "approve_always"})
"""The decisions that let a call execute."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Approval:
    """A decision bound to one call id, one arguments digest and one tool definition digest."""

    call_id: str
    arguments_digest: str
    tool_digest: str
    decision: DecisionKind
    decided_at: float
    request_id: str | None = None
    rule: str | None = None
