"""What an approver is asked and what it answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

import pydantic

from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.runtime.approval import DECISION_KINDS, VIAS, Approval, DecisionKind, Via
from ditto_tui.runtime.events import ReviewCause
from ditto_tui.supervise.grants import GRANT_LIFETIMES, GRANT_SCOPES, GrantLifetime, GrantScope
from ditto_tui.supervise.review import Span

__all__ = [
    "Approval",
    "ApprovalDecision",
    "ApprovalRequest",
    "DecisionKind",
    "ReviewAction",
    "ReviewDecision",
    "ReviewRequest",
    "redacted_result",
]


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
    ``definition_digest`` covers the whole MCP tool definition (annotations and title too), the digest
    its grants are pinned to. ``protected`` names the control files the call writes
    (:mod:`ditto_tui.supervise.protected`): such a call is always asked, and no grant covers it.
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
    definition_digest: str | None = None
    protected: tuple[str, ...] = ()

    kind: ClassVar[Literal["tool_call"]] = "tool_call"
    """What is asked: the approval of a tool call (the inbox holds other kinds of requests too)."""

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The exact arguments that will execute if approved."""
        return self.call.arguments

    @property
    def grant_pin(self) -> str:
        """The digest a grant of this call is pinned to: the whole definition when known (an MCP tool's
        annotations and title included), else ``tool_digest``."""
        return self.definition_digest or self.tool_digest


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    """An approver's answer: approve once, approve always (a grant), or deny with a reason.

    ``arguments`` replaces the call's arguments (an edit); they are validated again by the tool and the
    approval binds to their digest.

    ``approve_always`` writes a grant (:mod:`ditto_tui.supervise.grants`): ``scope`` ``call`` (these
    exact arguments), ``rule`` (the generalisation in ``match``, a rule body ``{args: {FIELD: MATCH}}``)
    or ``tool`` (the default); ``lifetime`` ``run``, ``session`` (the default) or ``project``;
    ``expires`` (seconds) and ``uses`` (a count) end it sooner.

    ``via`` says where a person gave it (``terminal``, ``browser``, ``link``, ``cli``, ``client``): it goes
    on the record beside ``decided_by: human``; an approver's answer that carries one was a person's.
    """

    kind: DecisionKind
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None
    scope: GrantScope = "tool"
    match: Mapping[str, Any] | None = None
    lifetime: GrantLifetime = "session"
    expires: float | None = None
    uses: int | None = None
    via: Via | None = None

    def __post_init__(self) -> None:
        if self.kind not in DECISION_KINDS:
            raise ValidationError(f"decision kind {self.kind!r} must be approve, approve_always or deny")
        if self.via is not None and self.via not in VIAS:
            raise ValidationError(f"via {self.via!r} must be terminal, browser, link, cli or client")
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


ReviewAction = Literal["pass", "redact", "fail"]
"""What a reviewer answers: let the result through as it is, replace it with an edited one, or fail the
call (``RESULT_REJECTED``)."""
REVIEW_ACTIONS: tuple[ReviewAction, ...] = get_args(ReviewAction)


@dataclass(frozen=True, kw_only=True)
class ReviewRequest:
    """A call's result held for review after the call executed and before any node or model sees it.

    ``text`` is the result's text as a model would read it (:func:`~ditto_tui.supervise.review.result_text`)
    and ``spans`` index it: what the review heuristic found that looks like instructions to a model.
    ``rule`` names the rule with ``review: results`` that asked (``None``: the session's toggle for the
    tool), and ``asked_by`` what asked: the rule, the graph (``Program(reviews=[...])``) or the person's
    toggle; ``timeout_seconds`` how long it may wait (``None``: no limit).
    """

    request_id: str
    call: ToolCall
    tool: str
    result: ExternalResult
    run_id: str | None
    text: str = ""
    spans: tuple[Span, ...] = ()
    server: str | None = None
    node_id: str | None = None
    rule: str | None = None
    requested_at: float = 0.0
    timeout_seconds: float | None = None
    asked_by: ReviewCause = "person"

    kind: ClassVar[Literal["result_review"]] = "result_review"
    """What is asked: whether a call's result may go on (an inbox request kind)."""


def _as_result(value: object) -> ExternalResult:
    """``value`` (an ``ExternalResult`` or its JSON) as an ``ExternalResult``; ValidationError says why."""
    if isinstance(value, ExternalResult):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError("the redacted result must be a JSON object (an ExternalResult)")
    try:
        return ExternalResult.model_validate(dict(value))
    except pydantic.ValidationError as exc:
        raise ValidationError(
            f"the redacted result is not a valid result: {validation_summary(exc)}"
        ) from None


def redacted_result(value: ExternalResult | Mapping[str, Any], original: ExternalResult) -> ExternalResult:
    """``value`` as the result that replaces ``original``: a valid ``ExternalResult`` of the same call
    and source. Raises :class:`ValidationError` saying why it is refused."""
    result = _as_result(value)
    if result.call_id != original.call_id or result.source != original.source:
        raise ValidationError(
            f"the redacted result must answer the same call: callId {original.call_id!r}, "
            f"source {original.source!r}"
        )
    return result


@dataclass(frozen=True, kw_only=True)
class ReviewDecision:
    """A reviewer's answer: ``pass``, ``redact`` with the edited ``result`` (an ``ExternalResult`` or its
    JSON, validated here, so a bad one is refused before it is accepted), or ``fail`` with a ``reason``
    the model is told."""

    action: ReviewAction
    result: ExternalResult | Mapping[str, Any] | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action not in REVIEW_ACTIONS:
            raise ValidationError(f"review action {self.action!r} must be pass, redact or fail")
        if self.action != "redact":
            if self.result is not None:
                raise ValidationError("only a redaction carries a result")
            return
        if self.result is None:
            raise ValidationError("a redaction needs the edited result (an ExternalResult)")
        object.__setattr__(self, "result", _as_result(self.result))

    @property
    def approves(self) -> bool:
        """Whether a result goes on (everything but ``fail``)."""
        return self.action != "fail"

    @property
    def redaction(self) -> ExternalResult | None:
        """The edited result of a redaction, validated (None for pass and fail)."""
        return self.result if isinstance(self.result, ExternalResult) else None
