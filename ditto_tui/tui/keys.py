"""Keys meant for a modal never act on the screen beneath it (ADVERSARIAL U-09).

A key press travels in steps: the app hands it to the focused widget, it bubbles back up, and only then
does the app look up a binding on whatever screen is current *at that moment*. When a key closes a
modal, a second press already on its way (a double tap, key repeat, type-ahead) would find the screen
beneath current and run that screen's binding: the second ``a`` of "approve" accepting a changed MCP
tool. Checking the screen is not enough either, because a second press that arrives just after the modal
closed was still aimed at it.

So every binding is judged by the time its key was pressed (Textual stamps each event when it is
made): a key pressed before a modal closed, or within :data:`ARM_SECONDS` after, runs no binding on any
screen. This is the approval view's own arming (keys work only :data:`ARM_SECONDS` after it opens)
applied to the moment it closes, for every modal at once instead of each screen below remembering to.
Typing into an input is left alone: only bindings (actions) are held back.
"""

from __future__ import annotations

import math

from textual import events
from textual._time import get_time  # the clock Textual stamps ``Message.time`` with

__all__ = ["ARM_SECONDS", "KeyGuard"]

ARM_SECONDS = 0.5
"""How long after a modal closes keys run no binding (the approval view arms its keys after as long)."""


class KeyGuard:
    """Remembers when the last modal closed and says whether a key press may run a binding."""

    def __init__(self, arm_seconds: float | None = None) -> None:
        self.arm_seconds = ARM_SECONDS if arm_seconds is None else arm_seconds
        self.closed_at = -math.inf

    def modal_closed(self) -> None:
        """A modal was dismissed: hold back the keys already pressed and those of the next moment."""
        self.closed_at = get_time()

    @property
    def armed(self) -> bool:
        """Whether a key pressed now may run a binding."""
        return get_time() >= self.closed_at + self.arm_seconds

    def admits(self, key: events.Key) -> bool:
        """Whether ``key`` was pressed late enough after the last modal closed to run a binding."""
        return key.time >= self.closed_at + self.arm_seconds
