"""Breakpoints: pause a run before a node, ask someone, then continue, edit its input, skip it or abort.

The runtime owns the pausing; who is asked is a port (:class:`BreakpointApprover`, ``async decide``) so
the runtime needs nothing from the supervision layer, which adapts its inbox to it. A
:class:`Breakpoints` set is live: a run consults it before each node, so a front end can add or remove
a pattern (or turn step mode on and off) while the run goes on.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, get_args

import pydantic

from ditto_tui.contracts import validation_summary
from ditto_tui.errors import ValidationError
from ditto_tui.json_text import parse_json_text
from ditto_tui.runtime.json_values import json_form, retyped

BreakpointAction = Literal["continue", "edit", "skip", "abort"]
"""What a person answers at a breakpoint: run the node, run it on an edited input, give its output
without running it, or end the run."""

BREAKPOINT_ACTIONS: tuple[BreakpointAction, ...] = get_args(BreakpointAction)
STEP = "*"
"""The pattern of step mode: it matches every node."""


def check_json(value: Any, what: str) -> Any:
    """``value`` when it is JSON data (objects, arrays, strings, finite numbers, booleans, null); raises
    :class:`ValidationError` naming ``what`` otherwise."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"{what} must be JSON data: {exc}") from None
    return value


def parse_json_edit(text: str) -> Any:
    """An edited input typed as JSON text (what a JSON editor hands over); raises saying where it is wrong."""
    return parse_json_text(text, "the edited input")


@dataclass(frozen=True, kw_only=True)
class BreakpointRequest:
    """A node paused before it starts: which node, of which run (and loop iteration), on which input."""

    request_id: str
    node_id: str
    node_type: str
    input: Any
    run_id: str
    iteration: int | None = None
    pattern: str = STEP
    output_shape: pydantic.TypeAdapter[Any] | None = field(
        default=None, repr=False, compare=False, metadata={"stored": False}
    )
    """What the node type declares it outputs (``define_worker(outputs=...)``), or None when it does not
    (not stored with a durable run's request: the worker that asked checks a skip's output with it)."""

    kind: ClassVar[Literal["breakpoint"]] = "breakpoint"
    """What is asked: whether and how a paused node runs (an inbox request kind)."""

    @property
    def input_json(self) -> Any:
        """The input as JSON, as the journal writes it: what a person reads and edits."""
        return json_form(self.input)

    def edited_input(self, value: Any) -> Any:
        """The edited input ``value`` (JSON) in the types of the input it replaces, as the node gets it
        (messages as ``InferMessage`` again); raises :class:`ValidationError` saying what does not fit."""
        check_json(value, "the edited input")
        return retyped(value, self.input, "the edited input")

    def given_output(self, value: Any) -> Any:
        """The output ``value`` (JSON) given for the skipped node, in the type its node type declares,
        as the nodes after it get it; raises :class:`ValidationError` when it is not such an output."""
        check_json(value, "the output given for a skipped node")
        if self.output_shape is None:
            return value
        try:
            return self.output_shape.validate_python(value)
        except pydantic.ValidationError as exc:
            raise ValidationError(
                f"the output is not one {self.node_type} gives, so the nodes after it could not take it: "
                f"{validation_summary(exc)}"
            ) from None


@dataclass(frozen=True, kw_only=True)
class BreakpointDecision:
    """The answer at a breakpoint.

    ``input`` replaces the node's input (``edit``); ``output`` is the node's output without running it
    (``skip``); both must be JSON data, checked here, so a bad edit is refused before it is accepted.
    ``again=False`` means "not again in this run": this node does not pause in later loop iterations.
    """

    action: BreakpointAction
    input: Any = None
    output: Any = None
    again: bool = True
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action not in BREAKPOINT_ACTIONS:
            raise ValidationError(f"breakpoint action {self.action!r} must be continue, edit, skip or abort")
        if self.action != "edit" and self.input is not None:
            raise ValidationError("only an edit carries an input")
        if self.action != "skip" and self.output is not None:
            raise ValidationError("only a skip carries an output")
        check_json(self.input, "the edited input")
        check_json(self.output, "the output given for a skipped node")

    @property
    def approves(self) -> bool:
        """Whether the run goes on (everything but ``abort``)."""
        return self.action != "abort"


class BreakpointApprover(Protocol):
    """Who is asked at a breakpoint: ``async decide(request) -> decision`` (the inbox's person, a test)."""

    async def decide(self, request: BreakpointRequest) -> BreakpointDecision:
        """The decision on the paused node."""
        ...


class Breakpoints:
    """A live set of node globs (matched against the node id or its node type; ``*`` is step mode).

    A run consults it before each node, so :meth:`add`, :meth:`remove` and :attr:`step` take effect on
    the next node to start, in runs already going too.
    """

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self._patterns: dict[str, None] = {}
        for pattern in patterns:
            self.add(pattern)

    def add(self, pattern: str) -> None:
        """Pause before the nodes ``pattern`` matches."""
        if not isinstance(pattern, str) or not pattern:
            raise ValidationError("a breakpoint is a non-empty node glob")
        self._patterns[pattern] = None

    def remove(self, pattern: str) -> bool:
        """Stop pausing for ``pattern``; False when it was not set."""
        return self._patterns.pop(pattern, 0) is None

    def toggle(self, pattern: str) -> bool:
        """Add ``pattern`` if absent, else remove it; returns whether it is set now."""
        if self.remove(pattern):
            return False
        self.add(pattern)
        return True

    @property
    def step(self) -> bool:
        """Step mode: pause before every node."""
        return STEP in self._patterns

    @step.setter
    def step(self, on: bool) -> None:
        if on:
            self.add(STEP)
        else:
            self.remove(STEP)

    def match(self, node_id: str, node_type: str) -> str | None:
        """The first pattern that matches the node, or None."""
        for pattern in self._patterns:
            if fnmatch.fnmatchcase(node_id, pattern) or fnmatch.fnmatchcase(node_type, pattern):
                return pattern
        return None

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._patterns))

    def __len__(self) -> int:
        return len(self._patterns)

    def __contains__(self, pattern: object) -> bool:
        return pattern in self._patterns

    def __repr__(self) -> str:
        return f"Breakpoints({list(self._patterns)!r})"

    @classmethod
    def coerce(cls, value: Breakpoints | Iterable[str] | None) -> Breakpoints:
        """``value`` itself when it is a live set, else a new set of its patterns."""
        if isinstance(value, Breakpoints):
            return value
        if isinstance(value, str):
            raise ValidationError("breakpoints is a list of node globs, not one string")
        return cls(value or ())


__all__ = [
    "BREAKPOINT_ACTIONS",
    "STEP",
    "BreakpointAction",
    "BreakpointApprover",
    "BreakpointDecision",
    "BreakpointRequest",
    "Breakpoints",
    "check_json",
    "parse_json_edit",
]
