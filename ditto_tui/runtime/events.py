"""Execution events: what a run reports to subscribers, the journal and the UI."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from ditto_tui.runtime.approval import DecidedBy, Resolution, Via
from ditto_tui.runtime.breakpoints import BreakpointAction

EventKind = Literal[
    "run_started",
    "node_started",
    "node_finished",
    "node_failed",
    "node_skipped",
    "loop_iteration",
    "approval_requested",
    "approval_resolved",
    "breakpoint_requested",
    "breakpoint_resolved",
    "review_requested",
    "review_resolved",
    "mode_changed",
    "run_finished",
    "custom",
]
RunStatus = Literal["succeeded", "failed", "cancelled"]
ReviewResolution = Literal["pass", "redact", "fail", "timeout", "cancelled"]
"""How a result review ended: passed as it was, redacted, failed by the person, no answer in time (the
rule's ``onTimeout`` says what followed), or withdrawn with its call."""
ReviewCause = Literal["rule", "graph", "person"]
"""What asked for a call's result to be reviewed: a rule with ``review: results``, the graph
(``Program(reviews=[...])``), or the person's review toggle (``v`` on the Tools screen)."""
_DEFAULTS: dict[type[BaseModel], dict[str, Any]] = {}


class ExecutionEvent(BaseModel):
    """Fields every event carries: its kind, the run it belongs to, its place and time."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    kind: str = Field(description="What happened, e.g. ``node_started``.")
    run_id: str = Field(description="The run this event belongs to.")
    seq: int = Field(description="Position in the runtime's event stream; strictly increasing per run.")
    at: float = Field(description="Wall-clock time of the event (seconds since the epoch).")

    @classmethod
    def trusted(cls, values: dict[str, Any]) -> Self:
        """Build an event from values the runtime produced itself, without validation.

        Like ``model_construct`` but about twice as fast: events are built for every node of every run
        that has a subscriber, so this sits on the hot path.
        """
        event = cls.__new__(cls)
        defaults = _DEFAULTS.get(cls)
        if defaults is None:
            defaults = _DEFAULTS[cls] = {
                name: field.default for name, field in cls.model_fields.items() if not field.is_required()
            }
        state = {**defaults, **values}
        object.__setattr__(event, "__dict__", state)
        object.__setattr__(event, "__pydantic_fields_set__", set(state))
        object.__setattr__(event, "__pydantic_extra__", None)
        object.__setattr__(event, "__pydantic_private__", None)
        return event


class NodeInfo(BaseModel):
    """One node of a plan as the run announces it: id, node type and dependencies."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    type: str
    deps: tuple[str, ...] = ()


class RunStarted(ExecutionEvent):
    """A graph run, loop run or single invocation began."""

    kind: Literal["run_started"] = "run_started"
    plan: str = Field(description="The graph's name.")
    plan_kind: Literal["graph", "loop", "invoke"] = "graph"
    nodes: tuple[NodeInfo, ...] = ()
    max_iterations: int | None = None


class NodeStarted(ExecutionEvent):
    """A node's handler was called."""

    kind: Literal["node_started"] = "node_started"
    node_id: str
    node_type: str
    execution_id: str
    iteration: int | None = None
    input: Any = None


class NodeFinished(ExecutionEvent):
    """A node's handler returned."""

    kind: Literal["node_finished"] = "node_finished"
    node_id: str
    node_type: str
    execution_id: str
    iteration: int | None = None
    duration_ms: float
    output: Any = None


class NodeFailed(ExecutionEvent):
    """A node's handler (or its bind function) raised, or the node was cancelled."""

    kind: Literal["node_failed"] = "node_failed"
    node_id: str
    node_type: str
    execution_id: str
    iteration: int | None = None
    duration_ms: float
    error_type: str
    error: str
    cancelled: bool = False


class NodeSkipped(ExecutionEvent):
    """A node never started because a node it depends on failed or the run stopped."""

    kind: Literal["node_skipped"] = "node_skipped"
    node_id: str
    node_type: str
    iteration: int | None = None
    reason: str


class LoopIteration(ExecutionEvent):
    """A loop starts its next iteration (numbered from 1)."""

    kind: Literal["loop_iteration"] = "loop_iteration"
    iteration: int
    max_iterations: int


class ApprovalRequested(ExecutionEvent):
    """A call that needs approval is waiting for a decision."""

    kind: Literal["approval_requested"] = "approval_requested"
    request_id: str
    call_id: str
    tool: str
    server: str | None = None
    node_id: str | None = None
    arguments: Any = None
    arguments_digest: str
    tool_digest: str
    rule: str | None = None


class RuleRef(BaseModel):
    """An approval rule as a decision names it: its label and where it was written."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rule: str = Field(description="The rule as the approval view shows it, e.g. ``tool:write_* → ask``.")
    file: str | None = Field(default=None, description="The file it was written in (None: built in code).")
    line: int | None = Field(default=None, description="Its line in that file.")
    layer: str | None = Field(default=None, description="built-in, user, workspace, config or policy.")


class ApprovalResolved(ExecutionEvent):
    """A pending approval ended: decided, allowed or denied by policy, timed out or withdrawn."""

    kind: Literal["approval_resolved"] = "approval_resolved"
    request_id: str
    call_id: str
    tool: str
    decision: Resolution
    reason: str | None = None
    arguments_digest: str
    edited: bool = False
    arguments: Any = Field(default=None, description="The edited arguments that run, in full (edits only).")
    decided_by: DecidedBy | None = Field(
        default=None,
        description="Who decided: human (a person), timeout (the rule's onTimeout), grant, mode (the mode, "
        "or a fixed --approve answer), approver (a library's own Approver, named in approver), rule (a "
        "rule of the policy, named in rules, or an edit a rule denies) or default (the policy's default).",
    )
    rules: tuple[RuleRef, ...] = Field(
        default=(),
        description="The rules that asked, or that decided (decided_by rule), with file and line; empty: the "
        "policy's default.",
    )
    grant: str | None = Field(
        default=None, description="The id of the grant that approved (decided_by grant)."
    )
    approver: str | None = Field(
        default=None, description="The library approver that answered by itself (decided_by approver)."
    )
    via: Via | None = Field(
        default=None,
        description="Where the person answered (decided_by human): terminal (the app in a terminal), browser "
        "(the app served in a browser), link (a decision link) or cli (ditto-tui decide).",
    )


class BreakpointRequested(ExecutionEvent):
    """A node is paused before it starts, waiting for a decision at a breakpoint."""

    kind: Literal["breakpoint_requested"] = "breakpoint_requested"
    request_id: str
    node_id: str
    node_type: str
    iteration: int | None = None
    pattern: str = Field(description="The breakpoint glob that matched (``*``: step mode).")
    input: Any = None


class BreakpointResolved(ExecutionEvent):
    """The decision at a breakpoint: continue, edit (with the new input), skip (with the given output)
    or abort; ``again`` False means the node does not pause again in this run."""

    kind: Literal["breakpoint_resolved"] = "breakpoint_resolved"
    request_id: str
    node_id: str
    node_type: str
    iteration: int | None = None
    action: BreakpointAction
    input: Any = Field(default=None, description="The edited input the node runs on (edits only).")
    output: Any = Field(default=None, description="The output given instead of running (skips only).")
    again: bool = True
    reason: str | None = None
    decided_by: DecidedBy | None = Field(
        default=None, description="human (a person, through the inbox) or approver (a library's own)."
    )
    approver: str | None = Field(default=None, description="The library approver that answered (approver).")


class FlaggedSpan(BaseModel):
    """A span of a result's review text that looks like an instruction to a model."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    start: int = Field(description="Where the span starts in the review text (characters).")
    end: int = Field(description="Where it ends (exclusive).")
    label: str = Field(description="What it looks like, e.g. ``override`` or ``role marker``.")


class ReviewRequested(ExecutionEvent):
    """A call's result is held for a person's review before any node or model sees it."""

    kind: Literal["review_requested"] = "review_requested"
    request_id: str
    call_id: str
    tool: str
    server: str | None = None
    node_id: str | None = None
    result: Any = Field(default=None, description="The result as the call returned it (wire form).")
    spans: tuple[FlaggedSpan, ...] = Field(
        default=(), description="What the review heuristic marked in the result's text."
    )
    rule: str | None = Field(default=None, description="The rule that asked for review (None: the session).")
    asked_by: ReviewCause | None = Field(
        default=None,
        description="What asked for the review: a rule, the graph (Program(reviews=...)) or the person's "
        "review toggle (None: not recorded, in older journals).",
    )


class ReviewResolved(ExecutionEvent):
    """A result review ended: passed, redacted (both versions kept), failed, timed out or withdrawn."""

    kind: Literal["review_resolved"] = "review_resolved"
    request_id: str
    call_id: str
    tool: str
    action: ReviewResolution
    reason: str | None = None
    decided_by: DecidedBy | None = Field(
        default=None,
        description="human (the reviewer), timeout (the rule's onTimeout) or approver (a library's own).",
    )
    approver: str | None = Field(default=None, description="The library approver that reviewed (approver).")
    original: Any = Field(default=None, description="The result as the call returned it (wire form).")
    redacted: Any = Field(default=None, description="The redacted result that goes on (redactions only).")
    released: bool = Field(description="Whether a result (the original or the redacted one) goes on.")


class ModeChanged(ExecutionEvent):
    """The session's mode changed while the run went on (or was not ``ask`` when it started)."""

    kind: Literal["mode_changed"] = "mode_changed"
    mode: str = Field(description="The mode now: ask, read-only, auto-edit or plan.")
    previous: str = Field(description="The mode before.")


class RunFinished(ExecutionEvent):
    """A run ended; ``status`` says how."""

    kind: Literal["run_finished"] = "run_finished"
    status: RunStatus
    duration_ms: float
    error: str | None = None
    failed_node: str | None = None


class CustomEvent(ExecutionEvent):
    """An event a handler emitted through ``context.emit`` with a name of its own."""

    kind: Literal["custom"] = "custom"
    name: str
    data: Any = None


AnyEvent = Annotated[
    RunStarted
    | NodeStarted
    | NodeFinished
    | NodeFailed
    | NodeSkipped
    | LoopIteration
    | ApprovalRequested
    | ApprovalResolved
    | BreakpointRequested
    | BreakpointResolved
    | ReviewRequested
    | ReviewResolved
    | ModeChanged
    | RunFinished
    | CustomEvent,
    Field(discriminator="kind"),
]
"""Every execution event, as one union discriminated by ``kind``: what the journal reader parses a line
into, and what readers ``match`` on by class."""

EVENT_TYPES: dict[str, type[ExecutionEvent]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        RunStarted,
        NodeStarted,
        NodeFinished,
        NodeFailed,
        NodeSkipped,
        LoopIteration,
        ApprovalRequested,
        ApprovalResolved,
        BreakpointRequested,
        BreakpointResolved,
        ReviewRequested,
        ReviewResolved,
        ModeChanged,
        RunFinished,
        CustomEvent,
    )
}

_PLACED = {"run_id": "-", "seq": 0, "at": 0.0}
"""Stand-ins for the fields the runtime assigns when it publishes an event (its run, place and time)."""


def checked_fields(event_type: type[ExecutionEvent], /, **fields: Any) -> tuple[str, dict[str, Any]]:
    """The kind and fields of an ``event_type`` event, validated against the model before it is emitted.

    For code outside the runtime's hot path that builds events of a known class (the approval gate):
    a wrong or missing field, or a value of the wrong type, raises ``pydantic.ValidationError`` here,
    where the event is made, instead of reaching subscribers and the journal unchecked. Use as
    ``context.emit(*checked_fields(ApprovalResolved, request_id=..., ...))``.
    """
    kind = event_type.model_fields["kind"].default
    event = event_type.model_validate({**fields, **_PLACED, "kind": kind})
    return kind, {name: getattr(event, name) for name in fields}
