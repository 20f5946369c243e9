"""What an approver is asked and what it answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ditto_tui.contracts import ToolCall
from ditto_tui.errors import ValidationError
from ditto_tui.runtime.approval import DECISION_KINDS, Approval, DecisionKind
from ditto_tui.supervise.grants import GRANT_LIFETIMES, GRANT_SCOPES, GrantLifetime, GrantScope

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
    """An approver's answer: approve once, approve always (a grant), or deny with a reason.

    ``arguments`` replaces the call's arguments (an edit); they are validated again by the tool and the
    approval binds to their digest.

    ``approve_always`` writes a grant (:mod:`ditto_tui.supervise.grants`): ``scope`` ``call`` (these
    exact arguments), ``rule`` (the generalisation in ``match``, a rule body ``{args: {FIELD: MATCH}}``)
    or ``tool`` (the default); ``lifetime`` ``run``, ``session`` (the default) or ``project``;
    ``expires`` (seconds) and ``uses`` (a count) end it sooner.
    """

    kind: DecisionKind
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None
    scope: GrantScope = "tool"
    match: Mapping[str, Any] | None = None
    lifetime: GrantLifetime = "session"
    expires: float | None = None
    uses: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in DECISION_KINDS:
            raise ValidationError(f"decision kind {self.kind!r} must be approve, approve_always or deny")
        if self.kind == "deny" and self.arguments is not None:
            raise ValidationError("a denial carries no arguments")
        if self.arguments is not None and not isinstance(self.arguments, Mapping):
            raise ValidationError("edited arguments must be a JSON object")
        if self.scope not in GRANT_SCOPES:
            raise ValidationError(f"grant scope {self.scope!r} must be call, rule or tool")
        if self.lifetime not in GRANT_LIFETIMES:
            raise ValidationError(f"grant lifetime {self.lifetime!r} must be run, session or project")
        if self.scope == "rule" and not isinstance(self.match, Mapping):
            raise ValidationError("a grant of a rule needs the rule in match: {args: {FIELD: MATCH}}")
        if self.expires is not None and (isinstance(self.expires, bool) or not self.expires > 0):
            raise ValidationError("a grant's expiry must be a number of seconds greater than 0")
        if self.uses is not None and (
            isinstance(self.uses, bool) or not isinstance(self.uses, int) or self.uses < 1
        ):
            raise ValidationError("a grant's uses must be a count of at least 1")

    @property
    def approves(self) -> bool:
        """Whether the decision lets the call execute."""
        return self.kind != "deny"
