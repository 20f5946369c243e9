"""The approval a call carries in ``context.approval``: which call, arguments and tool it covers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DecisionKind = Literal["approve", "approve_always", "deny"]


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
