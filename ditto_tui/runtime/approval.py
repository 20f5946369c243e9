"""The decision vocabulary, defined once, and the approval a call carries in ``context.approval``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

DecisionKind = Literal["approve", "approve_always", "deny"]
"""What an approver answers: approve once, approve for the session, or deny."""
Via = Literal["terminal", "browser", "link", "cli", "client"]
"""Where a person answered: the app in a terminal, the app served in a browser, a decision link,
``ditto-tui decide``, or an MCP client's own form (the gateway asks its person through elicitation)."""

Resolution = Literal[DecisionKind, "timeout", "cancelled"]
"""How a request ended: a decision, no decision in time, or withdrawn with its call."""

DecidedBy = Literal["rule", "default", "grant", "human", "mode", "timeout", "approver"]
"""Who or what decided a call (its provenance): a rule of the policy (its file and line), the policy's
default (no rule matched), an earlier grant, a person (``human``), a setting of the session that answers
without asking anyone (``mode``: the mode, or the headless ``--approve`` fixed answer; the decision's
reason names which), a timeout (the rule's ``onTimeout``), or a library's own ``Approver`` (``approver``:
the decision names it)."""

DENIED = "APPROVAL_DENIED"
"""The result code of a call denied by a rule or by the approver."""
TIMED_OUT = "APPROVAL_TIMEOUT"
"""The result code of a call nobody decided on in time (and whose rule says ``onTimeout: deny``)."""
NO_APPROVER = "APPROVAL_NO_APPROVER"
"""The result code of a call that asks when there is no approver to ask (a library gate without one)."""

DECISION_KINDS: tuple[DecisionKind, ...] = get_args(DecisionKind)
VIAS: tuple[Via, ...] = get_args(Via)
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
    decided_by: DecidedBy | None = None
