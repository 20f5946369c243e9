"""What the Run screen shows, folded from execution events: node states, timeline entries and counts."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ditto_tui.interaction.mcp.registry import PROGRESS_EVENT
from ditto_tui.runtime import (
    ApprovalRequested,
    ApprovalResolved,
    BreakpointRequested,
    BreakpointResolved,
    CustomEvent,
    ExecutionEvent,
    LoopIteration,
    NodeFailed,
    NodeFinished,
    NodeSkipped,
    NodeStarted,
    RunFinished,
    RunStarted,
)
from ditto_tui.runtime.breakpoints import STEP
from ditto_tui.runtime.events import ModeChanged, ReviewRequested, ReviewResolved
from ditto_tui.supervise.journal import field_of
from ditto_tui.supervise.policy import VERDICT_EVENT

NodeState = Literal["pending", "running", "awaiting", "succeeded", "failed", "cancelled", "skipped"]
NODE_STATES: tuple[NodeState, ...] = (
    "pending",
    "running",
    "awaiting",
    "succeeded",
    "failed",
    "cancelled",
    "skipped",
)
"""In the order the status line counts them (``cancelled`` only once a node was: stopped before it ended,
by its run being ended or by another node's failure, not broken itself)."""
GLYPHS: Mapping[NodeState, str] = {
    "pending": "○",
    "running": "◐",
    "awaiting": "⏸",
    "succeeded": "✓",
    "failed": "✗",
    "cancelled": "⊗",
    "skipped": "–",
}
RunPhase = Literal["starting", "running", "succeeded", "failed", "cancelled"]
EntryKind = Literal[
    "run",
    "iteration",
    "call",
    "mcp",
    "observation",
    "output",
    "node",
    "approval",
    "breakpoint",
    "review",
    "mode",
    "event",
]

SUMMARY_CHARS = 160
_VALUE_CHARS = 48
_OK = frozenset({"success", "accepted"})
_DECISIONS = {
    "approve": "approved",
    "approve_always": "always",
    "deny": "denied",
    "timeout": "timed out",
    "cancelled": "cancelled",
}
_BREAKPOINT_ACTIONS = {"continue": "continued", "edit": "edited ✎", "skip": "skipped ✎", "abort": "aborted"}
_REVIEW_ACTIONS = {
    "pass": "passed",
    "redact": "redacted ✎",
    "fail": "failed",
    "timeout": "timed out",
    "cancelled": "cancelled",
}


class Entry:
    """One timeline row: a call, an observation, an output, an approval or a run-level event.

    ``version`` grows with every change so a widget can cache what it drew; ``events`` holds every
    event the row was built from, for the detail pane. A node's row works out its title and summary
    from its events only when they are first read (usually: when the row scrolls into view), so an
    event flood costs little more than appending the events.
    """

    __slots__ = (
        "_derived",
        "_described",
        "_summary",
        "_title",
        "at",
        "duration_ms",
        "events",
        "execution_id",
        "index",
        "kind",
        "node_id",
        "status",
        "version",
    )

    def __init__(
        self,
        index: int,
        kind: EntryKind,
        event: ExecutionEvent,
        *,
        title: str | None = None,
        summary: str | None = None,
        status: str = "",
        node_id: str | None = None,
        execution_id: str | None = None,
    ) -> None:
        self.index = index
        self.kind: EntryKind = kind
        self.at = event.at
        self.events: list[ExecutionEvent] = [event]
        self.status = status
        self.node_id = node_id
        self.execution_id = execution_id
        self.duration_ms: float | None = None
        self.version = 0
        self._title = title
        self._summary = summary
        self._derived = title is None
        self._described = -1

    @property
    def title(self) -> str:
        """The row's title: a tool name, a node type, a run or approval heading."""
        self._describe()
        return self._title or ""

    @property
    def summary(self) -> str:
        """A one-line summary: arguments, what came back, a reason."""
        self._describe()
        return self._summary or ""

    def _describe(self) -> None:
        if self._derived and self._described != self.version:
            self._title, self._summary = _describe_node(self)
            self._described = self.version

    def update(self, event: ExecutionEvent, **changes: Any) -> None:
        """Record ``event`` and apply ``changes`` (``status``, ``duration_ms``, ``summary``) to the row."""
        summary = changes.pop("summary", None)
        for name, value in changes.items():
            setattr(self, name, value)
        self.events.append(event)
        self.version += 1
        if summary is not None:
            self._summary = summary


@dataclass(eq=False)
class NodeView:
    """One node of the plan as drawn: its state, timing, how often it ran and its latest timeline row."""

    id: str
    type: str
    deps: tuple[str, ...] = ()
    state: NodeState = "pending"
    started_at: float | None = None
    duration_ms: float | None = None
    runs: int = 0
    execution_id: str | None = None
    entry: Entry | None = None
    nested: bool = False
    paused: bool = False
    """Paused before it starts, at a breakpoint (its state is ``awaiting`` meanwhile)."""


def short_json(value: Any, limit: int = _VALUE_CHARS) -> str:
    """A one-line JSON rendering of ``value`` cut to ``limit`` characters (with ``…`` when cut)."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    try:
        text = json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def arguments_summary(arguments: Any) -> str:
    """``key=value`` pairs of a call's arguments, each value cut short."""
    if not isinstance(arguments, Mapping):
        return short_json(arguments)
    text = ", ".join(f"{key}={short_json(value)}" for key, value in arguments.items())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def plain(value: Any) -> Any:
    """``value`` as JSON data: contracts in their wire form, other models dumped, the rest as is."""
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def content_summary(content: Any) -> str:
    """A one-line summary of message content: its text, or its parts."""
    if isinstance(content, str):
        return short_json(content, SUMMARY_CHARS)
    if isinstance(content, list | tuple):
        texts = [field_of(part, "text") for part in content if field_of(part, "type") == "text"]
        if texts and all(isinstance(text, str) for text in texts):
            return short_json(" ".join(texts), SUMMARY_CHARS)
    return short_json(content, SUMMARY_CHARS)


def progress_status(progress: Any, total: Any) -> str:
    """A running call's progress in a status cell: ``▰▰▰▱▱ 60%`` against a total, else the count so far."""
    if not isinstance(progress, int | float) or isinstance(progress, bool):
        return "running"
    if isinstance(total, int | float) and not isinstance(total, bool) and total > 0:
        share = max(0.0, min(1.0, progress / total))
        filled = round(share * 5)
        return f"{'▰' * filled}{'▱' * (5 - filled)} {share * 100:.0f}%"
    return f"step {progress:g}"


def outcome_status(output: Any) -> str:
    """The status an output reports (``success``, ``failed``, ``accepted``…), or ``done`` when none."""
    status = getattr(output, "status", None)
    if status is None:
        result = field_of(output, "result") if field_of(output, "operation") == "invoke" else output
        status = field_of(result, "status")
    return status if isinstance(status, str) else "done"


class RunModel:
    """The state of one supervised run, folded from events with :meth:`apply`."""

    def __init__(self) -> None:
        self.plan = ""
        self.plan_kind = ""
        self.phase: RunPhase = "starting"
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.error: str | None = None
        self.iteration: int | None = None
        self.max_iterations: int | None = None
        self.nodes: dict[str, NodeView] = {}
        self.entries: list[Entry] = []
        self.pending_approvals: dict[str, Entry] = {}
        self.pending_breakpoints: dict[str, Entry] = {}
        self.pending_reviews: dict[str, Entry] = {}
        self.layout_version = 0
        self._calls: dict[str, Entry] = {}
        self._mcp_calls: dict[tuple[str, str], Entry] = {}
        self._mcp_keys: dict[str, tuple[str, str]] = {}
        self._iteration_entry: Entry | None = None

    # -- reading ----------------------------------------------------------------------------------------

    def counts(self) -> Counter[NodeState]:
        """How many nodes are in each state."""
        return Counter(node.state for node in self.nodes.values())

    def elapsed(self, now: float) -> float:
        """Seconds since the run started, up to its end (0 before it starts)."""
        if self.started_at is None:
            return 0.0
        return max(0.0, (self.finished_at or now) - self.started_at)

    @property
    def finished(self) -> bool:
        """Whether the run ended (succeeded, failed or cancelled)."""
        return self.phase in ("succeeded", "failed", "cancelled")

    # -- folding ----------------------------------------------------------------------------------------

    def apply(self, events: Iterable[ExecutionEvent]) -> None:
        """Fold ``events`` (in stream order) into the state."""
        for event in events:
            match event:  # the most frequent kinds first
                case NodeStarted():
                    self._node_started(event)
                case NodeFinished():
                    self._node_finished(event)
                case CustomEvent():
                    self._custom(event)
                case NodeFailed():
                    self._node_failed(event)
                case NodeSkipped():
                    self._node_skipped(event)
                case LoopIteration():
                    self._loop_iteration(event)
                case RunStarted():
                    self._run_started(event)
                case RunFinished():
                    self._run_finished(event)
                case _:
                    self._decision(event)

    def _decision(self, event: ExecutionEvent) -> None:
        """Fold an event of a person's decision: an approval, a breakpoint, a result review, a mode."""
        match event:
            case ApprovalRequested():
                self._approval_requested(event)
            case ApprovalResolved():
                self._approval_resolved(event)
            case BreakpointRequested():
                self._breakpoint_requested(event)
            case BreakpointResolved():
                self._breakpoint_resolved(event)
            case ReviewRequested():
                self._review_requested(event)
            case ReviewResolved():
                self._review_resolved(event)
            case ModeChanged():
                self._add("mode", event, "mode", summary=f"{event.previous} → {event.mode}", status="")

    def _add(self, kind: EntryKind, event: ExecutionEvent, title: str | None = None, **fields: Any) -> Entry:
        entry = Entry(len(self.entries), kind, event, title=title, **fields)
        self.entries.append(entry)
        return entry

    def _node(self, node_id: str, node_type: str) -> NodeView:
        node = self.nodes.get(node_id)
        if node is None:
            caller = node_id.rpartition("/")[0]
            deps = (caller,) if caller in self.nodes else ()
            node = self.nodes[node_id] = NodeView(id=node_id, type=node_type, deps=deps, nested=True)
            self.layout_version += 1
        return node

    def _run_started(self, event: RunStarted) -> None:
        self.plan, self.plan_kind, self.phase = event.plan, event.plan_kind, "running"
        self.started_at, self.max_iterations = event.at, event.max_iterations
        self.nodes = {info.id: NodeView(id=info.id, type=info.type, deps=info.deps) for info in event.nodes}
        self.layout_version += 1
        count = len(event.nodes)
        self._add(
            "run", event, f"run {event.plan}", summary=f"{event.plan_kind}, {count} nodes", status="running"
        )

    def _loop_iteration(self, event: LoopIteration) -> None:
        """A new iteration: the plan's nodes start over; calls nested in the last one leave the graph."""
        self.iteration = event.iteration
        if any(node.nested for node in self.nodes.values()):
            self.nodes = {key: node for key, node in self.nodes.items() if not node.nested}
            self.layout_version += 1
        for node in self.nodes.values():
            node.state, node.duration_ms = "pending", None
        title = f"iteration {event.iteration}/{event.max_iterations}"
        self._end_iteration(event, "done")
        self._iteration_entry = self._add("iteration", event, title, status="running")

    def _end_iteration(self, event: ExecutionEvent, status: str) -> None:
        """The iteration row in progress ends when the next iteration starts or the run ends."""
        entry, self._iteration_entry = self._iteration_entry, None
        if entry is not None:
            entry.update(event, status=status, duration_ms=(event.at - entry.at) * 1000)

    def _node_started(self, event: NodeStarted) -> None:
        node = self._node(event.node_id, event.node_type)
        node.state, node.started_at, node.duration_ms = "running", event.at, None
        node.runs += 1
        node.execution_id = event.execution_id
        kind = _NODE_KINDS.get(event.node_type, "node")
        entry = self._add(
            kind, event, status="running", node_id=event.node_id, execution_id=event.execution_id
        )
        node.entry = self._calls[event.execution_id] = entry
        if kind == "mcp" and field_of(event.input, "operation") == "invoke":
            call_id = field_of(field_of(event.input, "call"), "id")
            if isinstance(call_id, str):
                self._mcp_calls[(event.run_id, call_id)] = entry
                self._mcp_keys[event.execution_id] = (event.run_id, call_id)

    def _call_ended(self, execution_id: str) -> Entry | None:
        """The row of the call that ended; its progress no longer goes to it."""
        key = self._mcp_keys.pop(execution_id, None)
        if key is not None:
            self._mcp_calls.pop(key, None)
        return self._calls.pop(execution_id, None)

    def _node_finished(self, event: NodeFinished) -> None:
        node = self._node(event.node_id, event.node_type)
        status = outcome_status(event.output)
        ok = status in _OK or status == "done"
        node.state = "succeeded" if ok else "cancelled" if status == "cancelled" else "failed"
        node.duration_ms = event.duration_ms
        entry = self._call_ended(event.execution_id)
        if entry is not None:
            entry.update(event, status=status, duration_ms=event.duration_ms)

    def _node_failed(self, event: NodeFailed) -> None:
        node = self._node(event.node_id, event.node_type)
        node.state = "cancelled" if event.cancelled else "failed"
        node.duration_ms = event.duration_ms
        entry = self._call_ended(event.execution_id)
        status = "cancelled" if event.cancelled else "error"
        if entry is not None:
            entry.update(event, status=status, duration_ms=event.duration_ms)

    def _node_skipped(self, event: NodeSkipped) -> None:
        node = self._node(event.node_id, event.node_type)
        node.state = "skipped"
        node.entry = self._add(
            "node",
            event,
            short_type(event.node_type),
            summary=event.reason,
            status="skipped",
            node_id=event.node_id,
        )

    def _approval_requested(self, event: ApprovalRequested) -> None:
        node = self.nodes.get(event.node_id) if event.node_id else None
        if node is not None:
            node.state = "awaiting"
        rule = f"rule {event.rule}" if event.rule else "the tool asks"
        summary = f"{rule}; {arguments_summary(event.arguments)}"
        entry = self._add(
            "approval", event, event.tool, summary=summary, status="pending", node_id=event.node_id
        )
        self.pending_approvals[event.request_id] = entry

    def _approval_resolved(self, event: ApprovalResolved) -> None:
        entry = self.pending_approvals.pop(event.request_id, None)
        if entry is None:
            if event.decided_by in ("grant", "mode"):  # decided without asking: a row says by what
                self._decided_without_asking(event)
            return
        decided = _DECISIONS.get(event.decision, event.decision)
        status = decided + (" ✎" if event.edited else "")
        summary = _reason_summary(status, decided, event.reason) if event.reason else entry.summary
        entry.update(event, status=status, summary=summary, duration_ms=(event.at - entry.at) * 1000)
        node = self.nodes.get(entry.node_id) if entry.node_id else None
        if node is not None and node.state == "awaiting":
            node.state = "running"

    def _decided_without_asking(self, event: ApprovalResolved) -> None:
        """A grant or the mode decided a call: a row with the decision and what made it."""
        decided = _DECISIONS.get(event.decision, event.decision)
        status = "granted" if event.decided_by == "grant" else f"{decided} (mode)"
        self._add("approval", event, event.tool, summary=event.reason or "", status=status)

    def _breakpoint_requested(self, event: BreakpointRequested) -> None:
        """A node paused before it starts: it shows as paused until the person answers."""
        node = self._node(event.node_id, event.node_type)
        node.state, node.paused, node.started_at, node.duration_ms = "awaiting", True, event.at, None
        where = f"iteration {event.iteration}; " if event.iteration is not None else ""
        summary = (
            f"before {short_type(event.node_type)}; {where}input {short_json(event.input, SUMMARY_CHARS)}"
        )
        title = "step" if event.pattern == STEP else "breakpoint"
        entry = self._add("breakpoint", event, title, summary=summary, status="paused", node_id=event.node_id)
        node.entry = self.pending_breakpoints[event.request_id] = entry

    def _breakpoint_resolved(self, event: BreakpointResolved) -> None:
        """The person's answer: the node runs (its start follows), is skipped with an output, or the run
        ends aborted there."""
        entry = self.pending_breakpoints.pop(event.request_id, None)
        node = self.nodes.get(event.node_id)
        if node is not None and node.paused:
            node.paused, node.started_at = False, None
            node.state = "failed" if event.action == "abort" else "pending"
        if entry is None:
            return
        status = _BREAKPOINT_ACTIONS[event.action]
        entry.update(
            event, status=status, summary=_answer_summary(event), duration_ms=(event.at - entry.at) * 1000
        )

    def _review_requested(self, event: ReviewRequested) -> None:
        """A call's result held for review: its node waits for the person as for an approval."""
        node = self.nodes.get(event.node_id) if event.node_id else None
        if node is not None and node.state == "running":
            node.state = "awaiting"
        where = _review_cause(event)
        flagged = (
            f"; {len(event.spans)} span{'s' if len(event.spans) != 1 else ''} flagged" if event.spans else ""
        )
        entry = self._add(
            "review", event, event.tool, summary=where + flagged, status="held", node_id=event.node_id
        )
        self.pending_reviews[event.request_id] = entry

    def _review_resolved(self, event: ReviewResolved) -> None:
        entry = self.pending_reviews.pop(event.request_id, None)
        if entry is None:
            return
        status = _REVIEW_ACTIONS.get(event.action, event.action)
        summary = _reason_summary(status, status, event.reason) if event.reason else entry.summary
        entry.update(event, status=status, summary=summary, duration_ms=(event.at - entry.at) * 1000)
        node = self.nodes.get(entry.node_id) if entry.node_id else None
        if node is not None and node.state == "awaiting" and not node.paused:
            node.state = "running"

    def _run_finished(self, event: RunFinished) -> None:
        self.phase, self.finished_at, self.error = event.status, event.at, event.error
        self._end_iteration(event, "done" if event.status == "succeeded" else event.status)
        summary = event.error or (f"node {event.failed_node!r} failed" if event.failed_node else "")
        self._add("run", event, f"run {self.plan}", summary=summary, status=event.status)
        if self.entries:
            first = self.entries[0]
            if first.kind == "run" and first.status == "running":
                first.update(event, status=event.status, duration_ms=event.duration_ms)
        if event.status != "succeeded":
            for node in self.nodes.values():
                if node.state in ("running", "awaiting"):  # the run's end stopped it
                    node.state, node.paused = "cancelled", False
        for entry in (*self.pending_breakpoints.values(), *self.pending_reviews.values()):
            entry.update(event, status=event.status, duration_ms=(event.at - entry.at) * 1000)
        self.pending_breakpoints.clear()
        self.pending_reviews.clear()

    def _custom(self, event: CustomEvent) -> None:
        if event.name == PROGRESS_EVENT and self._progressed(event):
            return
        if event.name == VERDICT_EVENT:  # the gate's record of its rules' verdict: the call's row says enough
            return
        self._add("event", event, event.name, summary=short_json(event.data, SUMMARY_CHARS), status="")

    def _progressed(self, event: CustomEvent) -> bool:
        """Show an MCP call's progress on its own row (its status cell); ``False`` when no row is running."""
        entry = self._mcp_calls.get((event.run_id, str(field_of(event.data, "call_id"))))
        if entry is None:
            return False
        entry.update(
            event, status=progress_status(field_of(event.data, "progress"), field_of(event.data, "total"))
        )
        return True


_NODE_KINDS: Mapping[str, EntryKind] = {
    "INTERACTION.ACT.TOOL": "call",
    "INTERACTION.ACT.MCP": "mcp",
    "INTERACTION.OBSERVE": "observation",
    "INTERACTION.OUTPUT": "output",
}


def _describe_node(entry: Entry) -> tuple[str, str]:
    """The title and summary of a node's row, from its start event and, once ended, its last one."""
    start = entry.events[0]
    title, summary = _describe_input(start.node_type, start.input)  # type: ignore[attr-defined]
    end = entry.events[-1]
    if isinstance(end, NodeFinished):
        summary = _describe_output(entry.kind, summary, end.output)
    elif isinstance(end, NodeFailed):
        # Runs journaled before errors were put in words name the cancellation by its class.
        summary = "cancelled" if end.cancelled and end.error == end.error_type else end.error
    return title, summary


def _answer_summary(event: BreakpointResolved) -> str:
    """What the person answered at a breakpoint, in one line: the action, the edited input or the output
    given, "not again in this run", the reason."""
    parts = [_BREAKPOINT_ACTIONS[event.action]]
    if event.action == "edit":
        parts.append(f"input {short_json(event.input, SUMMARY_CHARS)}")
    elif event.action == "skip":
        parts.append(f"output {short_json(event.output, SUMMARY_CHARS)}")
    if not event.again:
        parts.append("not again in this run")
    if event.reason:
        parts.append(event.reason)
    return "; ".join(parts)


def _review_cause(event: ReviewRequested) -> str:
    """What asked for a result's review, as its timeline row says: the rule, the graph or the person's
    toggle (a journal from before causes were recorded says only that the session reviewed it)."""
    if event.rule:
        return f"rule {event.rule}"
    if event.asked_by == "graph":
        return "the graph reviews this tool"
    if event.asked_by == "person":
        return "your review toggle"
    return "reviewed this session"


def _reason_summary(status: str, decided: str, reason: str) -> str:
    """``denied: too risky``; a reason that says the decision already stands alone (``the call was
    cancelled``, not ``cancelled: the call was cancelled``)."""
    return reason if decided in reason.casefold() else f"{status}: {reason}"


def _describe_input(node_type: str, input: Any) -> tuple[str, str]:
    """The title and summary of the row a node's input starts."""
    if node_type == "INTERACTION.ACT.TOOL":
        call = field_of(input, "call")
        return str(field_of(call, "name")), arguments_summary(field_of(call, "arguments"))
    if node_type == "INTERACTION.ACT.MCP":
        if field_of(input, "operation") == "invoke":
            call = field_of(input, "call")
            title = f"{field_of(input, 'server')}:{field_of(call, 'name')}"
            return title, arguments_summary(field_of(call, "arguments"))
        servers = field_of(input, "servers")
        return "mcp discover", ", ".join(map(str, servers)) if servers else "every server"
    if node_type == "INTERACTION.OBSERVE":
        result = field_of(input, "result")
        return "observe", f"{field_of(result, 'source')} {field_of(result, 'call_id')}"
    if node_type == "INTERACTION.OUTPUT":
        return "output", f"delivery {short_json(field_of(input, 'delivery_id'))}"
    return short_type(node_type), short_json(input, SUMMARY_CHARS)


def _describe_output(kind: EntryKind, summary: str, output: Any) -> str:
    """The summary a finished row shows: what came back, or the start ``summary`` when nothing better."""
    error = field_of(field_of(output, "result") or output, "error")
    if error is not None:
        return f"{field_of(error, 'code')}: {field_of(error, 'message')}"
    if kind == "observation":
        return content_summary(field_of(field_of(output, "message"), "content"))
    if kind == "output":
        artifacts = field_of(output, "artifacts") or ()
        return f"receipt {field_of(output, 'delivery_id')}, {len(artifacts)} artifacts"
    if kind == "mcp" and field_of(output, "operation") == "discover":
        return f"{len(field_of(output, 'capabilities') or ())} capabilities"
    if kind == "call":
        content = field_of(output, "content")
        if content is not None:
            return f"{summary} → {content_summary(content)}"
    return summary


def short_type(node_type: str) -> str:
    """A node type without its worker prefix: ``INTERACTION.ACT.TOOL`` → ``ACT.TOOL``."""
    return node_type.partition(".")[2] or node_type


def format_seconds(seconds: float) -> str:
    """A short duration: ``850ms``, ``4.2s``, ``3m05s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"
