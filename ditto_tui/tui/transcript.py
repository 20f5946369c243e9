"""The conversation of an agent run, folded from execution events: what the Transcript pane shows.

The task, each assistant message (its text grows with ``message_delta`` events while the model writes,
and is replaced by the whole message when the sampling node finishes), each tool call with its status
(proposed, waiting for approval, approved, running, done, failed, denied, timed out), what came back,
and the final answer. It folds the same events live and from a journal (where there are no deltas),
and knows nothing of Textual.

The outcome of a finished run is counted from the same record: calls approved, denied, edited, timed
out and failed (:meth:`Transcript.outcome`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ditto_tui.infer.worker import MESSAGE_DELTA, SAMPLE
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    CustomEvent,
    ExecutionEvent,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    RunFinished,
    RunStarted,
)
from ditto_tui.supervise.journal import ACT_MCP, ACT_TOOL, field_of

TurnKind = Literal["task", "assistant", "call", "problem"]
CallStatus = Literal[
    "proposed", "awaiting", "approved", "running", "succeeded", "failed", "denied", "timed out", "cancelled"
]
OutcomeKind = Literal["approved", "denied", "edited", "timed out", "failed"]
OUTCOME_KINDS: tuple[OutcomeKind, ...] = ("approved", "denied", "edited", "timed out", "failed")

Decision = Literal["approved", "denied", "timed out"]
_RESOLVED: Mapping[str, CallStatus] = {
    "approve": "approved",
    "approve_always": "approved",
    "deny": "denied",
    "timeout": "timed out",
    "cancelled": "cancelled",
}
_DECISIONS: Mapping[CallStatus, Decision] = {
    "approved": "approved",
    "denied": "denied",
    "timed out": "timed out",
}
_ENDED: Mapping[str, CallStatus] = {
    "APPROVAL_DENIED": "denied",
    "APPROVAL_DENIED_BY_MODE": "denied",
    "APPROVAL_TIMEOUT": "timed out",
    "CANCELLED": "cancelled",
}


@dataclass(eq=False)
class Turn:
    """One block of the transcript. ``version`` grows with every change, for a widget to redraw."""

    index: int
    kind: TurnKind
    text: str = ""
    streaming: bool = False
    execution_id: str | None = None
    call_id: str | None = None
    tool: str = ""
    arguments: Any = None
    status: CallStatus = "proposed"
    edited: bool = False
    decision: Decision | None = None
    result: str = ""
    node_id: str | None = None
    version: int = 0

    def changed(self) -> None:
        """Note a change (the widget showing it redraws)."""
        self.version += 1


@dataclass
class Transcript:
    """The conversation of the runs folded so far, in order; :meth:`apply` folds events in."""

    turns: list[Turn] = field(default_factory=list)
    finished: bool = False
    status: str = ""
    duration_ms: float = 0.0
    answer: str | None = None
    _streams: dict[str, Turn] = field(default_factory=dict)
    _calls: dict[str, Turn] = field(default_factory=dict)
    _users: int = 0
    _problem: bool = False
    _first: int = 0
    """The first turn of the run on screen (a follow-up's turns come after its conversation's)."""
    added: int = 0
    """How many turns were added since :meth:`take_added` was last called."""

    @property
    def agent(self) -> bool:
        """Whether anything of a conversation was seen (the run samples a model)."""
        return bool(self.turns)

    def take_added(self) -> list[Turn]:
        """The turns added since the last call (a widget mounts them)."""
        added = self.turns[len(self.turns) - self.added :] if self.added else []
        self.added = 0
        return added

    def apply(self, events: Iterable[ExecutionEvent]) -> set[Turn]:
        """Fold ``events`` in; returns the turns that changed (added ones too)."""
        changed: set[Turn] = set()
        for event in events:
            match event:
                case CustomEvent(name=name) if name == MESSAGE_DELTA:
                    self._delta(event, changed)
                case NodeStarted(node_type=node_type) if node_type == SAMPLE:
                    self._sampling(event, changed)
                case NodeFinished(node_type=node_type) if node_type == SAMPLE:
                    self._sampled(event, changed)
                case NodeFailed(node_type=node_type) if node_type == SAMPLE:
                    self._sampling_failed(event, changed)
                case NodeStarted(node_type=node_type) if node_type in (ACT_TOOL, ACT_MCP):
                    self._call_status(_call_id(event.input), "running", changed, node_id=event.node_id)
                case NodeFinished(node_type=node_type) if node_type in (ACT_TOOL, ACT_MCP):
                    self._call_done(event, changed)
                case NodeFailed(node_type=node_type) if node_type in (ACT_TOOL, ACT_MCP):
                    self._call_failed(event, changed)
                case ApprovalRequested():
                    self._call_status(event.call_id, "awaiting", changed, node_id=event.node_id)
                case ApprovalResolved():
                    self._resolved(event, changed)
                case RunStarted():
                    self.finished = False
                case RunFinished():
                    self._run_finished(event, changed)
                case _:
                    pass
        return changed

    def follow_up(self) -> None:
        """Go on with the next run, which continues this conversation: its new turns are added after
        these, the messages already shown are not shown again."""
        self.finished = False
        self.status = ""
        self.answer = None
        self._streams.clear()
        self._problem = False
        self._first = len(self.turns)

    # -- reading ----------------------------------------------------------------------------------------

    def calls(self, kind: OutcomeKind | None = None) -> list[Turn]:
        """The call turns of the run on screen, or those of one outcome kind."""
        calls = [turn for turn in self.turns[self._first :] if turn.kind == "call"]
        return calls if kind is None else [turn for turn in calls if kind in _outcomes(turn)]

    def outcome(self) -> dict[OutcomeKind, int]:
        """How many calls were approved, denied, edited, timed out and failed."""
        counts: dict[OutcomeKind, int] = dict.fromkeys(OUTCOME_KINDS, 0)
        for turn in self.calls():
            for kind in _outcomes(turn):
                counts[kind] += 1
        return counts

    # -- folding ----------------------------------------------------------------------------------------

    def _add(self, turn_kind: TurnKind, changed: set[Turn], **fields: Any) -> Turn:
        turn = Turn(index=len(self.turns), kind=turn_kind, **fields)
        self.turns.append(turn)
        self.added += 1
        changed.add(turn)
        return turn

    def _sampling(self, event: NodeStarted, changed: set[Turn]) -> None:
        messages = field_of(event.input, "messages")
        if isinstance(messages, Sequence):
            users = [message for message in messages if field_of(message, "role") == "user"]
            for message in users[self._users :]:
                self._add("task", changed, text=_text(field_of(message, "content")))
            self._users = max(self._users, len(users))
        self._stream(event.execution_id, changed)

    def _stream(self, execution_id: str, changed: set[Turn]) -> Turn:
        turn = self._streams.get(execution_id)
        if turn is None:
            turn = self._add("assistant", changed, streaming=True, execution_id=execution_id)
            self._streams[execution_id] = turn
        return turn

    def _delta(self, event: CustomEvent, changed: set[Turn]) -> None:
        execution = field_of(event.data, "executionId")
        text = field_of(event.data, "text")
        if not isinstance(execution, str) or not isinstance(text, str):
            return
        turn = self._stream(execution, changed)
        if turn.streaming:
            turn.text += text
            turn.changed()
            changed.add(turn)

    def _sampled(self, event: NodeFinished, changed: set[Turn]) -> None:
        turn = self._stream(event.execution_id, changed)
        message = field_of(event.output, "message")
        turn.text = _text(field_of(message, "content"))
        turn.streaming = False
        turn.changed()
        changed.add(turn)
        requests = field_of(message, "action_requests")
        for call in requests if isinstance(requests, Sequence) else ():
            call_id = field_of(call, "id")
            if not isinstance(call_id, str):
                continue
            self._calls[call_id] = self._add(
                "call",
                changed,
                call_id=call_id,
                tool=str(field_of(call, "name") or ""),
                arguments=field_of(call, "arguments"),
            )
        if not requests:
            self.answer = turn.text

    def _sampling_failed(self, event: NodeFailed, changed: set[Turn]) -> None:
        turn = self._streams.get(event.execution_id)
        if turn is not None:
            turn.streaming = False
            turn.changed()
            changed.add(turn)
        self._add("problem", changed, text="The model call was cancelled" if event.cancelled else event.error)
        self._problem = True

    def _call_status(
        self, call_id: str | None, status: CallStatus, changed: set[Turn], *, node_id: str | None = None
    ) -> Turn | None:
        turn = self._calls.get(call_id) if call_id else None
        if turn is None:
            return None
        if status == "running" and turn.status == "awaiting":
            return turn  # the call's node starts before its approval is asked
        turn.status = status
        if node_id is not None:
            turn.node_id = node_id
        turn.changed()
        changed.add(turn)
        return turn

    def _resolved(self, event: ApprovalResolved, changed: set[Turn]) -> None:
        if event.decided_by in ("rule", "default"):  # the policy decided by itself: nobody was asked
            return
        status = _RESOLVED.get(event.decision, "approved")
        turn = self._call_status(event.call_id, status, changed)
        if turn is not None and status != "cancelled":
            turn.decision = _DECISIONS[status]
        if turn is not None and event.edited:
            turn.edited = True
            if isinstance(event.arguments, Mapping):
                turn.arguments = dict(event.arguments)

    def _call_done(self, event: NodeFinished, changed: set[Turn]) -> None:
        output = event.output
        result = field_of(output, "result") if field_of(output, "operation") == "invoke" else output
        turn = self._calls.get(str(field_of(result, "call_id")))
        if turn is None:
            return
        error = field_of(result, "error")
        code = field_of(error, "code")
        if field_of(result, "status") == "success":
            turn.status = "succeeded"
            turn.result = _result_text(result)
        else:
            turn.status = _ENDED.get(str(code), "failed")
            turn.result = _text(field_of(error, "message")) or str(code or "failed")
        turn.changed()
        changed.add(turn)

    def _call_failed(self, event: NodeFailed, changed: set[Turn]) -> None:
        for turn in self._calls.values():
            if turn.node_id == event.node_id and turn.status in ("running", "approved", "awaiting"):
                turn.status = "cancelled" if event.cancelled else "failed"
                turn.result = event.error
                turn.changed()
                changed.add(turn)

    def _run_finished(self, event: RunFinished, changed: set[Turn]) -> None:
        self.finished = True
        self.status = event.status
        self.duration_ms = event.duration_ms
        for turn in self._streams.values():
            if turn.streaming:
                turn.streaming = False
                turn.changed()
                changed.add(turn)
        if event.status != "succeeded" and not self._problem:
            ended = "was cancelled" if event.status == "cancelled" else "failed"
            detail = f": {event.error}" if event.error else ""
            self._add("problem", changed, text=f"The run {ended}{detail}")


def _outcomes(turn: Turn) -> list[OutcomeKind]:
    kinds: list[OutcomeKind] = []
    if turn.decision is not None:
        kinds.append(turn.decision)
    if turn.edited:
        kinds.append("edited")
    if turn.status == "failed":
        kinds.append("failed")
    return kinds


def _call_id(value: Any) -> str | None:
    call = field_of(value, "call")
    call_id = field_of(call, "id")
    return call_id if isinstance(call_id, str) else None


def _text(content: Any) -> str:
    """Message content as text: a string, the text of its parts, or nothing."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [field_of(part, "text") for part in content]
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


def _result_text(result: Any) -> str:
    """What a successful call returned, as text (its content, else its structured content)."""
    text = _text(field_of(result, "content"))
    if text:
        return text
    structured = field_of(result, "structured_content")
    return "" if structured is None else str(structured)
