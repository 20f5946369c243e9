"""What an approver is asked and what it answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ditto_tui.contracts import ToolCall
from ditto_tui.errors import ValidationError
from ditto_tui.runtime.approval import DECISION_KINDS, Approval, DecisionKind

__all__ = ["Approval", "ApprovalDecision", "ApprovalRequest", "DecisionKind"]


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """One call waiting for a decision, with everything a person needs to decide.

    ``request_id`` is unique per request (a reused call id gets a new request); ``arguments_digest`` is
    the sha256 of the canonical JSON of ``call.arguments``; ``tool_digest`` that of the tool's name,
    description, input schema and effects; ``rule`` names the policy rule that asked (``None``: the
    tool's own ``requires_approval``); ``timeout_seconds`` how long it may wait (the rule's timeout, else
    the gate's; ``None``: no limit). For an MCP tool, ``annotations`` are the hints its server sent
    (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``, ``title``) and ``title``
    the tool's display title: claims of the server, shown so a person can weigh them, never trusted to
    allow anything by themselves. ``proposal`` is the text of the model message that asked for the call
    (its stated reasoning), when an agent loop made it: shown beside the call, never a reason to allow it.
    """

    request_id: str
    call: ToolCall
    tool: str
    server: str | None
    description: str | None
    effects: tuple[str, ...]
    input_schema: Mapping[str, Any] | None
    tool_digest: str
    arguments_digest: str
    rule: str | None
    run_id: str | None
    node_id: str | None
    requested_at: float
    timeout_seconds: float | None = None
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    proposal: str | None = None

    kind: ClassVar[Literal["tool_call"]] = "tool_call"
    """What is asked: the approval of a tool call (the inbox holds other kinds of requests too)."""

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The exact arguments that will execute if approved."""
        return self.call.arguments


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    """An approver's answer: approve once, approve this tool for the session, or deny with a reason.

    ``arguments`` replaces the call's arguments (an edit); they are validated again by the tool and the
    approval binds to their digest.
    """

    kind: DecisionKind
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in DECISION_KINDS:
            raise ValidationError(f"decision kind {self.kind!r} must be approve, approve_always or deny")
        if self.kind == "deny" and self.arguments is not None:
            raise ValidationError("a denial carries no arguments")
        if self.arguments is not None and not isinstance(self.arguments, Mapping):
            raise ValidationError("edited arguments must be a JSON object")

    @property
    def approves(self) -> bool:
        """Whether the decision lets the call execute."""
        return self.kind != "deny"
