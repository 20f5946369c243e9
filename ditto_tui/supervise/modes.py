"""Modes: one switch over the whole policy, for the moments a person wants less asked, or less done.

- ``ask`` (the default): the rules decide.
- ``read-only``: a call that is not known to only read is denied without asking: a registered tool
  must declare effects, all ``read``; an MCP tool must be annotated ``readOnlyHint``.
- ``auto-edit``: a workspace file write (a registered tool whose declared effects are ``write``, with or
  without ``read``; the sandbox keeps every such write inside the workspace) runs without asking; the
  rest as the rules say. A rule that denies still denies.
- ``plan``: as ``read-only``, and the model is told why: the denial says to propose the changes as a
  plan instead of making them.

A mode never widens past a ``deny``: it can only deny what the rules would allow or ask about, and (in
``auto-edit``) allow what they would ask about. :class:`ModeSwitch` holds the session's mode; every
change is heard by its listeners (the journal of each run records it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ditto_tui.errors import ValidationError
from ditto_tui.supervise.matching import hint_value

Mode = Literal["ask", "read-only", "auto-edit", "plan"]
MODES: tuple[Mode, ...] = get_args(Mode)
MODE_DENIED = "APPROVAL_DENIED_BY_MODE"
"""The result code of a call the mode denied (distinct from a rule's or a person's denial)."""

_DESCRIPTIONS: dict[Mode, str] = {
    "ask": "the rules decide; calls they ask about wait for you",
    "read-only": "only calls known to just read run; everything else is denied without asking",
    "auto-edit": "workspace file writes run without asking; the rest as the rules say",
    "plan": "only calls known to just read run; the model is told to propose its changes as a plan",
}


def describe(mode: Mode) -> str:
    """What ``mode`` does, in one line."""
    return _DESCRIPTIONS[mode]


def check_mode(value: object) -> Mode:
    """``value`` as a mode, or ValidationError naming the four."""
    if value not in MODES:
        raise ValidationError(f"mode {value!r} must be one of {', '.join(MODES)}")
    return value


def next_mode(mode: Mode) -> Mode:
    """The mode after ``mode`` in the order a key cycles them."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


def reads_only(
    *, effects: Sequence[str] | None = None, mcp: bool = False, annotations: Mapping[str, Any] | None = None
) -> bool:
    """Whether a tool is known to only read: declared effects all ``read`` (an MCP tool: ``readOnlyHint``)."""
    if mcp:
        return hint_value(annotations, "read_only")
    return effects is not None and len(effects) > 0 and set(effects) <= {"read"}


def writes_workspace_files(*, effects: Sequence[str] | None = None, mcp: bool = False) -> bool:
    """Whether a tool's declared effects are workspace file writes (``write``, perhaps with ``read``)."""
    return not mcp and effects is not None and "write" in effects and set(effects) <= {"read", "write"}


@dataclass(frozen=True, kw_only=True, slots=True)
class ModeVerdict:
    """What the mode makes of a call the rules decided ``decision`` on: the decision, and why."""

    decision: Literal["allow", "ask", "deny"]
    message: str | None = None


def apply_mode(
    mode: Mode,
    decision: Literal["allow", "ask", "deny"],
    *,
    label: str,
    effects: Sequence[str] | None = None,
    mcp: bool = False,
    annotations: Mapping[str, Any] | None = None,
) -> ModeVerdict | None:
    """The mode's verdict on a call the rules decided ``decision`` on, or ``None`` when the rules stand."""
    if mode == "ask" or decision == "deny":
        return None
    if mode in ("read-only", "plan"):
        if reads_only(effects=effects, mcp=mcp, annotations=annotations):
            return None
        if mode == "plan":
            message = (
                f"{label} was not run: the session is in plan mode, where only calls that just read run. "
                "Propose the changes you would make as a plan instead; the person will decide."
            )
        else:
            message = f"{label} was not run: the session is in read-only mode (only calls that just read run)"
        return ModeVerdict(decision="deny", message=message)
    if decision == "ask" and writes_workspace_files(effects=effects, mcp=mcp):
        return ModeVerdict(decision="allow")
    return None


class ModeSwitch:
    """The session's mode, changed by ``--mode``, a key in the app, or the library; listeners hear each
    change as ``listener(mode, previous)``."""

    def __init__(self, mode: Mode = "ask") -> None:
        self._mode = check_mode(mode)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Mode, Mode], object]] = []

    @property
    def mode(self) -> Mode:
        """The mode now."""
        return self._mode

    def set(self, mode: Mode) -> bool:
        """Switch to ``mode`` (checked); False when it already was the mode (nothing is heard)."""
        mode = check_mode(mode)
        with self._lock:
            previous, self._mode = self._mode, mode
        if previous == mode:
            return False
        for listener in list(self._listeners):
            listener(mode, previous)
        return True

    def cycle(self) -> Mode:
        """Switch to the next mode (ask → read-only → auto-edit → plan → ask); returns it."""
        mode = next_mode(self._mode)
        self.set(mode)
        return mode

    def on_change(self, listener: Callable[[Mode, Mode], object]) -> Callable[[], None]:
        """Hear every change; returns a function that stops hearing."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None


__all__ = [
    "MODES",
    "MODE_DENIED",
    "Mode",
    "ModeSwitch",
    "ModeVerdict",
    "apply_mode",
    "check_mode",
    "describe",
    "next_mode",
    "reads_only",
    "writes_workspace_files",
]
